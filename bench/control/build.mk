# bench/control/build.mk - rpcload (closed-loop JSON-RPC, HTTP and echo
# load, and the create+destroy loop of benchmark 5) and bench-echo (the
# libevent echo server benchmark 6 measures as its floor).
$(B)/bench/rpcload: $(OBJ)/bench/control/rpcload.o
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS_COMMON)

$(B)/bench/bench-echo: $(OBJ)/bench/control/echo.o
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(shell $(PKG) --libs libevent)

BENCH_DEPS += $(B)/bench/rpcload $(B)/bench/bench-echo $(BIN)/vmbuildd \
	$(BIN)/hvsim $(B)/guest/hello.elf
