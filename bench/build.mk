# bench/build.mk - each bench/AREA/build.mk adds benchmark programs to
# BENCH and what they need built to BENCH_DEPS.
BENCH_DEPS :=
include $(sort $(wildcard bench/*/build.mk))
