/*
 * guest.c - the guest description as an object: made (with the
 * defaults of keys.def), copied and freed, its devices replaced, added
 * and taken out (hot-plug); and the CPU-list syntax its keys and the
 * build share.
 *
 * The rest is split by job: keys.c and keys_list.c set the keys of
 * keys.def (the one way in, for xl.cfg files and JSON descriptions
 * alike), unsupported.c refuses xl's keys vmbuild does not implement,
 * guest_check.c checks a description as a whole.  Its JSON form is
 * the daemon's (daemon/guestjson.c, through vmb_key_desc()).
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "vmb_internal.h"

/* ------------------------------------------------------------------ */
/* Small helpers shared with other files.                              */

int
vmb__parse_ranges(const char *s, uint64_t *bits, unsigned nbits)
{
	const char *p = s;

	if (!*p)
		return -EINVAL;
	for (;;) {
		char *end;
		unsigned long a, b;

		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		a = strtoul(p, &end, 10);
		p = end;
		b = a;
		if (*p == '-') {
			p++;
			if (!isdigit((unsigned char)*p))
				return -EINVAL;
			b = strtoul(p, &end, 10);
			p = end;
		}
		if (b < a)
			return -EINVAL;
		if (b >= nbits)
			return -ERANGE;
		for (unsigned long i = a; i <= b; i++)
			bits[i / 64] |= 1ull << (i % 64);
		if (*p == '\0')
			return 0;
		if (*p != ',')
			return -EINVAL;
		p++;
	}
}

/* One "[^]N[-M]" or "[^]node[s]:N[-M]" item of a CPU list. */
static int
cpus_item(const char *p, size_t len, struct vmb__cpus_item *it)
{
	char buf[64];
	uint64_t bits[VMB_MAX_CPUS / 64] = { 0 };
	unsigned lo = 0, hi = 0;
	int rc;

	memset(it, 0, sizeof(*it));
	if (len && *p == '^') {
		it->neg = true;
		p++;
		len--;
	}
	if (len >= 6 && !strncmp(p, "nodes:", 6)) {
		it->node = true;
		p += 6;
		len -= 6;
	} else if (len >= 5 && !strncmp(p, "node:", 5)) {
		it->node = true;
		p += 5;
		len -= 5;
	} else if (len == 3 && !strncmp(p, "all", 3)) {
		it->all = true;
		return 0;
	}
	if (len == 0 || len >= sizeof(buf) || memchr(p, ',', len))
		return -EINVAL;
	memcpy(buf, p, len);
	buf[len] = '\0';
	rc = vmb__parse_ranges(buf, bits, it->node ? VMB_MAX_NODES :
	    VMB_MAX_CPUS);
	if (rc)
		return rc;
	/* One range per item: the lowest and highest bit set. */
	while (!(bits[lo / 64] >> (lo % 64) & 1))
		lo++;
	for (hi = lo; hi + 1 < VMB_MAX_CPUS &&
	    (bits[(hi + 1) / 64] >> ((hi + 1) % 64) & 1); hi++)
		;
	it->lo = lo;
	it->hi = hi;
	return 0;
}

int
vmb__cpus_parse(const char *s, struct vmb__cpus_item *items, size_t cap)
{
	size_t n = 0;

	if (!s || !*s)
		return -EINVAL;
	for (const char *p = s; ; ) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		struct vmb__cpus_item it;
		int rc = cpus_item(p, len, &it);

		if (rc)
			return rc;
		if (n == cap)
			return -E2BIG;
		items[n++] = it;
		if (!end)
			break;
		p = end + 1;
	}
	return (int)n;
}


/* ------------------------------------------------------------------ */
/* Lifecycle.                                                          */

int
vmb_guest_new(struct vmb_guest **ret_guest)
{
	struct vmb_guest *g;
	int rc;

	if (!ret_guest)
		return -EINVAL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	/* A suspended domain is always left as it is; no key says so. */
	g->on[VMB_SHUTDOWN_SUSPEND] = VMB_ACTION_PRESERVE;
	rc = vmb__keys_default(g);
	if (rc) {
		free(g);
		return rc;
	}
	*ret_guest = g;
	return 0;
}

/*
 * The string of key k that g owns (keys.def: a char * field), or NULL
 * when k has none or shares its field with an earlier key (extra is
 * cmdline), so that each string is copied and freed once.
 */
static char **
owned_string(const struct vmb_guest *g, size_t k)
{
	if (!vmb__keys[k].owned)
		return NULL;
	for (size_t i = 0; i < k; i++)
		if (vmb__keys[i].owned &&
		    vmb__keys[i].offset == vmb__keys[k].offset)
			return NULL;
	return (char **)((uintptr_t)g + vmb__keys[k].offset);
}

void
vmb_guest_free(struct vmb_guest *g)
{
	char **s;

	if (!g)
		return;
	for (size_t k = 0; k < VMB_KEY_MAX; k++)
		if ((s = owned_string(g, k)) != NULL)
			free(*s);
	free(g->source);
	vmb_guest_take_disks(g, NULL, 0);
	vmb_guest_take_nics(g, NULL, 0);
	free(g);
}

void
vmb_guest_take_disks(struct vmb_guest *g, struct vmb_disk *disks, uint32_t n)
{
	for (uint32_t i = 0; i < g->nr_disks; i++)
		vmb_disk_done(&g->disks[i]);
	free(g->disks);
	g->disks = disks;
	g->nr_disks = n;
}

void
vmb_guest_take_nics(struct vmb_guest *g, struct vmb_nic *nics, uint32_t n)
{
	for (uint32_t i = 0; i < g->nr_nics; i++)
		vmb_nic_done(&g->nics[i]);
	free(g->nics);
	g->nics = nics;
	g->nr_nics = n;
}


static int
dup_or_null(const char *s, char **ret)
{
	*ret = NULL;
	if (!s)
		return 0;
	*ret = strdup(s);
	return *ret ? 0 : -ENOMEM;
}

/* Deep copies of src's disks and nics into g (which has none). */
static int
copy_devices(const struct vmb_guest *src, struct vmb_guest *g)
{
	int rc;

	if (src->nr_disks) {
		g->disks = calloc(src->nr_disks, sizeof(*g->disks));
		if (!g->disks)
			return -ENOMEM;
	}
	for (uint32_t i = 0; i < src->nr_disks; i++) {
		if ((rc = vmb_disk_copy(&src->disks[i], &g->disks[i])))
			return rc;
		g->nr_disks = i + 1;
	}
	if (src->nr_nics) {
		g->nics = calloc(src->nr_nics, sizeof(*g->nics));
		if (!g->nics)
			return -ENOMEM;
	}
	for (uint32_t i = 0; i < src->nr_nics; i++) {
		if ((rc = vmb_nic_copy(&src->nics[i], &g->nics[i])))
			return rc;
		g->nr_nics = i + 1;
	}
	return 0;
}

int
vmb_guest_add_disk(struct vmb_guest *g, const struct vmb_disk *disk)
{
	struct vmb_disk *v;

	if (g->nr_disks >= VMB_MAX_DISKS)
		return -ENOSPC;
	if (!(v = realloc(g->disks, (g->nr_disks + 1) * sizeof(*v))))
		return -ENOMEM;
	g->disks = v;
	if (vmb_disk_copy(disk, &v[g->nr_disks]))
		return -ENOMEM;
	g->nr_disks++;
	return 0;
}

int
vmb_guest_remove_disk(struct vmb_guest *g, uint32_t devid)
{
	for (uint32_t i = 0; i < g->nr_disks; i++) {
		if (g->disks[i].devid != devid)
			continue;
		vmb_disk_done(&g->disks[i]);
		memmove(&g->disks[i], &g->disks[i + 1],
		    (g->nr_disks - i - 1) * sizeof(g->disks[0]));
		g->nr_disks--;
		return 0;
	}
	return -ENOENT;
}

int
vmb_guest_add_nic(struct vmb_guest *g, const struct vmb_nic *nic)
{
	struct vmb_nic *v;

	if (g->nr_nics >= VMB_MAX_NICS)
		return -ENOSPC;
	if (!(v = realloc(g->nics, (g->nr_nics + 1) * sizeof(*v))))
		return -ENOMEM;
	g->nics = v;
	if (vmb_nic_copy(nic, &v[g->nr_nics]))
		return -ENOMEM;
	g->nr_nics++;
	return 0;
}

int
vmb_guest_remove_nic(struct vmb_guest *g, uint32_t devid)
{
	for (uint32_t i = 0; i < g->nr_nics; i++) {
		if (g->nics[i].devid != devid)
			continue;
		vmb_nic_done(&g->nics[i]);
		memmove(&g->nics[i], &g->nics[i + 1],
		    (g->nr_nics - i - 1) * sizeof(g->nics[0]));
		g->nr_nics--;
		return 0;
	}
	return -ENOENT;
}

const char *
vmb_guest_type_name(enum vmb_guest_type type)
{
	switch (type) {
	case VMB_GUEST_PVH:	return "pvh";
	case VMB_GUEST_HVM:	return "hvm";
	case VMB_GUEST_PV:	return "pv";
	}
	return "unknown";
}

int
vmb_guest_type_parse(const char *name, enum vmb_guest_type *ret_type)
{
	for (int t = VMB_GUEST_PVH; t <= VMB_GUEST_PV; t++)
		if (name && !strcmp(name, vmb_guest_type_name(t))) {
			*ret_type = (enum vmb_guest_type)t;
			return 0;
		}
	return -EINVAL;
}

int
vmb_ranges_parse(const char *s, uint64_t *bits, unsigned nbits)
{
	return s ? vmb__parse_ranges(s, bits, nbits) : -EINVAL;
}

int
vmb_guest_copy(const struct vmb_guest *src, struct vmb_guest **ret_guest)
{
	struct vmb_guest *g;
	char **s;
	int rc = 0;

	if (!src || !ret_guest)
		return -EINVAL;
	g = malloc(sizeof(*g));
	if (!g)
		return -ENOMEM;
	*g = *src;
	/* Nothing of src's is g's until copied: vmb_guest_free(g) can run. */
	for (size_t k = 0; k < VMB_KEY_MAX; k++)
		if ((s = owned_string(g, k)) != NULL)
			*s = NULL;
	g->source = NULL;
	g->disks = NULL;
	g->nics = NULL;
	g->nr_disks = g->nr_nics = 0;
	for (size_t k = 0; k < VMB_KEY_MAX && !rc; k++)
		if ((s = owned_string(g, k)) != NULL)
			rc = dup_or_null(*owned_string(src, k), s);
	if (rc || (rc = dup_or_null(src->source, &g->source)) ||
	    (rc = copy_devices(src, g)))
		goto fail;
	*ret_guest = g;
	return 0;
fail:
	vmb_guest_free(g);
	return rc;
}
