/*
 * test_guestjson.c - the daemon's JSON form of a guest (daemon/
 * guestjson.c), both ways, run from the top of the tree:
 *
 * - every golden configs/tests/NAME.json: the guest vmb_config_load()
 *   makes of NAME.cfg, written by the daemon's writer, is the file
 *   (as tests/lib/config-golden.sh checks through vmb-config-check),
 *   and so is the guest read back from that writer's text;
 * - a record written before the guest was one struct (tests/daemon/
 *   fixtures/record-before-guestjson.json): its config read into a
 *   guest and written again is the same text, byte for byte, as the
 *   daemon's copy of the record's tree (what vm.info showed).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "guestjson.h"
#include "json.h"
#include "vmbuild.h"

#include "../tap.h"

#define GOLDEN_DIR	"configs/tests"
#define FIXTURE		"tests/daemon/fixtures/record-before-guestjson.json"

/* The whole of a file, NUL-terminated (malloc'd); NULL if unreadable. */
static char *
slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0;
	FILE *m;
	int c;

	if (!f || !(m = open_memstream(&buf, &len))) {
		if (f)
			fclose(f);
		return NULL;
	}
	while ((c = fgetc(f)) != EOF)
		fputc(c, m);
	fclose(f);
	fclose(m);
	return buf;
}

/* guestjson_print() as text, `dir` written as @DIR@ (malloc'd). */
static char *
printed(const struct vmb_guest *g, const char *dir)
{
	char *buf = NULL, *out, *p, *q;
	size_t len = 0, dlen = strlen(dir);
	FILE *m = open_memstream(&buf, &len);

	if (!m || guestjson_print(m, g) < 0) {
		if (m)
			fclose(m);
		free(buf);
		return NULL;
	}
	fclose(m);
	out = calloc(1, len + 1);
	for (p = buf, q = out; out && *p; )
		if (!strncmp(p, dir, dlen)) {
			q = stpcpy(q, "@DIR@");
			p += dlen;
		} else {
			*q++ = *p++;
		}
	free(buf);
	return out;
}

static void
test_golden(const char *dir, const char *name)
{
	char path[1024], *want, *args, *one = NULL, *two = NULL, *text = NULL;
	struct vmb_guest *g = NULL, *back = NULL;
	struct vmb_diags d = { 0 };
	unsigned flags = VMB_CHECK_FILES;
	char why[200] = "";

	/* A golden file's name is short; a cut one is a failed check. */
	if (snprintf(path, sizeof(path), "%s/%.*s.args", dir,
	    (int)(strlen(name) - 5), name) >= (int)sizeof(path))
		path[0] = '\0';
	args = slurp(path);
	if (args && strstr(args, "--ignore-unsupported"))
		flags |= VMB_CONFIG_IGNORE_UNSUPPORTED;
	free(args);
	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    (int)sizeof(path))
		path[0] = '\0';
	want = slurp(path);
	if (snprintf(path, sizeof(path), "%s/%.*s.cfg", dir,
	    (int)(strlen(name) - 5), name) >= (int)sizeof(path))
		path[0] = '\0';
	if (vmb_config_load(path, flags, &g, &d) == 0) {
		one = printed(g, dir);
		text = guestjson_text(g);
	}
	if (text && guestjson_parse(text, &back, why, sizeof(why)) == 0)
		two = printed(back, dir);
	ok(want && one && !strcmp(want, one), "%s: the writer's", name);
	ok(want && two && !strcmp(want, two), "%s: read back and written "
	    "again%s%s", name, why[0] ? ": " : "", why);
	free(want);
	free(one);
	free(two);
	free(text);
	vmb_guest_free(g);
	vmb_guest_free(back);
	vmb_diags_done(&d);
}

static void
test_goldens(void)
{
	char dir[900];
	struct dirent *e;
	DIR *dp;
	int n = 0;

	if (!getcwd(dir, sizeof(dir) - 20))
		return;
	strcat(dir, "/" GOLDEN_DIR);
	if (!ok((dp = opendir(dir)) != NULL, "open %s (run from the top of "
	    "the tree)", GOLDEN_DIR))
		return;
	while ((e = readdir(dp)) != NULL) {
		size_t len = strlen(e->d_name);

		if (len > 5 && !strcmp(e->d_name + len - 5, ".json")) {
			test_golden(dir, e->d_name);
			n++;
		}
	}
	closedir(dp);
	ok(n > 0, "%d golden files", n);
}

/* Members written since the fixture was, each at its default. */
static const char *const added[] = {
	"\"max_grant_frames\":0,",
	"\"max_maptrack_frames\":0,",
	"\"cpu_weight\":256,",
	"\"cap\":0,",
};

static void
test_old_record(void)
{
	char *text = slurp(FIXTURE), *tree_text = NULL, *again = NULL;
	yajl_val root = text ? jv_parse(text, strlen(text), JSON_MAX_DEPTH,
	    NULL, 0) : NULL;
	yajl_val config = jv_get(root, "config");
	struct vmb_guest *g = NULL;
	char why[200] = "";
	yajl_gen gen;

	if ((gen = jg_new()) != NULL) {
		jg_tree(gen, config);
		tree_text = jg_finish(gen);
	}
	ok(YAJL_IS_OBJECT(config) && guestjson_read(config, &g, why,
	    sizeof(why)) == 0, "%s: its config is read%s%s", FIXTURE,
	    why[0] ? ": " : "", why);
	if (g)
		again = guestjson_text(g);
	/*
	 * Keys added since the fixture was written come out at their
	 * defaults, where the key table puts them; the rest is unchanged.
	 */
	for (size_t i = 0; again && i < sizeof(added) / sizeof(added[0]);
	    i++) {
		char *at = strstr(again, added[i]);

		if (at)
			memmove(at, at + strlen(added[i]),
			    strlen(at + strlen(added[i])) + 1);
	}
	ok(tree_text && again && !strcmp(tree_text, again),
	    "the old record's config written again is the same text, "
	    "keys added since at their defaults");
	if (tree_text && again && strcmp(tree_text, again))
		diag("was %s\nnow %s", tree_text, again);
	ok(g && g->nr_disks == 2 && g->nr_nics == 2 && g->nr_vnodes == 2 &&
	    g->on[VMB_SHUTDOWN_POWEROFF] == VMB_ACTION_PRESERVE &&
	    g->nics[1].mac_set && !g->nics[1].trusted &&
	    g->nics[0].rate_bytes == 62500 && g->node_mask == 3,
	    "its fields: disks, vifs, vnodes, actions, MAC, rate, nodes");
	vmb_guest_free(g);
	free(again);
	free(tree_text);
	yajl_tree_free(root);
	free(text);
}

/* A config the reader refuses names the member. */
static void
test_bad(void)
{
	static const char *const bad[][2] = {
		{ "{\"memory_bytes\":-1}", "config.memory_bytes: invalid" },
		{ "{\"type\":\"hvm2\"}", "config.type: invalid" },
		{ "{\"disks\":[{\"vdev\":\"xvda\",\"devid\":1}]}",
		  "config.disks[0].devid: missing or invalid" },
		{ "{\"vifs\":[{\"devid\":0,\"mac\":\"00:16:3e\"}]}",
		  "config.vifs[0]." },
		{ "[]", "config: not an object" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct vmb_guest *g = NULL;
		char why[200] = "";
		int rc = guestjson_parse(bad[i][0], &g, why, sizeof(why));

		ok(rc == -EINVAL && !g && !strncmp(why, bad[i][1],
		    strlen(bad[i][1])), "%s refused: %s", bad[i][0], why);
	}
}

int
main(void)
{
	test_goldens();
	test_old_record();
	test_bad();
	return tap_status();
}
