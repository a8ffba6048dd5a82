# tests/build.mk - each tests/AREA/build.mk adds its programs to TESTS
# (run by scripts/run-tests in the order given) and what they need
# built to TESTS_DEPS.
TESTS_DEPS :=
include $(sort $(wildcard tests/*/build.mk))
