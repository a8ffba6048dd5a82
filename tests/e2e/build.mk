# tests/e2e/build.mk - end-to-end tests: hvsim + vmbuildd + vmctl.
E2E_TESTS := tests/e2e/exit-codes.sh tests/e2e/lifecycle.sh tests/e2e/crash.sh \
	tests/e2e/check.sh
TESTS += $(E2E_TESTS)
