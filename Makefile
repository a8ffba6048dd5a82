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
#   make check-xen-debhost  a Debian 12 Xen host under QEMU, vmbuild from
#                   its .deb run by systemd (tests/lab/debhost); alias
#                   check-debhost
#   make xen        the companion hypercalls in Xen 4.17 (hypervisor/xen):
#                   build/xen/xen.gz and the perf-counter build xen-perfc.gz
#   make check-xen-hvm  the lab's HVM guest and its PVH guest booted
#                   through GRUB from its own disk (issue 21)
#   make check-xen-companion  the patched Xen in the lab, beside hvsim
#   make check-xen-saverestore  save and restore by xl and by vmbuild, timed
#                   side by side, in a lab boot of its own
#   make check-xen-migrate  live migration by xl and by vmbuild between two
#                   lab hosts (two QEMUs on a loopback socket network)
#   make asan       the suite on an ASan+UBSan build (build/asan)
#   make ubsan      the suite on a UBSan build (build/ubsan)
#   make tsan       the concurrency tests on a TSan build (build/tsan)
#   make fuzz       the libFuzzer targets, FUZZ_SECONDS each (default 60)
#   make soak       1000 kill -9 rounds of vmbuildd (SOAK_ROUNDS)
#   make install    programs, man pages, units, completion, clients (DESTDIR,
#                   PREFIX; see "Install" below); make uninstall
#   make clean
#
# Flags: CFLAGS, CPPFLAGS and LDFLAGS are the builder's (a distribution
# passes dpkg-buildflags' through the environment or the command line);
# the project's own flags are added to them, never replace them.

CC	?= cc
CFLAGS	?= -O2 -g
# -Werror is for developers: on in a git checkout, off in a tarball and
# in a distribution's build (`make WERROR=0`), where a newer compiler's
# new warning must not fail the build.
WERROR	?= $(if $(wildcard .git),1,0)
WARN	 = -Wall -Wextra $(if $(filter 1,$(WERROR)),-Werror) \
	   -Wstrict-prototypes -Wmissing-prototypes \
	   -Wshadow -Wpointer-arith -Wformat=2 -Wno-format-nonliteral
override CPPFLAGS += -D_GNU_SOURCE -MMD -MP
ALL_CFLAGS = $(CPPFLAGS) $(WARN) $(CFLAGS) -pthread
# Programs are linked with $(LINK): the builder's LDFLAGS (e.g. dpkg's
# -Wl,-z,relro -Wl,-z,now) come after the compile flags.
LINK	 = $(CC) $(ALL_CFLAGS) $(LDFLAGS)
LDLIBS_COMMON = -pthread

B	 = build
BIN	 = $(B)/bin
LIB	 = $(B)/lib
OBJ	 = $(B)/obj

PKG	 = pkg-config
# The goals that install packages first (deps, check, demo, bench,
# check-xen) run a second make for the build.  The first one must not call
# pkg-config: on a fresh machine neither it nor the .pc files are there
# yet, and every $(shell $(PKG) ...) would print an error.
PKG_FREE_GOALS = deps check demo bench check-xen clean uninstall asan ubsan \
	tsan fuzz soak xen check-xen-companion check-xen-debhost check-debhost \
	check-xen-hvm check-xen-saverestore check-xen-migrate
ifneq ($(MAKECMDGOALS),)
ifeq ($(filter-out $(PKG_FREE_GOALS),$(MAKECMDGOALS)),)
PKG	 = :
endif
endif

ALL	:=
TESTS	:=
BENCH	:=

.PHONY: all check demo bench check-xen xen check-xen-companion check-xen-debhost \
	check-debhost check-xen-hvm check-xen-saverestore check-xen-migrate \
	clean deps \
	install asan ubsan tsan fuzz soak san-check build-tests
all: build-all

# The version is defined once, as VMB_VERSION in libvmbuild/vmbuild.h
# (the library's public header; vmbuildd prints it from there).  vmctl
# and hvsim, which do not include vmbuild.h, get it from a header made of
# it, rewritten only when the version changes; tests/ops/version.sh
# checks that every program, server.hello, the packages and the Python
# client say the same.
VERSION	:= $(shell sed -n 's/^\#define VMB_VERSION[^"]*"\(.*\)"/\1/p' \
	   libvmbuild/vmbuild.h)
GEN	 = $(B)/gen

$(GEN)/version.h: libvmbuild/vmbuild.h
	@mkdir -p $(dir $@)
	@printf '#define VMBUILD_VERSION\t"%s"\n' '$(VERSION)' >$@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi

include hypervisor/lib/build.mk
include hypervisor/sim/build.mk
include libvmbuild/build.mk
include daemon/build.mk
include cli/build.mk
include guest/build.mk
include man/build.mk
include tests/build.mk
include bench/build.mk

build-all: $(ALL)

# What `make check` runs, built (.ci/run builds it before its labs).
build-tests: build-all $(TESTS_DEPS)

# No object is an intermediate file to delete: the tests' objects were,
# built by a pattern rule for their programs, so that the next make,
# which finds them named in their .d files, built and linked them all
# again (`make check` after `make all`, in CI while a lab packs them).
.SECONDARY:

$(OBJ)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(EXTRA_CFLAGS_$(dir $<)) -c -o $@ $<

deps:
	scripts/deps.sh build check

check: deps
	$(MAKE) build-all $(TESTS_DEPS)
	scripts/run-tests $(TESTS)

# The demo shows vmbuild, not its build: the compiler's lines go to a log,
# shown only when the build fails.
demo:
	@scripts/deps.sh build demo
	@mkdir -p $(B)
	@echo "==> Building vmbuild (log: $(B)/demo-build.log)"
	@$(MAKE) --no-print-directory build-all >$(B)/demo-build.log 2>&1 || \
		{ tail -n 30 $(B)/demo-build.log; exit 1; }
	@scripts/demo.sh

# Sanitizer variants: the tree built again into build/NAME with the
# sanitizer's flags, then its tests run on it (VMB_BUILD tells the test
# scripts where the binaries are).  A sanitizer report makes the program
# fail (no recovery); leaks inside libraries we do not build are
# suppressed (tests/fuzz/lsan.supp).  TSan runs the concurrency tests:
# hvsim's parallel populates, claims and socket, concurrent builds, and
# the daemon under load, under faults and at restarts, the image cache.
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
	$(B)/tests/lib/test_imgcache \
	tests/daemon/protocol.py tests/daemon/load.py tests/daemon/faults.py \
	tests/daemon/recovery.py tests/daemon/killloop.py

asan ubsan tsan: deps
	$(MAKE) B=build/$@ CFLAGS="$(SAN_$@)" SAN=$@ san-check

# The fuzz targets are clang's: not part of a sanitizer variant's suite.
san-check:
	$(MAKE) build-all $(filter-out $(FUZZ_BINS),$(TESTS_DEPS))
	VMB_BUILD=$(B) HVSIM=$(CURDIR)/$(B)/bin/hvsim $(SAN_ENV) scripts/run-tests $(or $(SAN_TESTS_$(SAN)),\
		$(filter-out tests/fuzz/replay.sh $(OPS_SAN_SKIP),$(TESTS)))

FUZZ_SECONDS ?= 60
fuzz: deps
	$(MAKE) $(FUZZ_BINS)
	scripts/run-fuzz $(FUZZ_SECONDS) $(FUZZ_TARGETS)

SOAK_ROUNDS ?= 1000
soak: deps
	$(MAKE) build-all $(TESTS_DEPS)
	ROUNDS=$(SOAK_ROUNDS) TEST_TIMEOUT=7200 scripts/run-tests \
		tests/daemon/killloop.py

bench:
	scripts/deps.sh build check bench
	$(MAKE) build-all $(BENCH_DEPS)
	scripts/run-bench $(BENCH)

check-xen:
	scripts/deps.sh build lab
	$(MAKE) build-all
	tests/lab/run.sh

# Issue 21's guests in a lab boot of their own (build/lab-hvm, the .debs
# shared with build/lab): the Linux kernel as an HVM guest (hvmloader,
# SeaBIOS, QEMU for Xen; a disk and a NIC), the grub disk booted as a
# PVH guest through GRUB and as an HVM guest through SeaBIOS and GRUB for
# BIOS (its disk on AHCI), by xl and by vmbuild; no hello guests, create
# rounds or dirty-memory sequence (make check-xen has those).
# LAB_HVM_STEPS chooses among the three; .ci/run leaves out hvm (the
# kernel booted directly), whose two guests were 500 s of a slow run.
# LAB_HVM_TOOLS: the toolstacks that boot them (.ci/run: vmbuild only;
# xl's two HVM boots through SeaBIOS were 450 s of a slow run, and they
# are the reference to compare with, not what CI checks).
LAB_HVM_STEPS ?= hvm grub grubhvm
LAB_HVM_TOOLS ?= xl vmbuild
check-xen-hvm:
	scripts/deps.sh build lab
	$(MAKE) build-all
	LAB_DIR=build/lab-hvm LAB_DEBS=build/lab/debs \
	    LAB_STEPS="$(LAB_HVM_TOOLS) $(LAB_HVM_STEPS)" LAB_HELLO=0 \
	    LAB_ROUNDS=0 LAB_DIRTY=0 tests/lab/run.sh

# Save and restore by xl and by vmbuild, side by side (issue 22's restore
# figure), in a lab boot of its own (build/lab-sr; the .debs and their
# unpacked tree shared with build/lab): dom0 holds the saved file in its
# RAM and needs 1.5 GiB, which the main lab's 4.5 GiB guest leaves no
# room for.
check-xen-saverestore:
	scripts/deps.sh build lab
	$(MAKE) build-all
	LAB_DIR=build/lab-sr LAB_DEBS=build/lab/debs LAB_ROOT=build/lab/root \
	    LAB_STEPS="xl vmbuild saverestore" LAB_HELLO=0 LAB_ROUNDS=0 \
	    LAB_DIRTY=0 LAB_DOM0_MEM=1536M tests/lab/run.sh

# Live migration by xl and by vmbuild between two lab hosts (issue 20):
# two QEMUs of 4 GiB and one CPU each (build/lab-mig; the .debs and
# their unpacked tree shared with build/lab), joined by a QEMU socket
# network on 127.0.0.1, ssh between their dom0s; tests/lab/README.md.
check-xen-migrate:
	scripts/deps.sh build lab migrate
	$(MAKE) build-all
	LAB_DIR=build/lab-mig LAB_DEBS=build/lab/debs LAB_ROOT=build/lab/root \
	    LAB_PEER=1 LAB_STEPS="xl vmbuild migrate" LAB_HELLO=0 LAB_ROUNDS=0 \
	    LAB_DIRTY=0 LAB_TESTS= tests/lab/run.sh

xen:
	scripts/deps.sh xen
	$(MAKE) -C hypervisor/xen stock perfc

check-xen-companion:
	scripts/deps.sh build lab xen
	$(MAKE) build-all
	$(MAKE) -C hypervisor/xen stock perfc
	tests/lab/companion/run.sh

# The .debs are built from a copy of the tree by the script itself
# (dpkg-buildpackage), not from this build.
check-xen-debhost:
	scripts/deps.sh build lab debhost
	tests/lab/debhost/run.sh

check-debhost: check-xen-debhost

include install.mk

clean:
	rm -rf $(B)

-include $(shell find $(OBJ) $(FUZZ_OBJ) -name '*.d' -type f 2>/dev/null)
