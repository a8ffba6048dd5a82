# tests/xenbe/build.mk - unit tests of the xen backend that need no Xen:
# libxenctrl's calls are replaced at link time (-Wl,--wrap) by fakes that
# record what the backend asked and answer as Xen would.
XENBE_TEST_BIN := $(B)/tests/xenbe
# The backend's objects and the parts of the core they call.
XENBE_OBJS := $(patsubst %.c,$(OBJ)/%.o,$(sort $(wildcard libvmbuild/xen/*.c))) \
	$(OBJ)/libvmbuild/counters.o $(OBJ)/libvmbuild/uuid.o \
	$(OBJ)/libvmbuild/diag.o $(OBJ)/libvmbuild/clock.o \
	$(OBJ)/libvmbuild/layout.o
XENBE_WRAP := -Wl,--wrap=xc_domain_populate_physmap -Wl,--wrap=xc_interface_open \
	-Wl,--wrap=xc_domain_getinfolist -Wl,--wrap=xs_read \
	-Wl,--wrap=xc_domain_create
EXTRA_CFLAGS_tests/xenbe/ += -Ilibvmbuild -Ilibvmbuild/xen -Ihypervisor/include \
	$(shell $(PKG) --cflags $(LIBVMB_XEN_PKGS))

$(XENBE_TEST_BIN)/test_xen_backend: $(OBJ)/tests/xenbe/test_xen_backend.o \
		$(XENBE_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(XENBE_WRAP) -o $@ $^ $(LIBVMB_XEN_LDLIBS) -luuid \
		$(shell $(PKG) --libs cmocka) $(LDLIBS_COMMON)

TESTS += $(XENBE_TEST_BIN)/test_xen_backend
TESTS_DEPS += $(XENBE_TEST_BIN)/test_xen_backend

# The ACPI tables of a PVH guest, built and read back (no fakes needed).
$(XENBE_TEST_BIN)/test_xen_acpi: $(OBJ)/tests/xenbe/test_xen_acpi.o \
		$(XENBE_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LIBVMB_XEN_LDLIBS) -luuid \
		$(shell $(PKG) --libs cmocka) $(LDLIBS_COMMON)

TESTS += $(XENBE_TEST_BIN)/test_xen_acpi
TESTS_DEPS += $(XENBE_TEST_BIN)/test_xen_acpi

# The xenstore entries of a domain (test_xen_xs) and of its devices
# (test_xen_dev: backends, hotplug scripts, rollback, teardown, and the
# layout xl wrote in the lab, xl-devices.layout), against an in-memory
# xenstore (fake_xs.c): libxenstore's calls are wrapped at link time;
# the pipelined transactions (xen_xswire.c) reach the same store
# through fake_xsd.c, its wire protocol on a socketpair.
XENBE_XS_WRAP := $(foreach f,xs_transaction_start xs_transaction_end \
	xs_write xs_mkdir xs_set_permissions xs_get_permissions xs_rm xs_read xs_directory \
	xs_introduce_domain xs_release_domain xs_open xs_close xs_watch \
	xs_unwatch xs_fileno xs_check_watch,-Wl,--wrap=$(f))
$(XENBE_TEST_BIN)/test_xen_%: $(OBJ)/tests/xenbe/test_xen_%.o \
		$(OBJ)/tests/xenbe/fake_xs.o $(OBJ)/tests/xenbe/fake_xsd.o \
		$(XENBE_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(XENBE_XS_WRAP) -o $@ $^ $(LIBVMB_XEN_LDLIBS) -luuid \
		$(shell $(PKG) --libs cmocka) $(LDLIBS_COMMON)

TESTS += $(XENBE_TEST_BIN)/test_xen_xs $(XENBE_TEST_BIN)/test_xen_dev
TESTS_DEPS += $(XENBE_TEST_BIN)/test_xen_xs $(XENBE_TEST_BIN)/test_xen_dev
# test_xen_dm: an HVM guest's device model entries (xen_xs_dm_store).
TESTS += $(XENBE_TEST_BIN)/test_xen_dm
TESTS_DEPS += $(XENBE_TEST_BIN)/test_xen_dm

# The everyday ops (xen_everyday.c): the scheduler's calls and the
# console ring through wrapped libxenctrl calls, names and start times
# in the in-memory xenstore.
XENBE_EVERYDAY_WRAP := $(XENBE_XS_WRAP) $(foreach f,xc_domain_getinfolist \
	xc_cpupool_getinfo xc_cpupool_infofree xc_sched_credit_domain_get \
	xc_sched_credit_domain_set xc_sched_credit2_domain_get \
	xc_sched_credit2_domain_set xc_readconsolering,-Wl,--wrap=$(f))
$(XENBE_TEST_BIN)/test_xen_everyday: $(OBJ)/tests/xenbe/test_xen_everyday.o \
		$(OBJ)/tests/xenbe/fake_xs.o $(XENBE_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(XENBE_EVERYDAY_WRAP) -o $@ $^ \
		$(LIBVMB_XEN_LDLIBS) -luuid $(shell $(PKG) --libs cmocka) \
		$(LDLIBS_COMMON)

TESTS += $(XENBE_TEST_BIN)/test_xen_everyday
TESTS_DEPS += $(XENBE_TEST_BIN)/test_xen_everyday

# A running domain's memory and vCPUs (xen_resize.c): the xenstore
# writes against fake_xs.c, the libxenctrl calls against fakes.
XENBE_RESIZE_WRAP := $(XENBE_XS_WRAP) $(foreach f,xc_domain_setmaxmem \
	xc_get_cpumap_size xc_cpumap_alloc xc_vcpu_setaffinity \
	xc_vcpu_getaffinity xc_vcpu_getinfo,-Wl,--wrap=$(f))
$(XENBE_TEST_BIN)/test_xen_resize: $(OBJ)/tests/xenbe/test_xen_resize.o \
		$(OBJ)/tests/xenbe/fake_xs.o $(XENBE_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(XENBE_RESIZE_WRAP) -o $@ $^ $(LIBVMB_XEN_LDLIBS) \
		-luuid $(shell $(PKG) --libs cmocka) $(LDLIBS_COMMON)

TESTS += $(XENBE_TEST_BIN)/test_xen_resize
TESTS_DEPS += $(XENBE_TEST_BIN)/test_xen_resize

# The suspend of a save (xen_save.c): control/shutdown in the in-memory
# xenstore, a guest played by its meddle hook, the domain's state from a
# wrapped xc_domain_getinfolist.
XENBE_SAVE_WRAP := $(XENBE_XS_WRAP) -Wl,--wrap=xc_domain_getinfolist
$(XENBE_TEST_BIN)/test_xen_save: $(OBJ)/tests/xenbe/test_xen_save.o \
		$(OBJ)/tests/xenbe/fake_xs.o $(XENBE_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(XENBE_SAVE_WRAP) -o $@ $^ $(LIBVMB_XEN_LDLIBS) \
		-luuid $(shell $(PKG) --libs cmocka) $(LDLIBS_COMMON)

TESTS += $(XENBE_TEST_BIN)/test_xen_save
TESTS_DEPS += $(XENBE_TEST_BIN)/test_xen_save

# What an HVM guest's hvmloader gets (xen_hvm.c): the memory map and the
# hvm_info_table of layouts the build plans (layout.c), the HVM params.
$(XENBE_TEST_BIN)/test_xen_hvm: $(OBJ)/tests/xenbe/test_xen_hvm.o \
		$(OBJ)/libvmbuild/layout.o $(XENBE_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LIBVMB_XEN_LDLIBS) -luuid \
		$(shell $(PKG) --libs cmocka) $(LDLIBS_COMMON)

TESTS += $(XENBE_TEST_BIN)/test_xen_hvm
TESTS_DEPS += $(XENBE_TEST_BIN)/test_xen_hvm

# The reader of libxc's migration stream for the engine restore
# (xen_xcstream.c) on synthetic streams: it makes no hypercall, so it is
# linked alone.
$(XENBE_TEST_BIN)/test_xen_xcstream: $(OBJ)/tests/xenbe/test_xen_xcstream.o \
		$(OBJ)/libvmbuild/xen/xen_xcstream.o
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(shell $(PKG) --libs cmocka) \
		$(LDLIBS_COMMON)

TESTS += $(XENBE_TEST_BIN)/test_xen_xcstream
TESTS_DEPS += $(XENBE_TEST_BIN)/test_xen_xcstream
