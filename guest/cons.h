/*
 * cons.h - console output of the hello guest (prefix cons_).
 *
 * Every line goes to Xen's HVM debug port 0xe9, which Xen 4.17 offers to
 * every HVM/PVH domain and prints as "(dN) ..." on its own console at
 * guest_loglvl=all (and into `xl dmesg`); and, once cons_ring_init() has
 * found one, to the PV console ring that xenconsoled reads.
 */
#ifndef GUEST_CONS_H
#define GUEST_CONS_H

#include <stdbool.h>
#include <stdint.h>

/* Look up the PV console ring (HVM params); true if there is one. */
bool cons_ring_init(void);
void cons_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* GUEST_CONS_H */
