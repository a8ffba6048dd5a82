# tests/hvsim/build.mk - hvsim's unit tests (cmocka, linked with the sim
# objects except main.c) and its socket integration test.
HVSIM_TEST_BIN := $(B)/tests/hvsim
EXTRA_CFLAGS_tests/hvsim/ := -Ihypervisor/include
HVSIM_UNITS := heap flush scrub shadow claim popconc vcpu

$(HVSIM_TEST_BIN)/test_%: $(OBJ)/tests/hvsim/test_%.o $(HVSIM_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(shell $(PKG) --libs cmocka 2>/dev/null || echo -lcmocka) $(LDLIBS_COMMON)

$(HVSIM_TEST_BIN)/socket_client: $(OBJ)/tests/hvsim/socket_client.o $(HVCLIENT_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS_COMMON)

TESTS += $(addprefix $(HVSIM_TEST_BIN)/test_,$(HVSIM_UNITS)) tests/hvsim/socket.sh
TESTS_DEPS += $(addprefix $(HVSIM_TEST_BIN)/test_,$(HVSIM_UNITS)) \
	$(HVSIM_TEST_BIN)/socket_client $(HVSIM)
.PRECIOUS: $(OBJ)/tests/hvsim/%.o
