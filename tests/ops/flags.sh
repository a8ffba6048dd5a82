#!/bin/bash
# flags.sh - the Makefile and a builder's flags.
#
# CFLAGS, CPPFLAGS and LDFLAGS from the environment (as dpkg-buildflags
# passes them) reach every host compile and link, also with CPPFLAGS on
# the command line; none reach the freestanding guest; -Werror is on in a
# git checkout, off with WERROR=0 and in a tree without .git; the goals
# that install packages first (deps, check, demo, ...) do not run
# pkg-config while make reads the Makefile.  All with make -n: nothing is
# built.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$top/tests/tap.sh"

# The commands make would run for these targets, from scratch.
dry() { make -s -n -B "$@" 2>&1; }

marks=(CFLAGS=-DOPS_MARK_CFLAGS CPPFLAGS=-DOPS_MARK_CPPFLAGS
       LDFLAGS=-Wl,--defsym=ops_mark_ldflags=0)
env "${marks[@]}" make -s -n -B build/bin/vmbuildd build/bin/vmctl \
	build/bin/hvsim build/guest/hello.elf >"$tmp/env" 2>&1
# A compile line of each program and its link line.
for f in daemon/main.c cli/main.c hypervisor/sim/main.c libvmbuild/build.c; do
	line=$(grep -e "-c -o build/obj/${f%.c}.o $f" "$tmp/env")
	if [[ $line == *OPS_MARK_CFLAGS* && $line == *OPS_MARK_CPPFLAGS* ]]; then
		ok "$f: compiled with CFLAGS and CPPFLAGS"
	else
		not_ok "$f: compiled with CFLAGS and CPPFLAGS"
		echo "# $line"
	fi
done
for b in vmbuildd vmctl hvsim; do
	line=$(grep -e "-o build/bin/$b " "$tmp/env")
	if [[ $line == *ops_mark_ldflags* && $line == *OPS_MARK_CFLAGS* ]]; then
		ok "$b: linked with LDFLAGS and CFLAGS"
	else
		not_ok "$b: linked with LDFLAGS and CFLAGS"
		echo "# $line"
	fi
done
guest=$(grep -e 'guest/' "$tmp/env")
[ -n "$guest" ] || not_ok "no guest commands in make -n"
if grep -q OPS_MARK <<<"$guest" || grep -q ops_mark <<<"$guest"; then
	not_ok "the builder's flags leak into the guest"
	grep -e OPS_MARK -e ops_mark <<<"$guest" | head -3 | sed 's/^/# /'
else
	ok "the guest is built with its own flags only ($(wc -l <<<"$guest") commands)"
fi

# CPPFLAGS on the command line: the project's own are kept.
line=$(dry CPPFLAGS=-DOPS_CMDLINE build/obj/daemon/main.o)
if [[ $line == *-DOPS_CMDLINE* && $line == *-D_GNU_SOURCE* &&
      $line == *-Ilibvmbuild* ]]; then
	ok "CPPFLAGS on the command line adds to the project's flags"
else
	not_ok "CPPFLAGS on the command line adds to the project's flags"
	echo "# $line"
fi

# -Werror: developers only.
check "-Werror in a git checkout" grep -q -- ' -Werror ' <<<"$(dry build/obj/daemon/main.o)"
if grep -q -- ' -Werror ' <<<"$(dry WERROR=0 build/obj/daemon/main.o)"; then
	not_ok "WERROR=0 drops -Werror"
else
	ok "WERROR=0 drops -Werror"
fi
mkdir -p "$tmp/tree"
git ls-files -z | xargs -0 cp --parents -t "$tmp/tree"
if (cd "$tmp/tree" && make -s -n -B build/obj/daemon/main.o 2>&1) | grep -q -- ' -Werror '; then
	not_ok "no -Werror in a tree without .git (a tarball)"
else
	ok "no -Werror in a tree without .git (a tarball)"
fi

# pkg-config: a stub that records its calls and fails.
mkdir -p "$tmp/stub"
printf '#!/bin/sh\necho "$*" >>"%s"\nexit 1\n' "$tmp/calls" >"$tmp/stub/pkg-config"
chmod +x "$tmp/stub/pkg-config"
for goal in deps check demo bench check-xen clean; do
	rm -f "$tmp/calls"
	# -n -p: read the Makefile, print its database, run nothing (the
	# recursive $(MAKE) lines of these goals would run even under -n).
	PATH=$tmp/stub:$PATH make -n -p -q "$goal" >/dev/null 2>"$tmp/err"
	if [ -s "$tmp/calls" ] || grep -q 'pkg-config\|Package .* was not found' "$tmp/err"; then
		not_ok "make $goal reads the Makefile without pkg-config"
		head -3 "$tmp/calls" "$tmp/err" | sed 's/^/# /'
	else
		ok "make $goal reads the Makefile without pkg-config"
	fi
done
rm -f "$tmp/calls"
PATH=$tmp/stub:$PATH make -s -n -B build/obj/daemon/main.o >/dev/null 2>&1
check "make of a program does run pkg-config (the stub works)" test -s "$tmp/calls"

tap_done; exit
