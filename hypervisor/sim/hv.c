/*
 * hv.c - assembling a simulated host from its parts, and small helpers
 * shared by them.  Everything but option parsing and the socket's main
 * loop lives behind hv_init/hv_fini, so that the unit tests build a host
 * exactly as hvsim does.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hvsim.h"

void
hv_config_defaults(struct hv_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->nodes = 2;
	cfg->cpus_per_node = 4;
	cfg->threads_per_core = 2;
	cfg->mem_per_node = 256ull << 20;
	cfg->backing = HV_BACKING_REAL;
	cfg->flush_mode = HV_FLUSH_BATCH;
	cfg->scrub_workers = -1;
	cfg->shadow_threshold = 3;
	cfg->boot_scrub = true;
	cfg->max_conns = 64;
	cfg->preempt_pages = 1ull << HV_MAX_ORDER;	/* 1 GiB per call */
	cfg->switch_hz = 10;
	cfg->shadow_bg_writes = 64;
}

/* "4G", "512M", "2T", "65536K" or bytes; binary units. */
int
hv_parse_size(const char *s, uint64_t *ret)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	case '\0': break;
	default: return -EINVAL;
	}
	if (*end == 'i' && end[1] == 'B')
		end += 2;
	else if (*end == 'B')
		end++;
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return -EINVAL;
	*ret = (uint64_t)v << shift;
	return 0;
}

/*
 * The log's last HV_LOG_RING bytes, for HV_OP_LOG_READ (what Xen's
 * console ring is to xl dmesg).  One ring per process, as hvsim is one
 * hypervisor; hv_log runs on every connection's thread.
 */
static struct {
	pthread_mutex_t lock;
	char	buf[HV_LOG_RING];
	size_t	start, len;	/* oldest byte, bytes held */
} log_ring = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void
log_ring_add(const char *text, size_t n)
{
	pthread_mutex_lock(&log_ring.lock);
	for (size_t i = 0; i < n; i++) {
		log_ring.buf[(log_ring.start + log_ring.len) % HV_LOG_RING] =
		    text[i];
		if (log_ring.len < HV_LOG_RING)
			log_ring.len++;
		else
			log_ring.start = (log_ring.start + 1) % HV_LOG_RING;
	}
	pthread_mutex_unlock(&log_ring.lock);
}

size_t
hv_log_read(char *buf, bool clear)
{
	size_t n;

	pthread_mutex_lock(&log_ring.lock);
	n = log_ring.len;
	for (size_t i = 0; i < n; i++)
		buf[i] = log_ring.buf[(log_ring.start + i) % HV_LOG_RING];
	if (clear)
		log_ring.start = log_ring.len = 0;
	pthread_mutex_unlock(&log_ring.lock);
	return n;
}

void
hv_log(struct hv *hv, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	(void)hv;
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(line) - 2)
		n = (int)sizeof(line) - 2;	/* truncated: keep the line */
	line[n++] = '\n';
	line[n] = '\0';
	fprintf(stderr, "hvsim: %s", line);
	log_ring_add(line, (size_t)n);
}

int
hv_init(struct hv **ret_hv, const struct hv_config *cfg)
{
	struct hv *hv;
	uint64_t ppn = cfg->mem_per_node >> HV_PAGE_SHIFT;
	int rc;

	if (cfg->mem_per_node == 0 ||
	    cfg->mem_per_node % (CHUNK_PAGES * HV_PAGE_SIZE) != 0 ||
	    ppn > (1ull << 32) - CHUNK_PAGES ||
	    (cfg->flush_mode != HV_FLUSH_BATCH &&
	    cfg->flush_mode != HV_FLUSH_ALLOC) ||
	    cfg->shadow_threshold == 0 || cfg->max_conns == 0 ||
	    cfg->preempt_pages == 0)
		return -EINVAL;
	hv = calloc(1, sizeof(*hv));
	if (!hv)
		return -ENOMEM;
	hv->cfg = *cfg;
	hv->boot_time_ns = hv_realtime_ns();
	hv->ctr.version = HV_ABI_VERSION;
	pthread_mutex_init(&hv->shadow_lock, NULL);
	pthread_cond_init(&hv->shadow_cond, NULL);

	rc = topo_init(&hv->topo, cfg->nodes, cfg->cpus_per_node,
	    cfg->threads_per_core);
	if (rc < 0)
		goto fail_free;
	rc = mem_init(&hv->mem, cfg->backing, cfg->nodes * cfg->mem_per_node);
	if (rc < 0)
		goto fail_topo;
	/* Before the first store: that is when memory gets its node. */
	if (cfg->pin_host && (rc = mem_bind_host_nodes(&hv->mem, cfg->nodes,
	    cfg->mem_per_node)) < 0)
		goto fail_mem;
	rc = heap_init(&hv->heap, hv, &hv->mem, cfg->nodes, ppn,
	    cfg->boot_scrub);
	if (rc < 0)
		goto fail_mem;
	rc = flush_init(&hv->flush, hv, hv->topo.nr_cpus, cfg->switch_hz);
	if (rc < 0)
		goto fail_heap;
	rc = dom_init(hv);
	if (rc < 0)
		goto fail_flush;
	rc = scrub_start(hv);
	if (rc < 0)
		goto fail_dom;
	if (hv->nr_workers == 0)
		scrub_boot_inline(hv);
	rc = shadow_bg_start(hv);
	if (rc < 0)
		goto fail_scrub;
	*ret_hv = hv;
	return 0;

fail_scrub:
	scrub_stop(hv);
fail_dom:
	dom_fini(hv);
fail_flush:
	flush_fini(&hv->flush);
fail_heap:
	heap_fini(&hv->heap);
fail_mem:
	mem_fini(&hv->mem);
fail_topo:
	topo_fini(&hv->topo);
fail_free:
	free(hv);
	return rc;
}

void
hv_fini(struct hv *hv)
{
	if (!hv)
		return;
	shadow_bg_stop(hv);
	scrub_stop(hv);
	dom_fini(hv);
	flush_fini(&hv->flush);
	heap_fini(&hv->heap);
	mem_fini(&hv->mem);
	topo_fini(&hv->topo);
	pthread_mutex_destroy(&hv->shadow_lock);
	pthread_cond_destroy(&hv->shadow_cond);
	free(hv);
}
