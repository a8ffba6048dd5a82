#!/bin/bash
# hypervisor/xen/check-upstream.sh XEN [OUT]
#
# Check hypervisor/xen/upstream/ against a git checkout of Xen (XEN): in a
# new worktree at the series' base commit (the cover letter's
# base-commit:), `git am` every patch (no fuzz: git am applies exactly)
# and build the hypervisor after each one, incrementally, with x86_64
# defconfig plus CONFIG_XSM=y, and again with CONFIG_SHADOW_PAGING=y too
# (defconfig builds no shadow code); then configure the tools and build
# the series' tools/tests (populate-flush, mm-stats) with the libraries
# they need.  Everything runs at nice 19.  OUT (build/xen/upstream-check)
# holds the worktree, the builds and a log per step; the summary goes to
# stdout, one line a step (check-lib.sh).  Exit 0 only when every step
# passed.
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
rm -rf "$wt" "$obj"-*
git -C "$xen" worktree add -q --detach "$wt" "$base" || exit 2
echo "xen $(git -C "$wt" log -1 --format='%H %s')"
# git am's committer, for this command only: a worktree's `git config`
# would write to the checkout's own configuration.
am() { git -c user.name=check -c user.email=check@invalid -C "$wt" am "$@"; }
# Two builds of the one tree (out of tree, O=): defconfig + XSM, as asked
# of a series for xen-devel, and the same with shadow paging, which
# defconfig leaves out and patches 7 and 8 change.
# config NAME [LINE...]: defconfig, CONFIG_XSM=y and LINEs in $obj-NAME.
config() {
	local o=$obj-$1 l
	shift
	mkdir -p "$o" && make -C "$wt/xen" O="$o" defconfig &&
	    printf '%s\n' CONFIG_XSM=y "$@" >> "$o/.config" &&
	    make -C "$wt/xen" O="$o" olddefconfig || return 1
	for l in CONFIG_XSM=y "$@"; do
		grep -qx "$l" "$o/.config" || { echo "$l did not survive olddefconfig"; return 1; }
	done
}
step config-defconfig config defconfig || exit 1
step config-shadow config shadow CONFIG_SHADOW_PAGING=y || exit 1
for c in defconfig shadow; do
	step "build-base-$c" make -C "$wt/xen" O="$obj-$c" -j"$jobs" || exit 1
done
for p in "$here"/upstream/0*.patch; do
	case $p in *cover-letter*) continue ;; esac
	n=$(basename "$p" | cut -c1-4)
	step "am-$n" am -q "$p" || { am --abort; break; }
	for c in defconfig shadow; do
		step "build-$n-$c" make -C "$wt/xen" O="$obj-$c" -j"$jobs"
	done
done
# The series' tools/tests: the tools configured, the libraries they link.
[ $failed = 0 ] && tools_tests "$wt"
echo "$([ $failed = 0 ] && echo "every step passed" || echo "FAILED"): $(ls "$here"/upstream/0*.patch | grep -vc cover-letter) patches on $base"
exit $failed
