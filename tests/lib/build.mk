# tests/lib/build.mk - tests of libvmbuild: config goldens, placement,
# extent splitting, the ELF loader, and builds against a real hvsim.
TESTS += tests/lib/config-golden.sh
TESTS_DEPS += $(BIN)/vmb-config-check
