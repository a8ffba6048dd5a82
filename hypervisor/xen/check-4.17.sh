#!/bin/bash
# hypervisor/xen/check-4.17.sh [OUT] - the 4.17 series, patch by patch.
#
# Debian's 4.17 source (build.sh's, build/xen/src) extracted and committed
# as the base of a git tree; then every patch of hypervisor/xen/4.17/ with
# `git am` (git apply takes no fuzz) and, after each one, the hypervisor
# built incrementally in two configs:
#   debian  debian/xen-kconfig + config/shadow.cfg, what build.sh builds
#           and the lab boots;
#   xsm     the same with CONFIG_XSM=y and CONFIG_XSM_FLASK=y: Debian's
#           config builds no XSM, so without it the series' flask hooks
#           (patches 3 and 5) are never compiled.
# At the end the tools are configured, tools/libs/ctrl and the series'
# tools/tests (populate-flush, mm-stats) built (scripts/deps.sh
# xen-upstream): OUT/live then holds both tests and the patched
# libxenctrl that test-mm-stats needs, for a run on a live host
# (tests/lab/companion: CMP_LIVE).  Everything runs at
# nice 19.  OUT (build/xen/4.17-check) holds the trees and a log per
# step; the summary goes to stdout, a line a step.  Exit 0 only when
# every step passed.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
out=${1:-$top/build/xen/4.17-check}
mkdir -p "$out" && out=$(cd "$out" && pwd)
"$top/scripts/deps.sh" xen xen-upstream || exit 2
(cd "$top" && hypervisor/xen/build.sh source) || exit 2
dsc=$(ls "$top"/build/xen/src/xen_4.17*.dsc | head -1)
jobs=${JOBS:-2}
failed=0
renice -n 19 -p $$ >/dev/null	# the steps are functions too, so not nice(1)
. "$here/check-lib.sh"

# config DIR [LINE...]: Debian's config, shadow.cfg and LINEs; each must
# survive olddefconfig.
config() {
	local d=$1 l
	shift
	cp "$d/debian/xen-kconfig" "$d/xen/.config"
	cat "$here/config/shadow.cfg" >> "$d/xen/.config"
	printf '%s\n' "$@" >> "$d/xen/.config"
	make -C "$d/xen" olddefconfig || return 1
	for l in CONFIG_SHADOW_PAGING=y "$@"; do
		grep -qx "$l" "$d/xen/.config" || { echo "$l did not survive olddefconfig"; return 1; }
	done
}

rm -rf "$out/base" "$out/debian" "$out/xsm" "$out/live"
step extract sh -c "dpkg-source -x '$dsc' '$out/base' &&
    cd '$out/base' && git init -q && git add -A -f && git -c user.name=check \
    -c user.email=check@invalid commit -q -m 'Debian $(sed -n 's/^Version: //p' "$dsc")'" || exit 1
echo "xen $(sed -n 's/^Version: //p' "$dsc") ($(basename "$dsc"))"
for c in debian xsm; do
	git clone -q "$out/base" "$out/$c" || exit 2
	git -C "$out/$c" config user.name check
	git -C "$out/$c" config user.email check@invalid
done
step config-debian config "$out/debian" || exit 1
step config-xsm config "$out/xsm" CONFIG_XSM=y CONFIG_XSM_FLASK=y || exit 1
for c in debian xsm; do
	step "build-base-$c" make -C "$out/$c/xen" -j"$jobs" || exit 1
done
for p in "$here"/4.17/0*.patch; do
	case $p in *cover-letter*) continue ;; esac
	n=$(basename "$p" | cut -c1-4)
	for c in debian xsm; do
		step "am-$n-$c" git -C "$out/$c" am -q "$p" || { git -C "$out/$c" am --abort; break 2; }
		step "build-$n-$c" make -C "$out/$c/xen" -j"$jobs"
	done
done
# The series' tools/tests, for a live host: OUT/live.
if [ $failed = 0 ] && tools_tests "$out/debian"; then
	mkdir -p "$out/live" &&
	cp "$out/debian/tools/tests/populate-flush/test-populate-flush" \
	    "$out/debian/tools/tests/mm-stats/test-mm-stats" "$out/live/" &&
	cp -a "$out/debian"/tools/libs/ctrl/libxenctrl.so* "$out/live/" || failed=1
fi
echo "$([ $failed = 0 ] && echo "every step passed" || echo "FAILED"): $(ls "$here"/4.17/0*.patch | grep -vc cover-letter) patches on Debian's $(sed -n 's/^Version: //p' "$dsc")"
exit $failed
