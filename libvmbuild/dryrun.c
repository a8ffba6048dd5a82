/*
 * dryrun.c - what a build of a guest would find on this host, doing
 * none of it: the images read and checked as the build's place phase
 * reads them, the vnodes and cpus= against the host's nodes, the
 * placement (vmb__place_why, a pure function: nothing is claimed or
 * populated) and the bridges of the vifs.  Every problem is a
 * diagnostic on the key that caused it, with that key's line, so that
 * `vmctl check` reports them all at once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "vmb_internal.h"

/* Whether diags already has an error on `key` (or on line `line`). */
static bool
has_error(const struct vmb_diags *diags, const char *key, int line)
{
	for (size_t i = 0; diags && i < diags->n; i++) {
		const struct vmb_diag *d = &diags->v[i];

		if (d->severity == VMB_ERROR && ((key && !strcmp(d->key, key)) ||
		    (line > 0 && d->line == line)))
			return true;
	}
	return false;
}

/*
 * Whether the placement can be tried: the keys it reads were all
 * accepted, so that it adds only what the host says, never an echo of
 * an error found already.
 */
static bool
placeable(const struct vmb_guest *g, const struct vmb_diags *diags)
{
	static const char *const keys[] = { "memory", "maxmem", "vcpus",
	    "maxvcpus", "vnuma", "cpus", "type", "" };

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (has_error(diags, keys[i], 0))
			return false;
	return g->memory_bytes > 0;
}

/*
 * The images, read from the descriptors as a build reads them: through
 * the context's cache, so that a create after its dry run finds the
 * kernel unpacked.
 */
static void
dry_images(struct vmb_ctx *ctx, const struct vmb_guest *g, int kernel_fd,
    int ramdisk_fd, const char *where, struct vmb_diags *diags)
{
	struct vmb__image *img = NULL;
	char why[512] = "";
	int rc;

	rc = vmb__image_open_cache(ctx->imgcache, g, kernel_fd, ramdisk_fd,
	    &img, why, sizeof(why));
	vmb__image_free(img);
	if (rc == 0)
		return;
	/* The loader names the ramdisk when that is what it could not use. */
	if (g->ramdisk && strstr(why, "ramdisk"))
		vmb__diag_add(diags, VMB_ERROR, where,
		    g->key_line[VMB_KEY_RAMDISK], "ramdisk", "%s",
		    why[0] ? why : strerror(-rc));
	else
		vmb__diag_add(diags, VMB_ERROR, where,
		    g->key_line[VMB_KEY_KERNEL], "kernel", "%s",
		    why[0] ? why : strerror(-rc));
}

/*
 * The host nodes the guest names (vnuma's pnodes, cpus="nodes:..."):
 * found here with their key's line, rather than by the placement with
 * none.  0 when they all exist.
 */
static int
dry_nodes(const struct vmb_guest *g, const struct vmb_host *host,
    const char *where, struct vmb_diags *diags)
{
	uint64_t all = host->nr_nodes >= 64 ? ~0ull :
	    (1ull << host->nr_nodes) - 1;
	const char *s = host->nr_nodes == 1 ? "" : "s";
	int bad = 0;

	for (uint32_t i = 0; i < g->nr_vnodes; i++) {
		if (g->vnodes[i].pnode < host->nr_nodes)
			continue;
		bad = vmb__diag_add(diags, VMB_ERROR, where,
		    g->key_line[VMB_KEY_VNUMA], "vnuma", "vnode %u is on "
		    "node %u, but this host has %u node%s (0-%u)", i,
		    g->vnodes[i].pnode, host->nr_nodes, s, host->nr_nodes - 1);
	}
	if (g->node_mask & ~all)
		bad = vmb__diag_add(diags, VMB_ERROR, where,
		    g->key_line[VMB_KEY_CPUS], "cpus", "\"%s\": node %d does "
		    "not exist (this host has %u node%s)", g->cpus ? g->cpus :
		    "", __builtin_ctzll(g->node_mask & ~all), host->nr_nodes,
		    s);
	return bad;
}

/* The key a placement failure is about, for its line. */
static enum vmb_key
place_key(const struct vmb_guest *g)
{
	if (g->nr_vnodes)
		return VMB_KEY_VNUMA;
	if (g->cpus && strcmp(g->cpus, "all"))
		return VMB_KEY_CPUS;
	return VMB_KEY_MEMORY;
}

/* A placement's refusal on its key; its "key: " prefix is the key's. */
static void
place_diag(const struct vmb_guest *g, const char *why, const char *where,
    struct vmb_diags *diags)
{
	const char *key = vmb_key_desc(place_key(g))->xl;
	size_t len = strlen(key);

	if (!strncmp(why, key, len) && why[len] == ':' && why[len + 1] == ' ')
		why += len + 2;
	vmb__diag_add(diags, VMB_ERROR, where, g->key_line[place_key(g)], key,
	    "%s", why);
}

/*
 * Bridges of vif-bridge vifs (the default script): on Xen the daemon
 * runs in the control domain, whose interfaces are the host's; hvsim
 * attaches vifs to nothing, so there it can only say so.
 */
static void
dry_bridges(struct vmb_ctx *ctx, const struct vmb_guest *g, const char *where,
    struct vmb_diags *diags)
{
	bool sim = strcmp(vmb_ctx_backend(ctx), "xen") != 0;

	for (uint32_t i = 0; i < g->nr_nics; i++) {
		const struct vmb_nic *n = &g->nics[i];
		char path[64 + VMB_IFNAME_LEN];
		struct stat st;

		if (n->script && strcmp(n->script, "vif-bridge"))
			continue;
		if (sim) {
			vmb__diag_add(diags, VMB_WARNING, where, n->line, "vif",
			    "vif %u: bridge \"%s\" not checked: hvsim has no "
			    "network interfaces", n->devid, n->bridge);
			continue;
		}
		snprintf(path, sizeof(path), "/sys/class/net/%s/bridge",
		    n->bridge);
		if (stat(path, &st) != 0)
			vmb__diag_add(diags, VMB_ERROR, where, n->line, "vif",
			    "vif %u: bridge \"%s\" does not exist on this host "
			    "(ip link add %s type bridge)", n->devid, n->bridge,
			    n->bridge);
	}
}

int
vmb_guest_dry_run(struct vmb_ctx *ctx, const struct vmb_guest *g,
    int kernel_fd, int ramdisk_fd, const char *where,
    struct vmb_diags *diags, struct vmb_dry_run *ret)
{
	struct vmb_domain *doms = NULL;
	struct vmb_scrub scrub;
	size_t nr_doms = 0;
	char why[512] = "";
	bool have_scrub, place;
	int rc, scrub_rc;

	memset(ret, 0, sizeof(*ret));
	place = placeable(g, diags);
	if (g->kernel && !has_error(diags, "kernel", 0) &&
	    !has_error(diags, "ramdisk", 0))
		dry_images(ctx, g, kernel_fd, ramdisk_fd, where, diags);
	dry_bridges(ctx, g, where, diags);
	rc = vmb__host_state(ctx, &ret->host, &doms, &nr_doms, &scrub,
	    &scrub_rc);
	/* Not the config's fault: the caller says the host failed. */
	if (rc)
		return rc;
	have_scrub = scrub_rc == 0;
	if (place && dry_nodes(g, ret->host, where, diags) == 0 &&
	    vmb__place_why(ret->host, have_scrub ? &scrub : NULL, doms,
	    nr_doms, g, &ret->placement, why, sizeof(why)) == 0)
		ret->placed = true;
	else if (why[0])
		place_diag(g, why, where, diags);
	free(doms);
	return 0;
}

void
vmb_dry_run_done(struct vmb_dry_run *dr)
{
	vmb_host_free(dr->host);
	dr->host = NULL;
}
