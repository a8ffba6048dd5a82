# hypervisor/lib/build.mk - see the top-level Makefile for the conventions.
#
# libhvclient.a: the client of hvsim's socket (vmbuild/hvclient.h), linked
# by libvmbuild's sim backend, the tests and the benchmarks.
HVCLIENT_LIB := $(LIB)/libhvclient.a
HVCLIENT_OBJS := $(OBJ)/hypervisor/lib/hvclient.o
EXTRA_CFLAGS_hypervisor/lib/ := -Ihypervisor/include

$(HVCLIENT_LIB): $(HVCLIENT_OBJS)
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

ALL += $(HVCLIENT_LIB)
