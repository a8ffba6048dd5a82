/*
 * guest_json.c - the one JSON form of a guest description, for
 * vmb-config-check's golden tests and the daemon's records and vm.info
 * alike: a member per key of keys.def that has one, in that order,
 * written as the key's FORM says.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vmb_internal.h"

/* ------------------------------------------------------------------ */
/* JSON output.                                                        */

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

/* s as a JSON string, or null; devspec.c writes devices with it. */
void
vmb__json_str(FILE *f, const char *s)
{
	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

/* A bitmap as a range list, "0-3,5". */
static void
ranges_str(FILE *f, const uint64_t *bits, unsigned nbits)
{
	bool first = true;

	fputc('"', f);
	for (unsigned i = 0; i < nbits; i++) {
		unsigned j = i;

		if (!(bits[i / 64] >> (i % 64) & 1))
			continue;
		while (j + 1 < nbits && (bits[(j + 1) / 64] >> ((j + 1) % 64) & 1))
			j++;
		fprintf(f, "%s%u", first ? "" : ",", i);
		if (j > i)
			fprintf(f, "-%u", j);
		first = false;
		i = j;
	}
	fputc('"', f);
}

/* "disks" or "vifs": each device in its one JSON form (devspec.c). */
static int
format_devices(FILE *f, const struct vmb_guest *g, bool disks)
{
	uint32_t n = disks ? g->nr_disks : g->nr_nics;
	char *one;
	int rc;

	fputc('[', f);
	for (uint32_t i = 0; i < n; i++) {
		rc = disks ? vmb_disk_format_json(&g->disks[i], &one) :
		    vmb_nic_format_json(g->uuid, &g->nics[i], &one);
		if (rc != 0)
			return rc;
		fprintf(f, "%s\n    %s", i ? "," : "", one);
		free(one);
	}
	fputs(n ? "\n  ]" : "]", f);
	return 0;
}

/* The vnodes of vnuma=, after the nodes cpus= allows ("nodes"). */
static void
format_vnuma(FILE *f, const struct vmb_guest *g)
{
	fputc('[', f);
	for (uint32_t i = 0; i < g->nr_vnodes; i++) {
		fprintf(f, "%s\n    {\"pnode\": %u, \"size_bytes\": %llu, "
		    "\"vcpus\": ", i ? "," : "", g->vnodes[i].pnode,
		    (unsigned long long)g->vnodes[i].size_bytes);
		ranges_str(f, g->vnodes[i].vcpus, VMB_MAX_VCPUS);
		fputs(", \"vdistances\": [", f);
		for (uint32_t j = 0; j < g->nr_vnodes; j++)
			fprintf(f, "%s%u", j ? ", " : "",
			    g->vnodes[i].distances[j]);
		fputs("]}", f);
	}
	fputs(g->nr_vnodes ? "\n  ]" : "]", f);
}

static void
format_nodes(FILE *f, const struct vmb_guest *g)
{
	fputs(",\n  \"nodes\": [", f);
	for (unsigned n = 0, first = 1; n < 64; n++)
		if (g->node_mask >> n & 1) {
			fprintf(f, "%s%u", first ? "" : ", ", n);
			first = 0;
		}
	fputc(']', f);
}

/* The unsigned number in key k's field, whatever its width. */
static unsigned long long
field_number(const void *p, size_t size)
{
	uint8_t u8;
	uint32_t u32;
	uint64_t u64;

	switch (size) {
	case 1:
		memcpy(&u8, p, 1);
		return u8;
	case 4:
		memcpy(&u32, p, 4);
		return u32;
	default:
		memcpy(&u64, p, 8);
		return u64;
	}
}

/* Key k's member of the object (its first when `first`), as FORM says. */
static int
format_key(FILE *f, const struct vmb_guest *g, const struct vmb__key *k,
    bool first)
{
	const void *p = (const char *)g + k->offset;
	char uuid[VMB_UUID_STRLEN];
	enum vmb_guest_type type;
	enum vmb_action action;

	if (k->form == VMB__JSON_VNUMA)
		format_nodes(f, g);
	fprintf(f, "%s\n  \"%s\": ", first ? "{" : ",", k->json);
	switch (k->form) {
	case VMB__JSON_STRING:
		vmb__json_str(f, k->owned ? *(char *const *)p : p);
		break;
	case VMB__JSON_NUMBER:
		fprintf(f, "%llu", field_number(p, k->size));
		break;
	case VMB__JSON_BOOL:
		fputs(*(const bool *)p ? "true" : "false", f);
		break;
	case VMB__JSON_TYPE:
		memcpy(&type, p, sizeof(type));
		fprintf(f, "\"%s\"", vmb_guest_type_name(type));
		break;
	case VMB__JSON_ACTION:
		memcpy(&action, p, sizeof(action));
		fprintf(f, "\"%s\"", vmb_action_name(action));
		break;
	case VMB__JSON_UUID:
		if (vmb_uuid_is_null(p)) {
			fputs("null", f);
			break;
		}
		vmb_uuid_to_str(p, uuid);
		vmb__json_str(f, uuid);
		break;
	case VMB__JSON_VNUMA:
		format_vnuma(f, g);
		break;
	case VMB__JSON_DISKS:
	case VMB__JSON_VIFS:
		return format_devices(f, g, k->form == VMB__JSON_DISKS);
	}
	return 0;
}

int
vmb_guest_format_json(const struct vmb_guest *g, char **ret_json)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	bool first = true;
	int rc = 0;

	if (!g || !ret_json)
		return -EINVAL;
	f = open_memstream(&buf, &len);
	if (!f)
		return -ENOMEM;
	for (size_t i = 0; i < VMB_KEY_MAX && !rc; i++) {
		if (!vmb__keys[i].json)
			continue;
		rc = format_key(f, g, &vmb__keys[i], first);
		first = false;
	}
	fputs("\n}\n", f);
	if (fclose(f) != 0 || rc) {
		free(buf);
		return rc ? rc : -ENOMEM;
	}
	*ret_json = buf;
	return 0;
}
