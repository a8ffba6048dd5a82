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

# vmb-config-check: parse an xl.cfg, print the description as the
# daemon's JSON (guestjson.c) or the diagnostics (the golden tests of
# configs/tests).
EXTRA_CFLAGS_daemon/tools/ += -Idaemon -Ilibvmbuild \
	$(shell $(PKG) --cflags yajl)
$(BIN)/vmb-config-check: $(OBJ)/daemon/tools/vmb-config-check.o \
		$(OBJ)/daemon/guestjson.o $(OBJ)/daemon/json.o \
		$(LIBVMB_LIB) $(LIB)/libhvclient.a
	@mkdir -p $(dir $@)
	$(LINK) -o $@ $(filter %.o,$^) $(LIBVMB_LDLIBS) \
		$(shell $(PKG) --libs yajl)

ALL += $(BIN)/vmb-config-check
