/*
 * test_config_fuzz.c - mutated xl.cfg text never crashes the parser, and
 * every refusal comes with at least one diagnostic.  Mutations: random
 * bytes, deletions, and insertions of the tokens that matter to xl's
 * grammar and to our lexical key scan (brackets, quotes, '=', ';', '#').
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmbuild.h"

#include "../tap.h"

#define ITERATIONS	20000

int
main(void)
{
	static const char *const tokens[] = { "[", "]", "\"", "'", "=", ";",
	    "#", "\n", ",", "+=", "vnuma", "memory", "99999999999999999999",
	    "-1", "nodes:", "\\" };
	static char base[8192], buf[8192];
	const char *path = "configs/tests/all-keys.cfg";
	unsigned seed = 20261130;
	size_t n, accepted = 0;
	int bad = -1;
	FILE *f;

	f = fopen(path, "r");
	if (!f) {
		ok(0, "fuzz: cannot open %s", path);
		return tap_status();
	}
	n = fread(base, 1, sizeof(base) - 1, f);
	fclose(f);
	for (int it = 0; it < ITERATIONS && bad < 0; it++) {
		struct vmb_diags d = { 0 };
		struct vmb_guest *g = NULL;
		size_t len = n;
		int k = 1 + rand_r(&seed) % 6, rc;

		memcpy(buf, base, n);
		for (int j = 0; j < k && len > 1; j++) {
			size_t at = (size_t)rand_r(&seed) % len;
			int op = rand_r(&seed) % 3;

			if (op == 0) {
				buf[at] = (char)(1 + rand_r(&seed) % 127);
			} else if (op == 1) {
				memmove(buf + at, buf + at + 1, len - at - 1);
				len--;
			} else {
				const char *s = tokens[rand_r(&seed) % 16];
				size_t sl = strlen(s);

				if (len + sl >= sizeof(buf))
					continue;
				memmove(buf + at + sl, buf + at, len - at);
				memcpy(buf + at, s, sl);
				len += sl;
			}
		}
		rc = vmb_config_parse_text(buf, len, "fuzz.cfg", "configs/tests",
		    &g, &d);
		/* A guest exactly when 0; a refusal always says why. */
		if ((rc == 0) != (g != NULL) || (rc != 0 && d.nr_errors == 0)) {
			diag("iteration %d: rc %d, %zu errors, on:", it, rc,
			    d.nr_errors);
			diag("%.*s", (int)len, buf);
			bad = it;
		}
		accepted += rc == 0;
		vmb_guest_free(g);
		vmb_diags_done(&d);
	}
	/* Both ways taken: the mutations neither all break nor all pass. */
	ok(bad < 0 && accepted > 0 && accepted < ITERATIONS, "fuzz: %d mutated "
	    "configs, %zu accepted, no crash, every refusal explained",
	    ITERATIONS, accepted);
	return tap_status();
}
