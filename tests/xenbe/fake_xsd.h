/*
 * fake_xsd.h - fake_xs.c's store served over xenstored's wire protocol
 * on a socketpair, by a thread (fake_xsd.c): the other end is what
 * xen_xsw_adopt takes.
 */
#ifndef FAKE_XSD_H
#define FAKE_XSD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "fake_xs.h"

#define FAKE_XSD_TYPES	32

struct fake_xsd {
	int	fd;		/* the server's end */
	pthread_t thread;
	unsigned die_after;	/* > 0: hang up on the request after so many */
	unsigned handled;	/* requests answered */
	uint32_t open_tx;	/* a transaction started and not ended */
	unsigned types[FAKE_XSD_TYPES];	/* of them, by XS_* type */
};

/* The client's end of a new connection (-1: none); stop joins the thread
 * once the client has closed its end. */
int fake_xsd_start(struct fake_xsd *d);
void fake_xsd_stop(struct fake_xsd *d);

#endif
