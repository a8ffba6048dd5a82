/*
 * uuid.c - domain UUIDs through libuuid (util-linux), the library
 * libxenlight uses for the same job: one generator, one parser and one
 * format for the library, its backends and the daemon.
 */
#include <errno.h>
#include <sys/random.h>

#include <uuid/uuid.h>

#include "vmbuild.h"

/*
 * Version 4 (RFC 9562, 5.4): 122 random bits from getrandom(), one
 * system call.  libuuid's uuid_generate_random() makes six for the same
 * (getrandom, then getpid, getuid, getppid, gettid and getpid again to
 * stir its own generator), a tenth of the daemon's system calls in a
 * small VM's create.  Without entropy yet (early boot: getrandom would
 * block), libuuid, which falls back to its own generator.
 */
void
vmb_uuid_new(uint8_t uuid[16])
{
	ssize_t n;

	do
		n = getrandom(uuid, 16, GRND_NONBLOCK);
	while (n < 0 && errno == EINTR);
	if (n != 16) {
		uuid_generate_random(uuid);
		return;
	}
	uuid[6] = (uuid[6] & 0x0f) | 0x40;	/* version 4 */
	uuid[8] = (uuid[8] & 0x3f) | 0x80;	/* variant 10x */
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
