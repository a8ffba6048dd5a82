/*
 * notify.h - the systemd notification protocol ($NOTIFY_SOCKET), sent
 * without ever blocking the loop.
 *
 * libsystemd's sd_notify() does a blocking sendmsg(): if the receiver
 * stops reading (a stuck manager, a test harness), the event loop would
 * stop with it.  Here the socket is non-blocking and a message that does
 * not fit is dropped (STATUS= and WATCHDOG=1 are sent again soon);
 * only READY=1, sent before the loop runs, may wait (up to a second).
 * Without $NOTIFY_SOCKET everything is a no-op.
 *
 * STATUS= goes through notify_status(): a text equal to the last one
 * sent is not sent again, and at most one goes out per 250 ms (a timer
 * of the loop sends the latest text when its turn comes, and tries a
 * text the full queue refused again), so that a daemon creating and
 * destroying hundreds of VMs a second does not send systemd a datagram
 * for each change; the last state always arrives.
 */
#ifndef VMBUILDD_NOTIFY_H
#define VMBUILDD_NOTIFY_H

#include <stdbool.h>

struct event_base;

#include "log.h"

void notify_init(void);
/* `wait`: allowed to wait a little for room (start-up only). */
void notify(bool wait, const char *fmt, ...) LOG_FMT(2, 3);
/* STATUS=, coalesced; sent at once until notify_status_start(). */
void notify_status(const char *fmt, ...) LOG_FMT(1, 2);
void notify_status_start(struct event_base *base);
/* Sends a STATUS= still held back, then closes. */
void notify_close(void);

#endif /* VMBUILDD_NOTIFY_H */
