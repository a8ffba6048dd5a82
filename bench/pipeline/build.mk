# bench/pipeline/build.mk - bench_pipeline: the wall time of a build
# with slow images and slow device scripts (libvmbuild/build.c's lines).
$(B)/bench/bench_pipeline: $(OBJ)/bench/pipeline/bench_pipeline.o \
		$(BENCHLIB) $(LIBVMB_LIB) $(LIB)/libhvclient.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $(filter %.o,$^) $(LIBVMB_LDLIBS)

EXTRA_CFLAGS_bench/pipeline/ += -Ilibvmbuild -Ibench/lib
BENCH_DEPS += $(B)/bench/bench_pipeline
