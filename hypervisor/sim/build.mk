# hypervisor/sim/build.mk - see the top-level Makefile for the conventions.
#
# hvsim, the companion hypervisor as a user-space process.  Everything but
# main.c also goes into an archive, so that tests link the same objects.
HVSIM_SRCS := clock.c hv.c topology.c memory.c heap.c flush.c scrub.c \
	shadow.c domain.c populate.c counters.c fault.c server.c
HVSIM_OBJS := $(addprefix $(OBJ)/hypervisor/sim/,$(HVSIM_SRCS:.c=.o))
HVSIM_LIB := $(LIB)/libhvsim.a
HVSIM := $(BIN)/hvsim
EXTRA_CFLAGS_hypervisor/sim/ := -Ihypervisor/include -I$(GEN)
# The version (hello reply, --version): see the top-level Makefile.
$(OBJ)/hypervisor/sim/main.o $(OBJ)/hypervisor/sim/server.o: $(GEN)/version.h

$(HVSIM_LIB): $(HVSIM_OBJS)
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

$(HVSIM): $(OBJ)/hypervisor/sim/main.o $(HVSIM_LIB)
	@mkdir -p $(dir $@)
	$(LINK) -o $@ $^ $(LDLIBS_COMMON)

ALL += $(HVSIM)
