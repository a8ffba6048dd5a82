# bench/daemon/build.mk - control-plane benchmarks of vmbuildd.
#
# vmbd-rpcload: closed-loop JSON-RPC load client (N connections).
# list-rps.sh: vm.list with 100 VMs, against server.hello and vm.list
# with no VM measured in the same run.
RPCLOAD := $(BIN)/vmbd-rpcload

$(RPCLOAD): $(OBJ)/bench/daemon/rpcload.o
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS_COMMON)

BENCH += bench/daemon/list-rps.sh
BENCH_DEPS += $(RPCLOAD) $(BIN)/vmbuildd $(BIN)/hvsim $(B)/guest/hello.elf
