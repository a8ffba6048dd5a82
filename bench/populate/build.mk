# bench/populate/build.mk - bench_populate: builds guests with
# libvmbuild in interleaved rounds (benchmarks 1, 2 and 4).
$(B)/bench/bench_populate: $(OBJ)/bench/populate/bench_populate.o \
		$(BENCHLIB) $(LIBVMB_LIB) $(LIB)/libhvclient.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $(filter %.o,$^) $(LIBVMB_LDLIBS)

EXTRA_CFLAGS_bench/populate/ += -Ilibvmbuild -Ibench/lib

BENCH_DEPS += $(B)/bench/bench_populate $(BIN)/hvsim $(B)/guest/hello.elf
