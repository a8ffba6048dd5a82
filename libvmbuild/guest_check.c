/*
 * guest_check.c - a guest description checked as a whole, once all its
 * keys are set: the keys every guest needs, the defaults that follow
 * from other keys (maxmem from memory, maxvcpus from vcpus), the keys
 * that must agree (vnuma with memory, vcpus and cpus), the kernel and
 * ramdisk paths, and the devices together.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vmb_internal.h"

/* ------------------------------------------------------------------ */
/* Validation of the whole description.                                */

static int
line_of(const struct vmb_guest *g, enum vmb_key k)
{
	return g->key_line[k];
}

/*
 * Make `path` absolute against basedir; with VMB_CHECK_FILES resolve it
 * (symbolic links too) and check that it can be read, else only join
 * the strings and look at nothing.
 */
static int
resolve_path(char **path, const char *basedir, const char *key, int line,
    const char *where, unsigned flags, struct vmb_diags *diags)
{
	char *joined = NULL, *real = NULL;
	int rc;

	if ((*path)[0] != '/' && basedir && *basedir) {
		if (asprintf(&joined, "%s/%s", basedir, *path) < 0)
			return -ENOMEM;
	}
	if (!(flags & VMB_CHECK_FILES)) {
		if (joined) {
			free(*path);
			*path = joined;
		}
		return 0;
	}
	real = realpath(joined ? joined : *path, NULL);
	if (!real || access(real, R_OK) != 0) {
		rc = vmb__diag_add(diags, VMB_ERROR, where, line, key,
		    "cannot read \"%s\": %s", *path, strerror(errno));
		goto out;
	}
	free(*path);
	*path = real;
	real = NULL;
	rc = 0;
out:
	free(real);
	free(joined);
	return rc;
}

/*
 * The devices as a whole: each disk servable (vmb_disk_check), no vbd
 * or vif devid twice, no MAC twice.  Returns the number of errors.
 */
static int
validate_devices(struct vmb_guest *g, const char *basedir,
    const char *where, struct vmb_diags *diags)
{
	int line, errors = 0;

	for (uint32_t i = 0; i < g->nr_disks; i++) {
		struct vmb_disk *d = &g->disks[i];

		if (vmb__disk_check(d, g->type, basedir, where, diags) != 0) {
			errors++;
			continue;
		}
		for (uint32_t j = 0; j < i; j++)
			if (g->disks[j].devid == d->devid) {
				vmb__diag_add(diags, VMB_ERROR, where, d->line,
				    "disk", "vdev %s is the vbd of %s (%u), "
				    "given before", d->vdev, g->disks[j].vdev,
				    d->devid);
				errors++;
				break;
			}
	}
	for (uint32_t i = 0; i < g->nr_nics; i++) {
		const struct vmb_nic *n = &g->nics[i];

		line = n->line;
		for (uint32_t j = 0; j < i; j++) {
			const struct vmb_nic *o = &g->nics[j];

			if (o->devid == n->devid) {
				vmb__diag_add(diags, VMB_ERROR, where, line,
				    "vif", "devid %u given twice", n->devid);
				errors++;
				break;
			}
			if (n->mac_set && o->mac_set &&
			    !memcmp(n->mac, o->mac, 6)) {
				vmb__diag_add(diags, VMB_ERROR, where, line,
				    "vif", "mac %02x:%02x:%02x:%02x:%02x:%02x "
				    "given twice", n->mac[0], n->mac[1],
				    n->mac[2], n->mac[3], n->mac[4], n->mac[5]);
				errors++;
				break;
			}
		}
	}
	return errors;
}

/*
 * xl's command line: cmdline if set, else "root=ROOT EXTRA" (either part
 * may be missing).  root is then part of cmdline, so checking twice (the
 * daemon does) composes once.
 */
static int
compose_cmdline(struct vmb_guest *g, const char *where,
    struct vmb_diags *diags)
{
	char *joined = NULL;

	if (!g->root)
		return 0;
	if (g->keys_set & (1ull << VMB_KEY_CMDLINE)) {
		vmb__diag_add(diags, VMB_WARNING, where,
		    line_of(g, VMB_KEY_ROOT), "root",
		    "ignored: cmdline is set");
	} else {
		if (asprintf(&joined, "root=%s%s%s", g->root,
		    g->cmdline ? " " : "", g->cmdline ? g->cmdline : "") < 0)
			return -ENOMEM;
		free(g->cmdline);
		g->cmdline = joined;
	}
	free(g->root);
	g->root = NULL;
	return 0;
}

int
vmb_guest_validate(struct vmb_guest *g, const char *basedir,
    const char *where, struct vmb_diags *diags)
{
	return vmb_guest_check(g, basedir, where, VMB_CHECK_FILES, diags);
}

int
vmb_guest_check(struct vmb_guest *g, const char *basedir, const char *where,
    unsigned flags, struct vmb_diags *diags)
{
	int errors = 0;
	uint64_t bad, vnuma_deps = 1ull << VMB_KEY_VNUMA | 1ull << VMB_KEY_MEMORY |
	    1ull << VMB_KEY_VCPUS | 1ull << VMB_KEY_MAXVCPUS | 1ull << VMB_KEY_CPUS;

	if (!g)
		return -EINVAL;
	if (!where)
		where = g->source ? g->source : "request";
	bad = g->keys_given & ~g->keys_set;
#define ERR(key, ...) do { \
	vmb__diag_add(diags, VMB_ERROR, where, line_of(g, key), \
	    vmb__keys[key].name, __VA_ARGS__); errors++; } while (0)

	if (!(g->keys_given & (1ull << VMB_KEY_NAME)))
		ERR(VMB_KEY_NAME, "missing (every guest needs a name)");
	if (!(g->keys_given & (1ull << VMB_KEY_MEMORY)))
		ERR(VMB_KEY_MEMORY, "missing (guest memory in MiB)");
	if (!(g->keys_given & (1ull << VMB_KEY_KERNEL)) &&
	    g->type != VMB_GUEST_HVM)
		ERR(VMB_KEY_KERNEL, "missing (path of the guest kernel)");
	/*
	 * A key whose value was refused (reported where it was read) is as
	 * if unset below, taking its partner's value: one mistake, one
	 * error, and the other keys still checked (all errors at once).
	 */
	if (bad & (1ull << VMB_KEY_MEMORY))
		g->memory_bytes = g->maxmem_bytes;
	if (!(g->keys_set & (1ull << VMB_KEY_VCPUS)))
		g->vcpus = 1;
	if (!(g->keys_set & (1ull << VMB_KEY_MAXVCPUS)))
		g->maxvcpus = g->vcpus;
	if (!(g->keys_set & (1ull << VMB_KEY_MAXMEM)))
		g->maxmem_bytes = g->memory_bytes;
	if (g->memory_bytes > g->maxmem_bytes)
		ERR(VMB_KEY_MAXMEM, "memory (%llu MiB) is larger than maxmem "
		    "(%llu MiB)", (unsigned long long)(g->memory_bytes / VMB_MIB),
		    (unsigned long long)(g->maxmem_bytes / VMB_MIB));
	/*
	 * A PVH guest starts with `memory` populated and may balloon up to
	 * maxmem (the domain's max and memory/static-max); only an HVM
	 * guest would need populate-on-demand for it.
	 */
	else if (g->memory_bytes < g->maxmem_bytes &&
	    g->type == VMB_GUEST_HVM)
		ERR(VMB_KEY_MAXMEM, "maxmem (%llu MiB) above memory (%llu MiB) "
		    "makes xl populate an HVM guest on demand, which vmbuild "
		    "does not do; leave maxmem out or set it to memory",
		    (unsigned long long)(g->maxmem_bytes / VMB_MIB),
		    (unsigned long long)(g->memory_bytes / VMB_MIB));
	if (g->vcpus > g->maxvcpus)
		ERR(VMB_KEY_MAXVCPUS, "vcpus (%u) is larger than maxvcpus (%u)",
		    g->vcpus, g->maxvcpus);
	/* As Xen's credit2: a cap of at most 100 per vCPU the domain has. */
	if (g->cap > 100ull * g->maxvcpus)
		ERR(VMB_KEY_CAP, "cap (%u%%) is more than %u vCPU%s can use "
		    "(0..%u, 0: no cap)", g->cap, g->maxvcpus,
		    g->maxvcpus == 1 ? "" : "s", 100 * g->maxvcpus);
	if (g->nr_vnodes && !(bad & vnuma_deps)) {
		uint64_t sum = 0, cover[4] = { 0 };
		bool overlap = false;

		for (uint32_t i = 0; i < g->nr_vnodes; i++) {
			sum += g->vnodes[i].size_bytes;
			for (int w = 0; w < 4; w++) {
				if (cover[w] & g->vnodes[i].vcpus[w])
					overlap = true;
				cover[w] |= g->vnodes[i].vcpus[w];
			}
		}
		if (sum != g->memory_bytes)
			ERR(VMB_KEY_VNUMA, "vnode sizes add up to %llu MiB, "
			    "memory is %llu MiB",
			    (unsigned long long)(sum / VMB_MIB),
			    (unsigned long long)(g->memory_bytes / VMB_MIB));
		if (overlap)
			ERR(VMB_KEY_VNUMA, "a vCPU is in more than one vnode");
		/* As libxl__vnuma_config_check: local is the nearest. */
		for (uint32_t i = 0; i < g->nr_vnodes; i++)
			for (uint32_t j = 0; j < g->nr_vnodes; j++)
				if (g->vnodes[i].distances[j] <
				    g->vnodes[i].distances[i]) {
					ERR(VMB_KEY_VNUMA, "vnode %u: distance "
					    "to vnode %u (%u) is smaller than "
					    "its local distance (%u)", i, j,
					    g->vnodes[i].distances[j],
					    g->vnodes[i].distances[i]);
					i = j = g->nr_vnodes;
				}
		for (uint32_t c = 0; c < VMB_MAX_VCPUS; c++) {
			bool in = cover[c / 64] & (1ull << (c % 64));

			/* As xl: the vnodes hold every vCPU up to maxvcpus. */
			if (c < g->maxvcpus && !in) {
				ERR(VMB_KEY_VNUMA, "vCPU %u is in no vnode", c);
				break;
			}
			if (c >= g->maxvcpus && in) {
				ERR(VMB_KEY_VNUMA, "vnode vCPU %u, but the guest "
				    "has %u vcpus", c, g->maxvcpus);
				break;
			}
		}
		if (g->node_mask) {
			for (uint32_t i = 0; i < g->nr_vnodes; i++)
				if (!(g->node_mask >> g->vnodes[i].pnode & 1)) {
					ERR(VMB_KEY_VNUMA, "vnode %u is on node "
					    "%u, which cpus=\"%s\" excludes", i,
					    g->vnodes[i].pnode, g->cpus);
					break;
				}
		}
	}
	if (compose_cmdline(g, where, diags))
		return -ENOMEM;
	if (g->kernel && resolve_path(&g->kernel, basedir,
	    vmb__keys[VMB_KEY_KERNEL].name, line_of(g, VMB_KEY_KERNEL), where,
	    flags, diags))
		errors++;
	if (g->ramdisk && resolve_path(&g->ramdisk, basedir,
	    vmb__keys[VMB_KEY_RAMDISK].name, line_of(g, VMB_KEY_RAMDISK), where,
	    flags, diags))
		errors++;
	errors += validate_devices(g, basedir, where, diags);
	errors += vmb__hvm_check(g, where, diags);
#undef ERR
	return errors ? -EINVAL : 0;
}
