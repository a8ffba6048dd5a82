/*
 * test_native.c - the hypervisor's own save stream as vmbuild carries it
 * (native.c, stream.c): a backend's saver and restorer (here fakes with
 * the ops' signatures, as libxenguest's xc_domain_save and
 * xc_domain_restore behave towards their descriptor) on a thread of
 * their own, their bytes framed as Xen records (VMB_REC_XEN) in a stream
 * whose header says so (VMB_STREAM_F_XEN) and read back in order.
 *
 * Checked: every byte travels in order, in records of at most
 * VMB_STREAM_MAX_XEN; a save's time split between waiting for the saver
 * and our writes is counted; a checkpoint resumes the guest once; a failed
 * write of ours or a cancel stops the saver (its writes fail) and the
 * guest is resumed, the failure ours; a restorer that stops reading
 * fails the restore with its reason, a stream that fails with the
 * stream's; the reader refuses a Xen record the header did not announce,
 * memory and Xen records both, and an empty or oversized one.  The
 * inline stream (a regular file the backend writes and reads itself):
 * the same bytes after the xen-inline record, the end record after them,
 * progress heard while it runs, a cancel failing the backend's next
 * write (the guest resumed) or read, and what the reader refuses of
 * xen-inline records.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>
#include <zlib.h>

#include "vmb_internal.h"

#define SAVED_LEN	(3u * 1024 * 1024 + 17)

static struct {
	size_t	save_len;		/* bytes the saver writes */
	int	save_rc;		/* what it returns after writing */
	bool	saw_write_fail;
	unsigned resumes;
	bool	suspended;
	/* The restorer: */
	size_t	restore_stop_after;	/* 0: read to the end */
	size_t	restore_len;		/* libxc's length (0: to EOF) */
	unsigned restore_delay_ms;	/* before each read */
	uint8_t	*got;
	size_t	got_len;
	uint32_t vcpus;
	unsigned save_delay_ms;		/* the saver's "suspend" before writing */
	unsigned save_chunk_us;		/* and a pause after each write */
	struct vmb_native_live *live;	/* what the saver was given */
} fb;

static uint8_t
pattern(size_t i)
{
	return (uint8_t)(i * 7 + (i >> 12));
}

/* As xc_domain_save: writes the stream, fails if the reader went. */
static int
fake_save(void *priv, uint32_t domid, int fd, int cancel_fd,
    uint32_t suspend_ms, struct vmb_native_live *live, char *why, size_t len)
{
	uint8_t buf[5000];
	size_t off = 0;

	(void)priv, (void)domid, (void)cancel_fd, (void)suspend_ms;
	fb.live = live;
	if (fb.save_delay_ms)
		usleep(fb.save_delay_ms * 1000u);
	fb.suspended = true;
	while (off < fb.save_len) {
		size_t n = fb.save_len - off < sizeof(buf) ? fb.save_len - off :
		    sizeof(buf);
		ssize_t w;

		for (size_t i = 0; i < n; i++)
			buf[i] = pattern(off + i);
		w = write(fd, buf, n);
		if (w < 0) {
			/* xen_save.c resumes a guest it suspended. */
			fb.saw_write_fail = true;
			fb.suspended = false;
			fb.resumes++;
			snprintf(why, len, "save: write: %s", strerror(errno));
			return -errno;
		}
		off += (size_t)w;
		if (fb.save_chunk_us)
			usleep(fb.save_chunk_us);
	}
	if (fb.save_rc < 0)
		snprintf(why, len, "save: the saver's own failure");
	return fb.save_rc;
}

static int
fake_resume(void *priv, uint32_t domid, char *why, size_t len)
{
	(void)priv, (void)domid, (void)why, (void)len;
	fb.resumes++;
	fb.suspended = false;
	return 0;
}

/* As xc_domain_restore: reads to the end, or stops early and fails. */
static int
fake_restore(void *priv, uint32_t domid, int fd, const struct vmb_boot *boot,
    char *why, size_t len)
{
	uint8_t buf[3000];
	ssize_t n;

	(void)priv, (void)domid;
	fb.vcpus = boot->vcpus;
	for (;;) {
		size_t want = sizeof(buf);

		/* libxc reads its own stream exactly, up to its END. */
		if (fb.restore_len && fb.restore_len - fb.got_len < want)
			want = fb.restore_len - fb.got_len;
		if (want == 0)
			return 0;
		if (fb.restore_delay_ms)
			usleep(fb.restore_delay_ms * 1000u);
		n = read(fd, buf, want);
		if (n == 0 && fb.restore_len) {
			snprintf(why, len, "restore: truncated stream");
			return -EIO;
		}
		if (n <= 0)
			break;
		fb.got = realloc(fb.got, fb.got_len + (size_t)n);
		memcpy(fb.got + fb.got_len, buf, (size_t)n);
		fb.got_len += (size_t)n;
		if (fb.restore_stop_after && fb.got_len >= fb.restore_stop_after) {
			snprintf(why, len, "restore: the stream is not libxc's");
			return -EINVAL;
		}
	}
	return n < 0 ? -errno : 0;
}

static const struct vmb_backend_ops fake_ops = {
	.name = "fake",
	.save_native = fake_save,
	.resume_native = fake_resume,
	.restore_native = fake_restore,
};

static struct vmb_ctx ctx = { .ops = &fake_ops };

/* The stream in memory, through a pipe-less buffer. */
struct sink {
	int	fd;			/* a memfd: the stream */
	struct vmb_stream_out o;
	unsigned puts;
	size_t	max_put;
	int	fail_at;		/* put number that fails (0: none) */
	unsigned delay_ms;		/* each put sleeps so long first */
};

static int
sink_put(void *user, const void *buf, size_t len)
{
	struct sink *s = user;

	s->puts++;
	if (s->delay_ms)
		usleep(s->delay_ms * 1000u);
	if (len > s->max_put)
		s->max_put = len;
	if (s->fail_at && (int)s->puts == s->fail_at)
		return -ENOSPC;
	return vmb_stream_put_xen(&s->o, buf, len);
}

static int
setup(void **state)
{
	(void)state;
	free(fb.got);
	memset(&fb, 0, sizeof(fb));
	fb.save_len = SAVED_LEN;
	return 0;
}

static void
sink_open(struct sink *s)
{
	memset(s, 0, sizeof(*s));
	s->fd = memfd_create("stream", MFD_CLOEXEC);
	assert_true(s->fd >= 0);
	assert_int_equal(vmb_stream_begin(&s->o, s->fd, VMB_STREAM_F_XEN, -1),
	    0);
	assert_int_equal(vmb_stream_put_guest(&s->o, "{\"name\":\"g\"}", 12),
	    0);
}

struct src {
	int	fd;
	struct vmb_stream_in in;
	int	fail_at;	/* get number that fails (0: none) */
	unsigned gets;
};

static ssize_t
fd_read(void *user, void *buf, size_t len)
{
	ssize_t n = read(*(int *)user, buf, len);

	return n < 0 ? -errno : n;
}

/* As save.c's restore_get_xen: a Xen record's payload, 0 at the end. */
static ssize_t
src_get(void *user, void *buf, size_t len)
{
	struct src *s = user;
	struct vmb_stream_rec r;
	int rc;

	if (s->fail_at && (int)++s->gets == s->fail_at)
		return -EBADMSG;
	rc = vmb_stream_next(&s->in, &r);
	if (rc <= 0)
		return rc < 0 ? rc : -EBADMSG;
	if (r.type == VMB_REC_END)
		return 0;
	assert_int_equal(r.type, VMB_REC_XEN);
	assert_true(r.len <= len);
	memcpy(buf, r.data, r.len);
	return r.len;
}

/* The stream written by a save, opened for reading at its guest record. */
static void
src_open(struct src *s, struct sink *k)
{
	struct vmb_stream_rec r;

	memset(s, 0, sizeof(*s));
	s->fd = k->fd;
	assert_int_equal(lseek(s->fd, 0, SEEK_SET), 0);
	assert_int_equal(vmb_stream_open(&s->in, fd_read, &s->fd), 0);
	assert_int_equal(s->in.flags, VMB_STREAM_F_XEN);
	assert_int_equal(vmb_stream_next(&s->in, &r), 1);
	assert_int_equal(r.type, VMB_REC_GUEST);
}

/* The restorer got the saver's bytes, all of them, in order. */
static void
assert_restored(const struct vmb_native_io *io, uint32_t vcpus)
{
	assert_int_equal(fb.vcpus, vcpus);
	assert_int_equal(fb.got_len, SAVED_LEN);
	for (size_t i = 0; i < SAVED_LEN; i++)
		if (fb.got[i] != pattern(i))
			fail_msg("byte %zu differs after the round trip", i);
	assert_int_equal(io->bytes, SAVED_LEN);
}

/* Saved whole, in order, in bounded records; then restored whole. */
static void
test_save_restore(void **state)
{
	struct vmb_native_io io = { .put = sink_put, .cancel_fd = -1 };
	struct vmb_guest g = { .vcpus = 2, .memory_bytes = 256ull << 20 };
	struct sink k;
	struct src s;

	(void)state;
	sink_open(&k);
	io.user = &k;
	assert_true(vmb_native_stream(&ctx));
	assert_int_equal(vmb_guest_save_native(&ctx, 5, &io), 0);
	assert_int_equal(io.bytes, SAVED_LEN);
	assert_true(k.max_put <= VMB_STREAM_MAX_XEN);
	assert_true(k.puts >= SAVED_LEN / VMB_STREAM_MAX_XEN + 1);
	/* A plain save leaves the guest suspended, for its destroy. */
	assert_true(fb.suspended);
	assert_int_equal(fb.resumes, 0);
	assert_int_equal(vmb_stream_finish(&k.o), 0);

	src_open(&s, &k);
	memset(&io, 0, sizeof(io));
	io.get = src_get;
	io.user = &s;
	io.cancel_fd = -1;
	assert_int_equal(vmb_guest_restore_native(&ctx, 6, &g, &io), 0);
	assert_restored(&io, 2);
	vmb_stream_in_done(&s.in);
	close(k.fd);
}

/*
 * Where a save's time went (the daemon logs it): waiting for the saver
 * (here a 200 ms "suspend" before its first byte) and in our puts (each
 * 30 ms).  Lower bounds only: a loaded machine makes both longer, and
 * together they never exceed the save's own time.
 */
static void
test_save_time_split(void **state)
{
	struct vmb_native_io io = { .put = sink_put, .cancel_fd = -1 };
	struct sink k;
	uint64_t t0, all;

	(void)state;
	sink_open(&k);
	k.delay_ms = 30;
	io.user = &k;
	fb.save_delay_ms = 200;
	t0 = vmb__now_ns();
	assert_int_equal(vmb_guest_save_native(&ctx, 5, &io), 0);
	all = vmb__now_ns() - t0;
	assert_int_equal(io.bytes, SAVED_LEN);
	assert_true(io.wait_ns >= 200ull * 1000 * 1000);
	assert_true(io.put_ns >= (uint64_t)k.puts * 30 * 1000 * 1000);
	assert_true(io.wait_ns + io.put_ns <= all);
	close(k.fd);
}

/* A checkpoint: the guest resumed once the stream is out. */
static void
test_checkpoint_resumes(void **state)
{
	struct vmb_native_io io = { .put = sink_put, .cancel_fd = -1,
	    .resume = true };
	struct sink k;

	(void)state;
	sink_open(&k);
	io.user = &k;
	assert_int_equal(vmb_guest_save_native(&ctx, 5, &io), 0);
	assert_int_equal(fb.resumes, 1);
	assert_false(fb.suspended);
	close(k.fd);
}

/*
 * A live save (a migration): the backend gets the caller's rounds and
 * dirty limit and fills in its counts; the guest stays suspended for
 * the caller, as after any save.  A plain save gets none.
 */
static void
test_live_save(void **state)
{
	struct vmb_native_live live = { .max_rounds = 7, .dirty_pages = 99 };
	struct vmb_native_io io = { .put = sink_put, .cancel_fd = -1,
	    .live = &live };
	struct sink k;

	(void)state;
	sink_open(&k);
	io.user = &k;
	assert_int_equal(vmb_guest_save_native(&ctx, 5, &io), 0);
	assert_ptr_equal(fb.live, &live);
	assert_int_equal(fb.live->max_rounds, 7);
	assert_int_equal(fb.live->dirty_pages, 99);
	assert_true(fb.suspended);
	assert_int_equal(fb.resumes, 0);
	assert_int_equal(io.bytes, fb.save_len);
	io.live = NULL;
	assert_int_equal(vmb_guest_save_native(&ctx, 5, &io), 0);
	assert_null(fb.live);
	close(k.fd);
}

/* Our write fails: the saver stops (EPIPE), the guest runs on, our error. */
static void
test_put_fails(void **state)
{
	struct vmb_native_io io = { .put = sink_put, .cancel_fd = -1 };
	struct sink k;

	(void)state;
	sink_open(&k);
	k.fail_at = 2;
	io.user = &k;
	assert_int_equal(vmb_guest_save_native(&ctx, 5, &io), -ENOSPC);
	assert_false(fb.suspended);
	assert_int_equal(fb.resumes, 1);
	close(k.fd);
}

/* The saver's own failure is the save's, with its reason. */
static void
test_saver_fails(void **state)
{
	struct vmb_native_io io = { .put = sink_put, .cancel_fd = -1 };
	struct sink k;

	(void)state;
	sink_open(&k);
	fb.save_len = 100;
	fb.save_rc = -EIO;
	io.user = &k;
	assert_int_equal(vmb_guest_save_native(&ctx, 5, &io), -EIO);
	assert_string_equal(io.why, "save: the saver's own failure");
	close(k.fd);
}

/* A cancel stops it, the guest resumed. */
static void
test_save_cancelled(void **state)
{
	struct vmb_native_io io = { .put = sink_put };
	uint64_t one = 1;
	struct sink k;

	(void)state;
	sink_open(&k);
	io.user = &k;
	io.cancel_fd = eventfd(0, EFD_CLOEXEC);
	assert_true(io.cancel_fd >= 0);
	/* More than the pipe holds: the saver is still writing. */
	fb.save_len = 64u << 20;
	assert_int_equal(write(io.cancel_fd, &one, sizeof(one)),
	    (int)sizeof(one));
	assert_int_equal(vmb_guest_save_native(&ctx, 5, &io), -ECANCELED);
	assert_true(fb.saw_write_fail);
	assert_false(fb.suspended);
	close(io.cancel_fd);
	close(k.fd);
}

/* The restorer stops early: its reason; the stream fails: the stream's. */
static void
test_restore_fails(void **state)
{
	struct vmb_native_io io = { .put = sink_put, .cancel_fd = -1 };
	struct vmb_guest g = { .vcpus = 1, .memory_bytes = 64ull << 20 };
	struct sink k;
	struct src s;

	(void)state;
	sink_open(&k);
	io.user = &k;
	assert_int_equal(vmb_guest_save_native(&ctx, 5, &io), 0);
	assert_int_equal(vmb_stream_finish(&k.o), 0);

	fb.restore_stop_after = 10;
	src_open(&s, &k);
	memset(&io, 0, sizeof(io));
	io.get = src_get;
	io.user = &s;
	io.cancel_fd = -1;
	assert_int_equal(vmb_guest_restore_native(&ctx, 6, &g, &io), -EINVAL);
	assert_string_equal(io.why, "restore: the stream is not libxc's");
	vmb_stream_in_done(&s.in);

	fb.restore_stop_after = 0;
	src_open(&s, &k);
	s.fail_at = 2;
	io.user = &s;
	assert_int_equal(vmb_guest_restore_native(&ctx, 6, &g, &io), -EBADMSG);
	assert_string_equal(io.why, "");	/* the caller's to say */
	vmb_stream_in_done(&s.in);
	close(k.fd);
}

/* A stream of the given flags: guest, one record of type/len, end. */
static int
read_one(uint32_t flags, uint32_t type, size_t len, char *why)
{
	struct vmb_stream_out o;
	struct vmb_stream_in in;
	struct vmb_stream_rec r;
	static uint8_t big[VMB_STREAM_MAX_XEN + 8];
	int fd = memfd_create("s", MFD_CLOEXEC), rc;

	assert_true(fd >= 0);
	assert_int_equal(vmb_stream_begin(&o, fd, flags & VMB_STREAM_F_XEN, -1),
	    0);
	/* The header's flags, as written (the writer checks none). */
	assert_int_equal(pwrite(fd, &flags, 4, 12), 4);
	assert_int_equal(vmb_stream_put_guest(&o, "{}", 2), 0);
	if (type == VMB_REC_XEN && len > 0 && len <= VMB_STREAM_MAX_XEN)
		assert_int_equal(vmb_stream_put_xen(&o, big, len), 0);
	else if (type == VMB_REC_XEN) {
		/* What the writer refuses, written by hand. */
		uint32_t h[4] = { VMB_REC_XEN, (uint32_t)len, 0, 0 };

		h[2] = (uint32_t)crc32(0L, (const Bytef *)h, sizeof(h));
		assert_int_equal(vmb_stream_put_xen(&o, big, len), -EINVAL);
		assert_int_equal(write(fd, h, sizeof(h)), (int)sizeof(h));
	}
	lseek(fd, 0, SEEK_SET);
	rc = vmb_stream_open(&in, fd_read, &fd);
	while (rc >= 0 && (rc = vmb_stream_next(&in, &r)) > 0 &&
	    r.type != VMB_REC_XEN)
		;
	if (rc > 0)
		rc = (int)r.len;
	snprintf(why, 256, "%s", in.why);
	vmb_stream_in_done(&in);
	close(fd);
	return rc;
}

/*
 * The inline stream (a regular file): the saver writes the file itself
 * after the xen-inline record, the restorer reads it itself from there,
 * exactly its own length; the records go on after it.
 */
static void
inline_save(struct sink *k, struct vmb_native_io *io, int expect)
{
	memset(k, 0, sizeof(*k));
	k->fd = memfd_create("inline", MFD_CLOEXEC);
	assert_true(k->fd >= 0);
	assert_int_equal(vmb_stream_begin(&k->o, k->fd,
	    VMB_STREAM_F_XEN_INLINE, -1), 0);
	assert_int_equal(vmb_stream_put_guest(&k->o, "{\"name\":\"g\"}",
	    12), 0);
	assert_int_equal(vmb_stream_put_xen_inline(&k->o), 0);
	io->direct = true;
	io->fd = k->fd;
	assert_int_equal(vmb_guest_save_native(&ctx, 5, io), expect);
	vmb_stream_out_inline_done(&k->o, io->bytes);
}

static unsigned progress_calls;
static uint64_t progress_last;

static void
count_progress(void *user, uint64_t bytes)
{
	(void)user;
	progress_calls++;
	assert_true(bytes >= progress_last);
	progress_last = bytes;
}

static void
test_inline_save_restore(void **state)
{
	struct vmb_native_io io = { .cancel_fd = -1 };
	struct vmb_guest g = { .vcpus = 3, .memory_bytes = 256ull << 20 };
	struct vmb_stream_rec r;
	struct sink k;
	struct src s;
	off_t end;

	(void)state;
	fb.save_delay_ms = 450;		/* a few progress ticks */
	io.progress = count_progress;
	progress_calls = 0;
	progress_last = 0;
	inline_save(&k, &io, 0);
	assert_int_equal(io.bytes, SAVED_LEN);
	assert_true(progress_calls >= 1);
	assert_true(fb.suspended);
	assert_int_equal(fb.resumes, 0);
	assert_int_equal(vmb_stream_finish(&k.o), 0);
	end = lseek(k.fd, 0, SEEK_CUR);
	assert_int_equal((uint64_t)end, k.o.offset);

	memset(&s, 0, sizeof(s));
	s.fd = k.fd;
	assert_int_equal(lseek(s.fd, 0, SEEK_SET), 0);
	assert_int_equal(vmb_stream_open(&s.in, fd_read, &s.fd), 0);
	assert_int_equal(s.in.flags, VMB_STREAM_F_XEN_INLINE);
	assert_int_equal(vmb_stream_next(&s.in, &r), 1);
	assert_int_equal(r.type, VMB_REC_GUEST);
	assert_int_equal(vmb_stream_next(&s.in, &r), 1);
	assert_int_equal(r.type, VMB_REC_XEN_INLINE);
	/* The stream's bytes are the restorer's first. */
	assert_int_equal(vmb_stream_next(&s.in, &r), -EINVAL);
	assert_non_null(strstr(s.in.why, "the inline Xen stream before it "
	    "was not read"));
	memset(&io, 0, sizeof(io));
	io.direct = true;
	io.fd = s.fd;
	io.cancel_fd = -1;
	fb.restore_len = SAVED_LEN;
	assert_int_equal(vmb_guest_restore_native(&ctx, 6, &g, &io), 0);
	assert_restored(&io, 3);
	vmb_stream_inline_done(&s.in, io.bytes);
	assert_int_equal(vmb_stream_next(&s.in, &r), 1);
	assert_int_equal(r.type, VMB_REC_END);
	assert_int_equal(vmb_stream_next(&s.in, &r), 0);
	assert_int_equal(s.in.offset, k.o.offset);
	vmb_stream_in_done(&s.in);
	close(k.fd);
}

/* A cancel while the saver runs: its next write fails, the guest runs on. */
static void
test_inline_save_cancelled(void **state)
{
	struct vmb_native_io io = { 0 };
	uint64_t one = 1;
	struct sink k;

	(void)state;
	io.cancel_fd = eventfd(0, EFD_CLOEXEC);
	assert_true(io.cancel_fd >= 0);
	/* A slow saver (13 s at most), cancelled at once: no race to win. */
	fb.save_len = 64u << 20;
	fb.save_chunk_us = 1000;
	assert_int_equal(write(io.cancel_fd, &one, sizeof(one)),
	    (int)sizeof(one));
	inline_save(&k, &io, -ECANCELED);
	assert_true(fb.saw_write_fail);
	assert_false(fb.suspended);
	assert_int_equal(fb.resumes, 1);
	/* What the saver wrote before its write failed, no more. */
	assert_true(io.bytes < fb.save_len);
	close(io.cancel_fd);
	close(k.fd);
}

static bool
always(void *user)
{
	(void)user;
	return true;
}

/* A cancel while the restorer reads: it sees the end and fails. */
static void
test_inline_restore_cancelled(void **state)
{
	struct vmb_native_io io = { .cancel_fd = -1 };
	struct vmb_guest g = { .vcpus = 1, .memory_bytes = 256ull << 20 };
	struct sink k;

	(void)state;
	inline_save(&k, &io, 0);
	assert_int_equal(lseek(k.fd, 0, SEEK_SET), 0);
	memset(&io, 0, sizeof(io));
	io.direct = true;
	io.fd = k.fd;
	io.cancel_fd = -1;
	io.cancelled = always;
	fb.restore_len = SAVED_LEN;
	fb.restore_delay_ms = 250;
	assert_int_equal(vmb_guest_restore_native(&ctx, 6, &g, &io),
	    -ECANCELED);
	assert_true(fb.got_len < SAVED_LEN);
	assert_string_equal(io.why, "cancelled");
	close(k.fd);
}

/* A direct save or restore wants a descriptor. */
static void
test_inline_needs_fd(void **state)
{
	struct vmb_native_io io = { .cancel_fd = -1, .direct = true,
	    .fd = -1 };
	struct vmb_guest g = { .vcpus = 1, .memory_bytes = 1u << 20 };

	(void)state;
	assert_int_equal(vmb_guest_save_native(&ctx, 5, &io), -EINVAL);
	assert_int_equal(vmb_guest_restore_native(&ctx, 5, &g, &io), -EINVAL);
	assert_false(fb.suspended);
}

/* Hand-made streams: what the reader refuses of xen-inline records. */
static int
read_inline(uint32_t flags, int inline_recs, char *why)
{
	struct vmb_stream_out o;
	struct vmb_stream_in in;
	struct vmb_stream_rec r;
	int fd = memfd_create("s", MFD_CLOEXEC), rc;

	assert_true(fd >= 0);
	assert_int_equal(vmb_stream_begin(&o, fd, flags, -1), 0);
	assert_int_equal(vmb_stream_put_guest(&o, "{}", 2), 0);
	for (int i = 0; i < inline_recs; i++)
		assert_int_equal(vmb_stream_put_xen_inline(&o), 0);
	assert_int_equal(vmb_stream_finish(&o), 0);
	lseek(fd, 0, SEEK_SET);
	rc = vmb_stream_open(&in, fd_read, &fd);
	while (rc >= 0 && (rc = vmb_stream_next(&in, &r)) > 0)
		if (r.type == VMB_REC_XEN_INLINE)
			vmb_stream_inline_done(&in, 0);
	snprintf(why, 256, "%s", in.why);
	vmb_stream_in_done(&in);
	close(fd);
	return rc;
}

static void
test_inline_reader_checks(void **state)
{
	char why[256];

	(void)state;
	assert_int_equal(read_inline(VMB_STREAM_F_XEN_INLINE, 1, why), 0);
	assert_int_equal(read_inline(VMB_STREAM_F_XEN, 1, why), -EBADMSG);
	assert_non_null(strstr(why, "record 1 (xen-inline, type 0x11) at "
	    "offset 48: an inline Xen stream in a stream whose header says "
	    "it has none (flags bit 3)"));
	assert_int_equal(read_inline(VMB_STREAM_F_XEN_INLINE, 2, why),
	    -EBADMSG);
	assert_non_null(strstr(why, "a second inline Xen stream"));
	assert_int_equal(read_inline(VMB_STREAM_F_XEN_INLINE, 0, why),
	    -EBADMSG);
	assert_non_null(strstr(why, "the end, and the inline Xen stream the "
	    "header announces never came"));
	assert_int_equal(read_inline(VMB_STREAM_F_XEN_INLINE |
	    VMB_STREAM_F_XEN, 1, why), -EBADMSG);
	assert_non_null(strstr(why, "more than one of"));
}

static void
test_reader_checks(void **state)
{
	char why[256];

	(void)state;
	assert_int_equal(read_one(VMB_STREAM_F_XEN, VMB_REC_XEN, 12345, why),
	    12345);
	assert_int_equal(read_one(0, VMB_REC_XEN, 100, why), -EBADMSG);
	assert_non_null(strstr(why, "record 1 (xen, type 0x10) at offset 48: "
	    "a Xen record in a stream whose header says it has no Xen stream"));
	assert_int_equal(read_one(VMB_STREAM_F_XEN | VMB_STREAM_F_MEMORY,
	    VMB_REC_XEN, 100, why), -EBADMSG);
	assert_non_null(strstr(why, "more than one of memory records, Xen "
	    "records and an inline Xen stream"));
	assert_int_equal(read_one(VMB_STREAM_F_XEN, VMB_REC_XEN, 0, why),
	    -EBADMSG);
	assert_non_null(strstr(why, "an empty Xen record"));
	assert_int_equal(read_one(VMB_STREAM_F_XEN, VMB_REC_XEN,
	    VMB_STREAM_MAX_XEN + 1, why), -EBADMSG);
	assert_non_null(strstr(why, "exceeds the limit of 1048576"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_save_restore, setup),
		cmocka_unit_test_setup(test_save_time_split, setup),
		cmocka_unit_test_setup(test_checkpoint_resumes, setup),
		cmocka_unit_test_setup(test_live_save, setup),
		cmocka_unit_test_setup(test_put_fails, setup),
		cmocka_unit_test_setup(test_saver_fails, setup),
		cmocka_unit_test_setup(test_save_cancelled, setup),
		cmocka_unit_test_setup(test_restore_fails, setup),
		cmocka_unit_test_setup(test_reader_checks, setup),
		cmocka_unit_test_setup(test_inline_save_restore, setup),
		cmocka_unit_test_setup(test_inline_save_cancelled, setup),
		cmocka_unit_test_setup(test_inline_restore_cancelled, setup),
		cmocka_unit_test_setup(test_inline_needs_fd, setup),
		cmocka_unit_test_setup(test_inline_reader_checks, setup),
	};

	return cmocka_run_group_tests_name("native-stream", tests, NULL, NULL);
}
