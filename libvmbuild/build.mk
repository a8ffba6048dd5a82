# libvmbuild/build.mk - see the top-level Makefile for the conventions.
#
# libvmbuild.a: every libvmbuild/*.c.  The xen backend (backend_xen.c and
# its xen_*.c companions) is written separately; while backend_xen.c does
# not exist the library builds without it and "xen" opens answer -ENODEV.
# Programs that link libvmbuild.a add $(LIBVMB_LDLIBS).
LIBVMB_LIB  := $(LIB)/libvmbuild.a
LIBVMB_SRCS := $(sort $(wildcard libvmbuild/*.c))
LIBVMB_OBJS := $(patsubst %.c,$(OBJ)/%.o,$(LIBVMB_SRCS))
LIBVMB_HAVE_XEN := $(if $(wildcard libvmbuild/backend_xen.c),1,)

EXTRA_CFLAGS_libvmbuild/ += $(shell $(PKG) --cflags xlutil)
ifneq ($(LIBVMB_HAVE_XEN),)
EXTRA_CFLAGS_libvmbuild/ += -DVMB_HAVE_XEN=1 \
	$(shell $(PKG) --cflags xencontrol xenstore xencall xenforeignmemory xenguest)
LIBVMB_XEN_LDLIBS := $(shell $(PKG) --libs xencontrol xenstore xencall \
	xenforeignmemory xenguest xentoollog)
# ctx.c's backend table changes when the xen backend appears.
$(OBJ)/libvmbuild/ctx.o: libvmbuild/backend_xen.c
endif

LIBVMB_LDLIBS := $(LIB)/libvmbuild.a $(LIB)/libhvclient.a \
	$(shell $(PKG) --libs xlutil) $(LIBVMB_XEN_LDLIBS) -pthread

$(LIBVMB_LIB): $(LIBVMB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@
	$(AR) rcs $@ $^

# vmb-config-check: parse an xl.cfg, print the description as JSON or the
# diagnostics (used by the golden tests in configs/tests).
$(BIN)/vmb-config-check: $(OBJ)/libvmbuild/tools/vmb-config-check.o \
		$(LIBVMB_LIB) $(LIB)/libhvclient.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LIBVMB_LDLIBS)

ALL += $(LIBVMB_LIB) $(BIN)/vmb-config-check

# vmb-build: build one guest without the daemon and print phase times and
# populate statistics (for comparing populate strategies).
$(BIN)/vmb-build: $(OBJ)/libvmbuild/tools/vmb-build.o $(LIBVMB_LIB) \
		$(LIB)/libhvclient.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LIBVMB_LDLIBS)

ALL += $(BIN)/vmb-build
