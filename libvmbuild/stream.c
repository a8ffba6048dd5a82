/*
 * stream.c - vmbuild's save stream: framed, checksummed records
 * (vmbuild-stream(5)).
 *
 * The stream is what `vmctl save` writes and `vmctl restore` reads: a
 * header (magic, version, flags), then records, each a 16-byte header
 * (type, length, CRC-32 of header and payload) and its payload padded to
 * 8 bytes.  The guest description comes first as the toolstack's own
 * text (vmbuildd's record JSON: libvmbuild writes no JSON), memory as
 * (gfn, count, bytes) records, an end record last that counts what came
 * before.  A Xen guest's state (libxc's stream v2, libxenguest's
 * save) travels instead of memory records as Xen records, pieces of that
 * stream in order, in a stream whose header says so (VMB_STREAM_F_XEN).
 *
 * The reader trusts nothing: every length is bounded before anything is
 * allocated or read, the order of records is checked, and every error
 * names the record (its index and type) and the byte offset where it
 * starts.
 */
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "vmb_internal.h"

struct rec_hdr {
	uint32_t type;
	uint32_t len;
	uint32_t crc;
	uint32_t reserved;
};

struct file_hdr {
	char	magic[8];
	uint32_t version;
	uint32_t flags;
	uint64_t reserved;
};

_Static_assert(sizeof(struct rec_hdr) == VMB_STREAM_REC_HDR,
    "record header is 16 bytes");
_Static_assert(sizeof(struct file_hdr) == VMB_STREAM_HDR,
    "stream header is 24 bytes");

static size_t
pad8(size_t n)
{
	return (8 - (n & 7)) & 7;
}

const char *
vmb_stream_rec_name(uint32_t type)
{
	switch (type & ~VMB_REC_OPTIONAL) {
	case VMB_REC_GUEST:	return "guest";
	case VMB_REC_MEMORY:	return "memory";
	case VMB_REC_END:	return "end";
	case VMB_REC_STATUS:	return "status";
	case VMB_REC_XEN:	return "xen";
	case VMB_REC_XEN_INLINE: return "xen-inline";
	}
	return "unknown";
}

/* ------------------------------------------------------------------ */
/* Writing.                                                            */

static int
write_all(struct vmb_stream_out *o, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = write(o->fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN && o->cancel_fd >= 0) {
			/* A pipe that is full: wait for room or a cancel. */
			struct pollfd pf[2] = { { o->fd, POLLOUT, 0 },
			    { o->cancel_fd, POLLIN, 0 } };

			if (poll(pf, 2, -1) < 0 && errno != EINTR)
				return -errno;
			if (pf[1].revents & POLLIN)
				return -ECANCELED;
			continue;
		}
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
		o->offset += (uint64_t)n;
	}
	return 0;
}

int
vmb_stream_begin(struct vmb_stream_out *o, int fd, uint32_t flags,
    int cancel_fd)
{
	struct file_hdr h;

	if (!o || fd < 0 || (flags & ~VMB_STREAM_F_ALL))
		return -EINVAL;
	memset(o, 0, sizeof(*o));
	o->fd = fd;
	o->cancel_fd = cancel_fd;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, VMB_STREAM_MAGIC, 8);
	h.version = htole32(VMB_STREAM_VERSION);
	h.flags = htole32(flags);
	return write_all(o, &h, sizeof(h));
}

/* One record whose payload is a followed by b (either may be empty). */
static int
put(struct vmb_stream_out *o, uint32_t type, const void *a, size_t alen,
    const void *b, size_t blen)
{
	static const uint8_t zero[8];
	struct rec_hdr h = { htole32(type), htole32((uint32_t)(alen + blen)),
	    0, 0 };
	uLong crc;
	int rc;

	if (alen + blen > VMB_STREAM_MAX_REC)
		return -E2BIG;
	crc = crc32(0L, (const Bytef *)&h, sizeof(h));
	if (alen)
		crc = crc32(crc, a, (uInt)alen);
	if (blen)
		crc = crc32(crc, b, (uInt)blen);
	h.crc = htole32((uint32_t)crc);
	rc = write_all(o, &h, sizeof(h));
	if (rc == 0 && alen)
		rc = write_all(o, a, alen);
	if (rc == 0 && blen)
		rc = write_all(o, b, blen);
	if (rc == 0)
		rc = write_all(o, zero, pad8(alen + blen));
	if (rc == 0)
		o->records++;
	return rc;
}

int
vmb_stream_put_guest(struct vmb_stream_out *o, const char *text, size_t len)
{
	if (!o || !text || len == 0 || len > VMB_STREAM_MAX_GUEST)
		return -EINVAL;
	return put(o, VMB_REC_GUEST, text, len, NULL, 0);
}

int
vmb_stream_put_memory(struct vmb_stream_out *o, uint64_t gfn, uint32_t count,
    const void *pages)
{
	uint64_t m[2] = { htole64(gfn), htole64(count) };
	int rc;

	if (!o || !pages || count == 0 || count > VMB_STREAM_MAX_PAGES)
		return -EINVAL;
	rc = put(o, VMB_REC_MEMORY, m, sizeof(m), pages,
	    (size_t)count * VMB_PAGE_SIZE);
	if (rc == 0)
		o->pages += count;
	return rc;
}

int
vmb_stream_put_xen(struct vmb_stream_out *o, const void *buf, size_t len)
{
	if (!o || !buf || len == 0 || len > VMB_STREAM_MAX_XEN)
		return -EINVAL;
	return put(o, VMB_REC_XEN, buf, len, NULL, 0);
}

int
vmb_stream_put_xen_inline(struct vmb_stream_out *o)
{
	return put(o, VMB_REC_XEN_INLINE, NULL, 0, NULL, 0);
}

void
vmb_stream_out_inline_done(struct vmb_stream_out *o, uint64_t bytes)
{
	if (o)
		o->offset += bytes;
}

int
vmb_stream_finish(struct vmb_stream_out *o)
{
	/* What came before the end record, so a reader can tell a cut. */
	uint64_t e[2] = { htole64(o->records), htole64(o->pages) };

	return put(o, VMB_REC_END, e, sizeof(e), NULL, 0);
}

int
vmb_stream_put_status(struct vmb_stream_out *o, uint32_t verdict,
    uint32_t err, const char *text)
{
	uint32_t m[2] = { htole32(verdict), htole32(err) };
	size_t len = text ? strnlen(text, VMB_STATUS_MAX_TEXT) : 0;

	if (!o || verdict < VMB_STATUS_READY || verdict > VMB_STATUS_FAILED)
		return -EINVAL;
	return put(o, VMB_REC_STATUS, m, sizeof(m), text, len);
}

/* ------------------------------------------------------------------ */
/* Reading.                                                            */

static int __attribute__((format(printf, 3, 4)))
bad(struct vmb_stream_in *in, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(in->why, sizeof(in->why), fmt, ap);
	va_end(ap);
	return rc;
}

/* Exactly len bytes, or -EBADMSG naming how far the stream went. */
static int
read_exact(struct vmb_stream_in *in, void *buf, size_t len, const char *what,
    uint64_t start)
{
	uint8_t *p = buf;
	size_t got = 0;

	while (got < len) {
		ssize_t n = in->read(in->user, p + got, len - got);

		if (n < 0)
			return bad(in, (int)n, "%s at offset %llu: read error: "
			    "%s", what, (unsigned long long)start,
			    strerror((int)-n));
		if (n == 0)
			return bad(in, -EBADMSG, "truncated: %s at offset "
			    "%llu needs %zu bytes, the stream ends after %zu",
			    what, (unsigned long long)start, len, got);
		got += (size_t)n;
		in->offset += (uint64_t)n;
	}
	return 0;
}

int
vmb_stream_open(struct vmb_stream_in *in, vmb_stream_read_fn *read_fn,
    void *user)
{
	struct file_hdr h;
	int rc;

	if (!in || !read_fn)
		return -EINVAL;
	memset(in, 0, sizeof(in[0]));
	in->read = read_fn;
	in->user = user;
	rc = read_exact(in, &h, sizeof(h), "stream header", 0);
	if (rc)
		return rc;
	if (memcmp(h.magic, VMB_STREAM_MAGIC, 8) != 0)
		return bad(in, -EBADMSG, "not a vmbuild save stream (bad "
		    "magic at offset 0)");
	in->version = le32toh(h.version);
	in->flags = le32toh(h.flags);
	if (in->version != VMB_STREAM_VERSION)
		return bad(in, -EPROTONOSUPPORT, "stream version %u at offset "
		    "8 is not supported (this reader knows %u)", in->version,
		    VMB_STREAM_VERSION);
	if (in->flags & ~VMB_STREAM_F_ALL)
		return bad(in, -EPROTONOSUPPORT, "stream header flags %#x at "
		    "offset 12: unknown bits", in->flags);
	/* The guest's memory travels one way or another, never two. */
	if (__builtin_popcount(in->flags & (VMB_STREAM_F_MEMORY |
	    VMB_STREAM_F_XEN | VMB_STREAM_F_XEN_INLINE)) > 1)
		return bad(in, -EBADMSG, "stream header flags %#x at offset "
		    "12: more than one of memory records, Xen records and an "
		    "inline Xen stream", in->flags);
	if (h.reserved != 0)
		return bad(in, -EBADMSG, "stream header: reserved bytes at "
		    "offset 16 are not zero");
	return 0;
}

void
vmb_stream_inline_done(struct vmb_stream_in *in, uint64_t bytes)
{
	if (!in || !in->inline_pending)
		return;
	in->inline_pending = false;
	in->inline_seen = true;
	in->offset += bytes;
}

void
vmb_stream_in_done(struct vmb_stream_in *in)
{
	if (!in)
		return;
	free(in->buf);
	in->buf = NULL;
	in->cap = 0;
}

/* The largest payload a record of `type` may have. */
static uint32_t
rec_limit(uint32_t type)
{
	switch (type) {
	case VMB_REC_GUEST:	return VMB_STREAM_MAX_GUEST;
	case VMB_REC_MEMORY:	return 16 + VMB_STREAM_MAX_PAGES * VMB_PAGE_SIZE;
	case VMB_REC_END:	return 16;
	case VMB_REC_STATUS:	return 8 + VMB_STATUS_MAX_TEXT;
	case VMB_REC_XEN:	return VMB_STREAM_MAX_XEN;
	case VMB_REC_XEN_INLINE: return 0;
	}
	return VMB_STREAM_MAX_REC;
}

/* The order of records: guest first and once, end last. */
static int
check_order(struct vmb_stream_in *in, uint32_t type, const char *at)
{
	if (in->ended)
		return bad(in, -EBADMSG, "%s: data after the end record", at);
	/* A reply stream has status records only; the others none. */
	if (in->flags & VMB_STREAM_F_REPLY)
		return type == VMB_REC_STATUS || type == VMB_REC_END ||
		    (type & VMB_REC_OPTIONAL) ? 0 : bad(in, -EBADMSG, "%s: "
		    "only status records belong in a reply stream", at);
	if (type == VMB_REC_STATUS)
		return bad(in, -EBADMSG, "%s: a status record outside a reply "
		    "stream", at);
	if (in->index == 0 && type != VMB_REC_GUEST)
		return bad(in, -EBADMSG, "%s: the first record must be the "
		    "guest description", at);
	if (in->index > 0 && type == VMB_REC_GUEST)
		return bad(in, -EBADMSG, "%s: a second guest description", at);
	if (type == VMB_REC_MEMORY && !(in->flags & VMB_STREAM_F_MEMORY))
		return bad(in, -EBADMSG, "%s: memory bytes in a stream whose "
		    "header says it has none", at);
	if (type == VMB_REC_XEN && !(in->flags & VMB_STREAM_F_XEN))
		return bad(in, -EBADMSG, "%s: a Xen record in a stream whose "
		    "header says it has no Xen stream (flags bit 2)", at);
	if (type == VMB_REC_XEN_INLINE &&
	    !(in->flags & VMB_STREAM_F_XEN_INLINE))
		return bad(in, -EBADMSG, "%s: an inline Xen stream in a "
		    "stream whose header says it has none (flags bit 3)", at);
	if (type == VMB_REC_XEN_INLINE && in->inline_seen)
		return bad(in, -EBADMSG, "%s: a second inline Xen stream", at);
	if (type == VMB_REC_END && (in->flags & VMB_STREAM_F_XEN_INLINE) &&
	    !in->inline_seen)
		return bad(in, -EBADMSG, "%s: the end, and the inline Xen "
		    "stream the header announces never came", at);
	return 0;
}

/* A status record: a known verdict, a text without NUL bytes. */
static int
check_status(struct vmb_stream_in *in, uint32_t len,
    struct vmb_stream_rec *r, const char *at)
{
	uint32_t v, e;

	if (len < 8)
		return bad(in, -EBADMSG, "%s: payload of %u bytes is shorter "
		    "than its 8-byte fixed part", at, len);
	memcpy(&v, in->buf, 4);
	memcpy(&e, in->buf + 4, 4);
	r->verdict = le32toh(v);
	r->err = le32toh(e);
	if (r->verdict < VMB_STATUS_READY || r->verdict > VMB_STATUS_FAILED)
		return bad(in, -EBADMSG, "%s: unknown verdict %u", at,
		    r->verdict);
	if (memchr(in->buf + 8, 0, len - 8) != NULL)
		return bad(in, -EBADMSG, "%s: the text holds a NUL byte", at);
	memcpy(r->text, in->buf + 8, len - 8);
	r->text[len - 8] = '\0';
	return 0;
}

/* The payload of a known record, read and checked. */
static int
check_payload(struct vmb_stream_in *in, uint32_t type, uint32_t len,
    struct vmb_stream_rec *r, const char *at)
{
	const uint8_t *p = in->buf;
	uint64_t a, b;

	if (type == VMB_REC_GUEST) {
		if (len == 0 || memchr(p, 0, len) != NULL)
			return bad(in, -EBADMSG, "%s: the guest description is "
			    "empty or holds a NUL byte", at);
		return 0;
	}
	if (type == VMB_REC_STATUS)
		return check_status(in, len, r, at);
	if (type == VMB_REC_XEN_INLINE) {
		in->inline_pending = true;
		return 0;
	}
	/* libxc's own bytes: libxenguest checks them as it reads them. */
	if (type == VMB_REC_XEN)
		return len == 0 ? bad(in, -EBADMSG, "%s: an empty Xen record",
		    at) : 0;
	if (len < 16)
		return bad(in, -EBADMSG, "%s: payload of %u bytes is shorter "
		    "than its 16-byte fixed part", at, len);
	memcpy(&a, p, 8);
	memcpy(&b, p + 8, 8);
	a = le64toh(a);
	b = le64toh(b);
	if (type == VMB_REC_END) {
		if (a != in->index || b != in->pages)
			return bad(in, -EBADMSG, "%s: it counts %llu records "
			    "and %llu pages, the stream had %llu and %llu",
			    at, (unsigned long long)a, (unsigned long long)b,
			    (unsigned long long)in->index,
			    (unsigned long long)in->pages);
		return 0;
	}
	/* VMB_REC_MEMORY */
	if (b == 0 || b > VMB_STREAM_MAX_PAGES ||
	    len != 16 + b * VMB_PAGE_SIZE)
		return bad(in, -EBADMSG, "%s: %llu pages do not match its "
		    "payload of %u bytes (1..%u pages of 4096)", at,
		    (unsigned long long)b, len, VMB_STREAM_MAX_PAGES);
	if (a >= VMB_STREAM_MAX_GFN || a + b > VMB_STREAM_MAX_GFN)
		return bad(in, -EBADMSG, "%s: gfn %#llx + %llu pages lies "
		    "beyond guest-physical 2^%d", at, (unsigned long long)a,
		    (unsigned long long)b, VMB_STREAM_GFN_BITS + 12);
	r->gfn = a;
	r->count = (uint32_t)b;
	r->pages = p + 16;
	in->pages += b;
	return 0;
}

static int
grow(struct vmb_stream_in *in, size_t len, const char *at)
{
	uint8_t *nb;

	if (len <= in->cap)
		return 0;
	nb = realloc(in->buf, len);
	if (!nb)
		return bad(in, -ENOMEM, "%s: out of memory for %zu bytes", at,
		    len);
	in->buf = nb;
	in->cap = len;
	return 0;
}

int
vmb_stream_next(struct vmb_stream_in *in, struct vmb_stream_rec *ret)
{
	struct vmb_stream_rec r;
	struct rec_hdr h;
	char at[96];
	uint32_t type, len, crc;
	size_t whole;
	int rc;

	if (!in || !ret)
		return -EINVAL;
	memset(&r, 0, sizeof(r));
	r.offset = in->offset;
	if (in->inline_pending)
		return bad(in, -EINVAL, "record %llu at offset %llu: the "
		    "inline Xen stream before it was not read",
		    (unsigned long long)in->index,
		    (unsigned long long)r.offset);
	snprintf(at, sizeof(at), "record %llu at offset %llu",
	    (unsigned long long)in->index, (unsigned long long)r.offset);
	if (in->ended) {
		uint8_t c;
		ssize_t n = in->read(in->user, &c, 1);

		if (n == 0)
			return 0;	/* the end, nothing after it */
		return bad(in, -EBADMSG, "%s: data after the end record", at);
	}
	rc = read_exact(in, &h, sizeof(h), at, r.offset);
	if (rc)
		return rc;
	type = le32toh(h.type);
	len = le32toh(h.len);
	crc = le32toh(h.crc);
	snprintf(at, sizeof(at), "record %llu (%s, type %#x) at offset %llu",
	    (unsigned long long)in->index, vmb_stream_rec_name(type), type,
	    (unsigned long long)r.offset);
	if (h.reserved != 0)
		return bad(in, -EBADMSG, "%s: reserved header bytes are not "
		    "zero", at);
	if (len > rec_limit(type & ~VMB_REC_OPTIONAL))
		return bad(in, -EBADMSG, "%s: length %u exceeds the limit "
		    "of %u for this record", at, len,
		    rec_limit(type & ~VMB_REC_OPTIONAL));
	rc = check_order(in, type, at);
	if (rc)
		return rc;
	whole = (size_t)len + pad8(len);
	rc = grow(in, whole ? whole : 1, at);
	if (rc == 0)
		rc = read_exact(in, in->buf, whole, at, r.offset);
	if (rc)
		return rc;
	h.crc = 0;
	if ((uint32_t)crc32(crc32(0L, (const Bytef *)&h, sizeof(h)), in->buf,
	    len) != crc)
		return bad(in, -EBADMSG, "%s: checksum mismatch (corrupt "
		    "data)", at);
	for (size_t i = len; i < whole; i++)
		if (in->buf[i] != 0)
			return bad(in, -EBADMSG, "%s: padding is not zero", at);
	r.type = type;
	r.len = len;
	r.data = in->buf;
	switch (type) {
	case VMB_REC_GUEST:
	case VMB_REC_MEMORY:
	case VMB_REC_END:
	case VMB_REC_STATUS:
	case VMB_REC_XEN:
	case VMB_REC_XEN_INLINE:
		rc = check_payload(in, type, len, &r, at);
		break;
	default:
		if (!(type & VMB_REC_OPTIONAL))
			rc = bad(in, -EBADMSG, "%s: unknown record type", at);
		break;
	}
	if (rc)
		return rc;
	in->index++;
	if (type == VMB_REC_END)
		in->ended = true;
	*ret = r;
	return 1;
}

int
vmb_guest_ram(uint64_t memory_bytes, uint64_t start[2], uint64_t end[2])
{
	uint64_t low = memory_bytes < VMB_MMIO_HOLE_START ? memory_bytes :
	    VMB_MMIO_HOLE_START;

	if (!start || !end || memory_bytes % VMB_PAGE_SIZE)
		return -EINVAL;
	start[0] = 0;
	end[0] = low;
	if (memory_bytes == low)
		return 1;
	start[1] = VMB_4GIB;
	end[1] = VMB_4GIB + (memory_bytes - low);
	return 2;
}

int
vmb_guest_memory_read(struct vmb_ctx *ctx, uint32_t domid, uint64_t gpa,
    void *buf, size_t len)
{
	if (!ctx || !buf || gpa + len < gpa)
		return -EINVAL;
	if (!ctx->ops->read)
		return -EOPNOTSUPP;
	return ctx->ops->read(ctx->priv, domid, gpa, buf, len);
}

int
vmb_guest_memory_write(struct vmb_ctx *ctx, uint32_t domid, uint64_t gpa,
    const void *buf, size_t len)
{
	if (!ctx || !buf || gpa + len < gpa)
		return -EINVAL;
	if (!ctx->ops->write)
		return -EOPNOTSUPP;
	return ctx->ops->write(ctx->priv, domid, gpa, buf, len);
}

int
vmb_guest_dirty_log(struct vmb_ctx *ctx, uint32_t domid, unsigned op,
    uint64_t gfn, uint32_t nr, uint64_t *bits, uint64_t *ret_dirty,
    uint64_t *ret_end)
{
	if (!ctx || op > VMB_DIRTY_PEEK)
		return -EINVAL;
	if (!ctx->ops->dirty_log)
		return -EOPNOTSUPP;
	return ctx->ops->dirty_log(ctx->priv, domid, op, gfn, nr, bits,
	    ret_dirty, ret_end);
}
