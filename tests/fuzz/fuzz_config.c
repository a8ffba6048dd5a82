/*
 * fuzz_config.c - xl.cfg text as the daemon parses it (libvmbuild's
 * config.c over Xen's libxlutil, then guest.c's keys and checks, without
 * looking at any file), and the daemon's JSON of what it accepts
 * (guestjson.c), which must read back to the same text.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "guestjson.h"
#include "vmbuild.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct vmb_diags diags = { 0 };
	struct vmb_guest *g = NULL, *back = NULL;
	char *json = NULL, *again = NULL, why[200];

	if (vmb_config_parse((const char *)data, len, "fuzz.cfg", "/images",
	    0, &g, &diags) == 0 && (json = guestjson_text(g)) != NULL) {
		/* What the daemon writes, it reads back as it was. */
		if (guestjson_parse(json, &back, why, sizeof(why)) != 0 ||
		    (again = guestjson_text(back)) == NULL ||
		    strcmp(json, again) != 0)
			abort();
		vmb_guest_free(back);
		free(again);
	}
	free(json);
	for (size_t i = 0; i < diags.n; i++) {
		char buf[700];

		vmb_diag_format(&diags.v[i], buf, sizeof(buf));
	}
	vmb_guest_free(g);
	vmb_diags_done(&diags);
	return 0;
}
