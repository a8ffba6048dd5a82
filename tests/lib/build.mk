# tests/lib/build.mk - tests of libvmbuild: config goldens, placement,
# extent splitting, the counter table, UUIDs, the ELF loader, the cache
# of unpacked kernels, and builds against a real hvsim.
LIBTEST_BIN := $(B)/tests/lib
EXTRA_CFLAGS_tests/lib/ := -Ilibvmbuild -Ihypervisor/include
LIBTEST_PROGS := $(LIBTEST_BIN)/test_placement $(LIBTEST_BIN)/test_populate_plan \
	$(LIBTEST_BIN)/test_config_fuzz $(LIBTEST_BIN)/test_counters \
	$(LIBTEST_BIN)/test_uuid $(LIBTEST_BIN)/test_layout \
	$(LIBTEST_BIN)/test_bzimage $(LIBTEST_BIN)/test_keys \
	$(LIBTEST_BIN)/test_loader $(LIBTEST_BIN)/test_build_sim \
	$(LIBTEST_BIN)/test_devices $(LIBTEST_BIN)/test_xen_series \
	$(LIBTEST_BIN)/test_native $(LIBTEST_BIN)/test_imgcache \
	$(LIBTEST_BIN)/test_cpuwait

$(LIBTEST_BIN)/%: $(OBJ)/tests/lib/%.o $(LIBVMB_LIB) $(LIB)/libhvclient.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LIBVMB_LDLIBS) $(shell $(PKG) --libs cmocka)

# test_keys and test_guestjson write the JSON form and read it back:
# the daemon's (guestjson.c).
EXTRA_CFLAGS_tests/lib/ += -Idaemon $(shell $(PKG) --cflags yajl)
LIBTEST_PROGS += $(LIBTEST_BIN)/test_guestjson
$(LIBTEST_BIN)/test_keys $(LIBTEST_BIN)/test_guestjson: $(LIBTEST_BIN)/%: \
		$(OBJ)/tests/lib/%.o $(OBJ)/daemon/guestjson.o \
		$(OBJ)/daemon/json.o $(LIBVMB_LIB) $(LIB)/libhvclient.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $(filter %.o,$^) $(LIBVMB_LDLIBS) \
		$(shell $(PKG) --libs cmocka yajl)

# test_vmstate: the daemon's VM states and their transitions (vmstate.c).
LIBTEST_PROGS += $(LIBTEST_BIN)/test_vmstate
$(LIBTEST_BIN)/test_vmstate: $(OBJ)/tests/lib/test_vmstate.o \
		$(OBJ)/daemon/vmstate.o $(LIBVMB_LIB) $(LIB)/libhvclient.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $(filter %.o,$^) $(LIBVMB_LDLIBS) \
		$(shell $(PKG) --libs cmocka)

TESTS += tests/lib/config-golden.sh $(LIBTEST_PROGS)
TESTS_DEPS += $(BIN)/vmb-config-check $(LIBTEST_PROGS)
