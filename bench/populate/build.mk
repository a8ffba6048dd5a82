# bench/populate/build.mk - benchmark 1 (populate: the engine, libxl's
# pattern and the pre-4.8 per-page flush filter, clean and dirty memory,
# against this machine's zeroing limit) and the programs other
# benchmarks build guests with.
BENCHLIB := $(OBJ)/bench/lib/benchlib.o

$(B)/bench/bench_populate: $(OBJ)/bench/populate/bench_populate.o \
		$(BENCHLIB) $(LIBVMB_LIB) $(LIB)/libhvclient.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $(filter %.o,$^) $(LIBVMB_LDLIBS)

EXTRA_CFLAGS_bench/populate/ += -Ilibvmbuild -Ibench/lib

BENCH += bench/populate/run.sh
BENCH_DEPS += $(B)/bench/bench_populate $(BIN)/hvsim $(B)/guest/hello.elf
