/*
 * vmbuildd.h - what every part of the daemon shares: the loop, the
 * library context and the options.  Written by main.c only.
 */
#ifndef VMBUILDD_H
#define VMBUILDD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vmbuild.h"

struct event_base;

struct vmbuildd {
	struct event_base *base;
	struct vmb_ctx	*ctx;
	const char	*hypervisor;	/* as given: sim:PATH, xen, auto */
	const char	*state_dir;
	enum vmb_populate_strategy strategy;
	unsigned	max_tasks;
	unsigned	max_connections;
	size_t		max_request;
	unsigned	request_timeout;	/* seconds */
	unsigned	restart_backoff;	/* s: longest wait before a restart */
	bool		stopping;	/* SIGTERM/SIGINT received */
	double		started_at;	/* Unix time */
};

extern struct vmbuildd vmbd;

/*
 * status.c: the figures of the status line changed (a VM, a build, a
 * client); the hook main.c sets tells systemd, if any.  No-op until set.
 */
void vmbd_status_changed(void);
void vmbd_status_hook(void (*fn)(void));

/* Wall clock and monotonic time in seconds. */
double now_real(void);
double now_mono(void);

#endif /* VMBUILDD_H */
