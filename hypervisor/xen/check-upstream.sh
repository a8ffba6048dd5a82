#!/bin/bash
# hypervisor/xen/check-upstream.sh XEN [OUT]
#
# Check hypervisor/xen/upstream/ against a git checkout of Xen (XEN): in a
# new worktree at the series' base commit (the cover letter's
# base-commit:), `git am` every patch (no fuzz: git am applies exactly)
# and build the hypervisor after each one, incrementally, with x86_64
# defconfig plus CONFIG_XSM=y; then configure the tools and build
# tools/tests/mm-stats with the libraries it needs.  Everything runs
# under nice -n 19.  OUT (build/xen/upstream-check) holds the worktree,
# the build and a log per step; the summary goes to stdout, one line a
# step.  Exit 0 only when every step passed.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
xen=${1:?usage: check-upstream.sh XEN-CHECKOUT [OUT]}
out=${2:-$here/../../build/xen/upstream-check}
mkdir -p "$out" && out=$(cd "$out" && pwd)
base=$(sed -n 's/^base-commit: //p' "$here/upstream/0000-cover-letter.patch")
[ -n "$base" ] || { echo "no base-commit: in the cover letter"; exit 2; }
wt=$out/tree obj=$out/obj
"$here/../../scripts/deps.sh" xen-upstream || exit 2
jobs=${JOBS:-2}
failed=0

step() {	# step NAME CMD...: run, log, one summary line
	local name=$1 t0=$SECONDS rc
	shift
	nice -n 19 "$@" > "$out/$name.log" 2>&1
	rc=$?
	printf '%-44s %s (%ds)\n' "$name" "$([ $rc = 0 ] && echo ok || echo "FAILED, $out/$name.log")" $((SECONDS - t0))
	[ $rc = 0 ] || failed=1
	return $rc
}

git -C "$xen" worktree remove --force "$wt" 2>/dev/null
rm -rf "$wt" "$obj"
git -C "$xen" worktree add -q --detach "$wt" "$base" || exit 2
echo "xen $(git -C "$wt" log -1 --format='%H %s')"
git -C "$wt" config user.name check && git -C "$wt" config user.email check@invalid
mkdir -p "$obj"
step config sh -c "make -C '$wt/xen' O='$obj' defconfig &&
    sed -i 's/^# CONFIG_XSM is not set/CONFIG_XSM=y/' '$obj/.config' &&
    make -C '$wt/xen' O='$obj' olddefconfig && grep -qx CONFIG_XSM=y '$obj/.config'" || exit 1
step build-base make -C "$wt/xen" O="$obj" -j"$jobs" || exit 1
for p in "$here"/upstream/0*.patch; do
	case $p in *cover-letter*) continue ;; esac
	n=$(basename "$p" | cut -c1-4)
	step "am-$n" git -C "$wt" am -q "$p" || { git -C "$wt" am --abort; break; }
	step "build-$n" make -C "$wt/xen" O="$obj" -j"$jobs"
done
# The tools/tests test: configure, the headers and libraries it links.
if [ $failed = 0 ]; then
	step tools-configure sh -c "cd '$wt' && ./configure --disable-docs \
	    --disable-stubdom --disable-qemu-traditional --disable-rombios \
	    --disable-seabios --disable-ipxe --disable-ovmf --disable-golang \
	    --disable-ocamltools --disable-pvshim --with-system-qemu" &&
	step tools-libs sh -c "make -C '$wt/tools/include' &&
	    for l in toolcore toollog evtchn gnttab call foreignmemory devicemodel ctrl; do
		make -C '$wt/tools/libs/'\$l -j$jobs || exit 1
	    done" &&
	step tools-tests-mm-stats make -C "$wt/tools/tests/mm-stats"
fi
echo "$([ $failed = 0 ] && echo "every step passed" || echo "FAILED"): $(ls "$here"/upstream/0*.patch | grep -vc cover-letter) patches on $base"
exit $failed
