/*
 * fuzz_state.c - a state record file as vmbuildd reads it at start
 * (state.c: bounded JSON, the uuid against the file's name, domid range,
 * then the guest and build JSON kept as text), and its config read
 * into a guest as vm.c does (guestjson.c).  The first 36 bytes of the
 * input, when they are a uuid, name the file.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fuzz.h"
#include "guestjson.h"
#include "state.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	char name[64] = "00000000-0000-4000-8000-000000000001.json";
	struct state_record rec;
	struct vmb_guest *g = NULL;
	char why[200];

	if (len >= 36) {
		snprintf(name, sizeof(name), "%.36s.json", (const char *)data);
		data += 36;
		len -= 36;
	}
	if (state_parse(name, (const char *)data, len, &rec, why,
	    sizeof(why)) != 0)
		return 0;
	if (rec.config_json != NULL &&
	    guestjson_parse(rec.config_json, &g, why, sizeof(why)) == 0)
		vmb_guest_free(g);
	state_record_done(&rec);
	return 0;
}
