/*
 * uuid.c - domain UUIDs through libuuid (util-linux), the library
 * libxenlight uses for the same job: one generator, one parser and one
 * format for the library, its backends and the daemon.
 */
#include <errno.h>

#include <uuid/uuid.h>

#include "vmbuild.h"

void
vmb_uuid_new(uint8_t uuid[16])
{
	/* Version 4; libuuid falls back to its own PRNG without entropy. */
	uuid_generate_random(uuid);
}

int
vmb_uuid_from_str(const char *s, uint8_t ret_uuid[16])
{
	uuid_t u;

	if (s == NULL || uuid_parse(s, u) != 0)
		return -EINVAL;
	uuid_copy(ret_uuid, u);
	return 0;
}

void
vmb_uuid_to_str(const uint8_t uuid[16], char buf[VMB_UUID_STRLEN])
{
	uuid_unparse_lower(uuid, buf);
}

bool
vmb_uuid_is_null(const uint8_t uuid[16])
{
	return uuid_is_null(uuid);
}
