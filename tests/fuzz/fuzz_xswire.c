/*
 * fuzz_xswire.c - libFuzzer target: the reader of xenstored's replies
 * in the backend's pipelined transactions (libvmbuild/xen/xen_xswire.c)
 * over any bytes, given as what the other end of the connection sends
 * before it hangs up.  A transaction's start, a flush of a write, an rm
 * whose ENOENT is excused and a read, then its end: whatever comes, an
 * error is an errno, a read's value is nul-terminated within a payload,
 * and nothing is kept after a lost connection.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz.h"
#include "xen/xen_priv.h"

#define XSW_FUZZ_MAX	(60 * 1024)	/* well inside a socketpair's buffer */

static void
check_rc(int rc)
{
	if (rc > 0 || rc < -4095)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct xen_xsw *w = NULL;
	char *v = (char *)1;
	unsigned vlen = 0;
	uint32_t t = 0;
	int sv[2], rc, last = 0;

	if (len > XSW_FUZZ_MAX)
		return 0;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	if ((len && write(sv[1], data, len) != (ssize_t)len) ||
	    shutdown(sv[1], SHUT_WR) < 0 || xen_xsw_adopt(sv[0], &w) != 0)
		abort();
	rc = xen_xsw_start(w, &t);
	check_rc(rc);
	if (rc == 0 && t == 0)
		abort();
	xen_xsw_write(w, t, "/local/domain/5/name", "guest", 5);
	xen_xsw_rm(w, t, "/local/domain/5/gone", XSW_IGNORE_ENOENT);
	xen_xsw_read(w, t, "/local/domain/5/vm");
	rc = xen_xsw_flush(w, &v, &vlen, &last);
	check_rc(rc);
	check_rc(last);
	if (v != NULL && (vlen > 4096 || v[vlen] != '\0' ||
	    rc == -EPIPE || rc == -EPROTO || last != 0))
		abort();
	free(v);
	check_rc(xen_xsw_end(w, t, rc != 0));
	xen_xsw_free(w);	/* closes sv[0] */
	close(sv[1]);
	return 0;
}
