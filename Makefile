# vmbuild - top-level Makefile.
#
# Every directory contributes a fragment (DIR/build.mk) that adds its
# binaries to ALL, its test programs to TESTS and its benchmarks to BENCH.
# Objects go to build/obj/, binaries to build/bin/, libraries to build/lib/.
#
# Include paths are per directory, never global: a fragment sets
# EXTRA_CFLAGS_DIR/ for its sources to the headers of the components
# below it (hypervisor/include <- libvmbuild <- daemon), so that, say,
# libvmbuild cannot include a daemon header by accident.
#
#   make            build everything
#   make check      install missing packages, build, run every test
#   make demo       install, build, start hvsim + vmbuildd, create the examples
#   make bench      benchmarks (ratios against a baseline of the same run)
#   make check-xen  the lab: a real Xen 4.17 under QEMU
#   make asan       the suite on an ASan+UBSan build (build/asan)
#   make ubsan      the suite on a UBSan build (build/ubsan)
#   make tsan       the concurrency tests on a TSan build (build/tsan)
#   make fuzz       the libFuzzer targets, FUZZ_SECONDS each (default 60)
#   make soak       1000 kill -9 rounds of vmbuildd (SOAK_ROUNDS)
#   make install    vmbuildd, vmctl and the systemd units (DESTDIR, PREFIX)
#   make clean

CC	?= cc
CFLAGS	?= -O2 -g
WARN	 = -Wall -Wextra -Werror -Wstrict-prototypes -Wmissing-prototypes \
	   -Wshadow -Wpointer-arith -Wformat=2 -Wno-format-nonliteral
CPPFLAGS += -D_GNU_SOURCE -MMD -MP
ALL_CFLAGS = $(CPPFLAGS) $(WARN) $(CFLAGS) -pthread
LDLIBS_COMMON = -pthread

B	 = build
BIN	 = $(B)/bin
LIB	 = $(B)/lib
OBJ	 = $(B)/obj

PKG	 = pkg-config

ALL	:=
TESTS	:=
BENCH	:=

.PHONY: all check demo bench check-xen clean deps install asan ubsan tsan \
	fuzz soak san-check
all: build-all

include hypervisor/lib/build.mk
include hypervisor/sim/build.mk
include libvmbuild/build.mk
include daemon/build.mk
include cli/build.mk
include guest/build.mk
include tests/build.mk
include bench/build.mk

build-all: $(ALL)

$(OBJ)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(EXTRA_CFLAGS_$(dir $<)) -c -o $@ $<

deps:
	scripts/deps.sh build check

check: deps
	$(MAKE) build-all $(TESTS_DEPS)
	scripts/run-tests $(TESTS)

demo: deps
	$(MAKE) build-all
	scripts/demo.sh

# Sanitizer variants: the tree built again into build/NAME with the
# sanitizer's flags, then its tests run on it (VMB_BUILD tells the test
# scripts where the binaries are).  A sanitizer report makes the program
# fail (no recovery); leaks inside libraries we do not build are
# suppressed (tests/fuzz/lsan.supp).  TSan runs the concurrency tests:
# hvsim's parallel populates, claims and socket, concurrent builds, and
# the daemon under load, under faults and at restarts.
SAN_asan  := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
	     -fno-sanitize-recover=undefined
SAN_ubsan := -O1 -g -fsanitize=undefined -fno-sanitize-recover=undefined
SAN_tsan  := -O1 -g -fsanitize=thread
SAN_ENV	  := VMBD_SANITIZER=$(SAN) \
	     LSAN_OPTIONS=suppressions=$(CURDIR)/tests/fuzz/lsan.supp \
	     UBSAN_OPTIONS=print_stacktrace=1 \
	     TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
	     CLIENTS=200 SECONDS=4 ROUNDS=20
SAN_TESTS_tsan = $(B)/tests/hvsim/test_popconc $(B)/tests/hvsim/test_claim \
	tests/hvsim/socket.sh $(B)/tests/lib/test_build_sim \
	tests/daemon/protocol.py tests/daemon/load.py tests/daemon/faults.py \
	tests/daemon/recovery.py tests/daemon/killloop.py

asan ubsan tsan: deps
	$(MAKE) B=build/$@ CFLAGS="$(SAN_$@)" SAN=$@ san-check

# The fuzz targets are clang's: not part of a sanitizer variant's suite.
san-check:
	$(MAKE) build-all $(filter-out $(FUZZ_BINS),$(TESTS_DEPS))
	VMB_BUILD=$(B) HVSIM=$(CURDIR)/$(B)/bin/hvsim $(SAN_ENV) scripts/run-tests $(or $(SAN_TESTS_$(SAN)),\
		$(filter-out tests/fuzz/replay.sh,$(TESTS)))

FUZZ_SECONDS ?= 60
fuzz: deps
	$(MAKE) $(FUZZ_BINS)
	scripts/run-fuzz $(FUZZ_SECONDS) $(FUZZ_TARGETS)

SOAK_ROUNDS ?= 1000
soak: deps
	$(MAKE) build-all $(TESTS_DEPS)
	ROUNDS=$(SOAK_ROUNDS) TEST_TIMEOUT=7200 scripts/run-tests \
		tests/daemon/killloop.py

bench: deps
	$(MAKE) build-all $(BENCH_DEPS)
	scripts/run-bench $(BENCH)

check-xen:
	scripts/deps.sh build lab
	$(MAKE) build-all
	tests/lab/run.sh

# Install on a Xen host: the daemon, the client and the systemd units.
# hvsim is a development and test tool and is not installed.
DESTDIR	?=
PREFIX	?= /usr
UNITDIR	?= /lib/systemd/system
SYSUSERSDIR ?= /usr/lib/sysusers.d
install: build-all
	install -D -m 0755 $(BIN)/vmbuildd $(DESTDIR)$(PREFIX)/sbin/vmbuildd
	install -D -m 0755 $(BIN)/vmctl $(DESTDIR)$(PREFIX)/bin/vmctl
	install -D -m 0644 systemd/vmbuildd.service $(DESTDIR)$(UNITDIR)/vmbuildd.service
	install -D -m 0644 systemd/vmbuildd.socket $(DESTDIR)$(UNITDIR)/vmbuildd.socket
	install -D -m 0644 systemd/vmbuildd-ro.socket $(DESTDIR)$(UNITDIR)/vmbuildd-ro.socket
	install -D -m 0644 systemd/vmbuild.sysusers $(DESTDIR)$(SYSUSERSDIR)/vmbuild.conf
	install -D -m 0644 build/guest/hello.elf $(DESTDIR)$(PREFIX)/lib/vmbuild/hello.elf

clean:
	rm -rf $(B)

-include $(shell find $(OBJ) -name '*.d' -type f 2>/dev/null)
