# tests/lab/build.mk - what of the lab runs without QEMU: bench/xen-results.py
# (issue 22's side-by-side figures) on saved console excerpts, and the
# grub steps' disk image (tests/lab/grubdisk.sh) read back by GRUB's code.
TESTS += tests/lab/xenresults.py
TESTS += tests/lab/grubdisk-test.sh
