/*
 * host.c - what the hypervisor says about the host and its domains:
 * thin wrappers over the backend ops, plus the names of states.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vmb_internal.h"

int
vmb_host_info(struct vmb_ctx *ctx, struct vmb_host **ret_host)
{
	if (!ctx || !ret_host)
		return -EINVAL;
	if (!ctx->ops->host_info)
		return -EOPNOTSUPP;
	return ctx->ops->host_info(ctx->priv, ret_host);
}

void
vmb_host_free(struct vmb_host *host)
{
	if (!host)
		return;
	free(host->cpus);
	free(host);
}

int
vmb_scrub_progress(struct vmb_ctx *ctx, struct vmb_scrub *ret_scrub)
{
	if (!ctx || !ret_scrub)
		return -EINVAL;
	if (!ctx->ops->scrub)
		return -EOPNOTSUPP;
	return ctx->ops->scrub(ctx->priv, ret_scrub);
}

int
vmb_counters(struct vmb_ctx *ctx, struct vmb_counters *ret_counters)
{
	int rc;

	if (!ctx || !ret_counters)
		return -EINVAL;
	if (!ctx->ops->counters)
		return -EOPNOTSUPP;
	rc = ctx->ops->counters(ctx->priv, ret_counters);
	if (rc == 0)
		vmb__counters_sum(ret_counters);
	return rc;
}

int
vmb_domain_list(struct vmb_ctx *ctx, struct vmb_domain **ret_domains,
    size_t *ret_nr)
{
	if (!ctx || !ret_domains || !ret_nr)
		return -EINVAL;
	return ctx->ops->domain_list(ctx->priv, ret_domains, ret_nr);
}

int
vmb__host_state(struct vmb_ctx *ctx, struct vmb_host **ret_host,
    struct vmb_domain **ret_domains, size_t *ret_nr,
    struct vmb_scrub *ret_scrub, int *ret_scrub_rc)
{
	struct vmb_host *h = NULL;
	int rc;

	if (ctx->ops->host_state)
		return ctx->ops->host_state(ctx->priv, ret_host, ret_domains,
		    ret_nr, ret_scrub, ret_scrub_rc);
	rc = vmb_host_info(ctx, &h);
	if (rc == 0 && ctx->ops->domain_usage)
		rc = ctx->ops->domain_usage(ctx->priv, ret_domains, ret_nr);
	else if (rc == 0)
		rc = vmb_domain_list(ctx, ret_domains, ret_nr);
	if (rc) {
		vmb_host_free(h);
		return rc;
	}
	*ret_host = h;
	*ret_scrub_rc = vmb_scrub_progress(ctx, ret_scrub);
	return 0;
}

int
vmb_control_domain(struct vmb_ctx *ctx, struct vmb_domain *ret_domain)
{
	if (!ctx || !ret_domain)
		return -EINVAL;
	if (!ctx->ops->control_domain)
		return -EOPNOTSUPP;
	return ctx->ops->control_domain(ctx->priv, ret_domain);
}

int
vmb_domain_get(struct vmb_ctx *ctx, uint32_t domid,
    struct vmb_domain *ret_domain)
{
	struct vmb_domain *d = NULL;
	size_t nr = 0;
	int rc;

	if (!ctx || !ret_domain)
		return -EINVAL;
	rc = vmb_domain_list(ctx, &d, &nr);
	if (rc)
		return rc;
	rc = -ESRCH;
	for (size_t i = 0; i < nr; i++)
		if (d[i].domid == domid) {
			*ret_domain = d[i];
			rc = 0;
			break;
		}
	free(d);
	return rc;
}

int
vmb_domain_destroy(struct vmb_ctx *ctx, uint32_t domid)
{
	if (!ctx)
		return -EINVAL;
	return ctx->ops->domain_destroy(ctx->priv, domid);
}

int
vmb_domain_pause(struct vmb_ctx *ctx, uint32_t domid)
{
	if (!ctx)
		return -EINVAL;
	return ctx->ops->domain_pause(ctx->priv, domid);
}

int
vmb_domain_unpause(struct vmb_ctx *ctx, uint32_t domid)
{
	if (!ctx)
		return -EINVAL;
	return ctx->ops->domain_unpause(ctx->priv, domid);
}

const char *
vmb_domain_state_name(enum vmb_domain_state state)
{
	static const char *const names[] = {
		[VMB_DOM_PAUSED] = "paused",
		[VMB_DOM_RUNNING] = "running",
		[VMB_DOM_BLOCKED] = "blocked",
		[VMB_DOM_SHUTDOWN] = "shutdown",
		[VMB_DOM_DYING] = "dying",
		[VMB_DOM_CRASHED] = "crashed",
	};

	if ((unsigned)state >= sizeof(names) / sizeof(names[0]))
		return "unknown";
	return names[state];
}

const char *
vmb_shutdown_reason_name(enum vmb_shutdown_reason reason)
{
	static const char *const names[] = {
		[VMB_SHUTDOWN_POWEROFF] = "poweroff",
		[VMB_SHUTDOWN_REBOOT] = "reboot",
		[VMB_SHUTDOWN_SUSPEND] = "suspend",
		[VMB_SHUTDOWN_CRASH] = "crash",
		[VMB_SHUTDOWN_WATCHDOG] = "watchdog",
		[VMB_SHUTDOWN_SOFT_RESET] = "soft_reset",
	};

	if ((unsigned)reason >= sizeof(names) / sizeof(names[0]))
		return "unknown";
	return names[reason];
}
