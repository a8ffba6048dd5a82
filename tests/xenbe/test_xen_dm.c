/*
 * test_xen_dm.c - the xenstore entries of an HVM guest's device model
 * (xen_xs.c's xen_xs_dm_store, the backend's dm_store op), against the
 * in-memory xenstore of fake_xs.c: what libxl 4.17 writes for qemu-xen
 * (libxl__spawn_local_dm, store_libxl_entry, libxl__build_post's HVM
 * entries) must be there, and the domain's removal (its destroy) must
 * leave none of it, dom0's device-model/DOMID directory included; and
 * what it writes once the device model runs (xen_xs_dm_running).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fake_xs.h"
#include "xen_priv.h"

#define UUID_STR	"00112233-4455-6677-8899-aabbccddeeff"
#define DOM		"/local/domain/5"
#define VM		"/vm/" UUID_STR

static struct xen_be be;

static int
setup(void **state)
{
	(void)state;
	fake_xs_reset();
	memset(&be, 0, sizeof(be));
	be.xsh = (struct xs_handle *)&fake_xs;	/* never dereferenced */
	pthread_mutex_init(&be.xs_lock, NULL);
	fake_xs_set("/local/domain/0/device-model", "");
	return 0;
}

/* The fields the entries come from (no libvmbuild core linked here). */
static struct vmb_guest guest;

/* Domain 5's skeleton (xen_xs_domain_make), as an HVM guest's. */
static struct vmb_guest *
make_hvm(const char *bios, bool acpi, uint64_t hole)
{
	struct vmb_dom_config cfg;
	struct vmb_guest *g = &guest;

	memset(g, 0, sizeof(*g));
	g->type = VMB_GUEST_HVM;
	snprintf(g->name, sizeof(g->name), "hvm1");
	for (int i = 0; i < 16; i++)
		g->uuid[i] = (uint8_t)(i * 0x11);
	snprintf(g->hvm.bios, sizeof(g->hvm.bios), "%s", bios);
	g->hvm.acpi = acpi;
	g->hvm.mmio_hole_bytes = hole;
	memset(&cfg, 0, sizeof(cfg));
	snprintf(cfg.name, sizeof(cfg.name), "hvm1");
	memcpy(cfg.uuid, g->uuid, 16);
	cfg.hvm = true;
	assert_int_equal(xen_xs_domain_make(&be, 5, &cfg), 0);
	return g;
}

static void
test_entries(void **state)
{
	struct vmb_guest *g = make_hvm("seabios", true, 0);

	(void)state;
	assert_string_equal(fake_xs_val("/libxl/5/type"), "hvm");
	assert_int_equal(xen_xs_dm_store(&be, 5, g), 0);
	assert_string_equal(fake_xs_val(DOM "/hvmloader/bios"), "seabios");
	assert_string_equal(fake_xs_val(DOM "/hvmloader/allow-memory-relocate"),
	    "0");
	assert_non_null(fake_xs_lookup("/local/domain/0/device-model/5"));
	assert_string_equal(fake_xs_val("/libxl/5/dm-version"), "qemu_xen");
	assert_string_equal(fake_xs_val(DOM "/platform/acpi"), "1");
	assert_string_equal(fake_xs_val(DOM "/platform/acpi_s3"), "1");
	assert_string_equal(fake_xs_val(DOM "/platform/acpi_s4"), "1");
	assert_string_equal(fake_xs_val(DOM "/platform/acpi_laptop_slate"),
	    "0");
	assert_string_equal(fake_xs_val(DOM "/platform/device-model"),
	    "qemu_xen");
	/* The default hole: libxl says nothing of it. */
	assert_null(fake_xs_lookup(DOM "/platform/mmio_hole_size"));
	assert_string_equal(fake_xs_val(VM "/rtc/timeoffset"), "");
	assert_string_equal(fake_xs_val(VM "/image/ostype"), "hvm");
	/* The guest may read them, as its other entries (inherited). */
	assert_int_equal(fake_xs_lookup(DOM "/platform/acpi")->perms[0].id, 0);

	/* Its destroy: nothing of the domain or its device model left. */
	xen_xs_domain_remove(&be, 5);
	assert_int_equal(fake_xs_count("/local/domain/0/device-model/5"), 0);
	assert_int_equal(fake_xs_count(DOM), 0);
	assert_int_equal(fake_xs_count(VM), 0);
	assert_int_equal(fake_xs_count("/libxl/5"), 0);
	assert_non_null(fake_xs_lookup("/local/domain/0/device-model"));
}

static void
test_ovmf_hole_no_acpi(void **state)
{
	/* mmio_hole = 1024: RAM below 4 GiB ends at 3 GiB, under 0xf0000000. */
	struct vmb_guest *g = make_hvm("ovmf", false, 1ull << 30);

	(void)state;
	assert_int_equal(xen_xs_dm_store(&be, 5, g), 0);
	assert_string_equal(fake_xs_val(DOM "/hvmloader/bios"), "ovmf");
	assert_string_equal(fake_xs_val(DOM "/platform/acpi"), "0");
	assert_string_equal(fake_xs_val(DOM "/platform/mmio_hole_size"),
	    "1073741824");
}

static void
test_pvh_refused(void **state)
{
	struct vmb_guest *g = &guest;

	(void)state;
	memset(g, 0, sizeof(*g));
	g->type = VMB_GUEST_PVH;
	assert_int_equal(xen_xs_dm_store(&be, 5, g), -EINVAL);
	assert_int_equal(fake_xs_count("/local/domain/0/device-model/5"), 0);
}

/*
 * Once it runs: its pid and serial pty where xl console reads them
 * (libxl__spawn_local_dm, device_model_postconfig_chardev), the guest
 * allowed to read them as its other entries; gone with the domain.
 */
static void
test_running(void **state)
{
	struct vmb_guest *g = make_hvm("seabios", true, 0);
	struct vmb_dm_info info = { .pid = 4242, .serial_tty = "/dev/pts/7" };

	(void)state;
	assert_int_equal(xen_xs_dm_store(&be, 5, g), 0);
	assert_int_equal(xen_xs_dm_running(&be, 5, &info), 0);
	assert_string_equal(fake_xs_val(DOM "/image/device-model-pid"),
	    "4242");
	assert_string_equal(fake_xs_val(DOM "/serial/0/tty"), "/dev/pts/7");
	assert_int_equal(fake_xs_lookup(DOM "/serial/0/tty")->perms[0].id, 0);

	/* No serial port (serial = "none"): no tty entry. */
	xen_xs_domain_remove(&be, 5);
	g = make_hvm("seabios", true, 0);
	info.serial_tty[0] = '\0';
	assert_int_equal(xen_xs_dm_running(&be, 5, &info), 0);
	assert_string_equal(fake_xs_val(DOM "/image/device-model-pid"),
	    "4242");
	assert_null(fake_xs_lookup(DOM "/serial/0/tty"));

	/* No process: refused, nothing written. */
	info.pid = 0;
	assert_int_equal(xen_xs_dm_running(&be, 6, &info), -EINVAL);
	assert_int_equal(fake_xs_count("/local/domain/6"), 0);

	xen_xs_domain_remove(&be, 5);
	assert_int_equal(fake_xs_count(DOM), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_entries, setup),
		cmocka_unit_test_setup(test_ovmf_hole_no_acpi, setup),
		cmocka_unit_test_setup(test_pvh_refused, setup),
		cmocka_unit_test_setup(test_running, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
