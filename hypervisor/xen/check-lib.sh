# hypervisor/xen/check-lib.sh - what check-upstream.sh and check-4.17.sh
# share, sourced by both: their step runner and the build of the series'
# tools/tests.  The caller sets $out (the logs' directory), $jobs and
# failed=0, and runs at nice 19 (renice): steps may be shell functions.

# step NAME CMD...: run CMD with its output in $out/NAME.log, print one
# summary line; a failure sets failed=1 and is returned.
step() {
	local name=$1 t0=$SECONDS rc
	shift
	"$@" > "$out/$name.log" 2>&1
	rc=$?
	printf '%-44s %s (%ds)\n' "$name" "$([ $rc = 0 ] && echo ok || echo "FAILED, $out/$name.log")" $((SECONDS - t0))
	[ $rc = 0 ] || failed=1
	return $rc
}

# tools_tests TREE: configure TREE's tools with only what the tests need
# (scripts/deps.sh xen-upstream; autoconf and autotools-dev for a tree
# without configure), build libxenctrl and the libraries it
# links, then the series' tests: tools/tests/populate-flush (patch 2)
# and tools/tests/mm-stats.
tools_tests() {
	local t=$1
	# Debian's source ships configure.ac only: its build runs autoreconf
	# and takes config.guess and config.sub from autotools-dev, as here.
	# Xen's tree ships the scripts.
	if [ ! -x "$t/configure" ]; then
		step tools-autogen sh -c "cd '$t' && ./autogen.sh &&
		    cp /usr/share/misc/config.guess /usr/share/misc/config.sub ." || return
	fi
	step tools-configure sh -c "cd '$t' && ./configure --disable-docs \
	    --disable-stubdom --disable-qemu-traditional --disable-rombios \
	    --disable-seabios --disable-ipxe --disable-ovmf --disable-golang \
	    --disable-ocamltools --disable-pvshim --with-system-qemu" &&
	step tools-libs sh -c "make -C '$t/tools/include' &&
	    for l in toolcore toollog evtchn gnttab call foreignmemory devicemodel ctrl; do
		make -C '$t/tools/libs/'\$l -j$jobs || exit 1
	    done" &&
	step tools-tests-populate-flush make -C "$t/tools/tests/populate-flush" &&
	step tools-tests-mm-stats make -C "$t/tools/tests/mm-stats"
}
