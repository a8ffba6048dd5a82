/*
 * ptw.h - the hello guest's page-table write workload (prefix ptw_):
 * "ptwrite=N" on its command line.  See ptw.c.
 */
#ifndef GUEST_PTW_H
#define GUEST_PTW_H

#include <stdint.h>

struct ptw_result {
	uint64_t flood_rounds;	/* rounds of 4 non-zero writes to one PDE */
	uint64_t zero_rounds;	/* rounds of 2 zero writes to one PDE */
	uint64_t bad_reads;	/* reads through the PDE that missed */
};

/* Run `rounds` rounds of each kind; 0, or -1 if the tables are not ours. */
int ptw_run(uint64_t rounds, struct ptw_result *r);

#endif /* GUEST_PTW_H */
