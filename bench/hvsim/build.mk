# bench/hvsim/build.mk - programs that measure hvsim directly.
#
# bench_hv: benchmarks 3 (scrub against this machine's zeroing limit) and
# 7 (the unshadow heuristic), run by bench/scrub and bench/unshadow.
# bench_zero: what each way of zeroing memory costs on this machine
# (the measurements behind hypervisor/sim/memory.c); a tool, not part of
# make bench's results.
$(B)/bench/bench_hv: $(OBJ)/bench/hvsim/bench_hv.o $(BENCHLIB) \
		$(HVCLIENT_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS_COMMON)

$(B)/bench/bench_zero: $(OBJ)/bench/hvsim/bench_zero.o
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS_COMMON)

EXTRA_CFLAGS_bench/hvsim/ += -Ihypervisor/include -Ibench/lib
BENCH_DEPS += $(B)/bench/bench_hv $(B)/bench/bench_zero $(HVSIM)
