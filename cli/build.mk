# cli/build.mk - vmctl, the command-line client of vmbuildd.
# See the top-level Makefile for the conventions.
#
# vmctl speaks the daemon's protocol and shares exactly this with it, by
# name: daemon/proto.h (methods, parameters, error codes) and the yajl
# helpers of daemon/json.c and json.h, included as "../daemon/..." from
# vmctl.h.  No include path leads into daemon/ or libvmbuild/; the
# version comes from $(GEN)/version.h (see the top-level Makefile).
# Of libvmbuild it compiles in only editdist.c (vmb_edit_distance, for
# "did you mean"), declared in ../libvmbuild/vmbuild.h.
VMCTL_FROM_DAEMON := daemon/json.c
VMCTL_FROM_LIB := libvmbuild/editdist.c
VMCTL_SRCS := cli/main.c cli/commands.c cli/client.c cli/json.c cli/fmt.c \
	      cli/progress.c cli/cmd_vm.c cli/cmd_host.c cli/cmd_watch.c \
	      cli/cmd_life.c cli/cmd_dev.c cli/cmd_everyday.c cli/cmd_resize.c \
	      cli/cmd_check.c cli/cmd_save.c cli/cmd_migrate.c \
	      $(VMCTL_FROM_DAEMON) $(VMCTL_FROM_LIB)
VMCTL_OBJS := $(VMCTL_SRCS:%.c=$(OBJ)/%.o)

EXTRA_CFLAGS_cli/ := $(shell $(PKG) --cflags yajl) -I$(GEN)
$(OBJ)/cli/main.o: $(GEN)/version.h

$(BIN)/vmctl: $(VMCTL_OBJS)
	@mkdir -p $(dir $@)
	$(LINK) -o $@ $^ $(shell $(PKG) --libs yajl) $(LDLIBS_COMMON)

ALL += $(BIN)/vmctl
