# cli/build.mk - vmctl, the command-line client of vmbuildd.
# See the top-level Makefile for the conventions.

VMCTL_SRCS := cli/main.c cli/commands.c cli/client.c cli/json.c cli/fmt.c \
	      daemon/json.c \
	      cli/progress.c cli/cmd_vm.c cli/cmd_host.c cli/cmd_watch.c
VMCTL_OBJS := $(VMCTL_SRCS:%.c=$(OBJ)/%.o)

EXTRA_CFLAGS_cli/ := $(shell $(PKG) --cflags yajl)

$(BIN)/vmctl: $(VMCTL_OBJS)
	@mkdir -p $(dir $@)
	$(LINK) -o $@ $^ $(shell $(PKG) --libs yajl) $(LDLIBS_COMMON)

ALL += $(BIN)/vmctl
