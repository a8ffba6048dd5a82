# libvmbuild/build.mk - see the top-level Makefile for the conventions.
#
# libvmbuild.a: the core (libvmbuild/*.c) and one folder per backend:
# sim/ (hvsim's socket, through libhvclient) and xen/ (libxenctrl,
# libxenstore, libxencall, libxenforeignmemory).  Programs that link
# libvmbuild.a add $(LIBVMB_LDLIBS).
LIBVMB_LIB  := $(LIB)/libvmbuild.a
LIBVMB_SRCS := $(sort $(wildcard libvmbuild/*.c)) \
	       $(sort $(wildcard libvmbuild/sim/*.c)) \
	       $(sort $(wildcard libvmbuild/xen/*.c))
LIBVMB_OBJS := $(patsubst %.c,$(OBJ)/%.o,$(LIBVMB_SRCS))

LIBVMB_XEN_PKGS := xencontrol xenstore xencall xenforeignmemory xenguest
# The library sees the hypercall ABI (hypervisor/include) and itself;
# its tools see only the public vmbuild.h.
EXTRA_CFLAGS_libvmbuild/ += -Ihypervisor/include \
	$(shell $(PKG) --cflags xlutil)
EXTRA_CFLAGS_libvmbuild/sim/ += -Ilibvmbuild -Ihypervisor/include
EXTRA_CFLAGS_libvmbuild/xen/ += -Ilibvmbuild -Ihypervisor/include \
	$(shell $(PKG) --cflags $(LIBVMB_XEN_PKGS))
EXTRA_CFLAGS_libvmbuild/tools/ += -Ilibvmbuild
LIBVMB_XEN_LDLIBS := $(shell $(PKG) --libs $(LIBVMB_XEN_PKGS) xentoollog)

LIBVMB_LDLIBS := $(LIB)/libvmbuild.a $(LIB)/libhvclient.a \
	$(shell $(PKG) --libs xlutil xenlight uuid liblzma zlib) $(LIBVMB_XEN_LDLIBS) -pthread

$(LIBVMB_LIB): $(LIBVMB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@
	$(AR) rcs $@ $^

ALL += $(LIBVMB_LIB)

# vmb-build: build one guest without the daemon and print phase times and
# populate statistics (for comparing populate strategies).
$(BIN)/vmb-build: $(OBJ)/libvmbuild/tools/vmb-build.o $(LIBVMB_LIB) \
		$(LIB)/libhvclient.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(LIBVMB_LDLIBS)

ALL += $(BIN)/vmb-build
