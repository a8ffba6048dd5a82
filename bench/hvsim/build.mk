# bench/hvsim/build.mk - hvsim benchmarks: populate in both flush modes,
# scrub against a plain non-temporal zeroing loop.
EXTRA_CFLAGS_bench/hvsim/ := -Ihypervisor/include
$(B)/bench/hvsim/bench_client: $(OBJ)/bench/hvsim/bench_client.o $(HVCLIENT_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS_COMMON)

$(B)/bench/hvsim/bench_zero: $(OBJ)/bench/hvsim/bench_zero.o
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS_COMMON)

BENCH += bench/hvsim/run.sh
BENCH_DEPS += $(B)/bench/hvsim/bench_client $(B)/bench/hvsim/bench_zero $(HVSIM)
