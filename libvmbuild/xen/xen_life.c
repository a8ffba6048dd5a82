/*
 * xen_life.c - the lifecycle ops of the xen backend: shutdown requests
 * through the guest's PV control node (as xl shutdown and xl reboot),
 * shutdown from the hypervisor (SCHEDOP_remote_shutdown), the console's
 * pty (as xl console opens it), and the domain events xenstored gives
 * (@introduceDomain, @releaseDomain).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "xen_priv.h"

/* Linux's UNIX98 pty slaves: majors 136 to 143 (devices.txt). */
#define PTS_MAJOR_FIRST		136
#define PTS_MAJOR_LAST		143
/* As xenconsole: wait a little for xenconsoled to make the pty. */
#define CONSOLE_WAIT_MS		5000
#define CONSOLE_POLL_MS		100

static const char *
request_cmd(enum vmb_shutdown_reason reason)
{
	return reason == VMB_SHUTDOWN_REBOOT ? "reboot" : "poweroff";
}

static bool
domid_ok(uint32_t domid)
{
	return domid != 0 && domid < DOMID_FIRST_RESERVED;
}

int
xen_shutdown_request(void *priv, uint32_t domid,
    enum vmb_shutdown_reason reason)
{
	if (!domid_ok(domid))
		return -EINVAL;
	return xen_xs_control(priv, domid, request_cmd(reason), false);
}

int
xen_shutdown_withdraw(void *priv, uint32_t domid,
    enum vmb_shutdown_reason reason)
{
	if (!domid_ok(domid))
		return -EINVAL;
	return xen_xs_control(priv, domid, request_cmd(reason), true);
}

int
xen_shutdown(void *priv, uint32_t domid, enum vmb_shutdown_reason reason)
{
	struct xen_be *be = priv;

	if (!domid_ok(domid))
		return -EINVAL;
	return xc_domain_shutdown(be->xch, domid, (int)reason) < 0 ?
	    -xen_errno() : 0;
}

/*
 * Open what xenstore names as the console only if it is a pty slave
 * under /dev/pts: the name comes from a directory the guest cannot write,
 * but the daemon hands the descriptor to a client, so anything else
 * (a disk, a tape that rewinds when opened) is refused unopened.  The
 * device opened must be the one looked at.
 */
static int
open_pty(const char *path, int *ret_fd)
{
	struct stat st, fst;
	const char *p;
	int fd;

	if (strncmp(path, "/dev/pts/", 9) != 0 || path[9] == '\0')
		return -EPERM;
	for (p = path + 9; *p != '\0'; p++)
		if (*p < '0' || *p > '9')
			return -EPERM;
	if (lstat(path, &st) < 0)
		return -errno;
	if (!S_ISCHR(st.st_mode) || major(st.st_rdev) < PTS_MAJOR_FIRST ||
	    major(st.st_rdev) > PTS_MAJOR_LAST)
		return -EPERM;
	fd = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &fst) < 0 || fst.st_rdev != st.st_rdev || !isatty(fd)) {
		close(fd);
		return -EPERM;
	}
	*ret_fd = fd;
	return 0;
}

int
xen_console_open(void *priv, uint32_t domid, int *ret_fd, char *ret_path,
    size_t path_len)
{
	struct timespec pause = { 0, CONSOLE_POLL_MS * 1000000L };
	char path[256];
	int rc, waited;

	if (!domid_ok(domid))
		return -EINVAL;
	for (waited = 0; ; waited += CONSOLE_POLL_MS) {
		rc = xen_xs_console_tty(priv, domid, path, sizeof(path));
		if (rc != -ENOENT || waited >= CONSOLE_WAIT_MS)
			break;
		nanosleep(&pause, NULL);
	}
	if (rc < 0)
		return rc;
	rc = open_pty(path, ret_fd);
	if (rc == 0 && ret_path)
		snprintf(ret_path, path_len, "%s", path);
	return rc;
}

/*
 * Domain events: a xenstore connection of its own, watching the two
 * special nodes.  xenstored fires @releaseDomain when an introduced
 * domain shuts down or crashes (check_domains) and when it is gone, and
 * @introduceDomain when one is introduced; libxenstore's reader thread
 * makes xs_fileno readable meanwhile.  Each watch also fires once when
 * it is set, which costs one listing.
 */
struct xen_watch {
	struct xs_handle *h;
};

int
xen_watch_open(void *priv, void **ret_w)
{
	struct xen_watch *w;
	int rc;

	(void)priv;
	w = calloc(1, sizeof(*w));
	if (w == NULL)
		return -ENOMEM;
	w->h = xs_open(0);
	if (w->h == NULL) {
		rc = -(errno > 0 ? errno : ECONNREFUSED);
		goto fail;
	}
	if (xs_fileno(w->h) < 0 ||
	    !xs_watch(w->h, "@releaseDomain", "vmbuild-release") ||
	    !xs_watch(w->h, "@introduceDomain", "vmbuild-introduce")) {
		rc = -(errno > 0 ? errno : EIO);
		goto fail;
	}
	*ret_w = w;
	return 0;
fail:
	xen_watch_close(w);
	return rc;
}

int
xen_watch_fd(void *vw)
{
	struct xen_watch *w = vw;

	return xs_fileno(w->h);
}

int
xen_watch_drain(void *vw)
{
	struct xen_watch *w = vw;
	char **ev;
	int n = 0;

	while ((ev = xs_check_watch(w->h)) != NULL) {
		free(ev);
		n++;
	}
	if (errno != EAGAIN)
		return -(errno > 0 ? errno : EIO);
	return n > 0;
}

void
xen_watch_close(void *vw)
{
	struct xen_watch *w = vw;

	if (w == NULL)
		return;
	if (w->h != NULL)
		xs_close(w->h);
	free(w);
}
