# tests/harness/build.mk - the tests' own tools: the stack launcher
# (vmbstack.py, stack.sh) and the Python client's error codes against
# daemon/proto.h.
TESTS += tests/harness/stack-test.sh tests/harness/proto-errors.py
TESTS_DEPS += $(BIN)/vmbuildd $(BIN)/hvsim $(BIN)/vmctl
