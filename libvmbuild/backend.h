/*
 * backend.h - the hypervisor backend ops table (private to libvmbuild).
 *
 * The core (config, placement, populate engine, loader) calls only these
 * ops; everything specific to hvsim lives in sim/ and everything
 * specific to Xen in xen/.  Same error convention as vmbuild.h:
 * 0 or a negative errno.  Every op may be called from several threads at
 * once, populate in particular (one worker per node).
 */
#ifndef VMBUILD_BACKEND_H
#define VMBUILD_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "vmbuild.h"

struct vmb_dom_config {
	char	name[VMB_NAME_LEN];
	uint8_t	uuid[16];
	bool	hvm;
	bool	hap;
	uint32_t max_vcpus;
	uint64_t max_pages;	/* 4 KiB pages */
	uint64_t target_pages;	/* pages that will be populated */
	uint32_t nr_nodes;	/* placement: the nodes the domain may use */
	uint32_t nodes[VMB_MAX_NODES];
};

struct vmb_extent {
	uint64_t gfn;
	uint32_t order;		/* 0, 9 or 18 */
	uint32_t node;		/* host node; VMB_NODE_ANY for any */
};
#define VMB_NODE_ANY		0xffffu

/* populate flags */
#define VMB_POPF_EXACT_NODE	(1u << 0)
#define VMB_POPF_ALLOW_DIRTY	(1u << 1)

/* What the loader hands the backend to start the guest. */
struct vmb_boot {
	uint64_t entry;		/* PVH 32-bit entry, guest physical */
	uint64_t start_info;	/* guest physical address of hvm_start_info */
	uint32_t vcpus;
	uint64_t memory_bytes;	/* populated RAM, from gfn 0 */
	const struct vmb_guest *guest;
};

struct vmb_backend_ops {
	const char *name;		/* "sim", "xen" */
	/* arg: what followed "sim:" (a socket path), or NULL. */
	int	(*open)(const char *arg, void **ret_priv);
	void	(*close)(void *priv);
	uint32_t (*caps)(void *priv);	/* VMB_CAP_* */
	const char *(*describe)(void *priv);

	int	(*host_info)(void *priv, struct vmb_host **ret_host);
	int	(*scrub)(void *priv, struct vmb_scrub *ret_scrub);
	int	(*counters)(void *priv, struct vmb_counters *ret_counters);

	int	(*domain_create)(void *priv, const struct vmb_dom_config *cfg,
		    uint32_t *ret_domid);
	int	(*domain_destroy)(void *priv, uint32_t domid);
	int	(*domain_pause)(void *priv, uint32_t domid);
	int	(*domain_unpause)(void *priv, uint32_t domid);
	int	(*domain_list)(void *priv, struct vmb_domain **ret_domains,
		    size_t *ret_nr);

	/* Claim `pages` for the domain (0 releases the claim). */
	int	(*claim)(void *priv, uint32_t domid, uint64_t pages);
	/*
	 * Populate `nr` extents in as many hypervisor calls as the backend
	 * needs (the engine chooses the batch, the backend only carries it).
	 * Adds to `stats`.  *ret_done: extents done, also on failure.
	 */
	int	(*populate)(void *priv, uint32_t domid, uint32_t flags,
		    const struct vmb_extent *ext, size_t nr,
		    struct vmb_populate_stats *stats, size_t *ret_done);

	/* Map gfn..gfn+nr writable into this process; NULL ops: no loading. */
	int	(*map)(void *priv, uint32_t domid, uint64_t gfn, size_t nr,
		    void **ret_addr);
	void	(*unmap)(void *priv, void *addr, size_t nr);

	/*
	 * After the image is loaded: whatever else the hypervisor needs
	 * before the first unpause (vCPU context, special pages, xenstore).
	 */
	int	(*boot)(void *priv, uint32_t domid, const struct vmb_boot *boot);

	/* Bound each later call to `ms` (0: none); NULL: not applicable. */
	void	(*set_timeout)(void *priv, unsigned ms);
};

extern const struct vmb_backend_ops vmb_backend_sim;
extern const struct vmb_backend_ops vmb_backend_xen;

#endif /* VMBUILD_BACKEND_H */
