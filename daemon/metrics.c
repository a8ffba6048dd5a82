/*
 * metrics.c - the Prometheus endpoint (see metrics.h).
 *
 * Names follow DESIGN.md: prefix vmbuild_, base units (memory in bytes,
 * whatever the hypervisor counts), counters end in _total.  A group the
 * hypervisor does not report is left out entirely rather than exported
 * as zeros; vmbuild_hypervisor_scrape_ok says whether the last snapshot
 * could be taken.  Per-VM families are labelled by name and domain id;
 * the process_* families are the ones Prometheus client libraries
 * export.  Errors are answered in plain text, as the scrape is.
 *
 * HTTP clients are bounded (--max-metrics-connections), and a client
 * must send its whole request within --metrics-request-timeout seconds
 * of connecting (or of its previous reply): evhttp's own timeout starts
 * again at each byte, so a client trickling one byte every few seconds
 * would hold its slot for ever.  At the limit a new client is still
 * taken, and the one whose request began first (the slowest, or the
 * longest idle) is shed to make room: a busy endpoint never starves a
 * new scrape.  A connection is counted through the bufferevent evhttp
 * asks us for (metrics_sweep), and closed by shutting its socket down,
 * which evhttp sees as the client's end.  When accept() fails for want
 * of descriptors the
 * listener pauses for a second and says so at most once every 10 s,
 * instead of spinning on a listener that stays readable and logging
 * every failure.
 */
#include <errno.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <zlib.h>

#include "control.h"
#include "log.h"
#include "metrics.h"
#include "procstat.h"
#include "task.h"
#include "vm.h"
#include "vmbuildd.h"
#include "worker.h"

#define METRICS_REFRESH_SEC	2
#define METRICS_WRITE_MAX	(1 << 20)	/* bytes a write at most */
#define METRICS_PROCSTAT_SEC	1	/* the process' figures at most so old */

/* Upper bounds of the create-duration histogram, in seconds. */
static const double create_buckets[] = {
	0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120,
};
#define NBUCKETS	(sizeof(create_buckets) / sizeof(create_buckets[0]))

/* Upper bounds of the migration-downtime histogram, in seconds. */
static const double downtime_buckets[] = {
	0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
};
#define NDOWNTIME	(sizeof(downtime_buckets) / sizeof(downtime_buckets[0]))

/*
 * Series rendered once and shared by the replies that send them (the
 * per-VM ones, the snapshot's), and the same compressed on their own
 * (see gz_piece()) for the replies in gzip: text[len] then gz[gzlen].
 */
struct mtext {
	unsigned	refs;
	size_t		len;
	size_t		gzlen;		/* 0: not compressed */
	uLong		crc;		/* crc32 of text */
	char		text[];
};

/* An HTTP client, counted through its bufferevent (metrics_bevcb). */
struct mconn {
	struct bufferevent *bev;	/* referenced, see metrics_sweep */
	double		since;		/* its request began: accept, last reply */
	bool		waiting;	/* its request is not complete yet */
	bool		shed;		/* shut down by us: evhttp closes it */
};

static void metrics_request_seen(struct evhttp_request *req);

struct snap_job {
	struct job	job;
	int		rc_counters, rc_scrub;
	struct vmb_counters counters;
	struct vmb_scrub scrub;
};

static struct {
	struct evhttp	*http;
	struct evconnlistener *listener;
	struct event	*ev_refresh;
	struct event	*ev_resume;	/* accept again after an error */
	struct event	*ev_sweep;	/* connections evhttp let go */
	struct mconn	*socks;
	size_t		nsocks, cap;
	struct log_rate	accept_rate, deadline_rate;
	unsigned	nconns, max_conns;	/* nconns: not shed */
	unsigned	nshed;		/* shut down, not yet gone */
	unsigned	request_timeout;	/* s */
	bool		accept_failed;	/* paused by an accept error */
	bool		busy;
	/* The snapshot. */
	bool		have_counters, have_scrub;
	struct vmb_counters counters;
	struct vmb_scrub scrub;
	bool		scrape_ok;
	double		snap_mono;
	struct mtext	*snap_text;	/* its series, rendered once a tick */
	struct procstat	ps;		/* the process, see render_process */
	double		ps_mono;
	/* Kept by the loop. */
	uint64_t	builds[3];	/* done, failed, cancelled */
	uint64_t	saves[3], restores[3];	/* the same */
	uint64_t	save_bytes, restore_bytes;
	uint64_t	migrations[3];	/* sent: done, failed, cancelled */
	uint64_t	mig_sent, mig_received;	/* stream bytes */
	uint64_t	down_bucket[NDOWNTIME], down_count;
	double		down_sum;
	uint64_t	bucket[NBUCKETS];
	uint64_t	dur_count;
	double		dur_sum;
	uint64_t	populated[VMB_MAX_NODES];
	uint64_t	scrapes;
	/* What the registry gives a scrape, see vms_update(). */
	struct mtext	*vms;		/* the per-VM series */
	uint64_t	vms_generation;	/* the vm_generation() they show */
	z_stream	z;		/* raw deflate, reset for each piece */
	bool		have_z;
	unsigned	states[8], building;	/* vm_count_states() */
	/* The bodies of this round of the loop, see round_body(). */
	struct round {
		struct timeval	tv;	/* the round's time; 0: none yet */
		uint64_t	gen;	/* vm_generation() it shows */
		struct evbuffer	*body;	/* the whole body */
		bool		gz;	/* it is in gzip */
	}		round[2];	/* [wants gzip] */
} MX;

void
metrics_build_done(const char *state, double seconds,
    const struct vmb_build_result *r)
{
	int i = strcmp(state, "done") == 0 ? 0 :
	    strcmp(state, "failed") == 0 ? 1 : 2;

	MX.builds[i]++;
	if (i != 0 || r == NULL)
		return;
	/* Only successful builds: a failed one says nothing of speed. */
	for (size_t b = 0; b < NBUCKETS; b++)
		if (seconds <= create_buckets[b])
			MX.bucket[b]++;
	MX.dur_count++;
	MX.dur_sum += seconds;
	for (int n = 0; n < VMB_MAX_NODES; n++)
		MX.populated[n] += r->populate.node_bytes[n];
}

void
metrics_stream_done(bool restore, const char *result, uint64_t bytes)
{
	int i = strcmp(result, "done") == 0 ? 0 :
	    strcmp(result, "failed") == 0 ? 1 : 2;

	if (restore) {
		MX.restores[i]++;
		MX.restore_bytes += bytes;
	} else {
		MX.saves[i]++;
		MX.save_bytes += bytes;
	}
}

void
metrics_restore_bytes(uint64_t bytes)
{
	MX.restore_bytes += bytes;
}

void
metrics_migration_done(const char *result, uint64_t bytes, double downtime_s)
{
	int i = strcmp(result, "done") == 0 ? 0 :
	    strcmp(result, "failed") == 0 ? 1 : 2;

	MX.migrations[i]++;
	MX.mig_sent += bytes;
	if (downtime_s < 0)
		return;
	for (size_t b = 0; b < NDOWNTIME; b++)
		if (downtime_s <= downtime_buckets[b])
			MX.down_bucket[b]++;
	MX.down_count++;
	MX.down_sum += downtime_s;
}

void
metrics_migration_received(uint64_t bytes)
{
	MX.mig_received += bytes;
}

static void
family(struct evbuffer *b, const char *name, const char *type,
    const char *help)
{
	evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help,
	    name, type);
}

/* A family of one series without labels; `fmt` prints the value. */
static void
single(struct evbuffer *b, const char *name, const char *type,
    const char *help, const char *fmt, double v)
{
	family(b, name, type, help);
	evbuffer_add_printf(b, "%s ", name);
	evbuffer_add_printf(b, fmt, v);
	evbuffer_add(b, "\n", 1);
}


/*
 * The counters of counters.def: a family at its first entry, with every
 * entry of that family as one series.  A group the hypervisor does not
 * report is left out.
 */
/* Has an entry before `i` the same metric family? */
static bool
family_seen(int i, const char *metric)
{
	for (int j = 0; j < i; j++) {
		const char *m = vmb_counter_info(j)->metric;

		if (m != NULL && strcmp(m, metric) == 0)
			return true;
	}
	return false;
}

static void
render_counters(struct evbuffer *b, const struct vmb_counters *c)
{
	for (int i = 0; i < VMB_COUNTER_MAX; i++) {
		const struct vmb_counter_info *ci = vmb_counter_info(i);

		const char *unit;
		uint64_t scale;

		if (ci->metric == NULL || !(c->have & ci->have) ||
		    family_seen(i, ci->metric))
			continue;
		/* Memory goes out in bytes, whatever the hypervisor counts. */
		scale = vmb_counter_metric_scale(i, &unit);
		evbuffer_add_printf(b, "# HELP %s %s Unit: %s.\n"
		    "# TYPE %s counter\n", ci->metric, ci->help, unit,
		    ci->metric);
		for (int j = i; j < VMB_COUNTER_MAX; j++) {
			const struct vmb_counter_info *s = vmb_counter_info(j);

			if (s->metric == NULL || strcmp(s->metric, ci->metric))
				continue;
			evbuffer_add_printf(b, "%s%s%s%s %llu\n", s->metric,
			    s->labels[0] ? "{" : "", s->labels,
			    s->labels[0] ? "}" : "",
			    (unsigned long long)(c->v[j] * scale));
		}
	}
}

/* The per-node families of the scrub snapshot. */
static const struct {
	const char	*name;
	const char	*type;
	const char	*help;
	uint32_t	have;		/* VMB_SCRUB_HAVE_* needed; 0: always */
	size_t		offset;		/* in struct vmb_scrub_node */
} scrub_families[] = {
	{ "vmbuild_node_total_bytes", "gauge", "Memory of each NUMA node.",
	  0, offsetof(struct vmb_scrub_node, total_bytes) },
	{ "vmbuild_node_free_bytes", "gauge",
	  "Free memory of each NUMA node, clean and dirty.",
	  0, offsetof(struct vmb_scrub_node, free_bytes) },
	{ "vmbuild_scrub_dirty_bytes", "gauge",
	  "Free memory waiting to be scrubbed.",
	  VMB_SCRUB_HAVE_DIRTY, offsetof(struct vmb_scrub_node, dirty_bytes) },
	{ "vmbuild_scrub_scrubbed_bytes_total", "counter",
	  "Memory scrubbed since boot.", VMB_SCRUB_HAVE_SCRUBBED,
	  offsetof(struct vmb_scrub_node, scrubbed_bytes_total) },
	{ "vmbuild_scrub_rate_bytes_per_second", "gauge",
	  "Current scrub rate.", VMB_SCRUB_HAVE_RATE,
	  offsetof(struct vmb_scrub_node, rate_bytes_per_sec) },
	{ "vmbuild_scrub_clean_1g_bytes", "gauge",
	  "Free memory in wholly clean 1 GiB blocks: what 1 GiB extents "
	  "take without scrubbing inline.", VMB_SCRUB_HAVE_BLOCKS,
	  offsetof(struct vmb_scrub_node, clean_1g_bytes) },
};

static void
render_scrub(struct evbuffer *b, const struct vmb_scrub *s)
{
	for (size_t f = 0; f < sizeof(scrub_families) /
	    sizeof(scrub_families[0]); f++) {
		if ((s->have & scrub_families[f].have) !=
		    scrub_families[f].have)
			continue;
		family(b, scrub_families[f].name, scrub_families[f].type,
		    scrub_families[f].help);
		for (uint32_t i = 0; i < s->nr_nodes; i++) {
			uint64_t v;

			memcpy(&v, (const char *)&s->nodes[i] +
			    scrub_families[f].offset, sizeof(v));
			evbuffer_add_printf(b, "%s{node=\"%u\"} %llu\n",
			    scrub_families[f].name, s->nodes[i].node,
			    (unsigned long long)v);
		}
	}
}

/* Saves and restores (save.c): results, and the stream's bytes. */
static void
render_streams(struct evbuffer *b)
{
	static const char *const results[] = { "done", "failed", "cancelled" };

	family(b, "vmbuild_saves_total", "counter",
	    "Saves (vm.save) that ended, by result.");
	for (int i = 0; i < 3; i++)
		evbuffer_add_printf(b, "vmbuild_saves_total{result=\"%s\"} "
		    "%llu\n", results[i], (unsigned long long)MX.saves[i]);
	family(b, "vmbuild_restores_total", "counter",
	    "Restores (vm.restore) that ended, by result.");
	for (int i = 0; i < 3; i++)
		evbuffer_add_printf(b, "vmbuild_restores_total{result=\"%s\"} "
		    "%llu\n", results[i], (unsigned long long)MX.restores[i]);
	single(b, "vmbuild_save_bytes_total", "counter",
	    "Save stream bytes written by saves that completed.", "%.0f",
	    (double)MX.save_bytes);
	single(b, "vmbuild_restore_bytes_total", "counter",
	    "Save stream bytes read by restores.", "%.0f",
	    (double)MX.restore_bytes);
}

/* Migrations (migrate.c, save.c): results, bytes, the downtime. */
static void
render_migrations(struct evbuffer *b)
{
	static const char *const results[] = { "done", "failed", "cancelled" };
	static const char *const name = "vmbuild_migration_downtime_seconds";

	family(b, "vmbuild_migrations_total", "counter",
	    "Migrations this daemon sent (vm.migrate_send) that ended, by "
	    "result.");
	for (int i = 0; i < 3; i++)
		evbuffer_add_printf(b, "vmbuild_migrations_total{result=\"%s\"} "
		    "%llu\n", results[i], (unsigned long long)MX.migrations[i]);
	family(b, "vmbuild_migration_bytes_total", "counter",
	    "Migration stream bytes sent and received.");
	evbuffer_add_printf(b, "vmbuild_migration_bytes_total{direction="
	    "\"sent\"} %llu\n", (unsigned long long)MX.mig_sent);
	evbuffer_add_printf(b, "vmbuild_migration_bytes_total{direction="
	    "\"received\"} %llu\n", (unsigned long long)MX.mig_received);
	family(b, name, "histogram", "Guest paused on the sender until the "
	    "receiver said it runs, completed migrations only.");
	for (size_t i = 0; i < NDOWNTIME; i++)
		evbuffer_add_printf(b, "%s_bucket{le=\"%g\"} %llu\n", name,
		    downtime_buckets[i], (unsigned long long)MX.down_bucket[i]);
	evbuffer_add_printf(b, "%s_bucket{le=\"+Inf\"} %llu\n", name,
	    (unsigned long long)MX.down_count);
	evbuffer_add_printf(b, "%s_sum %.6f\n", name, MX.down_sum);
	evbuffer_add_printf(b, "%s_count %llu\n", name,
	    (unsigned long long)MX.down_count);
}

/*
 * libvmbuild's cache of unpacked kernels (--image-cache), read live: a
 * lock taken and a few numbers copied.
 */
static void
render_image_cache(struct evbuffer *b)
{
	struct vmb_image_cache_stats st;

	if (vmb_image_cache_stats(vmbd.ctx, &st) != 0)
		return;
	single(b, "vmbuild_image_cache_hits_total", "counter",
	    "Builds whose kernel was found unpacked in the image cache.",
	    "%.0f", (double)st.hits);
	single(b, "vmbuild_image_cache_misses_total", "counter",
	    "bzImage kernels unpacked while the image cache was on.",
	    "%.0f", (double)st.misses);
	single(b, "vmbuild_image_cache_bytes", "gauge",
	    "Unpacked kernels held by the image cache.", "%.0f",
	    (double)st.bytes);
}

/* What this daemon's builds did: bytes per node, durations, results. */
static void
render_builds(struct evbuffer *b)
{
	static const char *const results[] = { "done", "failed", "cancelled" };

	family(b, "vmbuild_populate_bytes_total", "counter",
	    "Guest memory populated by this daemon's builds, by node.");
	for (int n = 0; n < VMB_MAX_NODES; n++) {
		bool node_known = n < (int)MX.scrub.nr_nodes;

		if (MX.populated[n] == 0 && !node_known)
			continue;
		evbuffer_add_printf(b, "vmbuild_populate_bytes_total"
		    "{node=\"%d\"} %llu\n", n,
		    (unsigned long long)MX.populated[n]);
	}
	family(b, "vmbuild_vm_create_duration_seconds", "histogram",
	    "Time to build a VM, successful builds only.");
	for (size_t i = 0; i < NBUCKETS; i++)
		evbuffer_add_printf(b, "vmbuild_vm_create_duration_seconds_bucket"
		    "{le=\"%g\"} %llu\n", create_buckets[i],
		    (unsigned long long)MX.bucket[i]);
	evbuffer_add_printf(b, "vmbuild_vm_create_duration_seconds_bucket"
	    "{le=\"+Inf\"} %llu\n", (unsigned long long)MX.dur_count);
	evbuffer_add_printf(b, "vmbuild_vm_create_duration_seconds_sum %.6f\n",
	    MX.dur_sum);
	evbuffer_add_printf(b, "vmbuild_vm_create_duration_seconds_count "
	    "%llu\n", (unsigned long long)MX.dur_count);
	family(b, "vmbuild_vm_creates_total", "counter",
	    "Builds that ended, by result.");
	for (int i = 0; i < 3; i++)
		evbuffer_add_printf(b, "vmbuild_vm_creates_total{result=\"%s\"} "
		    "%llu\n", results[i], (unsigned long long)MX.builds[i]);
	render_image_cache(b);
	render_streams(b);
	render_migrations(b);
}

/* The daemon itself: VMs, tasks, clients, scrapes. */
static void
render_daemon(struct evbuffer *b)
{
	family(b, "vmbuild_vms", "gauge", "VMs by state.");
	evbuffer_add_printf(b, "vmbuild_vms{state=\"building\"} %u\n",
	    MX.building);
	for (int i = VMB_DOM_PAUSED; i <= VMB_DOM_CRASHED; i++)
		evbuffer_add_printf(b, "vmbuild_vms{state=\"%s\"} %u\n",
		    vmb_domain_state_name(i), MX.states[i]);
	family(b, "vmbuild_tasks_running", "gauge", "Tasks running.");
	evbuffer_add_printf(b, "vmbuild_tasks_running %u\n", task_running());
	family(b, "vmbuild_control_connections", "gauge",
	    "Clients connected to the control socket.");
	evbuffer_add_printf(b, "vmbuild_control_connections %u\n",
	    control_connections());
	family(b, "vmbuild_control_output_bytes", "gauge",
	    "Replies and events queued for control clients.");
	evbuffer_add_printf(b, "vmbuild_control_output_bytes %zu\n",
	    control_output_bytes());
	family(b, "vmbuild_metrics_connections", "gauge",
	    "HTTP clients connected to this endpoint.");
	evbuffer_add_printf(b, "vmbuild_metrics_connections %u\n", MX.nconns);
	family(b, "vmbuild_hypervisor_up", "gauge",
	    "1 if the hypervisor answered the last domain list.");
	evbuffer_add_printf(b, "vmbuild_hypervisor_up %d\n",
	    vm_backend_up() ? 1 : 0);
	family(b, "vmbuild_metrics_scrapes_total", "counter",
	    "Scrapes of this endpoint.");
	evbuffer_add_printf(b, "vmbuild_metrics_scrapes_total %llu\n",
	    (unsigned long long)MX.scrapes);
	family(b, "vmbuild_log_dropped_total", "counter",
	    "Log messages dropped: the journal, syslog or stderr was full.");
	evbuffer_add_printf(b, "vmbuild_log_dropped_total %llu\n",
	    log_dropped());
}

/* A label value as the text format wants it: \\, \" and \n escaped. */
static void
label_value(struct evbuffer *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			evbuffer_add_printf(b, "\\%c", *s);
		else if (*s == '\n')
			evbuffer_add(b, "\\n", 2);
		else
			evbuffer_add(b, s, 1);
	}
}

/* name{name="VM",id="N"<extra>} at the start of a series. */
static void
vm_series(struct evbuffer *b, const char *family, const struct vm *vm,
    const char *extra)
{
	evbuffer_add_printf(b, "%s{name=\"", family);
	label_value(b, vm->name);
	evbuffer_add_printf(b, "\",id=\"%u\"%s} ", vm->domid, extra);
}

/* Does the hypervisor's last report of this VM's domain count? */
static bool
vm_reported(const struct vm *vm)
{
	return vm->domid != VMB_DOMID_INVALID && vm->have_dom &&
	    vm->state != VM_BUILDING;
}

/*
 * Per VM: memory, vCPUs and CPU time as the hypervisor last reported
 * them, and the state as a state set (1 for the VM's state, 0 for the
 * others, so that a series does not vanish when the state changes; a
 * build has its series once its domain exists).  The control domain is
 * not a VM here.
 */
static void
render_vms(struct evbuffer *b)
{
	const struct vm *vm;
	char extra[64];

	family(b, "vmbuild_vm_memory_bytes", "gauge",
	    "Memory populated for each VM.");
	for (vm = vm_first(); vm != NULL; vm = vm_next(vm))
		if (vm_reported(vm)) {
			vm_series(b, "vmbuild_vm_memory_bytes", vm, "");
			evbuffer_add_printf(b, "%llu\n",
			    (unsigned long long)vm->dom.memory_bytes);
		}
	family(b, "vmbuild_vm_vcpus", "gauge", "vCPUs online of each VM.");
	for (vm = vm_first(); vm != NULL; vm = vm_next(vm))
		if (vm_reported(vm)) {
			vm_series(b, "vmbuild_vm_vcpus", vm, "");
			evbuffer_add_printf(b, "%u\n", vm_vcpus_online(vm));
		}
	family(b, "vmbuild_vm_cpu_seconds_total", "counter",
	    "CPU time used by each VM's vCPUs (0 on hvsim, which runs no "
	    "guest code).");
	for (vm = vm_first(); vm != NULL; vm = vm_next(vm))
		if (vm_reported(vm)) {
			vm_series(b, "vmbuild_vm_cpu_seconds_total", vm, "");
			evbuffer_add_printf(b, "%.9f\n",
			    vm->dom.cpu_time_ns / 1e9);
		}
	family(b, "vmbuild_vm_state", "gauge", "State of each VM: 1 for the "
	    "state it is in, 0 for the others.");
	for (vm = vm_first(); vm != NULL; vm = vm_next(vm)) {
		const char *state = vm_state_name(vm);

		if (vm->domid == VMB_DOMID_INVALID ||
		    (!vm->have_dom && vm->state != VM_BUILDING))
			continue;
		vm_series(b, "vmbuild_vm_state", vm, ",state=\"building\"");
		evbuffer_add_printf(b, "%d\n", vm->state == VM_BUILDING);
		vm_series(b, "vmbuild_vm_state", vm, ",state=\"saving\"");
		evbuffer_add_printf(b, "%d\n", vm->state == VM_SAVING);
		for (int i = VMB_DOM_PAUSED; i <= VMB_DOM_CRASHED; i++) {
			snprintf(extra, sizeof(extra), ",state=\"%s\"",
			    vmb_domain_state_name(i));
			vm_series(b, "vmbuild_vm_state", vm, extra);
			evbuffer_add_printf(b, "%d\n", strcmp(state,
			    vmb_domain_state_name(i)) == 0);
		}
	}
}

static void
mtext_put(const void *data, size_t len, void *arg)
{
	struct mtext *t = arg;

	(void)data;
	(void)len;
	if (t != NULL && --t->refs == 0)
		free(t);
}

/*
 * `len` bytes as raw deflate, appended to `out`: a piece of a gzip body
 * compressed apart from the others.  It ends with a full flush,
 * byte-aligned and referring to nothing before it, so that pieces
 * compressed at different times (the per-VM series once per change of
 * the registry, the snapshot's once a tick) and the live series stored
 * as they are (gz_stored()) make one valid deflate stream put one after
 * the other.  Level 1: the text repeats itself enough that more effort
 * buys little.
 */
static int
gz_piece(const void *src, size_t len, struct evbuffer *out)
{
	unsigned char buf[16384];
	int rc;

	if (!MX.have_z) {
		if (deflateInit2(&MX.z, 1, Z_DEFLATED, -15, 8,
		    Z_DEFAULT_STRATEGY) != Z_OK)
			return -1;
		MX.have_z = true;
	} else if (deflateReset(&MX.z) != Z_OK)
		return -1;
	MX.z.next_in = (Bytef *)src;
	MX.z.avail_in = (uInt)len;
	do {
		MX.z.next_out = buf;
		MX.z.avail_out = sizeof(buf);
		rc = deflate(&MX.z, Z_FULL_FLUSH);
		if (rc == Z_STREAM_ERROR || evbuffer_add(out, buf,
		    sizeof(buf) - MX.z.avail_out) < 0)
			return -1;
	} while (MX.z.avail_out == 0);
	return 0;
}

/*
 * The text of `b` shared (see struct mtext), compressed as a piece of
 * a gzip body; NULL without memory.
 */
static struct mtext *
mtext_new(struct evbuffer *b)
{
	struct evbuffer *gz = evbuffer_new();
	size_t len = evbuffer_get_length(b), gzlen;
	unsigned char *text = evbuffer_pullup(b, -1);
	struct mtext *t = NULL;

	if (gz == NULL || (len > 0 && text == NULL))
		goto out;
	if (gz_piece(text, len, gz) < 0)
		evbuffer_drain(gz, evbuffer_get_length(gz));
	gzlen = evbuffer_get_length(gz);
	if ((t = malloc(sizeof(*t) + len + gzlen)) == NULL)
		goto out;
	t->refs = 1;
	t->len = len;
	t->gzlen = gzlen;
	t->crc = crc32(crc32(0, NULL, 0), text, (uInt)len);
	if (len > 0)		/* an empty body has no text to copy */
		memcpy(t->text, text, len);
	evbuffer_copyout(gz, t->text + len, gzlen);
out:
	if (gz != NULL)
		evbuffer_free(gz);
	return t;
}

/*
 * The per-VM series, about 10 a VM, are most of a big host's scrape,
 * and counting VMs by state walks them all: both are done once per
 * change of the registry (vm_generation(), which moves at each event,
 * operation and domain list, where vm.list's cache is dropped), not
 * once per scrape.  Replies reference the text rather than copy it,
 * each holding a reference until evhttp has sent it, so that a newer
 * rendering never changes a reply still queued.  Without memory for
 * the text, MX.vms stays NULL and render_vms_cached() renders it.
 */
static void
vms_update(void)
{
	struct evbuffer *b;

	if (MX.vms != NULL && MX.vms_generation == vm_generation())
		return;
	memset(MX.states, 0, sizeof(MX.states));
	MX.building = 0;
	vm_count_states(MX.states, &MX.building);
	mtext_put(NULL, 0, MX.vms);
	MX.vms = NULL;
	if ((b = evbuffer_new()) == NULL)
		return;
	render_vms(b);
	/* Compressed now, once per change, not once per scrape. */
	if ((MX.vms = mtext_new(b)) != NULL)
		MX.vms_generation = vm_generation();
	evbuffer_free(b);
}

/* The per-VM series into `b`: the cached text, or rendered there. */
static void
render_vms_cached(struct evbuffer *b)
{
	struct mtext *t = MX.vms;

	if (t != NULL) {
		t->refs++;
		if (evbuffer_add_reference(b, t->text, t->len, mtext_put,
		    t) == 0)
			return;
		t->refs--;
	}
	render_vms(b);
}


/* The process collector's families, as Prometheus client libraries have. */
static void
render_process(struct evbuffer *b)
{
	struct procstat ps;

	/*
	 * Counting descriptors reads /proc/self/fd, one entry a client:
	 * with 100 scrapers at once, a tenth of each scrape.  Read at most
	 * once a second.
	 */
	if (MX.ps_mono == 0 || now_mono() - MX.ps_mono >= METRICS_PROCSTAT_SEC) {
		procstat_read(&MX.ps);
		MX.ps_mono = now_mono();
	}
	ps = MX.ps;
	single(b, "process_cpu_seconds_total", "counter",
	    "Total user and system CPU time spent in seconds.", "%.6f",
	    ps.cpu_seconds);
	if (ps.have_memory) {
		single(b, "process_resident_memory_bytes", "gauge",
		    "Resident memory size in bytes.", "%.0f",
		    (double)ps.resident_bytes);
		single(b, "process_virtual_memory_bytes", "gauge",
		    "Virtual memory size in bytes.", "%.0f",
		    (double)ps.virtual_bytes);
	}
	if (ps.have_fds)
		single(b, "process_open_fds", "gauge",
		    "Number of open file descriptors.", "%.0f",
		    (double)ps.open_fds);
	single(b, "process_max_fds", "gauge",
	    "Maximum number of open file descriptors.", "%.0f",
	    (double)ps.max_fds);
	if (ps.start_time > 0)
		single(b, "process_start_time_seconds", "gauge",
		    "Start time of the process since unix epoch in seconds.",
		    "%.2f", ps.start_time);
}

/* The first families: what the scrape is of. */
static void
render_about(struct evbuffer *b)
{
	family(b, "vmbuild_build_info", "gauge",
	    "Version of vmbuildd and the backend it runs on.");
	evbuffer_add_printf(b, "vmbuild_build_info{version=\"%s\","
	    "backend=\"%s\"} 1\n", VMB_VERSION, vmb_ctx_backend(vmbd.ctx));
	family(b, "vmbuild_hypervisor_scrape_ok", "gauge",
	    "1 if the last snapshot of hypervisor data succeeded.");
	evbuffer_add_printf(b, "vmbuild_hypervisor_scrape_ok %d\n",
	    MX.scrape_ok ? 1 : 0);
	family(b, "vmbuild_snapshot_age_seconds", "gauge",
	    "Age of the hypervisor data in this scrape.");
	evbuffer_add_printf(b, "vmbuild_snapshot_age_seconds %.3f\n",
	    MX.snap_mono > 0 ? now_mono() - MX.snap_mono : 0);
}

/* The snapshot's series: as snap_done() rendered them, or now. */
static void
render_snapshot(struct evbuffer *b)
{
	if (MX.snap_text != NULL && evbuffer_add(b, MX.snap_text->text,
	    MX.snap_text->len) == 0)
		return;
	if (MX.have_counters)
		render_counters(b, &MX.counters);
	if (MX.have_scrub)
		render_scrub(b, &MX.scrub);
}

/* The scrape as text. */
static void
render(struct evbuffer *b)
{
	vms_update();
	render_about(b);
	render_snapshot(b);
	render_builds(b);
	render_daemon(b);
	render_vms_cached(b);
	render_process(b);
}

/* Put `v` in 4 bytes, little-endian, as gzip and deflate have it. */
static void
le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* A gzip body being put together: its CRC and length so far. */
struct gzbody {
	struct evbuffer	*out;
	uLong		crc;
	size_t		len;
	int		rc;		/* -1 once anything failed */
};

/*
 * The live series of `text` into the body as they are: deflate's
 * stored blocks (RFC 1951, 3.2.4), byte-aligned like the pieces, which
 * is a copy where compressing them at each scrape cost a third of it.
 */
static void
gz_stored(struct gzbody *g, struct evbuffer *text)
{
	size_t len = evbuffer_get_length(text);
	unsigned char *p = evbuffer_pullup(text, -1), hdr[5];

	if (len > 0 && p == NULL)
		g->rc = -1;
	for (size_t off = 0; g->rc == 0 && off < len; off += 65535) {
		uint16_t n = (uint16_t)(len - off < 65535 ? len - off : 65535);

		hdr[0] = 0;		/* not the last block, stored */
		hdr[1] = n & 0xff;
		hdr[2] = n >> 8;
		hdr[3] = ~n & 0xff;
		hdr[4] = (~n >> 8) & 0xff;
		if (evbuffer_add(g->out, hdr, sizeof(hdr)) < 0 ||
		    evbuffer_add(g->out, p + off, n) < 0)
			g->rc = -1;
	}
	g->crc = crc32(g->crc, p, (uInt)len);
	g->len += len;
	evbuffer_drain(text, len);
}

/* A shared text's compressed piece into the body, by reference. */
static void
gz_shared(struct gzbody *g, struct mtext *t)
{
	if (g->rc < 0 || t == NULL || t->gzlen == 0) {
		g->rc = -1;
		return;
	}
	t->refs++;
	if (evbuffer_add_reference(g->out, t->text + t->len, t->gzlen,
	    mtext_put, t) < 0) {
		t->refs--;
		g->rc = -1;
		return;
	}
	g->crc = crc32_combine(g->crc, t->crc, (z_off_t)t->len);
	g->len += t->len;
}

/*
 * The scrape in gzip, for a client that takes it (Prometheus asks for
 * it).  A big host's scrape is most of a megabyte of text, some 50 KB
 * so, and bytes are what 100 scrapers at once are limited by.  What
 * changes rarely is compressed when it changes (the snapshot's series
 * once a tick, the per-VM ones once per change of the registry); what
 * is live is stored as it is; the trailer has the CRC of the whole
 * (crc32_combine) and its length.  0, or -1 with `out` left empty: the
 * caller answers in text.
 */
static int
render_gzip(struct evbuffer *out)
{
	static const unsigned char head[10] = {
		0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff
	};
	/* The last block: stored, empty. */
	static const unsigned char last[5] = { 1, 0, 0, 0xff, 0xff };
	struct gzbody g = { .out = out, .crc = crc32(0, NULL, 0) };
	struct evbuffer *live = evbuffer_new();
	unsigned char tail[8];

	vms_update();
	if (live == NULL || evbuffer_add(out, head, sizeof(head)) < 0)
		g.rc = -1;
	if (g.rc == 0) {
		render_about(live);
		gz_stored(&g, live);
		gz_shared(&g, MX.snap_text);
		render_builds(live);
		render_daemon(live);
		gz_stored(&g, live);
		gz_shared(&g, MX.vms);
		render_process(live);
		gz_stored(&g, live);
	}
	le32(tail, (uint32_t)g.crc);
	le32(tail + 4, (uint32_t)g.len);
	if (g.rc < 0 || evbuffer_add(out, last, sizeof(last)) < 0 ||
	    evbuffer_add(out, tail, sizeof(tail)) < 0) {
		evbuffer_drain(out, evbuffer_get_length(out));
		g.rc = -1;
	}
	if (live != NULL)
		evbuffer_free(live);
	return g.rc;
}

/*
 * The whole body of a scrape, shared by the scrapes answered in the
 * same round of the event loop (libevent's cached time, taken once a
 * round): 100 scrapers at once send dozens of requests a round, and
 * rendering the live series (a printf for every figure) and their CRC
 * were the larger part of each one's cost.  Requests read in one round
 * are answered as of one moment, as if they had come together (a
 * change of the registry in the round is shown at once all the same).
 * Replies take the body by reference (evbuffer_add_buffer_reference:
 * its chains are shared, not copied), so that a newer body never
 * changes a reply still queued.  NULL without memory; *ret_gz says
 * whether it is gzip.
 */
static struct evbuffer *
round_body(bool want_gz, bool *ret_gz)
{
	struct round *r = &MX.round[want_gz];
	struct timeval now = { 0, 0 };

	(void)event_base_gettimeofday_cached(vmbd.base, &now);
	if (r->body == NULL || !timerisset(&now) ||
	    timercmp(&now, &r->tv, !=) || r->gen != vm_generation()) {
		if (r->body != NULL)
			evbuffer_free(r->body);
		if ((r->body = evbuffer_new()) == NULL)
			return NULL;
		r->gz = want_gz && render_gzip(r->body) == 0;
		if (!r->gz)
			render(r->body);
		r->tv = now;
		r->gen = vm_generation();
	}
	*ret_gz = r->gz;
	return r->body;
}

/*
 * Does the request's Accept-Encoding take gzip: "gzip" or "x-gzip",
 * without a q of 0 (RFC 9110, 12.5.3)?
 */
static bool
wants_gzip(struct evhttp_request *req)
{
	const char *h = evhttp_find_header(
	    evhttp_request_get_input_headers(req), "Accept-Encoding");

	while (h != NULL && *(h += strspn(h, " \t,")) != '\0') {
		size_t n = strcspn(h, " \t;,");
		const char *p = h + n, *end = p + strcspn(p, ",");

		if ((n == 4 && strncasecmp(h, "gzip", 4) == 0) ||
		    (n == 6 && strncasecmp(h, "x-gzip", 6) == 0)) {
			while ((p = memchr(p, ';', end - p)) != NULL) {
				p += 1 + strspn(p + 1, " \t");
				if (strncasecmp(p, "q=", 2) == 0)
					return strtod(p + 2, NULL) > 0;
			}
			return true;
		}
		h = end;
	}
	return false;
}

/*
 * An error answered in plain text, as curl and Prometheus' target page
 * show it (evhttp_send_error would send an HTML page).
 */
static void __attribute__((format(printf, 4, 5)))
http_error(struct evhttp_request *req, int code, const char *reason,
    const char *fmt, ...)
{
	struct evbuffer *b = evbuffer_new();
	va_list ap;

	if (b == NULL) {
		evhttp_send_error(req, code, reason);
		return;
	}
	evbuffer_add_printf(b, "%d %s: ", code, reason);
	va_start(ap, fmt);
	evbuffer_add_vprintf(b, fmt, ap);
	va_end(ap);
	evbuffer_add(b, "\n", 1);
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", "text/plain; charset=utf-8");
	evhttp_send_reply(req, code, reason, b);
	evbuffer_free(b);
}

static void
metrics_cb(struct evhttp_request *req, void *arg)
{
	enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
	struct evbuffer *b, *body;
	bool gz = false;

	(void)arg;
	metrics_request_seen(req);
	if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD) {
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "Allow", "GET, HEAD");
		http_error(req, 405, "Method Not Allowed", "/metrics answers "
		    "GET and HEAD");
		return;
	}
	MX.scrapes++;
	b = evbuffer_new();
	if (b == NULL) {
		http_error(req, 500, "Internal Server Error", "out of memory");
		return;
	}
	body = round_body(wants_gzip(req), &gz);
	if (body == NULL || evbuffer_add_buffer_reference(b, body) < 0) {
		/* Rendered for this reply alone. */
		evbuffer_drain(b, evbuffer_get_length(b));
		gz = wants_gzip(req) && render_gzip(b) == 0;
		if (!gz)
			render(b);
	}
	if (gz)
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "Content-Encoding", "gzip");
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Vary", "Accept-Encoding");
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
	evhttp_send_reply(req, 200, "OK", b);
	evbuffer_free(b);
}

static void
other_cb(struct evhttp_request *req, void *arg)
{
	(void)arg;
	metrics_request_seen(req);
	http_error(req, 404, "Not Found", "vmbuildd serves its metrics at "
	    "/metrics");
}

static void
snap_run(struct job *job)
{
	struct snap_job *sj = (struct snap_job *)job;

	sj->rc_counters = vmb_counters(vmbd.ctx, &sj->counters);
	sj->rc_scrub = vmb_scrub_progress(vmbd.ctx, &sj->scrub);
}

static void
snap_arm(double sec)
{
	struct timeval tv = { (time_t)sec, 0 };

	if (MX.ev_refresh != NULL)
		evtimer_add(MX.ev_refresh, &tv);
}

static void
snap_done(struct job *job)
{
	struct snap_job *sj = (struct snap_job *)job;
	struct evbuffer *b;

	MX.busy = false;
	MX.have_counters = sj->rc_counters == 0;
	if (MX.have_counters)
		MX.counters = sj->counters;
	MX.have_scrub = sj->rc_scrub == 0;
	if (MX.have_scrub)
		MX.scrub = sj->scrub;
	/* -EOPNOTSUPP is "not reported", not a failure. */
	MX.scrape_ok = (sj->rc_counters == 0 ||
	    sj->rc_counters == -EOPNOTSUPP) &&
	    (sj->rc_scrub == 0 || sj->rc_scrub == -EOPNOTSUPP);
	MX.snap_mono = now_mono();
	/*
	 * Its series change with it only: rendered (and compressed) here,
	 * not at each scrape.
	 */
	mtext_put(NULL, 0, MX.snap_text);
	MX.snap_text = NULL;
	if ((b = evbuffer_new()) != NULL) {
		if (MX.have_counters)
			render_counters(b, &MX.counters);
		if (MX.have_scrub)
			render_scrub(b, &MX.scrub);
		MX.snap_text = mtext_new(b);
		evbuffer_free(b);
	}
	free(sj);
	if (!vmbd.stopping)
		snap_arm(METRICS_REFRESH_SEC);
}

static void
refresh_cb(evutil_socket_t fd, short what, void *arg)
{
	struct snap_job *sj;

	(void)fd;
	(void)what;
	(void)arg;
	if (MX.busy || vmbd.stopping)
		return;
	sj = calloc(1, sizeof(*sj));
	if (sj == NULL)
		return;
	sj->job.run = snap_run;
	sj->job.done = snap_done;
	MX.busy = true;
	worker_submit(&sj->job);
}

/*
 * Accept unless paused by an error, or at the limit with as many shed
 * clients still on their way out (each new client over the limit sheds
 * one: descriptors stay bounded by twice the limit).
 */
static void
metrics_listen_update(void)
{
	if (MX.listener == NULL)
		return;
	if (!MX.accept_failed && (MX.nconns < MX.max_conns ||
	    MX.nshed < MX.max_conns))
		evconnlistener_enable(MX.listener);
	else
		evconnlistener_disable(MX.listener);
}

/* Close a client: evhttp reads the end and lets the connection go. */
static void
metrics_shed(struct mconn *m)
{
	evutil_socket_t fd = bufferevent_getfd(m->bev);

	if (fd >= 0)
		(void)shutdown(fd, SHUT_RDWR);
	m->shed = true;
	MX.nconns--;
	MX.nshed++;
}

/*
 * Which connections evhttp still has.  Each socket bufferevent evhttp
 * gets from metrics_bevcb() carries a reference of ours, so that it
 * outlives evhttp's bufferevent_free(), which clears its callbacks: a
 * sweep (at each new connection, and every 250 ms while any is open)
 * finds those and drops our reference, which closes the socket.  The
 * sweep also sheds the clients past --metrics-request-timeout.
 */
static void
metrics_sweep(void)
{
	double now = now_mono();
	unsigned late = 0, held;
	size_t keep = 0;

	MX.nconns = MX.nshed = 0;
	for (size_t i = 0; i < MX.nsocks; i++) {
		struct mconn *m = &MX.socks[i];
		bufferevent_data_cb r, w;
		bufferevent_event_cb e;

		bufferevent_getcb(m->bev, &r, &w, &e, NULL);
		if (r == NULL && w == NULL && e == NULL) {
			bufferevent_decref(m->bev);
			continue;
		}
		MX.socks[keep++] = *m;
		if (m->shed)
			MX.nshed++;
		else
			MX.nconns++;
		if (!m->shed && m->waiting &&
		    now - m->since >= MX.request_timeout) {
			metrics_shed(&MX.socks[keep - 1]);
			late++;
		}
	}
	MX.nsocks = keep;
	if (late > 0 && log_rate_ok(&MX.deadline_rate, 10, &held))
		log_info("metrics: %u HTTP clients sent no whole request "
		    "within %u s, closed (%u such not logged before)", late,
		    MX.request_timeout, held);
	metrics_listen_update();
}

static void
metrics_sweep_cb(evutil_socket_t fd, short what, void *arg)
{
	struct timeval tv = { 0, 250000 };

	(void)fd;
	(void)what;
	(void)arg;
	metrics_sweep();
	if (MX.nsocks > 0)
		evtimer_add(MX.ev_sweep, &tv);
}

/* At the limit: shed the client whose request began first. */
static void
metrics_make_room(void)
{
	struct mconn *old = NULL;

	if (MX.nconns < MX.max_conns)
		return;
	for (size_t i = 0; i < MX.nsocks; i++)
		if (!MX.socks[i].shed && (old == NULL ||
		    MX.socks[i].since < old->since))
			old = &MX.socks[i];
	if (old == NULL)
		return;
	log_debug("metrics: %u HTTP clients, the limit: closing the one "
	    "whose request began %.1f s ago", MX.nconns,
	    now_mono() - old->since);
	metrics_shed(old);
}

/* evhttp's bufferevent for a new connection, counted (see above). */
static struct bufferevent *
metrics_bevcb(struct event_base *base, void *arg)
{
	struct timeval tv = { 0, 250000 };
	struct bufferevent *sock;

	(void)arg;
	metrics_sweep();
	if (MX.nsocks == MX.cap) {
		size_t cap = MX.cap ? MX.cap * 2 : 64;
		struct mconn *n = realloc(MX.socks, cap * sizeof(*n));

		if (n == NULL)
			return NULL;	/* evhttp makes its own: uncounted */
		MX.socks = n;
		MX.cap = cap;
	}
	sock = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (sock == NULL)
		return NULL;
	/*
	 * A big host's scrape is half a megabyte: out in as few writev()
	 * calls as the socket takes, not libevent's 16 KB a loop round.
	 */
	(void)bufferevent_set_max_single_write(sock, METRICS_WRITE_MAX);
	bufferevent_incref(sock);
	metrics_make_room();
	MX.socks[MX.nsocks++] = (struct mconn){ .bev = sock,
	    .since = now_mono(), .waiting = true };
	MX.nconns++;
	metrics_listen_update();
	if (!evtimer_pending(MX.ev_sweep, NULL))
		evtimer_add(MX.ev_sweep, &tv);
	return sock;
}

static struct mconn *
metrics_find(const struct bufferevent *bev)
{
	for (size_t i = 0; i < MX.nsocks; i++)
		if (MX.socks[i].bev == bev)
			return &MX.socks[i];
	return NULL;
}

/* The reply went out: the client's next request begins now. */
static void
metrics_request_done(struct evhttp_request *req, void *arg)
{
	struct mconn *m = metrics_find(arg);

	(void)req;
	if (m != NULL) {
		m->since = now_mono();
		m->waiting = true;
	}
}

/* A whole request came: no deadline until its reply went out. */
static void
metrics_request_seen(struct evhttp_request *req)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct bufferevent *bev;
	struct mconn *m;

	if (evcon == NULL)
		return;
	bev = evhttp_connection_get_bufferevent(evcon);
	m = metrics_find(bev);
	if (m == NULL)
		return;
	m->waiting = false;
	evhttp_request_set_on_complete_cb(req, metrics_request_done, bev);
}

static void
metrics_resume_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	MX.accept_failed = false;
	metrics_listen_update();
}

static void
metrics_accept_error(struct evconnlistener *l, void *arg)
{
	struct timeval tv = { 1, 0 };
	int err = EVUTIL_SOCKET_ERROR();
	unsigned held;

	(void)l;
	(void)arg;
	if (log_rate_ok(&MX.accept_rate, 10, &held))
		log_warnx("metrics: accept: %s; not accepting for 1 s (%u "
		    "such errors not logged before this one)", strerror(err),
		    held);
	MX.accept_failed = true;
	metrics_listen_update();
	evtimer_add(MX.ev_resume, &tv);
}

unsigned
metrics_connections(void)
{
	return MX.nconns;
}

int
metrics_init(struct event_base *base, const char *addr, unsigned max_conns,
    unsigned request_timeout)
{
	struct evhttp_bound_socket *bound;
	char host[256];
	const char *colon = strrchr(addr, ':');
	struct snap_job *sj;
	unsigned long port;
	char *end;
	size_t len;

	if (colon == NULL || colon == addr)
		return -EINVAL;
	len = colon - addr;
	if (addr[0] == '[' && len >= 2 && addr[len - 1] == ']') {
		addr++;
		len -= 2;
	}
	if (len >= sizeof(host))
		return -EINVAL;
	memcpy(host, addr, len);
	host[len] = '\0';
	port = strtoul(colon + 1, &end, 10);
	if (*end != '\0' || colon[1] == '\0' || port > 65535)
		return -EINVAL;
	MX.http = evhttp_new(base);
	MX.ev_resume = evtimer_new(base, metrics_resume_cb, NULL);
	MX.ev_sweep = evtimer_new(base, metrics_sweep_cb, NULL);
	if (MX.http == NULL || MX.ev_resume == NULL || MX.ev_sweep == NULL) {
		metrics_stop();
		return -ENOMEM;
	}
	bound = evhttp_bind_socket_with_handle(MX.http, host, (uint16_t)port);
	if (bound == NULL) {
		metrics_stop();
		return -EADDRINUSE;
	}
	MX.max_conns = max_conns;
	MX.request_timeout = request_timeout;
	MX.listener = evhttp_bound_socket_get_listener(bound);
	evconnlistener_set_error_cb(MX.listener, metrics_accept_error);
	evhttp_set_bevcb(MX.http, metrics_bevcb, NULL);
	evhttp_set_allowed_methods(MX.http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD |
	    EVHTTP_REQ_POST | EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE);
	evhttp_set_cb(MX.http, "/metrics", metrics_cb, NULL);
	evhttp_set_gencb(MX.http, other_cb, NULL);
	/*
	 * Scrapes are tiny: bound what a client may send.  evhttp's timeout
	 * bounds a reply the client does not read; the request's deadline
	 * is metrics_sweep()'s.
	 */
	evhttp_set_max_headers_size(MX.http, 8192);
	evhttp_set_max_body_size(MX.http, 4096);
	evhttp_set_timeout(MX.http, 10);
	MX.ev_refresh = evtimer_new(base, refresh_cb, NULL);
	sj = calloc(1, sizeof(*sj));
	if (MX.ev_refresh == NULL || sj == NULL) {
		free(sj);
		metrics_stop();
		return -ENOMEM;
	}
	/*
	 * The first snapshot is taken now, before the daemon says it is
	 * ready (the loop is not running yet), so that no scrape ever sees
	 * an empty one.
	 */
	MX.busy = true;
	snap_run(&sj->job);
	snap_done(&sj->job);
	log_info("metrics on http://%s%s%s:%lu/metrics",
	    strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "",
	    port);
	return 0;
}

void
metrics_stop(void)
{
	if (MX.ev_refresh != NULL)
		event_free(MX.ev_refresh);
	MX.ev_refresh = NULL;
	if (MX.ev_resume != NULL)
		event_free(MX.ev_resume);
	MX.ev_resume = NULL;
	MX.listener = NULL;
	if (MX.http != NULL)
		evhttp_free(MX.http);
	MX.http = NULL;
	metrics_sweep();
	if (MX.ev_sweep != NULL)
		event_free(MX.ev_sweep);
	MX.ev_sweep = NULL;
	free(MX.socks);
	MX.socks = NULL;
	MX.nsocks = MX.cap = 0;
	mtext_put(NULL, 0, MX.vms);
	MX.vms = NULL;
	mtext_put(NULL, 0, MX.snap_text);
	MX.snap_text = NULL;
	for (int i = 0; i < 2; i++) {
		if (MX.round[i].body != NULL)
			evbuffer_free(MX.round[i].body);
		MX.round[i].body = NULL;
	}
	if (MX.have_z)
		deflateEnd(&MX.z);
	MX.have_z = false;
}
