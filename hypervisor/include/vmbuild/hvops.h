/*
 * hvops.h - the shape of every op of hvsim's socket, from hvops.def:
 * the sizes of its request and reply, for the server that checks them
 * and the client that makes them.
 */
#ifndef VMBUILD_HVOPS_H
#define VMBUILD_HVOPS_H

#include <stddef.h>
#include <stdint.h>

#include "vmbuild/hvabi.h"

struct hv_op_desc {
	const char *name;	/* lower case, as in hvops.def */
	uint32_t req_len;	/* the fixed part */
	uint32_t rep_len;	/* the fixed part of a successful reply */
	uint8_t	 req_tail;	/* an array follows the request's fixed part */
	uint8_t	 rep_tail;	/* an array follows the reply's */
};

/* One line of hvops.def per op of enum hv_op, no more, no fewer. */
#define HV_OPDEF(OP, name, req, req_tail, rep, rep_tail)	+ 1
_Static_assert(0
#include "vmbuild/hvops.def"
    == HV_OP_MAX - 1, "hvops.def has a line for every op of enum hv_op");
#undef HV_OPDEF

/*
 * The line of `op`: an op of enum hv_op or HV_OP_FAULT (hvsim's fault
 * injection, outside the enum); NULL for any other number.
 */
static inline const struct hv_op_desc *
hv_op_desc(uint16_t op)
{
#define HV_OPDEF(OP, nm, req, rtail, rep, ptail)			\
	[HV_OP_##OP] = { .name = #nm, .req_len = (req), .rep_len = (rep), \
	    .req_tail = (rtail), .rep_tail = (ptail) },
	static const struct hv_op_desc ops[HV_OP_MAX] = {
#include "vmbuild/hvops.def"
	};
#undef HV_OPDEF
	static const struct hv_op_desc fault = { .name = "fault",
	    .req_len = sizeof(struct hv_fault),
	    .rep_len = sizeof(struct hv_fault_reply) };

	if (op == HV_OP_FAULT)
		return &fault;
	return op > 0 && op < HV_OP_MAX ? &ops[op] : NULL;
}

#endif /* VMBUILD_HVOPS_H */
