# bench/build.mk - make bench.
#
# Each bench/AREA/build.mk adds the programs its benchmark needs to
# BENCH_DEPS.  BENCH is the benchmarks in the issue's order; each writes
# its raw figures to $BENCH_RESULTS/NAME.jsonl, and scripts/run-bench
# then has bench/report.py write bench/results/ (latest.json, latest.md,
# the plots).
BENCH_DEPS :=
BENCHLIB := $(OBJ)/bench/lib/benchlib.o
EXTRA_CFLAGS_bench/lib/ += -Ibench/lib
include $(sort $(wildcard bench/*/build.mk))
BENCH := bench/populate/run.sh bench/scale/run.sh bench/scrub/run.sh \
	bench/buildscrub/run.sh bench/smallvms/run.sh bench/control/run.sh \
	bench/unshadow/run.sh
