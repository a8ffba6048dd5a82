# daemon/build.mk - see the top-level Makefile for the conventions.
#
# vmbuildd: every daemon/*.c, linked with libvmbuild ($(LIBVMB_LDLIBS)),
# libevent, yajl and libsystemd.
VMBUILDD      := $(BIN)/vmbuildd
VMBUILDD_SRCS := $(sort $(wildcard daemon/*.c))
VMBUILDD_OBJS := $(patsubst %.c,$(OBJ)/%.o,$(VMBUILDD_SRCS))
VMBUILDD_PKGS := libevent yajl libsystemd

# The daemon sees libvmbuild (vmbuild.h), never the hypercall ABI.
EXTRA_CFLAGS_daemon/ += -Ilibvmbuild $(shell $(PKG) --cflags $(VMBUILDD_PKGS))

$(VMBUILDD): $(VMBUILDD_OBJS) $(LIBVMB_LIB) $(HVCLIENT_LIB)
	@mkdir -p $(dir $@)
	$(LINK) -o $@ $(VMBUILDD_OBJS) $(LIBVMB_LDLIBS) \
		$(shell $(PKG) --libs $(VMBUILDD_PKGS)) $(LDLIBS_COMMON)

ALL += $(VMBUILDD)
