# tests/daemon/build.mk - vmbuildd's protocol tests over the real socket,
# against a real hvsim (python3 scripts; see tests/daemon/vmbdtest.py).
TESTS += tests/daemon/protocol.py tests/daemon/restart.py \
	tests/daemon/layers.py \
	tests/daemon/systemd.py tests/daemon/journal.py tests/daemon/metrics.py \
	tests/daemon/counters.py tests/daemon/progress.py \
	tests/daemon/hostile.py tests/daemon/access.py tests/daemon/flood.py \
	tests/daemon/faults.py tests/daemon/recovery.py tests/daemon/killloop.py \
	tests/daemon/load.py tests/daemon/lifecycle.py \
	tests/daemon/devices.py tests/daemon/devreboot.py \
	tests/daemon/forcefall.py \
	tests/daemon/statedir.py tests/daemon/crashloop.py \
	tests/daemon/connlimits.py tests/daemon/slowloris.py \
	tests/daemon/records.py tests/daemon/everyday.py \
	tests/daemon/resize.py tests/daemon/badmsg.py tests/daemon/vcpupin.py \
	tests/daemon/save.py tests/daemon/saving.py tests/daemon/restorephases.py \
	tests/daemon/reopen.py tests/daemon/migrate.py \
	tests/daemon/hvm.py tests/daemon/migkill.py tests/daemon/migquery.py \
	tests/daemon/migssh.py \
	tests/daemon/hvmrestart.py tests/daemon/hvmdevices.py tests/daemon/grubpvh.py \
	tests/daemon/hvmrunas.py \
	tests/daemon/guests.py tests/daemon/syscalls.py tests/daemon/cpukeep.py
# counters.py lists the counter table with tests/lib's test_counters;
# protocol.py compares vm.info's config with vmb-config-check's;
# faults.py counts a build's hypercalls with vmb-build; records.py
# loads tests/daemon/fixtures/record-before-guestjson.json, a record an
# earlier vmbuildd wrote.
TESTS_DEPS += $(BIN)/vmbuildd $(BIN)/hvsim $(BIN)/vmctl \
	$(BIN)/vmb-config-check $(BIN)/vmb-build $(B)/guest/hello.elf \
	$(B)/tests/lib/test_counters

# test_json: daemon/json.c's writer given a non-finite double (yajl
# writes nothing for it, breaking the message).
DAEMONTEST_BIN := $(B)/tests/daemon
EXTRA_CFLAGS_tests/daemon/ := -Idaemon -Ilibvmbuild $(shell $(PKG) --cflags yajl cmocka)
$(DAEMONTEST_BIN)/test_json: $(OBJ)/tests/daemon/test_json.o \
		$(OBJ)/daemon/json.o
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(shell $(PKG) --libs yajl cmocka) -lm
TESTS += $(DAEMONTEST_BIN)/test_json
TESTS_DEPS += $(DAEMONTEST_BIN)/test_json

# test_cpukeep: daemon/cpukeep.c's threads on one CPU and back, and the
# steal window that decides it.
$(DAEMONTEST_BIN)/test_cpukeep: $(OBJ)/tests/daemon/test_cpukeep.o \
		$(OBJ)/daemon/cpukeep.o $(OBJ)/daemon/log.o $(LIBVMB_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $(filter %.o,$^) $(LIBVMB_LDLIBS) \
		$(shell $(PKG) --libs cmocka libevent libsystemd) -pthread
TESTS += $(DAEMONTEST_BIN)/test_cpukeep
TESTS_DEPS += $(DAEMONTEST_BIN)/test_cpukeep
