/*
 * source.c - what a VM is built from, kept to build it again (see
 * source.h).
 */
#include <errno.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guestjson.h"
#include "json.h"
#include "source.h"

static const char *const owner_images[2] = { "kernel", "ramdisk" };

/* "creator" and "images" of a VM no root client created. */
static void
owner_json(yajl_gen g, const struct source_owner *o)
{
	char pin[48];

	jg_key(g, "creator");
	yajl_gen_map_open(g);
	jg_kv_u64(g, "uid", o->cred.uid);
	jg_kv_u64(g, "gid", o->cred.gid);
	jg_key(g, "groups");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < o->cred.ngroups; i++)
		jg_u64(g, o->cred.groups[i]);
	yajl_gen_array_close(g);
	yajl_gen_map_close(g);
	jg_key(g, "images");
	yajl_gen_map_open(g);
	for (int i = 0; i < 2; i++) {
		if (o->ino[i] == 0)
			continue;
		/* Text: an inode number may not fit in JSON's integers. */
		snprintf(pin, sizeof(pin), "%llu:%llu",
		    (unsigned long long)o->dev[i],
		    (unsigned long long)o->ino[i]);
		jg_kv_str(g, owner_images[i], pin);
	}
	yajl_gen_map_close(g);
}

char *
source_json(const char *config, yajl_val guest, const char *config_path,
    bool ignore_unsupported, const struct source_owner *owner)
{
	yajl_gen g = jg_new();

	if (g == NULL)
		return NULL;
	yajl_gen_map_open(g);
	if (config != NULL)
		jg_kv_str(g, "config", config);
	else {
		jg_key(g, "guest");
		jg_tree(g, guest);
	}
	if (config_path != NULL)
		jg_kv_str(g, "config_path", config_path);
	if (ignore_unsupported)
		jg_kv_bool(g, "ignore_unsupported", true);
	if (owner->by_root)
		jg_kv_bool(g, "by_root", true);
	else
		owner_json(g, owner);
	yajl_gen_map_close(g);
	return jg_finish(g);
}

static const char *
str_member(yajl_val v, const char *key)
{
	yajl_val m = jv_get(v, key);

	return YAJL_IS_STRING(m) ? m->u.string : NULL;
}

/* ------------------------------------------------------------------ */
/* The devices the VM has now                                          */

/*
 * The devices the VM has now (its configuration's disks and vifs, as
 * vm.info shows them and hot-plug keeps them, read by guestjson.c) in
 * place of those of the description it was created from: xl keeps a
 * domain's devices across a reboot, so does a restart.  A list the
 * configuration lacks (a record of a vmbuildd before hot-plug) leaves
 * the description's.
 */
/*
 * The size the VM has now (vm.mem_set, vm.mem_max, vm.vcpu_set,
 * vm.vcpu_pin of every vCPU), as libxl keeps a domain's target and
 * vCPUs online in its configuration across a reboot.  The memory of a
 * vNUMA guest stays as written: its vnodes' sizes add up to it.
 */
static void
size_now(struct vmb_guest *g, struct vmb_guest *now)
{
	char *swap;

	if (g->nr_vnodes == 0 && (now->keys_set & (1ull << VMB_KEY_MEMORY)) &&
	    (now->keys_set & (1ull << VMB_KEY_MAXMEM)) && now->memory_bytes &&
	    now->memory_bytes <= now->maxmem_bytes) {
		g->memory_bytes = now->memory_bytes;
		g->maxmem_bytes = now->maxmem_bytes;
	}
	if ((now->keys_set & (1ull << VMB_KEY_VCPUS)) && now->vcpus > 0 &&
	    now->vcpus <= g->maxvcpus)
		g->vcpus = now->vcpus;
	if (now->keys_set & (1ull << VMB_KEY_CPUS)) {
		swap = g->cpus;
		g->cpus = now->cpus;
		now->cpus = swap;
	}
	if (now->keys_set & (1ull << VMB_KEY_CPUS_SOFT)) {
		swap = g->cpus_soft;
		g->cpus_soft = now->cpus_soft;
		now->cpus_soft = swap;
	}
}

static int
devices_now(struct vmb_guest *g, const char *config_json, char *why,
    size_t why_len)
{
	struct vmb_guest *now = NULL;
	int rc;

	if ((rc = guestjson_parse(config_json, &now, why, why_len)) < 0) {
		char reason[200];

		snprintf(reason, sizeof(reason), "%s", why);
		snprintf(why, why_len, "its recorded configuration: %s",
		    reason);
		return rc;
	}
	if (now->keys_set & (1ull << VMB_KEY_DISK)) {
		vmb_guest_take_disks(g, now->disks, now->nr_disks);
		now->disks = NULL;
		now->nr_disks = 0;
	}
	if (now->keys_set & (1ull << VMB_KEY_VIF)) {
		vmb_guest_take_nics(g, now->nics, now->nr_nics);
		now->nics = NULL;
		now->nr_nics = 0;
	}
	/* So do the settings changed at run time (vm.rename, vm.sched_set). */
	if (now->keys_set & (1ull << VMB_KEY_NAME))
		snprintf(g->name, sizeof(g->name), "%s", now->name);
	if (now->keys_set & (1ull << VMB_KEY_CPU_WEIGHT))
		g->cpu_weight = now->cpu_weight;
	if (now->keys_set & (1ull << VMB_KEY_CAP))
		g->cap = now->cap;
	g->keys_set |= now->keys_set &
	    (1ull << VMB_KEY_CPU_WEIGHT | 1ull << VMB_KEY_CAP);
	size_now(g, now);
	vmb_guest_free(now);
	return 0;
}

bool
source_by_root(const char *json)
{
	yajl_val root = json ? jv_parse(json, strlen(json), JSON_MAX_DEPTH,
	    NULL, 0) : NULL;
	bool yes = YAJL_IS_TRUE(jv_get(root, "by_root"));

	yajl_tree_free(root);
	return yes;
}

/* An id of a creator member: a JSON integer from 0 below 2^32 - 1. */
static bool
owner_id(yajl_val v, unsigned *ret)
{
	long long n;

	if (!YAJL_IS_INTEGER(v) || (n = YAJL_GET_INTEGER(v)) < 0 ||
	    n >= 0xffffffffLL)
		return false;
	*ret = (unsigned)n;
	return true;
}

/* creator.groups into out->cred: 0, -EINVAL or -ENOMEM. */
static int
owner_groups(yajl_val groups, struct source_owner *out)
{
	size_t n;
	unsigned id;

	if (!YAJL_IS_ARRAY(groups))
		return -EINVAL;
	n = groups->u.array.len;
	if (n == 0)
		return 0;
	if ((out->cred.groups = calloc(n, sizeof(gid_t))) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (!owner_id(groups->u.array.values[i], &id))
			return -EINVAL;
		out->cred.groups[out->cred.ngroups++] = (gid_t)id;
	}
	return 0;
}

/* images.KEY, "DEV:INO": 0 (none, or set), or -EINVAL. */
static int
owner_pin(yajl_val images, int i, struct source_owner *out)
{
	const char *s = str_member(images, owner_images[i]);
	unsigned long long dev, ino;
	int end = 0;

	if (s == NULL)
		return jv_get(images, owner_images[i]) ? -EINVAL : 0;
	if (sscanf(s, "%llu:%llu%n", &dev, &ino, &end) != 2 || s[end] ||
	    ino == 0)
		return -EINVAL;
	out->dev[i] = (dev_t)dev;
	out->ino[i] = (ino_t)ino;
	return 0;
}

int
source_owner(const char *json, struct source_owner *out, char *why,
    size_t why_len)
{
	yajl_val root = json ? jv_parse(json, strlen(json), JSON_MAX_DEPTH,
	    NULL, 0) : NULL;
	yajl_val creator = jv_get(root, "creator"), images;
	unsigned uid = 0, gid = 0;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	out->by_root = YAJL_IS_TRUE(jv_get(root, "by_root"));
	if (out->by_root)
		goto out;
	if (creator == NULL) {
		/* An older vmbuildd's record: nobody's rights (README). */
		out->unknown = true;
		out->cred.uid = out->cred.gid = PEER_NOBODY;
		out->cred.others_only = true;
		goto out;
	}
	images = jv_get(root, "images");
	if (!YAJL_IS_OBJECT(creator) ||
	    !owner_id(jv_get(creator, "uid"), &uid) ||
	    !owner_id(jv_get(creator, "gid"), &gid) ||
	    (images != NULL && !YAJL_IS_OBJECT(images)))
		rc = -EINVAL;
	out->cred.uid = uid;
	out->cred.gid = gid;
	if (rc == 0)
		rc = owner_groups(jv_get(creator, "groups"), out);
	for (int i = 0; rc == 0 && images != NULL && i < 2; i++)
		rc = owner_pin(images, i, out);
	/* A creator of uid 0 without by_root is not taken for root. */
	if (rc == 0 && uid == 0)
		rc = -EINVAL;
	if (rc < 0)
		snprintf(why, why_len, "its recorded creator is %s",
		    rc == -ENOMEM ? "too large (out of memory)" : "malformed");
out:
	yajl_tree_free(root);
	return rc;
}

/*
 * A hotplug script by path in a guest that no root client created:
 * -EPERM with why (source_parse).
 */
static int
scripts_by_path(const struct vmb_guest *g, char *why, size_t why_len)
{
	for (uint32_t i = 0; i < g->nr_disks; i++)
		if (g->disks[i].script && g->disks[i].script[0] == '/') {
			snprintf(why, why_len, "disk %s: script \"%.64s\" is a "
			    "path, and no root client created the VM: not run",
			    g->disks[i].vdev, g->disks[i].script);
			return -EPERM;
		}
	for (uint32_t i = 0; i < g->nr_nics; i++)
		if (g->nics[i].script && g->nics[i].script[0] == '/') {
			snprintf(why, why_len, "vif %u: script \"%.64s\" is a "
			    "path, and no root client created the VM: not run",
			    g->nics[i].devid, g->nics[i].script);
			return -EPERM;
		}
	return 0;
}

static void
first_error(const struct vmb_diags *diags, char *why, size_t len)
{
	for (size_t i = 0; i < diags->n; i++)
		if (diags->v[i].severity == VMB_ERROR) {
			vmb_diag_format(&diags->v[i], why, len);
			return;
		}
	snprintf(why, len, "invalid description");
}

int
source_parse(const char *json, const char *config_json,
    struct vmb_guest **ret_guest, char *why, size_t why_len)
{
	struct vmb_diags diags = { 0 };
	struct vmb_guest *guest = NULL;
	const char *text, *path, *where, *key = NULL, *what = NULL;
	char *dir = NULL, *basedir = NULL;
	yajl_val root, obj;
	unsigned flags = 0;
	int rc;

	root = json != NULL ? jv_parse(json, strlen(json), JSON_MAX_DEPTH,
	    NULL, 0) : NULL;
	if (root == NULL) {
		snprintf(why, why_len, "no recorded description");
		return -ENOENT;
	}
	text = str_member(root, "config");
	path = str_member(root, "config_path");
	obj = jv_get(root, "guest");
	if (YAJL_IS_TRUE(jv_get(root, "ignore_unsupported")))
		flags = VMB_CONFIG_IGNORE_UNSUPPORTED;
	if (path != NULL && path[0] == '/' && (dir = strdup(path)) != NULL)
		basedir = dirname(dir);
	where = text != NULL && path != NULL ? path : "request";
	/* The keys first: the whole is checked once the devices are in. */
	if (text != NULL) {
		rc = vmb_config_parse(text, strlen(text), where, basedir,
		    flags | VMB_CONFIG_NO_CHECK, &guest, &diags);
	} else if (YAJL_IS_OBJECT(obj)) {
		rc = vmb_guest_new(&guest);
		if (rc == 0)
			guest->flags = flags;
		if (rc == 0)
			rc = guestjson_keys(guest, obj, where, &diags,
			    &key, &what);
	} else {
		rc = -EINVAL;
		snprintf(why, why_len, "the recorded description is neither "
		    "xl.cfg text nor a guest object");
		goto out;
	}
	if (rc == 0 && diags.nr_errors > 0)
		rc = -EINVAL;
	if (rc == 0 && config_json != NULL &&
	    (rc = devices_now(guest, config_json, why, why_len)) < 0)
		goto out;
	if (rc == 0 && !YAJL_IS_TRUE(jv_get(root, "by_root")) &&
	    (rc = scripts_by_path(guest, why, why_len)) < 0)
		goto out;
	/* As vm.create: no file is looked at (images.c opens). */
	if (rc == 0)
		rc = vmb_guest_check(guest, basedir, where, 0, &diags);
	if (rc == 0 && diags.nr_errors > 0)
		rc = -EINVAL;
	if (rc < 0 && key != NULL)
		snprintf(why, why_len, "guest.%s: %s", key, what);
	else if (rc < 0 && diags.nr_errors > 0)
		first_error(&diags, why, why_len);
	else if (rc < 0)
		snprintf(why, why_len, "%s", strerror(-rc));
out:
	if (rc == 0)
		*ret_guest = guest;
	else
		vmb_guest_free(guest);
	vmb_diags_done(&diags);
	yajl_tree_free(root);
	free(dir);
	return rc;
}
