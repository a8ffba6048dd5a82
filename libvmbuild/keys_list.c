/*
 * keys_list.c - the setters of the list keys of keys.def: vnuma=, and
 * the device lists disk= and vif=, each item in xl's syntax
 * (devspec.c).  A list replaces what the guest had only when every item
 * is good; every bad item is reported.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vmb_internal.h"

/* One "key=value" item of a vnode list. */
static int
vnode_item(struct vmb_vnode *vn, unsigned idx, const char *item,
    uint32_t *seen, uint32_t nr_vnodes, const struct vmb__key *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	const char *eq = strchr(item, '=');
	const char *val;
	char *end;
	size_t klen;

	if (!eq)
		return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
		    "vnode %u: \"%.40s\" is not key=value", idx, item);
	klen = (size_t)(eq - item);
	val = eq + 1;
	if (klen == 5 && !strncmp(item, "pnode", 5)) {
		unsigned long n;

		errno = 0;
		n = strtoul(val, &end, 10);
		if (!*val || *end || errno || n >= VMB_MAX_NODES)
			return vmb__diag_add(diags, VMB_ERROR, where, v->line,
			    k->name, "vnode %u: bad pnode \"%.20s\"", idx, val);
		vn->pnode = (uint32_t)n;
		*seen |= 1;
	} else if (klen == 4 && !strncmp(item, "size", 4)) {
		unsigned long long n;

		errno = 0;
		n = strtoull(val, &end, 10);
		if (!*val || *end || errno || n == 0 || n > VMB_MEMORY_MAX_MIB)
			return vmb__diag_add(diags, VMB_ERROR, where, v->line,
			    k->name, "vnode %u: bad size \"%.20s\" (MiB)", idx,
			    val);
		vn->size_bytes = n * VMB_MIB;
		*seen |= 2;
	} else if (klen == 5 && !strncmp(item, "vcpus", 5)) {
		memset(vn->vcpus, 0, sizeof(vn->vcpus));
		if (vmb__parse_ranges(val, vn->vcpus, VMB_MAX_VCPUS))
			return vmb__diag_add(diags, VMB_ERROR, where, v->line,
			    k->name, "vnode %u: bad vcpus \"%.40s\"", idx, val);
		*seen |= 4;
	} else if (klen == 10 && !strncmp(item, "vdistances", 10)) {
		uint32_t n = 0;

		/* The guest's SLIT: 10..254 (255 is "unreachable"). */
		for (const char *p = val; ; ) {
			unsigned long d;

			errno = 0;
			d = strtoul(p, &end, 10);
			if (end == p || errno || d < 10 || d > 254 ||
			    n >= VMB_MAX_VNODES)
				return vmb__diag_add(diags, VMB_ERROR, where,
				    v->line, k->name, "vnode %u: bad "
				    "vdistances \"%.40s\" (10 to 254 each, one "
				    "per vnode)", idx, val);
			vn->distances[n++] = (uint8_t)d;
			if (*end == '\0')
				break;
			if (*end != ',')
				return vmb__diag_add(diags, VMB_ERROR, where,
				    v->line, k->name, "vnode %u: bad "
				    "vdistances \"%.40s\"", idx, val);
			p = end + 1;
		}
		if (n != nr_vnodes)
			return vmb__diag_add(diags, VMB_ERROR, where, v->line,
			    k->name, "vnode %u: %u vdistances for %u vnodes",
			    idx, n, nr_vnodes);
	} else {
		return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
		    "vnode %u: unknown item \"%.*s\" (pnode, size, vcpus, "
		    "vdistances)", idx, (int)(klen > 32 ? 32 : klen), item);
	}
	return 0;
}

/*
 * vnuma = [ [ "pnode=0", "size=512", "vcpus=0-1", "vdistances=10,20" ],
 *           [ "pnode=1", "size=512", "vcpus=2-3", "vdistances=20,10" ] ]
 */
int
vmb__set_vnuma(struct vmb_guest *g, const struct vmb__key *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	struct vmb_vnode vn[VMB_MAX_VNODES];
	int rc = 0;

	if (v->type != VMB_VALUE_LIST)
		return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
		    "expected a list of vnode lists, got %s",
		    vmb__value_type_name(v));
	if (v->u.list.n == 0 || v->u.list.n > VMB_MAX_VNODES)
		return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
		    "%zu vnodes (1 to %d allowed)", v->u.list.n,
		    VMB_MAX_VNODES);
	memset(vn, 0, sizeof(vn));
	for (size_t i = 0; i < v->u.list.n; i++) {
		const struct vmb_value *node = &v->u.list.v[i];
		uint32_t seen = 0;
		int r = 0;

		if (node->type != VMB_VALUE_LIST) {
			rc = vmb__diag_add(diags, VMB_ERROR, where, v->line,
			    k->name, "vnode %zu: expected a list of "
			    "\"key=value\" strings, got %s", i,
			    vmb__value_type_name(node));
			continue;
		}
		for (size_t j = 0; j < node->u.list.n; j++) {
			const struct vmb_value *it = &node->u.list.v[j];

			if (it->type != VMB_VALUE_STRING) {
				r = vmb__diag_add(diags, VMB_ERROR, where,
				    v->line, k->name, "vnode %zu: item %zu is "
				    "%s, expected \"key=value\"", i, j,
				    vmb__value_type_name(it));
				continue;
			}
			if (vnode_item(&vn[i], (unsigned)i, it->u.s, &seen,
			    (uint32_t)v->u.list.n, k, v, where, diags))
				r = -EINVAL;
		}
		if (!r && (seen & 7) != 7)
			r = vmb__diag_add(diags, VMB_ERROR, where, v->line,
			    k->name, "vnode %zu: needs pnode, size and vcpus",
			    i);
		if (r)
			rc = r;
	}
	if (rc)
		return rc;
	memcpy(g->vnodes, vn, sizeof(vn));
	g->nr_vnodes = (uint32_t)v->u.list.n;
	return 0;
}

/* A device list key (disk=, vif=): its items, how one is read and kept. */
struct dev_list {
	const char	*what;		/* "disk", "vif" */
	size_t		size;		/* of one device */
	size_t		max;
	int		(*parse)(const struct vmb_guest *g, const char *spec,
			    uint32_t index, const char *where, int line,
			    void *dev, struct vmb_diags *diags);
	void		(*done)(void *dev);
	void		(*take)(struct vmb_guest *g, void *devs, uint32_t n);
};

static int
disk_parse(const struct vmb_guest *g, const char *spec, uint32_t index,
    const char *where, int line, void *dev, struct vmb_diags *diags)
{
	(void)g;
	(void)index;
	return vmb_disk_parse(spec, where, line, dev, diags);
}

/* Each vif's devid is its index unless devid= says. */
static int
nic_parse(const struct vmb_guest *g, const char *spec, uint32_t index,
    const char *where, int line, void *dev, struct vmb_diags *diags)
{
	return vmb_nic_parse(spec, index, g->flags | (g->type == VMB_GUEST_HVM ?
	    VMB__NIC_HVM : 0), where, line, dev, diags);
}

static void
disk_done(void *dev)
{
	vmb_disk_done(dev);
}

static void
nic_done(void *dev)
{
	vmb_nic_done(dev);
}

static void
disks_take(struct vmb_guest *g, void *devs, uint32_t n)
{
	vmb_guest_take_disks(g, devs, n);
}

static void
nics_take(struct vmb_guest *g, void *devs, uint32_t n)
{
	vmb_guest_take_nics(g, devs, n);
}

static const struct dev_list disk_list = {
	"disk", sizeof(struct vmb_disk), VMB_MAX_DISKS, disk_parse, disk_done,
	disks_take
};
static const struct dev_list nic_list = {
	"vif", sizeof(struct vmb_nic), VMB_MAX_NICS, nic_parse, nic_done,
	nics_take
};

/*
 * Every item of a device list key parsed, in the order written, in
 * place of the guest's devices of that kind; every bad item is
 * reported.  0, or the error, the guest unchanged.
 */
static int
set_dev_list(struct vmb_guest *g, const struct vmb__key *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags,
    const struct dev_list *dl)
{
	char *devs;
	size_t n = 0;
	int rc = 0;

	if (v->type != VMB_VALUE_LIST)
		return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
		    "expected a list of %s specifications, got %s", dl->what,
		    vmb__value_type_name(v));
	if (v->u.list.n > dl->max)
		return vmb__diag_add(diags, VMB_ERROR, where, v->line, k->name,
		    "%zu %ss (at most %zu)", v->u.list.n, dl->what, dl->max);
	devs = calloc(v->u.list.n + 1, dl->size);
	if (!devs)
		return -ENOMEM;
	for (size_t i = 0; i < v->u.list.n; i++) {
		const struct vmb_value *it = &v->u.list.v[i];
		int r;

		if (it->type != VMB_VALUE_STRING) {
			rc = vmb__diag_add(diags, VMB_ERROR, where, v->line,
			    k->name, "item %zu is %s, expected a %s "
			    "specification string", i, vmb__value_type_name(it),
			    dl->what);
			continue;
		}
		r = dl->parse(g, it->u.s, (uint32_t)i, where, it->line ?
		    it->line : v->line, devs + n * dl->size, diags);
		if (r == 0)
			n++;
		else
			rc = r;
	}
	if (rc) {
		while (n > 0)
			dl->done(devs + --n * dl->size);
		free(devs);
		return rc;
	}
	dl->take(g, devs, (uint32_t)n);
	return 0;
}

/* Every disk= item: xl's syntax (devspec.c); checked in validation. */
int
vmb__set_disks(struct vmb_guest *g, const struct vmb__key *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	return set_dev_list(g, k, v, where, diags, &disk_list);
}

/* Every vif= item; each one's devid is its index unless devid= says. */
int
vmb__set_vifs(struct vmb_guest *g, const struct vmb__key *k,
    const struct vmb_value *v, const char *where, struct vmb_diags *diags)
{
	return set_dev_list(g, k, v, where, diags, &nic_list);
}
