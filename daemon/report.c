/*
 * report.c - JSON shapes of host data (see report.h).
 */
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "report.h"
#include "state.h"
#include "vmbuildd.h"

static void
kv_maybe(yajl_gen g, const char *key, bool have, uint64_t v)
{
	if (have)
		jg_kv_u64(g, key, v);
	else
		jg_kv_null(g, key);
}

void
report_scrub(yajl_gen g, const struct vmb_scrub *s)
{
	yajl_gen_map_open(g);
	jg_key(g, "nodes");
	yajl_gen_array_open(g);
	for (uint32_t i = 0; i < s->nr_nodes && i < VMB_MAX_NODES; i++) {
		const struct vmb_scrub_node *n = &s->nodes[i];

		yajl_gen_map_open(g);
		jg_kv_u64(g, "node", n->node);
		jg_kv_u64(g, "total_bytes", n->total_bytes);
		jg_kv_u64(g, "free_bytes", n->free_bytes);
		kv_maybe(g, "dirty_bytes", s->have & VMB_SCRUB_HAVE_DIRTY,
		    n->dirty_bytes);
		kv_maybe(g, "scrubbed_bytes_total",
		    s->have & VMB_SCRUB_HAVE_SCRUBBED, n->scrubbed_bytes_total);
		kv_maybe(g, "scrub_rate_bytes_per_second",
		    s->have & VMB_SCRUB_HAVE_RATE, n->rate_bytes_per_sec);
		kv_maybe(g, "clean_1g_bytes", s->have & VMB_SCRUB_HAVE_BLOCKS,
		    n->clean_1g_bytes);
		jg_key(g, "boot_scrub_done");
		if (s->have & VMB_SCRUB_HAVE_BOOT)
			yajl_gen_bool(g, n->boot_scrub_done);
		else
			yajl_gen_null(g);
		jg_kv_u64(g, "workers", n->workers);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
	yajl_gen_map_close(g);
}

static const char *const order_class[VMB_ORDER_CLASS_MAX] = {
	"4k", "2m", "1g", "other",
};

static void
by_name(yajl_gen g, const char *key, const char *const *names,
    const uint64_t *v, int n)
{
	jg_key(g, key);
	yajl_gen_map_open(g);
	for (int i = 0; i < n; i++)
		jg_kv_u64(g, names[i], v[i]);
	yajl_gen_map_close(g);
}

/* Within a group: make "a" of key "a.b" the open object (NULL: none). */
static void
object_open(yajl_gen g, const char **open, size_t *open_len,
    const char *key, size_t len)
{
	if (*open != NULL && key != NULL && *open_len == len &&
	    strncmp(*open, key, len) == 0)
		return;
	if (*open != NULL)
		yajl_gen_map_close(g);
	*open = key;
	*open_len = len;
	if (key != NULL) {
		yajl_gen_string(g, (const unsigned char *)key, len);
		yajl_gen_map_open(g);
	}
}

/*
 * counters.def in its order: a member per group (null when the
 * hypervisor does not report it), "a.b" keys as member b of object a.
 */
void
report_counters(yajl_gen g, const struct vmb_counters *c)
{
	const char *group = NULL, *obj = NULL;
	size_t obj_len = 0;
	bool have = false;

	yajl_gen_map_open(g);
	for (int i = 0; i < VMB_COUNTER_MAX; i++) {
		const struct vmb_counter_info *ci = vmb_counter_info(i);
		const char *dot = strchr(ci->key, '.');

		if (group == NULL || strcmp(group, ci->group) != 0) {
			object_open(g, &obj, &obj_len, NULL, 0);
			if (have)
				yajl_gen_map_close(g);
			group = ci->group;
			have = (c->have & ci->have) != 0;
			jg_key(g, group);
			if (have)
				yajl_gen_map_open(g);
			else
				yajl_gen_null(g);
		}
		if (!have)
			continue;
		object_open(g, &obj, &obj_len, dot ? ci->key : NULL,
		    dot ? (size_t)(dot - ci->key) : 0);
		jg_kv_u64(g, dot ? dot + 1 : ci->key, c->v[i]);
	}
	object_open(g, &obj, &obj_len, NULL, 0);
	if (have)
		yajl_gen_map_close(g);
	yajl_gen_map_close(g);
}

void
report_host(yajl_gen g, const struct vmb_host *h)
{
	yajl_gen_map_open(g);
	jg_kv_str(g, "backend", vmb_ctx_backend(vmbd.ctx));
	jg_kv_str(g, "hypervisor", vmb_ctx_hypervisor(vmbd.ctx));
	jg_kv_u64(g, "nr_nodes", h->nr_nodes);
	jg_kv_u64(g, "nr_cpus", h->nr_cpus);
	jg_kv_u64(g, "threads_per_core", h->threads_per_core);
	jg_kv_u64(g, "cores_per_node", h->cores_per_node);
	jg_kv_u64(g, "total_bytes", h->total_bytes);
	jg_kv_u64(g, "free_bytes", h->free_bytes);
	jg_kv_u64(g, "claimed_bytes", h->claimed_bytes);
	jg_key(g, "nodes");
	yajl_gen_array_open(g);
	for (uint32_t i = 0; i < h->nr_nodes && i < VMB_MAX_NODES; i++) {
		const struct vmb_node *n = &h->nodes[i];

		yajl_gen_map_open(g);
		jg_kv_u64(g, "node", n->node);
		jg_kv_u64(g, "nr_cpus", n->nr_cpus);
		jg_kv_u64(g, "total_bytes", n->total_bytes);
		jg_kv_u64(g, "free_bytes", n->free_bytes);
		jg_key(g, "cpus");
		yajl_gen_array_open(g);
		for (uint32_t c = 0; h->cpus != NULL && c < h->nr_cpus; c++)
			if (h->cpus[c].node == n->node)
				jg_u64(g, h->cpus[c].cpu);
		yajl_gen_array_close(g);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
	jg_key(g, "cpus");
	yajl_gen_array_open(g);
	for (uint32_t c = 0; h->cpus != NULL && c < h->nr_cpus; c++) {
		const struct vmb_cpu *cpu = &h->cpus[c];

		yajl_gen_map_open(g);
		jg_kv_u64(g, "cpu", cpu->cpu);
		jg_kv_u64(g, "node", cpu->node);
		jg_kv_u64(g, "socket", cpu->socket);
		jg_kv_u64(g, "core", cpu->core);
		jg_kv_u64(g, "thread", cpu->thread);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
	/* State records the daemon moved aside (state.h). */
	jg_key(g, "quarantined");
	state_gen_quarantined(g);
	yajl_gen_map_close(g);
}

static void
kv_known(yajl_gen g, const char *key, uint64_t v, bool known)
{
	jg_key(g, key);
	if (known)
		jg_u64(g, v);
	else
		yajl_gen_null(g);
}

static void
gen_span(yajl_gen g, const char *key, const struct vmb_span *s)
{
	jg_key(g, key);
	yajl_gen_map_open(g);
	jg_kv_dbl(g, "start_seconds", s->start_ns / 1e9);
	jg_kv_dbl(g, "end_seconds", s->end_ns / 1e9);
	yajl_gen_map_close(g);
}

void
report_build(yajl_gen g, const struct vmb_build_result *r,
    enum vmb_populate_strategy strategy, const struct report_keep *keep)
{
	const struct vmb_placement *p = &r->placement;
	const struct vmb_populate_stats *s = &r->populate;

	yajl_gen_map_open(g);
	jg_kv_str(g, "strategy", vmb_populate_strategy_name(strategy));
	jg_kv_dbl(g, "total_seconds", r->total_ns / 1e9);
	/* Part of phase place: waiting for the background scrubber. */
	jg_kv_dbl(g, "scrub_wait_seconds", r->scrub_wait_ns / 1e9);
	/* What the main line waited for, of the work beside it. */
	jg_kv_dbl(g, "images_wait_seconds", r->images_wait_ns / 1e9);
	/* The kernel came unpacked from libvmbuild's image cache. */
	jg_kv_bool(g, "kernel_cached", r->kernel_cached);
	jg_kv_dbl(g, "devices_wait_seconds", r->devices_wait_ns / 1e9);
	/* Lengths: they overlap, so they add up to more than the total. */
	jg_key(g, "phases");
	yajl_gen_map_open(g);
	for (int i = 0; i < VMB_PHASE_DONE; i++)
		jg_kv_dbl(g, vmb_build_phase_name(i), r->phase_ns[i] / 1e9);
	yajl_gen_map_close(g);
	/* When each ran, from the build's start. */
	jg_key(g, "timeline");
	yajl_gen_map_open(g);
	gen_span(g, "images", &r->images_span);
	for (int i = 0; i < VMB_PHASE_DONE; i++)
		gen_span(g, vmb_build_phase_name(i), &r->phase_span[i]);
	yajl_gen_map_close(g);
	jg_key(g, "placement");
	yajl_gen_map_open(g);
	jg_key(g, "nodes");
	yajl_gen_array_open(g);
	for (uint32_t i = 0; i < p->nr_nodes && i < VMB_MAX_NODES; i++)
		jg_u64(g, p->nodes[i]);
	yajl_gen_array_close(g);
	jg_key(g, "node_bytes");
	yajl_gen_array_open(g);
	for (uint32_t i = 0; i < p->nr_nodes && i < VMB_MAX_NODES; i++)
		jg_u64(g, p->node_bytes[i]);
	yajl_gen_array_close(g);
	jg_kv_str(g, "reason", p->reason);
	yajl_gen_map_close(g);
	jg_key(g, "populate");
	yajl_gen_map_open(g);
	jg_kv_u64(g, "calls", s->calls);
	by_name(g, "extents", order_class, s->extents, VMB_ORDER_CLASS_MAX);
	/* Counts the backend cannot know are null, not 0. */
	kv_known(g, "pages_scrubbed_inline", s->pages_scrubbed_inline,
	    s->have & VMB_POPSTAT_HAVE_SCRUBBED_INLINE);
	kv_known(g, "pages_fallback", s->pages_fallback,
	    s->have & VMB_POPSTAT_HAVE_FALLBACK);
	kv_known(g, "flushes_issued", s->flushes_issued,
	    s->have & VMB_POPSTAT_HAVE_FLUSHES);
	kv_known(g, "flushes_avoided", s->flushes_avoided,
	    s->have & VMB_POPSTAT_HAVE_FLUSHES);
	kv_known(g, "filter_evaluations", s->filter_evaluations,
	    s->have & VMB_POPSTAT_HAVE_FILTER);
	jg_kv_u64(g, "extents_split", s->extents_split);
	if (s->have & VMB_POPSTAT_HAVE_HV_TIME)
		jg_kv_dbl(g, "hypervisor_seconds", s->hv_ns / 1e9);
	else
		jg_kv_null(g, "hypervisor_seconds");
	jg_key(g, "node_bytes");
	yajl_gen_map_open(g);
	for (int i = 0; i < VMB_MAX_NODES; i++) {
		char key[16];

		if (s->node_bytes[i] == 0)
			continue;
		snprintf(key, sizeof(key), "%d", i);
		jg_kv_u64(g, key, s->node_bytes[i]);
	}
	yajl_gen_map_close(g);
	yajl_gen_map_close(g);
	jg_kv_u64(g, "workers", r->workers);
	jg_kv_u64(g, "workers_pinned", r->workers_pinned);
	/* Why the engine ran as many workers as it did (see vmbuild.h). */
	if (r->cpu_wait_known)
		jg_kv_dbl(g, "cpu_wait_share", r->cpu_wait);
	else
		jg_kv_null(g, "cpu_wait_share");
	jg_kv_bool(g, "workers_serial", r->workers_serial);
	/* The daemon's threads on one CPU for the request (cpukeep.h). */
	if (keep->share_before >= 0)
		jg_kv_dbl(g, "cpu_wait_share_before", keep->share_before);
	else
		jg_kv_null(g, "cpu_wait_share_before");
	if (keep->cpu >= 0)
		jg_kv_u64(g, "cpu_kept", (uint64_t)keep->cpu);
	else
		jg_kv_null(g, "cpu_kept");
	/* Where populate's time went, worker by worker (see vmbuild.h). */
	jg_key(g, "worker_profile");
	yajl_gen_map_open(g);
	jg_kv_dbl(g, "longest_seconds", r->worker_profile.longest_ns / 1e9);
	jg_kv_u64(g, "longest_bytes", r->worker_profile.longest_bytes);
	jg_kv_dbl(g, "shortest_seconds",
	    r->worker_profile.shortest_ns / 1e9);
	jg_kv_dbl(g, "busy_seconds", r->worker_profile.busy_ns / 1e9);
	yajl_gen_map_close(g);
	jg_kv_bool(g, "image_loaded", r->image_loaded);
	jg_kv_u64(g, "entry", r->entry);
	jg_kv_u64(g, "start_info", r->start_info);
	yajl_gen_map_close(g);
}
