/*
 * fuzz_hvsim.c - hvsim's request decoder: a request header and payload
 * as they come off its socket (server.c: version, the op table's sizes
 * and counts, padding, then the op itself on a small phantom host: 1
 * node of 64 MiB, 2 CPUs).  Input: op (2 bytes, taken modulo the ops
 * and HV_OP_FAULT), version (1 byte), then the payload.  Domains the
 * inputs create are destroyed every 256 inputs, so that the host does
 * not fill up for good.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "hvsim.h"

static struct hv *hv;
static void *rep;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct hv_config cfg;

	(void)argc, (void)argv;
	hv_config_defaults(&cfg);
	cfg.nodes = 1;
	cfg.cpus_per_node = 2;
	cfg.threads_per_core = 1;
	cfg.mem_per_node = 64ull << 20;
	cfg.backing = HV_BACKING_PHANTOM;
	cfg.scrub_workers = 0;
	cfg.boot_scrub = false;
	cfg.switch_hz = 0;
	cfg.shadow_bg_writes = 0;
	if (hv_init(&hv, &cfg) < 0 || (rep = malloc(HV_MAX_PAYLOAD)) == NULL)
		abort();
	return 0;
}

static void
destroy_all(void)
{
	struct hv_domain_list q = { .first_domid = 1, .max = HV_MAX_LIST };
	struct hv_domain_info *info = malloc(HV_MAX_LIST * sizeof(*info));
	uint32_t nr = 0, more = 0;

	if (info && dom_list(hv, &q, info, &nr, &more) == 0)
		for (uint32_t i = 0; i < nr; i++)
			(void)dom_destroy(hv, info[i].domid);
	free(info);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static unsigned runs;
	struct hv_msg_hdr h = { .magic = HV_MSG_MAGIC };
	void *req;
	size_t rlen;
	bool hang;
	int fd;

	if (len < 3 || len - 3 > HV_MAX_PAYLOAD)
		return 0;
	h.op = (uint16_t)((data[0] | data[1] << 8) % (HV_OP_MAX + 1));
	if (h.op == HV_OP_MAX)
		h.op = HV_OP_FAULT;
	h.version = data[2] & 1 ? HV_ABI_VERSION : data[2];
	h.len = (uint32_t)(len - 3);
	/* A copy of exactly the payload, so that reads past it are seen. */
	req = malloc(h.len ? h.len : 1);
	if (req == NULL)
		return 0;
	memcpy(req, data + 3, h.len);
	(void)server_handle(hv, &h, req, rep, &rlen, &fd, &hang);
	free(req);
	if (++runs % 256 == 0)
		destroy_all();
	return 0;
}
