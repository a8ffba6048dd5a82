/*
 * fuzz_stream.c - a save stream as vm.restore reads it (libvmbuild's
 * stream.c): the header, then every record until the end or the first
 * error, each bounded, checksummed and checked in order.  Any input must
 * give a record or an error naming one, never a crash or a read past
 * what was given.
 */
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "fuzz.h"
#include "vmbuild.h"

struct input {
	const uint8_t *p;
	size_t	left;
};

/* Short reads of varying size, as a pipe gives them. */
static ssize_t
input_read(void *user, void *buf, size_t len)
{
	struct input *in = user;
	size_t n = len < in->left ? len : in->left;

	if (n > 1 && in->left % 3 == 0)
		n = n / 2;
	memcpy(buf, in->p, n);
	in->p += n;
	in->left -= n;
	return (ssize_t)n;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct input in = { data, len };
	struct vmb_stream_in s;
	struct vmb_stream_rec r;
	int rc;

	if (vmb_stream_open(&s, input_read, &in) == 0) {
		while ((rc = vmb_stream_next(&s, &r)) > 0)
			if (r.type == VMB_REC_MEMORY && r.count > 0)
				(void)r.pages[(size_t)r.count * 4096 - 1];
			else if (r.type == VMB_REC_XEN)
				(void)r.data[r.len - 1];	/* never empty */
		(void)rc;
	}
	vmb_stream_in_done(&s);
	return 0;
}
