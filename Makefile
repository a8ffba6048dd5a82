# vmbuild - top-level Makefile.
#
# Every directory contributes a fragment (DIR/build.mk) that adds its
# binaries to ALL, its test programs to TESTS and its benchmarks to BENCH.
# Objects go to build/obj/, binaries to build/bin/, libraries to build/lib/.
#
#   make            build everything
#   make check      install missing packages, build, run every test
#   make demo       install, build, start hvsim + vmbuildd, create the examples
#   make bench      benchmarks (ratios against a baseline of the same run)
#   make check-xen  the lab: a real Xen 4.17 under QEMU
#   make xen        the companion hypercalls in Xen 4.17 (hypervisor/xen):
#                   build/xen/xen.gz and the perf-counter build xen-perfc.gz
#   make check-xen-companion  the patched Xen in the lab, beside hvsim
#   make install    vmbuildd, vmctl and the systemd units (DESTDIR, PREFIX)
#   make clean

CC	?= cc
CFLAGS	?= -O2 -g
WARN	 = -Wall -Wextra -Werror -Wstrict-prototypes -Wmissing-prototypes \
	   -Wshadow -Wpointer-arith -Wformat=2 -Wno-format-nonliteral
CPPFLAGS += -D_GNU_SOURCE -MMD -MP -Ihypervisor/include -Ilibvmbuild -Idaemon
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

.PHONY: all check demo bench check-xen xen check-xen-companion clean deps \
	install
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

bench: deps
	$(MAKE) build-all $(BENCH_DEPS)
	scripts/run-bench $(BENCH)

check-xen:
	scripts/deps.sh build lab
	$(MAKE) build-all
	tests/lab/run.sh

xen:
	$(MAKE) -C hypervisor/xen stock perfc

check-xen-companion:
	scripts/deps.sh build lab xen
	$(MAKE) build-all
	$(MAKE) -C hypervisor/xen stock perfc
	tests/lab/companion/run.sh

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
	install -D -m 0644 systemd/vmbuild.sysusers $(DESTDIR)$(SYSUSERSDIR)/vmbuild.conf
	install -D -m 0644 build/guest/hello.elf $(DESTDIR)$(PREFIX)/lib/vmbuild/hello.elf

clean:
	rm -rf $(B)

-include $(shell find $(OBJ) -name '*.d' -type f 2>/dev/null)
