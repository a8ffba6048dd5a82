# tests/fuzz/build.mk - libFuzzer targets (clang, ASan + UBSan) over the
# daemon's request path, xl.cfg parsing, the ELF/PVH loader, state
# records, hvsim's request decoder, the metrics endpoint's HTTP and
# the save stream's reader (vm.restore) and the reader of libxc's
# migration stream (the engine restore's, xen_xcstream.c) and the reader
# of /proc/stat's steal time (cpuwait.c).
#
# Their objects are the tree's own sources built again with clang into
# $(B)/fuzz (coverage instrumentation and sanitizers); -Werror is left to
# the main build, which is gcc's.  `make check` replays the seed corpora
# of tests/fuzz/corpus (tests/fuzz/replay.sh); `make fuzz FUZZ_SECONDS=N`
# fuzzes each target for N seconds (scripts/run-fuzz).
FUZZ_CC     ?= $(shell command -v clang-14 || command -v clang || echo clang-14)
FUZZ_DIR    := $(B)/fuzz
FUZZ_OBJ    := $(FUZZ_DIR)/obj
FUZZ_SAN    := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS := -g -O1 -fno-omit-frame-pointer -pthread $(FUZZ_SAN) \
	       -fsanitize=fuzzer-no-link $(filter-out -Werror,$(WARN)) \
	       -Wno-unused-command-line-argument
FUZZ_LDFLAGS := -fsanitize=fuzzer $(FUZZ_SAN) -pthread
FUZZ_TARGETS := rpc config loader state hvsim http stream xcstream cpuwait \
	xswire
FUZZ_BINS   := $(addprefix $(FUZZ_DIR)/fuzz_,$(FUZZ_TARGETS))

EXTRA_CFLAGS_tests/fuzz/ := -Idaemon -Ilibvmbuild -Ihypervisor/include \
	-Ihypervisor/sim $(shell $(PKG) --cflags libevent yajl)

$(FUZZ_OBJ)/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) $(EXTRA_CFLAGS_$(dir $<)) -c -o $@ $<

fuzz_objs = $(patsubst %.c,$(FUZZ_OBJ)/%.o,$(1))
FUZZ_DAEMON := $(call fuzz_objs,$(filter-out daemon/main.c,$(VMBUILDD_SRCS)) \
	tests/fuzz/daemon_stub.c)
FUZZ_LIBVMB := $(call fuzz_objs,$(LIBVMB_SRCS) hypervisor/lib/hvclient.c)
FUZZ_HVSIM  := $(call fuzz_objs,$(addprefix hypervisor/sim/,$(HVSIM_SRCS)))
FUZZ_DAEMON_LIBS := $(LIBVMB_LDLIBS:$(LIB)/%.a=) \
	$(shell $(PKG) --libs $(VMBUILDD_PKGS))

$(FUZZ_DIR)/fuzz_rpc $(FUZZ_DIR)/fuzz_http: $(FUZZ_DIR)/fuzz_%: \
		$(FUZZ_OBJ)/tests/fuzz/fuzz_%.o $(FUZZ_DAEMON) $(FUZZ_LIBVMB)
	$(FUZZ_CC) $(FUZZ_LDFLAGS) -o $@ $^ $(FUZZ_DAEMON_LIBS)

$(FUZZ_DIR)/fuzz_loader $(FUZZ_DIR)/fuzz_stream: $(FUZZ_DIR)/fuzz_%: \
		$(FUZZ_OBJ)/tests/fuzz/fuzz_%.o $(FUZZ_LIBVMB)
	$(FUZZ_CC) $(FUZZ_LDFLAGS) -o $@ $^ $(LIBVMB_LDLIBS:$(LIB)/%.a=)

# The config's JSON is the daemon's (guestjson.c), written and read back.
$(FUZZ_DIR)/fuzz_config: $(FUZZ_OBJ)/tests/fuzz/fuzz_config.o \
		$(call fuzz_objs,daemon/guestjson.c daemon/json.c) \
		$(FUZZ_LIBVMB)
	$(FUZZ_CC) $(FUZZ_LDFLAGS) -o $@ $^ $(LIBVMB_LDLIBS:$(LIB)/%.a=) \
		$(shell $(PKG) --libs yajl)

$(FUZZ_DIR)/fuzz_state: $(FUZZ_OBJ)/tests/fuzz/fuzz_state.o \
		$(call fuzz_objs,daemon/state.c daemon/json.c daemon/log.c \
		daemon/guestjson.c) \
		$(FUZZ_LIBVMB)
	$(FUZZ_CC) $(FUZZ_LDFLAGS) -o $@ $^ $(LIBVMB_LDLIBS:$(LIB)/%.a=) \
		$(shell $(PKG) --libs yajl libsystemd)

$(FUZZ_DIR)/fuzz_hvsim: $(FUZZ_OBJ)/tests/fuzz/fuzz_hvsim.o $(FUZZ_HVSIM)
	$(FUZZ_CC) $(FUZZ_LDFLAGS) -o $@ $^

# libxc's migration stream: its reader alone (it makes no hypercall).
$(FUZZ_DIR)/fuzz_xcstream: $(FUZZ_OBJ)/tests/fuzz/fuzz_xcstream.o \
		$(call fuzz_objs,libvmbuild/xen/xen_xcstream.c)
	$(FUZZ_CC) $(FUZZ_LDFLAGS) -o $@ $^

# /proc/stat's steal time: its reader alone.
$(FUZZ_DIR)/fuzz_cpuwait: $(FUZZ_OBJ)/tests/fuzz/fuzz_cpuwait.o \
		$(call fuzz_objs,libvmbuild/cpuwait.c)
	$(FUZZ_CC) $(FUZZ_LDFLAGS) -o $@ $^

# xenstored's replies to a pipelined transaction: their reader alone.
$(FUZZ_DIR)/fuzz_xswire: $(FUZZ_OBJ)/tests/fuzz/fuzz_xswire.o \
		$(call fuzz_objs,libvmbuild/xen/xen_xswire.c)
	$(FUZZ_CC) $(FUZZ_LDFLAGS) -o $@ $^

.PRECIOUS: $(FUZZ_OBJ)/%.o
TESTS += tests/fuzz/replay.sh
TESTS_DEPS += $(FUZZ_BINS)
