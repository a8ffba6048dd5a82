/*
 * resize.c - a running guest's memory and vCPUs, as xl mem-set, mem-max,
 * vcpu-set, vcpu-pin and vcpu-list do them through libxl
 * (libxl_set_memory_target, libxl_domain_setmaxmem,
 * libxl_set_vcpuonline, libxl_set_vcpuaffinity, libxl_list_vcpu).
 *
 * The backend does the hypervisor's part (its max memory, vCPUs online
 * and their affinity) and tells the guest (xenstore).  Where it has
 * nothing to tell (an op NULL, or -EOPNOTSUPP: a hvsim without
 * HV_CAP_VCPUS) the caller's record is the state.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "vmb_internal.h"

#define CPU_WORDS	(VMB_MAX_CPUS / 64)

int
vmb_size_parse(const char *s, uint64_t *ret_bytes)
{
	unsigned long long v;
	uint64_t unit = VMB_MIB;
	char *end;

	if (s == NULL || !isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0)
		return -ERANGE;
	/* xl's parse_mem_size_kb: b, k, m, g, t; none is MiB. */
	switch (tolower((unsigned char)*end)) {
	case '\0':
		break;
	case 'b':
		unit = 1;
		break;
	case 'k':
		unit = 1ull << 10;
		break;
	case 'm':
		unit = 1ull << 20;
		break;
	case 'g':
		unit = 1ull << 30;
		break;
	case 't':
		unit = 1ull << 40;
		break;
	default:
		return -EINVAL;
	}
	if (*end != '\0' && end[1] != '\0')
		return -EINVAL;
	if (v > UINT64_MAX / unit)
		return -ERANGE;
	*ret_bytes = v * unit;
	return 0;
}

int
vmb_domain_set_target(struct vmb_ctx *ctx, uint32_t domid,
    uint64_t target_bytes)
{
	int rc;

	if (!ctx || target_bytes == 0)
		return -EINVAL;
	if (!ctx->ops->max_mem)
		return -EOPNOTSUPP;
	/* libxl enforces first, then tells the guest. */
	rc = ctx->ops->max_mem(ctx->priv, domid,
	    (target_bytes + VMB_MAXMEM_SLACK) >> VMB_PAGE_SHIFT);
	if (rc == 0 && ctx->ops->mem_note)
		rc = ctx->ops->mem_note(ctx->priv, domid, false,
		    target_bytes >> 10);
	return rc;
}

int
vmb_domain_set_maxmem(struct vmb_ctx *ctx, uint32_t domid,
    uint64_t max_bytes)
{
	int rc;

	if (!ctx || max_bytes == 0)
		return -EINVAL;
	if (!ctx->ops->max_mem)
		return -EOPNOTSUPP;
	rc = ctx->ops->max_mem(ctx->priv, domid,
	    (max_bytes + VMB_MAXMEM_SLACK) >> VMB_PAGE_SHIFT);
	if (rc == 0 && ctx->ops->mem_note)
		rc = ctx->ops->mem_note(ctx->priv, domid, true,
		    max_bytes >> 10);
	return rc;
}

int
vmb_domain_set_vcpus(struct vmb_ctx *ctx, uint32_t domid, uint32_t maxvcpus,
    uint32_t online)
{
	int rc;

	if (!ctx || online == 0 || online > maxvcpus ||
	    maxvcpus > VMB_MAX_VCPUS)
		return -EINVAL;
	if (!ctx->ops->vcpu_online)
		return 0;
	rc = ctx->ops->vcpu_online(ctx->priv, domid, maxvcpus, online);
	return rc == -EOPNOTSUPP ? 0 : rc;
}

/* A CPU list against the host: NULL or "-" leaves it (*ret NULL). */
static int
resolve(const char *key, const char *s, const struct vmb_host *h,
    uint64_t *bits, const uint64_t **ret, char *why, size_t why_len)
{
	int rc;

	*ret = NULL;
	if (s == NULL || strcmp(s, "-") == 0)
		return 0;
	rc = vmb__cpus_resolve(key, s, h, bits, why, why_len);
	if (rc == 0)
		*ret = bits;
	return rc;
}

int
vmb_vcpu_pin(struct vmb_ctx *ctx, uint32_t domid, uint32_t maxvcpus,
    uint32_t vcpu, const char *hard, const char *soft, char *why,
    size_t why_len)
{
	uint64_t hbits[CPU_WORDS], sbits[CPU_WORDS];
	const uint64_t *ph, *ps;
	struct vmb_host *h = NULL;
	int rc;

	if (!ctx || maxvcpus == 0 || (vcpu != VMB_VCPU_ALL &&
	    vcpu >= maxvcpus)) {
		vmb__why(why, why_len, "vcpu %u does not exist (the guest "
		    "has %u)", vcpu, maxvcpus);
		return -EINVAL;
	}
	rc = vmb_host_info(ctx, &h);
	if (rc < 0) {
		vmb__why(why, why_len, "host information: %s",
		    strerror(-rc));
		return rc;
	}
	rc = resolve("cpus", hard, h, hbits, &ph, why, why_len);
	if (rc == 0)
		rc = resolve("cpus_soft", soft, h, sbits, &ps, why, why_len);
	vmb_host_free(h);
	if (rc < 0 || !ctx->ops->vcpu_affinity || (!ph && !ps))
		return rc;
	for (uint32_t v = vcpu == VMB_VCPU_ALL ? 0 : vcpu; rc == 0 &&
	    v < (vcpu == VMB_VCPU_ALL ? maxvcpus : vcpu + 1); v++)
		rc = ctx->ops->vcpu_affinity(ctx->priv, domid, v, ph, ps);
	if (rc == -EOPNOTSUPP)
		return 0;
	if (rc < 0)
		vmb__why(why, why_len, "vcpu %u: setting its affinity: %s",
		    vcpu, strerror(-rc));
	return rc;
}

/* A bitmap as a CPU list ("0-3,6"); "all" when it holds every CPU. */
static void
cpulist(const uint64_t *bits, const struct vmb_host *h, char *buf, size_t len)
{
	size_t n = 0;
	bool all = h != NULL && h->nr_cpus > 0;

	for (uint32_t i = 0; all && i < h->nr_cpus; i++) {
		uint32_t c = h->cpus[i].cpu;

		all = c < VMB_MAX_CPUS && (bits[c / 64] >> (c % 64) & 1);
	}
	if (all) {
		snprintf(buf, len, "all");
		return;
	}
	buf[0] = '\0';
	for (unsigned i = 0; i < VMB_MAX_CPUS && n < len; i++) {
		unsigned j = i;

		if (!(bits[i / 64] >> (i % 64) & 1))
			continue;
		while (j + 1 < VMB_MAX_CPUS &&
		    (bits[(j + 1) / 64] >> ((j + 1) % 64) & 1))
			j++;
		n += (size_t)snprintf(buf + n, len - n, j > i ? "%s%u-%u" :
		    "%s%u", n ? "," : "", i, j);
		i = j;
	}
}

int
vmb_vcpu_info(struct vmb_ctx *ctx, uint32_t domid, uint32_t vcpu,
    struct vmb_vcpu_info *ret)
{
	uint64_t hard[CPU_WORDS], soft[CPU_WORDS];
	struct vmb_host *h = NULL;
	int rc;

	if (!ctx || !ret)
		return -EINVAL;
	if (!ctx->ops->vcpu_info)
		return -EOPNOTSUPP;
	memset(ret, 0, sizeof(*ret));
	memset(hard, 0, sizeof(hard));
	memset(soft, 0, sizeof(soft));
	ret->vcpu = vcpu;
	ret->cpu = -1;
	rc = ctx->ops->vcpu_info(ctx->priv, domid, vcpu, ret, hard, soft);
	/* Without the host's CPUs, "all" is not said: the list is. */
	if (rc == 0 && vmb_host_info(ctx, &h) < 0)
		h = NULL;
	if (rc == 0) {
		cpulist(hard, h, ret->hard, sizeof(ret->hard));
		cpulist(soft, h, ret->soft, sizeof(ret->soft));
	}
	vmb_host_free(h);
	return rc;
}
