/*
 * test_keys.c - every key of libvmbuild/keys.def is documented and
 * exercised: vmbuild.cfg(5) has the key's man-page line, the golden
 * configs/tests/all-keys.cfg sets it and the parser takes it there,
 * all-keys.json (vmb-config-check's output) has its JSON member; and
 * max_event_channels, the key added through the table, is honoured from
 * its default to its JSON form.  Run from the top of the tree.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guestjson.h"
#include "vmb_internal.h"

#include "../tap.h"

#define MAN_PAGE	"man/vmbuild.cfg.5.scd"
#define ALL_KEYS_CFG	"configs/tests/all-keys.cfg"
#define ALL_KEYS_JSON	"configs/tests/all-keys.json"
/* An HVM guest's keys (VMB_KEY_HVM_FIRST on): a PVH guest refuses them. */
#define HVM_KEYS_CFG	"configs/tests/hvm-keys.cfg"
#define HVM_KEYS_JSON	"configs/tests/hvm-keys.json"

/* The whole of a small file, NUL-terminated; NULL if unreadable. */
static char *
slurp(const char *path)
{
	static char buf[5][1 << 16];
	static int next;
	char *b = buf[next++ % 5];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return NULL;
	n = fread(b, 1, sizeof(buf[0]) - 1, f);
	fclose(f);
	b[n] = '\0';
	return b;
}

/* Does `text` have `line` as one whole line? */
static int
has_line(const char *text, const char *line)
{
	size_t len = strlen(line);

	for (const char *p = text; (p = strstr(p, line)) != NULL; p++)
		if ((p == text || p[-1] == '\n') &&
		    (p[len] == '\n' || p[len] == '\0'))
			return 1;
	return 0;
}

/* Does the xl.cfg `text` set `key` ("key =" at the start of a line)? */
static int
sets_key(const char *text, const char *key)
{
	char want[64];

	snprintf(want, sizeof(want), "\n%s =", key);
	return strstr(text, want) != NULL;
}

static void
test_every_key(void)
{
	const char *man = slurp(MAN_PAGE), *cfg = slurp(ALL_KEYS_CFG);
	const char *json = slurp(ALL_KEYS_JSON), *hcfg = slurp(HVM_KEYS_CFG);
	const char *hjson = slurp(HVM_KEYS_JSON);
	struct vmb_diags d = { 0 }, hd = { 0 };
	struct vmb_guest *g = NULL, *hg = NULL;
	int rc;

	if (!ok(man && cfg && json && hcfg && hjson, "read %s, %s, %s and "
	    "the hvm-keys golden (run from the top of the tree)", MAN_PAGE,
	    ALL_KEYS_CFG, ALL_KEYS_JSON))
		return;
	rc = vmb_config_parse_file(ALL_KEYS_CFG, &g, &d);
	ok(rc == 0 && d.nr_errors == 0, "%s parses", ALL_KEYS_CFG);
	rc = vmb_config_parse_file(HVM_KEYS_CFG, &hg, &hd);
	ok(rc == 0 && hd.nr_errors == 0, "%s parses", HVM_KEYS_CFG);
	for (int i = 0; i < VMB_KEY_MAX; i++) {
		const struct vmb__key *k = &vmb__keys[i];
		bool hvm = i >= VMB_KEY_HVM_FIRST;
		const char *c = hvm ? hcfg : cfg, *j = hvm ? hjson : json;
		struct vmb_guest *p = hvm ? hg : g;
		char member[64];

		ok(k->name && (int)k->key == i, "keys.def entry %d is "
		    "vmb__keys[%d] (%s)", i, i, k->name ? k->name : "?");
		if (!k->name)
			continue;
		ok(has_line(man, k->man), "%s: vmbuild.cfg(5) has its line "
		    "\"%s\"", k->name, k->man);
		ok(sets_key(c, k->name), "%s: %s sets it", k->name,
		    hvm ? HVM_KEYS_CFG : ALL_KEYS_CFG);
		ok(p && (p->keys_set >> i & 1), "%s: the parser took it from "
		    "%s", k->name, hvm ? HVM_KEYS_CFG : ALL_KEYS_CFG);
		if (k->json) {
			snprintf(member, sizeof(member), "\n  \"%s\": ",
			    k->json);
			ok(strstr(j, member) != NULL, "%s: %s has \"%s\"",
			    k->name, hvm ? HVM_KEYS_JSON : ALL_KEYS_JSON,
			    k->json);
		}
	}
	vmb_guest_free(g);
	vmb_guest_free(hg);
	vmb_diags_done(&d);
	vmb_diags_done(&hd);
}

/* Parse `text` (kernel.stub exists in configs/tests). */
static int
parse(const char *text, struct vmb_guest **g, struct vmb_diags *d)
{
	memset(d, 0, sizeof(*d));
	*g = NULL;
	return vmb_config_parse_text(text, strlen(text), "t.cfg",
	    "configs/tests", g, d);
}

#define BASE	"name = \"e\"\nmemory = 64\nkernel = \"kernel.stub\"\ntype = \"pvh\"\n"

static void
test_max_event_channels(void)
{
	struct vmb_guest *g = NULL, *c = NULL;
	struct vmb_diags d;
	char *j1 = NULL, *j2 = NULL;
	int rc;

	ok(vmb_guest_new(&g) == 0 && g->max_event_channels == 1023,
	    "max_event_channels: a new guest has libxl's default, 1023");
	vmb_guest_free(g);

	rc = parse(BASE, &g, &d);
	ok(rc == 0 && g->max_event_channels == 1023 &&
	    !(g->keys_set & (1ull << VMB_KEY_MAX_EVENT_CHANNELS)),
	    "max_event_channels: unset, 1023 and not marked as set");
	vmb_guest_free(g);
	vmb_diags_done(&d);

	rc = parse(BASE "max_event_channels = 4095\n", &g, &d);
	ok(rc == 0 && g && g->max_event_channels == 4095,
	    "max_event_channels = 4095 is kept");
	ok(g && vmb_guest_copy(g, &c) == 0 && c->max_event_channels == 4095,
	    "max_event_channels: vmb_guest_copy keeps it");
	ok(g && c && (j1 = guestjson_text(g)) != NULL &&
	    (j2 = guestjson_text(c)) != NULL && !strcmp(j1, j2) &&
	    strstr(j1, "\"max_event_channels\":4095,"),
	    "max_event_channels: in the JSON form, the copy's the same");
	free(j1);
	free(j2);
	vmb_guest_free(c);
	vmb_guest_free(g);
	vmb_diags_done(&d);

	rc = parse(BASE "max_event_channels = 1\n", &g, &d);
	ok(rc == -EINVAL && d.n == 1 &&
	    !strcmp(d.v[0].key, "max_event_channels") && d.v[0].line == 5 &&
	    strstr(d.v[0].msg, "out of range (2..131071)"),
	    "max_event_channels = 1: refused, naming key and line (%s)",
	    d.n ? d.v[0].msg : "no diagnostic");
	vmb_guest_free(g);
	vmb_diags_done(&d);

	rc = parse(BASE "max_event_channels = 131072\n", &g, &d);
	ok(rc == -EINVAL && d.nr_errors == 1,
	    "max_event_channels = 131072: refused (the FIFO ABI's limit)");
	vmb_guest_free(g);
	vmb_diags_done(&d);
}

int
main(void)
{
	test_every_key();
	test_max_event_channels();
	return tap_status();
}
