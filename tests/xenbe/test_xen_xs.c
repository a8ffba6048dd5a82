/*
 * test_xen_xs.c - the xenstore entries the xen backend writes for a PVH
 * domain (xen_xs.c), against a small in-memory xenstore (fake_xs.c):
 * libxenstore's calls are replaced at link time (-Wl,--wrap, build.mk).  What
 * libxl__domain_make and libxl__build_post write must be there, with
 * their permissions (/libxl/N/type and the /tool/... domain ids
 * included), and after remove nothing of the domain may be left.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake_xsd.h"
#include "xen_priv.h"

#include <xen/io/xs_wire.h>

static struct xen_be be;
static struct fake_xsd xsd;

static int
setup(void **state)
{
	(void)state;
	fake_xs_reset();
	memset(&be, 0, sizeof(be));
	be.xsh = (struct xs_handle *)&fake_xs;	/* never dereferenced */
	pthread_mutex_init(&be.xs_lock, NULL);
	return 0;
}

/*
 * The same tests with the backend's own transactions pipelined
 * (be.xsw, xen_xswire.c) on a connection to fake_xsd.c, which serves
 * the same store: what they check must hold either way.
 */
static int
setup_wire(void **state)
{
	int fd;

	setup(state);
	memset(&xsd, 0, sizeof(xsd));
	fd = fake_xsd_start(&xsd);
	assert_true(fd >= 0);
	assert_int_equal(xen_xsw_adopt(fd, &be.xsw), 0);
	return 0;
}

static int
teardown_wire(void **state)
{
	(void)state;
	xen_xsw_free(be.xsw);	/* closes the client's end: the thread ends */
	be.xsw = NULL;
	fake_xsd_stop(&xsd);
	return 0;
}

#define val(path)	fake_xs_val(path)

static void
perms_are(const char *path, unsigned owner, unsigned owner_perm,
    int reader)
{
	struct fake_node *n = fake_xs_lookup(path);

	assert_non_null(n);
	assert_int_equal(n->perms[0].id, owner);
	assert_int_equal(n->perms[0].perms, owner_perm);
	if (reader < 0) {
		assert_int_equal(n->nperms, 1);
	} else {
		assert_int_equal(n->nperms, 2);
		assert_int_equal(n->perms[1].id, (unsigned)reader);
		assert_int_equal(n->perms[1].perms, XS_PERM_READ);
	}
}

#define count_under(prefix)	fake_xs_count(prefix)

#define UUID_STR	"00112233-4455-6677-8899-aabbccddeeff"

static void
test_layout_and_remove(void **state)
{
	struct vmb_dom_config cfg;
	struct xen_xs_boot xb;
	uint32_t sd = 99, cd = 99;

	(void)state;
	fake_xs_set("/tool/xenstored/domid", "0");
	fake_xs_set("/tool/xenconsoled/domid", "7");
	memset(&cfg, 0, sizeof(cfg));
	snprintf(cfg.name, sizeof(cfg.name), "guest1");
	for (int i = 0; i < 16; i++)
		cfg.uuid[i] = (uint8_t)(i * 0x11);
	assert_int_equal(xen_xs_domain_make(&be, 5, &cfg), 0);

	/* libxl__domain_make's skeleton, with its permissions. */
	perms_are("/local/domain/5", 0, XS_PERM_NONE, 5);
	perms_are("/vm/" UUID_STR, 0, XS_PERM_NONE, 5);
	perms_are("/libxl/5", 0, XS_PERM_NONE, -1);
	perms_are("/libxl/5/device", 0, XS_PERM_NONE, -1);
	assert_string_equal(val("/libxl/5/type"), "pvh");
	assert_string_equal(val("/local/domain/5/vm"), "/vm/" UUID_STR);
	assert_string_equal(val("/local/domain/5/name"), "guest1");
	assert_string_equal(val("/vm/" UUID_STR "/uuid"), UUID_STR);
	assert_string_equal(val("/vm/" UUID_STR "/name"), "guest1");
	perms_are("/local/domain/5/control/shutdown", 5, XS_PERM_NONE, -1);
	perms_are("/local/domain/5/data", 5, XS_PERM_NONE, -1);
	perms_are("/local/domain/5/device/suspend/event-channel", 5,
	    XS_PERM_NONE, -1);
	perms_are("/local/domain/5/control", 0, XS_PERM_NONE, 5);
	assert_string_equal(val("/local/domain/5/control/"
	    "platform-feature-xs_reset_watches"), "1");

	/* The daemons' domains, from /tool, as libxl reads them. */
	xen_xs_tool_domids(&be, &sd, &cd);
	assert_int_equal(sd, 0);
	assert_int_equal(cd, 7);

	/* libxl__build_post's entries and the console. */
	memset(&xb, 0, sizeof(xb));
	xb.domid = 5;
	xb.static_max_kb = xb.target_kb = 4608 * 1024;
	xb.vcpus = 1;
	xb.max_vcpus = 2;
	xb.store_port = 1;
	xb.console_port = 2;
	xb.store_gfn = 0xfeffc;
	xb.console_gfn = 0xfefff;
	xb.store_domid = sd;
	xb.console_domid = cd;
	assert_int_equal(xen_xs_domain_boot(&be, &xb), 0);
	assert_string_equal(val("/local/domain/5/memory/static-max"),
	    "4718592");
	assert_string_equal(val("/local/domain/5/memory/target"), "4718592");
	assert_string_equal(val("/local/domain/5/store/ring-ref"), "1044476");
	assert_string_equal(val("/local/domain/5/console/backend-id"), "7");
	/* The console as a device, as libxl__device_console_add has it. */
	assert_string_equal(val("/local/domain/5/console/backend"),
	    "/local/domain/7/backend/console/5/0");
	assert_string_equal(val("/local/domain/5/console/type"),
	    "xenconsoled");
	assert_string_equal(val("/local/domain/5/console/limit"), "1048576");
	assert_string_equal(val("/local/domain/5/console/port"), "2");
	assert_string_equal(val("/local/domain/5/console/ring-ref"),
	    "1044479");
	assert_string_equal(val("/local/domain/5/console/tty"), "");
	perms_are("/local/domain/5/console", 7, XS_PERM_NONE, 5);
	perms_are("/local/domain/5/console/tty", 7, XS_PERM_NONE, 5);
	assert_string_equal(val("/local/domain/7/backend/console/5/0/"
	    "frontend"), "/local/domain/5/console");
	perms_are("/local/domain/7/backend/console/5/0", 7, XS_PERM_NONE, 5);
	static const char *const lx[][2] = {
		{ "frontend", "/local/domain/5/console" },
		{ "backend", "/local/domain/7/backend/console/5/0" },
		{ "frontend-id", "5" }, { "online", "1" }, { "state", "1" },
		{ "protocol", "vt100" },
	};
	for (size_t i = 0; i < sizeof(lx) / sizeof(lx[0]); i++) {
		char p[128];

		snprintf(p, sizeof(p), "/libxl/5/device/console/0/%s",
		    lx[i][0]);
		assert_string_equal(val(p), lx[i][1]);
		if (i >= 2) {
			snprintf(p, sizeof(p),
			    "/local/domain/7/backend/console/5/0/%s", lx[i][0]);
			assert_string_equal(val(p), lx[i][1]);
		}
	}
	perms_are("/libxl/5/device/console/0", 0, XS_PERM_NONE, -1);
	assert_string_equal(val("/local/domain/5/cpu/0/availability"),
	    "online");
	assert_string_equal(val("/local/domain/5/cpu/1/availability"),
	    "offline");
	assert_non_null(val("/vm/" UUID_STR "/start_time"));
	assert_int_equal(xen_xs_introduce(&be, 5, xb.store_gfn,
	    xb.store_port), 0);
	assert_int_equal(fake_xs.introduced, 1);

	/* Destroy: nothing of the domain is left, /tool is. */
	xen_xs_domain_remove(&be, 5);
	assert_int_equal(count_under("/local/domain/5"), 0);
	assert_int_equal(count_under("/libxl/5"), 0);
	assert_int_equal(count_under("/vm/" UUID_STR), 0);
	assert_int_equal(count_under("/local/domain/7/backend/console/5"), 0);
	assert_string_equal(val("/tool/xenconsoled/domid"), "7");
	assert_int_equal(fake_xs.released, 1);
}

/* Leftovers of an earlier domain with the same id go at create. */
static void
test_leftovers(void **state)
{
	struct vmb_dom_config cfg;
	uint32_t sd, cd;

	(void)state;
	fake_xs_set("/libxl/5/stale", "x");
	fake_xs_set("/local/domain/5/stale", "x");
	fake_xs_set("/tool/xenconsoled/domid", "junk");
	memset(&cfg, 0, sizeof(cfg));
	snprintf(cfg.name, sizeof(cfg.name), "guest2");
	assert_int_equal(xen_xs_domain_make(&be, 5, &cfg), 0);
	assert_null(val("/libxl/5/stale"));
	assert_null(val("/local/domain/5/stale"));
	/* A /tool value that is no domain id counts as dom0, as atoi. */
	xen_xs_tool_domids(&be, &sd, &cd);
	assert_int_equal(cd, 0);
	assert_int_equal(sd, 0);
}

/* control/shutdown: posted only to a guest that listens, withdrawn. */
static void
test_control(void **state)
{
	(void)state;
	fake_xs_set("/local/domain/5/control/shutdown", "");
	assert_int_equal(xen_xs_control(&be, 5, "poweroff", false),
	    -EOPNOTSUPP);
	assert_string_equal(val("/local/domain/5/control/shutdown"), "");
	/* Linux's xenbus shutdown watcher writes these. */
	fake_xs_set("/local/domain/5/control/feature-poweroff", "1");
	assert_int_equal(xen_xs_control(&be, 5, "reboot", false),
	    -EOPNOTSUPP);
	assert_int_equal(xen_xs_control(&be, 5, "poweroff", false), 0);
	assert_string_equal(val("/local/domain/5/control/shutdown"),
	    "poweroff");
	/* Not taken: withdrawn (1); then nothing left to withdraw (0). */
	assert_int_equal(xen_xs_control(&be, 5, "poweroff", true), 1);
	assert_string_equal(val("/local/domain/5/control/shutdown"), "");
	assert_int_equal(xen_xs_control(&be, 5, "poweroff", true), 0);
	/* Taken by the guest (it clears the node): 0, left alone. */
	assert_int_equal(xen_xs_control(&be, 5, "poweroff", false), 0);
	fake_xs_set("/local/domain/5/control/shutdown", "");
	assert_int_equal(xen_xs_control(&be, 5, "poweroff", true), 0);
}

/* console/tty: opened only when it names a pty slave. */
static void
test_console(void **state)
{
	char path[64], *name;
	int m, fd = -1;

	(void)state;
	fake_xs_set("/local/domain/5/console/tty", "/etc/passwd");
	assert_int_equal(xen_console_open(&be, 5, &fd, path, sizeof(path)),
	    -EPERM);
	fake_xs_set("/local/domain/5/console/tty", "/dev/pts/../../etc/shadow");
	assert_int_equal(xen_console_open(&be, 5, &fd, NULL, 0), -EPERM);
	fake_xs_set("/local/domain/5/console/tty", "/dev/null");
	assert_int_equal(xen_console_open(&be, 5, &fd, NULL, 0), -EPERM);
	assert_int_equal(fd, -1);
	assert_int_equal(xen_console_open(&be, 0, &fd, NULL, 0), -EINVAL);
	/* A real pty, as xenconsoled makes one. */
	m = posix_openpt(O_RDWR | O_NOCTTY);
	if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0 ||
	    (name = ptsname(m)) == NULL) {
		if (m >= 0)
			close(m);
		skip();
	}
	fake_xs_set("/local/domain/5/console/tty", name);
	assert_int_equal(xen_console_open(&be, 5, &fd, path, sizeof(path)), 0);
	assert_string_equal(path, name);
	assert_true(isatty(fd));
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	assert_int_equal(write(fd, "x", 1), 1);
	close(fd);
	close(m);
}

/* libxl's permission sets: RO (owner, one reader), RW (the owner's only). */
#define RO(owner, reader)	2, { { owner, XS_PERM_NONE }, \
	{ reader, XS_PERM_READ } }
#define RW(owner)		1, { { owner, XS_PERM_NONE } }

/* xen_xs_domain_make and _boot for domain 5, xenconsoled in domain 7. */
static void
make_and_boot(void)
{
	struct vmb_dom_config cfg;
	struct xen_xs_boot xb;

	fake_xs_set("/tool/xenstored/domid", "0");
	fake_xs_set("/tool/xenconsoled/domid", "7");
	memset(&cfg, 0, sizeof(cfg));
	snprintf(cfg.name, sizeof(cfg.name), "guest1");
	for (int i = 0; i < 16; i++)
		cfg.uuid[i] = (uint8_t)(i * 0x11);
	assert_int_equal(xen_xs_domain_make(&be, 5, &cfg), 0);
	memset(&xb, 0, sizeof(xb));
	xb.domid = 5;
	xb.static_max_kb = xb.target_kb = 1024 * 1024;
	xb.vcpus = 1;
	xb.max_vcpus = 2;
	xb.store_port = 1;
	xb.console_port = 2;
	xb.store_gfn = 0xfeffc;
	xb.console_gfn = 0xfefff;
	xb.console_domid = 7;
	assert_int_equal(xen_xs_domain_boot(&be, &xb), 0);
}

/*
 * Every node of the domain's directories has libxl's permissions
 * (libxl__domain_make: roperm, rwperm, noperm; the primary console:
 * libxl__device_generic_add's ro_frontend_perms and backend_perms),
 * line by line; a node none of these rules covers fails.  And while
 * the guest acts, the backend reads no node the guest controls but the
 * PV control nodes.
 */
static void
test_perms_as_libxl(void **state)
{
	static const char *const roots[] = { "/local/domain/5",
	    "/vm/" UUID_STR, "/libxl/5", "/local/domain/7/backend/console/5",
	    "/local/domain/0/libxl" };
	static const struct fake_perm_rule rules[] = {
		{ "/local/domain/5", true, RO(0, 5) },
		{ "/local/domain/5/device/suspend/event-channel", false,
		    RW(5) },
		{ "/local/domain/5/data", false, RW(5) },
		{ "/local/domain/5/drivers", false, RW(5) },
		{ "/local/domain/5/feature", false, RW(5) },
		{ "/local/domain/5/attr", false, RW(5) },
		{ "/local/domain/5/error", false, RW(5) },
		{ "/local/domain/5/control/shutdown", false, RW(5) },
		{ "/local/domain/5/control/feature-poweroff", false, RW(5) },
		{ "/local/domain/5/control/feature-reboot", false, RW(5) },
		{ "/local/domain/5/control/feature-suspend", false, RW(5) },
		{ "/local/domain/5/control/sysrq", false, RW(5) },
		{ "/local/domain/5/console", true, RO(7, 5) },
		{ "/vm/" UUID_STR, true, RO(0, 5) },
		{ "/libxl/5", true, RW(0) },
		/* backend/console/5 is made on the way: the parent's. */
		{ "/local/domain/7/backend/console/5", false, RW(0) },
		{ "/local/domain/7/backend/console/5/0", true, RO(7, 5) },
		{ "/local/domain/0/libxl", true, RW(0) },
	};
	static const char *const allowed[] = {
		"/local/domain/5/control/feature-poweroff",
		"/local/domain/5/control/feature-reboot",
		"/local/domain/5/control/shutdown",
	};
	char path[64];
	int fd = -1;

	(void)state;
	fake_xs.guest = 5;
	make_and_boot();
	fake_xs_assert_perms(roots, sizeof(roots) / sizeof(roots[0]), rules,
	    sizeof(rules) / sizeof(rules[0]));
	/* The guest writes what it may, and names paths and domains. */
	assert_int_equal(fake_xs_guest_write(5, "/local/domain/5/data/vm",
	    "/etc", 4), 0);
	assert_int_equal(fake_xs_guest_write(5, "/local/domain/5/vm", "/etc",
	    4), -EACCES);
	assert_int_equal(fake_xs_guest_write(5, "/local/domain/5/console/tty",
	    "/dev/sda", 8), -EACCES);
	assert_int_equal(fake_xs_guest_write(5, "/libxl/5/type", "hvm", 3),
	    -EACCES);
	assert_int_equal(fake_xs_guest_write(5,
	    "/local/domain/5/control/feature-poweroff", "1", 1), 0);
	assert_int_equal(xen_xs_control(&be, 5, "poweroff", false), 0);
	assert_int_equal(xen_xs_control(&be, 5, "poweroff", true), 1);
	/* xenconsoled (domain 7) may write the tty: not a pty, refused. */
	assert_int_equal(fake_xs_guest_write(7, "/local/domain/5/console/tty",
	    "/dev/null", 9), 0);
	assert_int_equal(xen_console_open(&be, 5, &fd, path, sizeof(path)),
	    -EPERM);
	xen_xs_domain_remove(&be, 5);
	assert_int_equal(count_under("/local/domain/5"), 0);
	for (unsigned i = 0; i < fake_xs.ntainted; i++) {
		bool ok = false;

		for (size_t k = 0; k < sizeof(allowed) / sizeof(allowed[0]);
		    k++)
			ok = ok || !strcmp(fake_xs.tainted[i], allowed[k]);
		if (!ok)
			print_error("read a node the guest controls: %s\n",
			    fake_xs.tainted[i]);
		assert_true(ok);
	}
	assert_true(fake_xs_was_tainted(
	    "/local/domain/5/control/feature-poweroff"));
}

/*
 * dom0's libxl/disable_udev, as libxl wrote it: the hotplug scripts a
 * dom0 with Xen's udev rules starts exit at once.  No guest can undo it.
 */
static void
test_disable_udev(void **state)
{
	(void)state;
	make_and_boot();
	assert_non_null(val("/local/domain/0/libxl/disable_udev"));
	assert_string_equal(val("/local/domain/0/libxl/disable_udev"), "1");
	assert_int_equal(fake_xs_guest_rm(5, "/local/domain/0/libxl/"
	    "disable_udev"), -EACCES);
	assert_int_equal(fake_xs_guest_write(5, "/local/domain/0/libxl/"
	    "disable_udev", "0", 1), -EACCES);
}

/* A guest rewriting its control nodes between every call of ours. */
static unsigned meddled;

static void
rewrite_control(const char *op, const char *path)
{
	(void)op;
	(void)path;
	meddled++;
	(void)fake_xs_guest_write(5, "/local/domain/5/control/"
	    "feature-poweroff", "1", 1);
	(void)fake_xs_guest_write(5, "/local/domain/5/control/sysrq", "", 0);
}

/*
 * The request path reads the guest's own nodes: a guest that keeps
 * writing them cannot make it fail (no transaction to conflict).
 */
static void
test_control_conflicts(void **state)
{
	(void)state;
	make_and_boot();
	assert_int_equal(fake_xs_guest_write(5,
	    "/local/domain/5/control/feature-poweroff", "1", 1), 0);
	fake_xs.meddle = rewrite_control;
	assert_int_equal(xen_xs_control(&be, 5, "poweroff", false), 0);
	assert_string_equal(val("/local/domain/5/control/shutdown"),
	    "poweroff");
	assert_int_equal(xen_xs_control(&be, 5, "poweroff", true), 1);
	assert_string_equal(val("/local/domain/5/control/shutdown"), "");
	assert_true(meddled > 0);
	assert_int_equal(fake_xs.conflicts, 0);
	/* A huge value, garbage: not a feature announced. */
	fake_xs.meddle = NULL;
	{
		static char big[FAKE_XS_PAYLOAD];

		memset(big, '1', sizeof(big));
		assert_int_equal(fake_xs_guest_write(5, "/local/domain/5/"
		    "control/feature-reboot", big, sizeof(big)), 0);
		assert_int_equal(fake_xs_guest_write(5, "/local/domain/5/"
		    "control/feature-reboot", big, sizeof(big) + 1), -E2BIG);
	}
	assert_int_equal(xen_xs_control(&be, 5, "reboot", false),
	    -EOPNOTSUPP);
}

/* A transaction of the fake's own conflicts when a node it read moves. */
static void
conflict_once(const char *op, const char *path)
{
	(void)op;
	if (strstr(path, "/vm") && meddled++ == 0)
		fake_xs_set(path, "/vm/other");
}

static void
test_fake_conflicts(void **state)
{
	(void)state;
	make_and_boot();
	/* boot reads /local/domain/5/vm in its transaction: retried. */
	meddled = 0;
	fake_xs.meddle = conflict_once;
	assert_int_equal(fake_xs_guest_rm(0, "/vm/" UUID_STR "/start_time"),
	    0);
	{
		struct xen_xs_boot xb = { .domid = 5, .vcpus = 1,
		    .max_vcpus = 1, .console_domid = 7 };

		assert_int_equal(xen_xs_domain_boot(&be, &xb), 0);
	}
	assert_int_equal(fake_xs.conflicts, 1);
	/*
	 * The first attempt wrote start_time under the /vm it read, undone;
	 * the second under the one it reads now.
	 */
	assert_null(val("/vm/" UUID_STR "/start_time"));
	assert_non_null(val("/vm/other/start_time"));
	assert_non_null(val("/local/domain/5/console/port"));
}

/*
 * A domain another toolstack built, whose console directory (or tty
 * node, or the domain's directory) the guest may write: its tty is not
 * trusted, even when it names a real pty.
 */
static void
test_console_untrusted(void **state)
{
	static const struct xs_permissions guest_owns[] = { { 5, 0 } };
	static const struct xs_permissions acl_write[] = {
		{ 0, XS_PERM_NONE }, { 5, XS_PERM_WRITE } };
	static const struct xs_permissions all_write[] = {
		{ 0, XS_PERM_WRITE } };
	static const struct xs_permissions console_d[] = {
		{ 7, XS_PERM_NONE }, { 5, XS_PERM_READ } };
	static const struct xs_permissions ro[] = {
		{ 0, XS_PERM_NONE }, { 5, XS_PERM_READ } };
	static const char *const nodes[] = { "/local/domain/5",
	    "/local/domain/5/console", "/local/domain/5/console/tty" };
	const struct xs_permissions *bad[] = { guest_owns, acl_write,
	    all_write };
	const unsigned nbad[] = { 1, 2, 1 };
	char path[64], *name;
	int m, fd = -1;

	(void)state;
	m = posix_openpt(O_RDWR | O_NOCTTY);
	if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0 ||
	    (name = ptsname(m)) == NULL) {
		if (m >= 0)
			close(m);
		skip();
	}
	fake_xs_set("/tool/xenconsoled/domid", "7");
	fake_xs_set("/local/domain/5/console/tty", name);
	for (size_t i = 0; i < 3; i++)
		for (size_t b = 0; b < 3; b++) {
			fake_xs_set_perms(nodes[0], ro, 2);
			fake_xs_set_perms(nodes[1], console_d, 2);
			fake_xs_set_perms(nodes[2], console_d, 2);
			fake_xs_set_perms(nodes[i], bad[b], nbad[b]);
			assert_int_equal(xen_console_open(&be, 5, &fd, path,
			    sizeof(path)), -EACCES);
			assert_int_equal(fd, -1);
		}
	/* As vmbuild and libxl lay it out: xenconsoled's, the guest reads. */
	fake_xs_set_perms(nodes[0], ro, 2);
	fake_xs_set_perms(nodes[1], console_d, 2);
	fake_xs_set_perms(nodes[2], console_d, 2);
	assert_int_equal(xen_console_open(&be, 5, &fd, path, sizeof(path)), 0);
	assert_string_equal(path, name);
	close(fd);
	/* The guest as the console daemon's domain: not trusted either. */
	fake_xs_set("/tool/xenconsoled/domid", "5");
	fd = -1;
	assert_int_equal(xen_console_open(&be, 5, &fd, path, sizeof(path)),
	    -EACCES);
	close(m);
}

/*
 * Pipelined, a domain's skeleton is three round trips (start, every
 * write in one flush, end) and its boot entries four (the read of its
 * vm path flushes what came before it): not one per request.
 */
static void
test_wire_round_trips(void **state)
{
	uint64_t r0;

	(void)state;
	r0 = xen_xsw_round_trips(be.xsw);
	make_and_boot();
	assert_int_equal(xen_xsw_round_trips(be.xsw) - r0, 3 + 4);
	assert_true(xsd.handled > 60);	/* requests, served in those 7 */
	assert_int_equal(xsd.types[XS_TRANSACTION_START], 2);
	assert_int_equal(xsd.types[XS_TRANSACTION_END], 2);
	assert_int_equal(fake_xs.commits, 2);
	assert_int_equal(fake_xs.conflicts, 0);
	assert_string_equal(val("/local/domain/5/name"), "guest1");
	assert_string_equal(val("/local/domain/5/console/ring-ref"),
	    "1044479");
}

/*
 * A request xenstored refuses fails the flush with its errno (after
 * every reply is read: the connection stays in step); the flags excuse
 * what they say; the transaction then aborted leaves nothing.
 */
static void
test_wire_errors(void **state)
{
	struct xs_permissions p[2] = { { 0, XS_PERM_NONE }, { 5, XS_PERM_READ } };
	char *v = NULL, big[5000];
	unsigned len = 0;
	uint32_t t;
	int last = 0;

	(void)state;
	assert_int_equal(xen_xsw_start(be.xsw, &t), 0);
	xen_xsw_write(be.xsw, t, "/a/b", "1", 1);
	xen_xsw_rm(be.xsw, t, "/no/such/thing", XSW_IGNORE_ERR);
	xen_xsw_rm(be.xsw, t, "/a/none", XSW_IGNORE_ENOENT);
	xen_xsw_set_perms(be.xsw, t, "/a/b", p, 2);
	xen_xsw_read(be.xsw, t, "/a/b");
	assert_int_equal(xen_xsw_flush(be.xsw, &v, &len, &last), 0);
	assert_int_equal(last, 0);
	assert_non_null(v);
	assert_int_equal(len, 1);
	assert_string_equal(v, "1");
	free(v);
	/* Not excused: its ENOENT; the read after it still answers. */
	xen_xsw_set_perms(be.xsw, t, "/x/y", p, 2);
	xen_xsw_read(be.xsw, t, "/nothing");
	assert_int_equal(xen_xsw_flush(be.xsw, &v, &len, &last), -ENOENT);
	assert_null(v);
	assert_int_equal(last, -ENOENT);
	assert_int_equal(xen_xsw_end(be.xsw, t, true), 0);
	assert_null(fake_xs_lookup("/a/b"));
	assert_int_equal(fake_xs.commits, 0);
	/* Bigger than a payload: refused before anything is sent. */
	memset(big, 'x', sizeof(big));
	assert_int_equal(xen_xsw_start(be.xsw, &t), 0);
	xen_xsw_write(be.xsw, t, "/a/c", big, sizeof(big));
	xen_xsw_write(be.xsw, t, "/a/d", "1", 1);
	assert_int_equal(xen_xsw_flush(be.xsw, NULL, NULL, NULL), -E2BIG);
	assert_int_equal(xen_xsw_end(be.xsw, t, true), 0);
	assert_null(fake_xs_lookup("/a/d"));
	/* Aborted with a request that could not queue: the END still goes. */
	assert_int_equal(xen_xsw_start(be.xsw, &t), 0);
	xen_xsw_write(be.xsw, t, "/a/c", big, sizeof(big));
	assert_int_equal(xen_xsw_end(be.xsw, t, true), 0);
	/* A commit behind a request that fails aborts instead. */
	assert_int_equal(xen_xsw_start(be.xsw, &t), 0);
	xen_xsw_write(be.xsw, t, "/a/f", "3", 1);
	xen_xsw_set_perms(be.xsw, t, "/x/y", p, 2);
	assert_int_equal(xen_xsw_end(be.xsw, t, false), -ENOENT);
	assert_null(fake_xs_lookup("/a/f"));
	assert_int_equal(fake_xs.commits, 0);
	/* And the connection still works, no transaction left open. */
	assert_int_equal(xen_xsw_start(be.xsw, &t), 0);
	xen_xsw_write(be.xsw, t, "/a/e", "2", 1);
	assert_int_equal(xen_xsw_flush(be.xsw, NULL, NULL, NULL), 0);
	assert_int_equal(xen_xsw_end(be.xsw, t, false), 0);
	assert_string_equal(val("/a/e"), "2");
	assert_int_equal(xsd.open_tx, 0);
	assert_int_equal(xsd.types[XS_TRANSACTION_START],
	    xsd.types[XS_TRANSACTION_END]);
}

/*
 * xenstored hangs up in the middle of a transaction (it drops the
 * transaction with the connection): the backend lets the connection go
 * and writes the same entries one request at a time, through
 * libxenstore, from then on.
 */
static void
test_wire_hangup(void **state)
{
	(void)state;
	xsd.die_after = 10;
	make_and_boot();
	assert_null(be.xsw);
	assert_string_equal(val("/local/domain/5/name"), "guest1");
	assert_string_equal(val("/local/domain/5/console/ring-ref"),
	    "1044479");
	assert_int_equal(fake_xs.commits, 2);
}

static int
teardown_hangup(void **state)
{
	(void)state;
	fake_xsd_stop(&xsd);	/* it hung up: nothing of ours to close */
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_layout_and_remove, setup),
		cmocka_unit_test_setup(test_leftovers, setup),
		cmocka_unit_test_setup(test_control, setup),
		cmocka_unit_test_setup(test_console, setup),
		cmocka_unit_test_setup(test_perms_as_libxl, setup),
		cmocka_unit_test_setup(test_disable_udev, setup),
		cmocka_unit_test_setup(test_control_conflicts, setup),
		cmocka_unit_test_setup(test_fake_conflicts, setup),
		cmocka_unit_test_setup(test_console_untrusted, setup),
#define WIRE(t)	cmocka_unit_test_setup_teardown(t, setup_wire, teardown_wire)
		WIRE(test_layout_and_remove),
		WIRE(test_leftovers),
		WIRE(test_console),
		WIRE(test_perms_as_libxl),
		WIRE(test_disable_udev),
		WIRE(test_fake_conflicts),
		WIRE(test_console_untrusted),
		WIRE(test_wire_round_trips),
		WIRE(test_wire_errors),
		cmocka_unit_test_setup_teardown(test_wire_hangup, setup_wire,
		    teardown_hangup),
	};

	return cmocka_run_group_tests_name("xen-xenstore", tests, NULL, NULL);
}
