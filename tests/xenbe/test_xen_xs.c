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

#include "fake_xs.h"
#include "xen_priv.h"

static struct xen_be be;

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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_layout_and_remove, setup),
		cmocka_unit_test_setup(test_leftovers, setup),
		cmocka_unit_test_setup(test_control, setup),
		cmocka_unit_test_setup(test_console, setup),
	};

	return cmocka_run_group_tests_name("xen-xenstore", tests, NULL, NULL);
}
