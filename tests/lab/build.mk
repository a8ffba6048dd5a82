# tests/lab/build.mk - what of the lab runs without QEMU: bench/xen-results.py
# (issue 22's side-by-side figures) on saved console excerpts, and the
# grub steps' disk image (tests/lab/grubdisk.sh) read back by GRUB's code.
# judge.sh's verdicts on the hvm and grub steps (judge-test.sh).
TESTS += tests/lab/xenresults.py
TESTS += tests/lab/grubdisk-test.sh
TESTS += tests/lab/judge-test.sh
