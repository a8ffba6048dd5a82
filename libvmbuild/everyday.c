/*
 * everyday.c - settings of a running domain an operator changes in a
 * day's work (xl sched-credit2, rename, uptime, dmesg): checked here,
 * carried by the backend.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "vmb_internal.h"

int
vmb_sched_check(uint32_t weight, uint32_t cap, uint32_t vcpus, char *why,
    size_t why_len)
{
	if (weight != VMB_SCHED_KEEP &&
	    (weight < 1 || weight > VMB_SCHED_WEIGHT_MAX)) {
		snprintf(why, why_len, "weight %u is not in 1..%u", weight,
		    VMB_SCHED_WEIGHT_MAX);
		return -EINVAL;
	}
	/* Xen refuses a cap above 100 per vCPU (sched_credit2.c). */
	if (cap != VMB_SCHED_KEEP && (uint64_t)cap > 100ull * vcpus) {
		snprintf(why, why_len, "cap %u%% is more than %u vCPU%s can "
		    "use (0..%u, 0: no cap)", cap, vcpus, vcpus == 1 ? "" : "s",
		    100 * vcpus);
		return -EINVAL;
	}
	return 0;
}

int
vmb_domain_sched(struct vmb_ctx *ctx, uint32_t domid, uint32_t weight,
    uint32_t cap, struct vmb_sched *ret)
{
	struct vmb_sched tmp;

	if (!ctx)
		return -EINVAL;
	if (!ctx->ops->sched)
		return -EOPNOTSUPP;
	return ctx->ops->sched(ctx->priv, domid, weight, cap,
	    ret != NULL ? ret : &tmp);
}

int
vmb_domain_rename(struct vmb_ctx *ctx, uint32_t domid, const char *name)
{
	char why[128];

	if (!ctx || !name || vmb_name_check(name, why, sizeof(why)) < 0)
		return -EINVAL;
	if (!ctx->ops->rename)
		return -EOPNOTSUPP;
	return ctx->ops->rename(ctx->priv, domid, name);
}

int
vmb_domain_start_time(struct vmb_ctx *ctx, uint32_t domid, double *ret_time)
{
	if (!ctx || !ret_time)
		return -EINVAL;
	if (!ctx->ops->start_time)
		return -EOPNOTSUPP;
	return ctx->ops->start_time(ctx->priv, domid, ret_time);
}

int
vmb_dmesg(struct vmb_ctx *ctx, bool clear, char **ret_text, size_t *ret_len)
{
	if (!ctx || !ret_text || !ret_len)
		return -EINVAL;
	if (!ctx->ops->dmesg)
		return -EOPNOTSUPP;
	return ctx->ops->dmesg(ctx->priv, clear, ret_text, ret_len);
}
