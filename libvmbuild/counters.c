/*
 * counters.c - the table of companion counters (counters.def) and the
 * one conversion from the hypervisor's struct hv_counters, which both
 * backends use (hvsim's socket and the Xen companion sysctl carry the
 * same layout).
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <vmbuild/hvabi.h>

#include "vmb_internal.h"

#define GROUP_FLUSH	"tlb_flushes"
#define GROUP_SHADOW	"unshadow"
#define GROUP_POPULATE	"populate"
#define GROUP_SCRUB	"scrub"

static const struct vmb_counter_info table[VMB_COUNTER_MAX] = {
#define VMB_COUNTER(id, grp, key_, metric_, labels_, unit_, hv, help_) \
	[VMB_CNT_##id] = { .group = GROUP_##grp, \
	    .have = VMB_CNT_HAVE_##grp, .key = key_, .metric = metric_, \
	    .labels = labels_, .unit = unit_, .help = help_ },
#define VMB_COUNTER_SUM(id, grp, key_, first, last, help_) \
	[VMB_CNT_##id] = { .group = GROUP_##grp, \
	    .have = VMB_CNT_HAVE_##grp, .key = key_, .help = help_, \
	    .sum_first = VMB_CNT_##first, .sum_last = VMB_CNT_##last },
#include "counters.def"
#undef VMB_COUNTER
#undef VMB_COUNTER_SUM
};

/* Where each value lives in struct hv_counters; SIZE_MAX for a sum. */
static const size_t hv_offset[VMB_COUNTER_MAX] = {
#define VMB_COUNTER(id, group, key, metric, labels, unit, hv, help) \
	[VMB_CNT_##id] = offsetof(struct hv_counters, hv),
#define VMB_COUNTER_SUM(id, group, key, first, last, help) \
	[VMB_CNT_##id] = SIZE_MAX,
#include "counters.def"
#undef VMB_COUNTER
#undef VMB_COUNTER_SUM
};

const struct vmb_counter_info *
vmb_counter_info(enum vmb_counter c)
{
	if ((unsigned)c >= VMB_COUNTER_MAX)
		return NULL;
	return &table[c];
}

/*
 * Units that are memory: a count of them goes out in bytes, the base unit
 * Prometheus wants.  Any other unit counts events (flushes, calls, page
 * tables unshadowed) and goes out as it is.
 */
static const struct {
	const char *unit;
	uint64_t bytes;
} memory_units[] = {
	{ "pages", VMB_PAGE_SIZE },
};

uint64_t
vmb_counter_metric_scale(enum vmb_counter c, const char **ret_unit)
{
	const struct vmb_counter_info *ci = vmb_counter_info(c);

	if (!ci || !ci->metric)
		return 0;
	for (size_t i = 0; i < sizeof(memory_units) / sizeof(memory_units[0]);
	    i++)
		if (strcmp(ci->unit, memory_units[i].unit) == 0) {
			if (ret_unit)
				*ret_unit = "bytes";
			return memory_units[i].bytes;
		}
	if (ret_unit)
		*ret_unit = ci->unit;
	return 1;
}

int
vmb__counters_from_hv(const struct hv_counters *h, size_t len,
    uint32_t have, struct vmb_counters *ret)
{
	struct vmb_counters c;

	if (len != sizeof(*h) || h->version != HV_ABI_VERSION)
		return -EPROTO;
	memset(&c, 0, sizeof(c));
	c.have = have;
	for (unsigned i = 0; i < VMB_COUNTER_MAX; i++)
		if (hv_offset[i] != SIZE_MAX)
			memcpy(&c.v[i], (const char *)h + hv_offset[i],
			    sizeof(c.v[i]));
	*ret = c;
	return 0;
}

void
vmb__counters_sum(struct vmb_counters *c)
{
	for (unsigned i = 0; i < VMB_COUNTER_MAX; i++) {
		const struct vmb_counter_info *ci = &table[i];

		if (ci->metric)
			continue;
		c->v[i] = 0;
		for (unsigned k = ci->sum_first; k <= ci->sum_last; k++)
			c->v[i] += c->v[k];
	}
}
