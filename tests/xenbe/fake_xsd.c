/*
 * fake_xsd.c - fake_xs.c's store behind xenstored's wire protocol, on
 * one end of a socketpair (a thread of its own), for the backend's
 * pipelined transactions (xen_xswire.c).  Each request is applied
 * through the wrapped libxenstore calls, so the store, its permissions,
 * transactions and conflicts are fake_xs.c's; replies go in order.
 * The client waits for its replies while the thread works: the two
 * never touch the store at once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fake_xsd.h"

#include <xen/io/xs_wire.h>

#define H	((struct xs_handle *)&fake_xs)	/* never dereferenced */

static int
full(int fd, void *buf, size_t n, bool out)
{
	char *p = buf;

	while (n > 0) {
		ssize_t k = out ? write(fd, p, n) : read(fd, p, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static int
reply(int fd, const struct xsd_sockmsg *req, uint32_t type, const void *body,
    size_t len)
{
	struct xsd_sockmsg m = *req;

	m.type = type;
	m.len = (uint32_t)len;
	if (full(fd, &m, sizeof(m), true) < 0)
		return -1;
	return len ? full(fd, (void *)body, len, true) : 0;
}

static int
reply_errno(int fd, const struct xsd_sockmsg *req, int err)
{
	const char *name = "EIO";

	for (size_t i = 0; i < sizeof(xsd_errors) / sizeof(xsd_errors[0]); i++)
		if (xsd_errors[i].errnum == err)
			name = xsd_errors[i].errstring;
	return reply(fd, req, XS_ERROR, name, strlen(name) + 1);
}

/* "r5\0n0\0" into perms: as xenstored parses SET_PERMS. */
static unsigned
parse_perms(const char *p, const char *end, struct xs_permissions *perms,
    unsigned max)
{
	unsigned n = 0;

	while (p < end && n < max) {
		perms[n].perms = *p == 'r' ? XS_PERM_READ : *p == 'w' ?
		    XS_PERM_WRITE : *p == 'b' ? XS_PERM_READ | XS_PERM_WRITE :
		    XS_PERM_NONE;
		perms[n].id = (unsigned)strtoul(p + 1, NULL, 10);
		n++;
		p += strlen(p) + 1;
	}
	return n;
}

static int
serve_one(struct fake_xsd *d, const struct xsd_sockmsg *m, char *body)
{
	const char *path = body, *rest = body + strlen(body) + 1;
	const char *end = body + m->len;
	struct xs_permissions perms[8];
	char id[16];
	void *v;
	unsigned len, n;
	bool ok;
	int rc;

	switch (m->type) {
	case XS_TRANSACTION_START:
		d->open_tx = xs_transaction_start(H);
		snprintf(id, sizeof(id), "%u", d->open_tx);
		return reply(d->fd, m, m->type, id, strlen(id) + 1);
	case XS_TRANSACTION_END:
		ok = xs_transaction_end(H, m->tx_id, body[0] == 'F');
		if (m->tx_id == d->open_tx)
			d->open_tx = 0;
		break;
	case XS_WRITE:
		ok = xs_write(H, m->tx_id, path, rest,
		    rest <= end ? (unsigned)(end - rest) : 0);
		break;
	case XS_MKDIR:
		ok = xs_mkdir(H, m->tx_id, path);
		break;
	case XS_RM:
		ok = xs_rm(H, m->tx_id, path);
		break;
	case XS_SET_PERMS:
		n = parse_perms(rest, end, perms, 8);
		ok = xs_set_permissions(H, m->tx_id, path, perms, n);
		break;
	case XS_READ:
		v = xs_read(H, m->tx_id, path, &len);
		if (v == NULL)
			return reply_errno(d->fd, m, errno);
		rc = reply(d->fd, m, m->type, v, len);
		free(v);
		return rc;
	default:
		errno = EINVAL;
		ok = false;
	}
	return ok ? reply(d->fd, m, m->type, "OK", 3) :
	    reply_errno(d->fd, m, errno);
}

static void *
serve(void *arg)
{
	struct fake_xsd *d = arg;
	struct xsd_sockmsg m;
	char *body;

	while (full(d->fd, &m, sizeof(m), false) == 0) {
		if (d->die_after && d->handled == d->die_after)
			break;
		body = calloc(1, m.len + 1);
		if (body == NULL || full(d->fd, body, m.len, false) < 0) {
			free(body);
			break;
		}
		d->handled++;
		d->types[m.type < FAKE_XSD_TYPES ? m.type : 0]++;
		if (serve_one(d, &m, body) < 0) {
			free(body);
			break;
		}
		free(body);
	}
	/* As xenstored: a transaction dies with its connection. */
	if (d->open_tx)
		(void)xs_transaction_end(H, d->open_tx, true);
	d->open_tx = 0;
	close(d->fd);
	d->fd = -1;
	return NULL;
}

int
fake_xsd_start(struct fake_xsd *d)
{
	int sv[2];

	d->handled = 0;
	memset(d->types, 0, sizeof(d->types));
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	d->fd = sv[1];
	if (pthread_create(&d->thread, NULL, serve, d) != 0) {
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	return sv[0];
}

void
fake_xsd_stop(struct fake_xsd *d)
{
	pthread_join(d->thread, NULL);
}
