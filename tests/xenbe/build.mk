# tests/xenbe/build.mk - unit tests of the xen backend that need no Xen:
# libxenctrl's calls are replaced at link time (-Wl,--wrap) by fakes that
# record what the backend asked and answer as Xen would.
XENBE_TEST_BIN := $(B)/tests/xenbe
XENBE_OBJS := $(patsubst %.c,$(OBJ)/%.o,$(sort $(wildcard libvmbuild/xen/*.c)))
XENBE_WRAP := -Wl,--wrap=xc_domain_populate_physmap -Wl,--wrap=xc_interface_open \
	-Wl,--wrap=xc_domain_getinfolist -Wl,--wrap=xs_read
EXTRA_CFLAGS_tests/xenbe/ += -Ilibvmbuild -Ilibvmbuild/xen \
	$(shell $(PKG) --cflags $(LIBVMB_XEN_PKGS))

$(XENBE_TEST_BIN)/test_xen_backend: $(OBJ)/tests/xenbe/test_xen_backend.o \
		$(XENBE_OBJS) $(OBJ)/libvmbuild/counters.o $(OBJ)/libvmbuild/uuid.o
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(XENBE_WRAP) -o $@ $^ $(LIBVMB_XEN_LDLIBS) -luuid \
		$(shell $(PKG) --libs cmocka) $(LDLIBS_COMMON)

TESTS += $(XENBE_TEST_BIN)/test_xen_backend
TESTS_DEPS += $(XENBE_TEST_BIN)/test_xen_backend
