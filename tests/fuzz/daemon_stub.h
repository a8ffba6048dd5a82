/*
 * daemon_stub.h - what the daemon's fuzz targets share: the globals
 * main.c would define, and a daemon set up without main(): its loop,
 * worker pool, tasks, events, registry and control layer, over a
 * hypervisor that answers every call with -ENODEV (so that a fuzz input
 * reaches every method and no hypervisor).
 */
#ifndef FUZZ_DAEMON_STUB_H
#define FUZZ_DAEMON_STUB_H

#include <stddef.h>
#include <stdint.h>

struct event_base;

/* Once per process; returns the loop. */
struct event_base *fuzz_daemon_init(void);
/* Run the loop until nothing is pending and `done` says so, at most ~1 s. */
void fuzz_daemon_run(int (*done)(void *arg), void *arg);
/*
 * Write data on fd (a connected socket, taken over), shut the writing
 * side, and run the loop until the daemon closes the connection.
 */
void fuzz_client_run(int fd, const uint8_t *data, size_t len);

#endif
