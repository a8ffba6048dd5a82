# tests/lab/build.mk - what of the lab runs without QEMU: bench/xen-results.py
# (issue 22's side-by-side figures) on saved console excerpts.
TESTS += tests/lab/xenresults.py
