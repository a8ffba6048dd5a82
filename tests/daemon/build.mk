# tests/daemon/build.mk - vmbuildd's protocol tests over the real socket,
# against a real hvsim (python3 scripts; see tests/daemon/vmbdtest.py).
TESTS += tests/daemon/protocol.py tests/daemon/restart.py \
	tests/daemon/systemd.py tests/daemon/metrics.py
TESTS_DEPS += $(BIN)/vmbuildd $(BIN)/hvsim $(B)/guest/hello.elf
