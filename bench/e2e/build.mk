# bench/e2e/build.mk - end-to-end benchmarks: hvsim + vmbuildd + vmctl.
BENCH += bench/e2e/create-8g.sh
