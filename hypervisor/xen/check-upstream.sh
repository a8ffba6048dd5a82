#!/bin/bash
# hypervisor/xen/check-upstream.sh XEN [OUT]
#
# Check hypervisor/xen/upstream/ against a git checkout of Xen (XEN): in a
# new worktree at the series' base commit (the cover letter's
# base-commit:), `git am` every patch (no fuzz: git am applies exactly)
# and build the hypervisor after each one, incrementally, with x86_64
# defconfig plus CONFIG_XSM=y; then configure the tools and build the
# series' tools/tests (populate-flush, mm-stats) with the libraries they
# need.  Everything runs at nice 19.  OUT (build/xen/upstream-check) holds the worktree,
# the build and a log per step; the summary goes to stdout, one line a
# step (check-lib.sh).  Exit 0 only when every step passed.
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
renice -n 19 -p $$ >/dev/null
. "$here/check-lib.sh"

git -C "$xen" worktree remove --force "$wt" 2>/dev/null
rm -rf "$wt" "$obj"
git -C "$xen" worktree add -q --detach "$wt" "$base" || exit 2
echo "xen $(git -C "$wt" log -1 --format='%H %s')"
# git am's committer, for this command only: a worktree's `git config`
# would write to the checkout's own configuration.
am() { git -c user.name=check -c user.email=check@invalid -C "$wt" am "$@"; }
mkdir -p "$obj"
step config sh -c "make -C '$wt/xen' O='$obj' defconfig &&
    sed -i 's/^# CONFIG_XSM is not set/CONFIG_XSM=y/' '$obj/.config' &&
    make -C '$wt/xen' O='$obj' olddefconfig && grep -qx CONFIG_XSM=y '$obj/.config'" || exit 1
step build-base make -C "$wt/xen" O="$obj" -j"$jobs" || exit 1
for p in "$here"/upstream/0*.patch; do
	case $p in *cover-letter*) continue ;; esac
	n=$(basename "$p" | cut -c1-4)
	step "am-$n" am -q "$p" || { am --abort; break; }
	step "build-$n" make -C "$wt/xen" O="$obj" -j"$jobs"
done
# The series' tools/tests: the tools configured, the libraries they link.
[ $failed = 0 ] && tools_tests "$wt"
echo "$([ $failed = 0 ] && echo "every step passed" || echo "FAILED"): $(ls "$here"/upstream/0*.patch | grep -vc cover-letter) patches on $base"
exit $failed
