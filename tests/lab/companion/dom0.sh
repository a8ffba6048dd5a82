# tests/lab/companion/dom0.sh - the companion lab's steps in dom0.
#
# Sourced by the lab's /init (dom0-init.sh) from /etc/lab/steps/, with its
# helpers (timed, wait_guest, mkcfg, gone, start_vmbuildd, fail, xsync) and
# $V (vmctl on vmbuildd's socket).  /etc/lab/steps/companion.conf says
# which sequence to run (CMP_MODE) and its sizes.  This script only drives
# and records: every figure goes to the console as one line,
#   CMPJSON NAME rc=N {json}     a vmctl --json reply (or nothing, rc != 0)
#   CMPERR NAME text             what vmctl said on stderr
#   CMPPERF NAME name=value ...  Xen's perf counters (xenperf), summed
# and tests/lab/companion/compare.py judges them on the host.
#
# Modes:
#   numa    the patched Xen on two NUMA nodes: boot scrub, a guest built
#           and destroyed (dirty memory, scrubbing), a guest re-built over
#           the freed pages (filtered flushes), per-batch statistics
#   shadow  the patched Xen without HAP: the hello guest rewrites its page
#           tables (ptwrite=N) on shadow paging; with CMP_RUNTIME_OFF=1 a
#           second guest runs after xl set-parameters shadow-flood=0, then
#           the series' test-populate-flush (cmp_pf)
#   stock   Debian's Xen: what the companion reports must be unavailable
. /etc/lab/steps/companion.conf

# cmp_cap NAME CMD...: run CMD, print its stdout as one CMPJSON line.
cmp_cap() {
	_cn=$1; shift
	"$@" > /tmp/cmp.out 2> /tmp/cmp.err
	_crc=$?
	echo "CMPJSON $_cn rc=$_crc $(tr -d '\n' < /tmp/cmp.out)"
	[ -s /tmp/cmp.err ] && echo "CMPERR $_cn $(tr '\n' ' ' < /tmp/cmp.err)"
	return $_crc
}

# cmp_perf NAME: Xen's perf counters ("desc T=sum" lines), if compiled in.
cmp_perf() {
	xenperf > /tmp/cmp.perf 2>/dev/null || return 0
	echo "CMPPERF $1 $(sed -n 's/^\(.*[^ ]\)  *T= *\([0-9]*\).*/\1=\2/p' /tmp/cmp.perf |
	    tr ' ' '_' | tr '\n' ' ')"
}

# cmp_scrub_wait NAME: wait until no node has dirty memory (boot scrub,
# or a destroyed guest's pages), then record the scrub state.
cmp_scrub_wait() {
	LIMIT=$((CMP_SCRUB_TIMEOUT + 30)) timed cmp-wait-$1 $V scrub --wait --timeout $CMP_SCRUB_TIMEOUT ||
	    fail cmp-wait-$1 "dirty memory not scrubbed within ${CMP_SCRUB_TIMEOUT}s"
	cmp_cap scrub-$1 $V --json scrub
}

# cmp_build TAG MB [EXTRA]: vmctl create the hello guest, wait for WHAT.
cmp_build() {
	_ct=$1 _cmb=$2 _cw=$3; shift 3
	mkcfg $_ct $_cmb "$*"
	# A guest that powers itself off stays, shut down, for vmctl info
	# and the counters read after it (hello.cfg's "destroy" had vmbuildd
	# reap it first); cmp_destroy takes it away.
	[ "$_cw" = done ] &&
	    sed -i 's/^on_poweroff = .*/on_poweroff = "preserve"/' /etc/lab/$_ct.cfg
	[ -n "$CMP_CFG_EXTRA" ] && echo "$CMP_CFG_EXTRA" >> /etc/lab/$_ct.cfg
	LIMIT=600 timed cmp-create-$_ct $V create /etc/lab/$_ct.cfg ||
	    { fail cmp-create-$_ct "vmctl create rc=$?"; return 1; }
	wait_guest $_ct $_cw 600 || return 1
	cmp_cap info-$_ct $V --json info $_ct
}

cmp_destroy() {
	timed cmp-destroy-$1 $V destroy $1 || fail cmp-destroy-$1 "vmctl destroy"
	gone $1 60 || fail cmp-gone-$1 "$1 still listed after destroy"
}

cmp_numa() {
	cmp_scrub_wait boot
	cmp_cap stats-0 $V --json stats
	cmp_build cmp-a $CMP_MB holding hold || return
	cmp_cap stats-1 $V --json stats
	cmp_cap scrub-1 $V --json scrub
	# Sample scrub progress while the guest is destroyed and its pages
	# scrubbed; recorded to a file, printed when quiet.
	touch /tmp/cmp.poll.on
	( while [ -f /tmp/cmp.poll.on ]; do
		echo "$(up) $($V --json scrub 2>/dev/null | tr -d '\n')"
		usleep 100000
	  done > /tmp/cmp.poll ) &
	_cpoll=$!
	# Xen scrubs only in the idle loop, and an idle CPU scrubs freed pages
	# about as fast as a destroy frees them: keep every CPU busy while
	# the guest is destroyed so that its dirty memory shows, then let go.
	_cspin=""
	for _c in $(grep '^processor' /proc/cpuinfo); do
		case $_c in [0-9]*) ( while :; do :; done ) & _cspin="$_cspin $!" ;; esac
	done
	cmp_destroy cmp-a
	cmp_cap scrub-dirty $V --json scrub
	kill $_cspin 2>/dev/null
	wait $_cspin 2>/dev/null
	cmp_scrub_wait 2
	rm -f /tmp/cmp.poll.on
	wait $_cpoll
	_i=0
	while read -r _t _j; do
		_i=$((_i + 1))
		echo "CMPJSON poll-$_i rc=0 {\"t\":$_t,\"scrub\":$_j}"
	done < /tmp/cmp.poll
	cmp_cap stats-2 $V --json stats
	# Over the pages the first guest freed: filtered flushes.
	cmp_build cmp-b $CMP_MB holding hold || return
	cmp_cap stats-3 $V --json stats
	cmp_destroy cmp-b
	cmp_scrub_wait 4
	cmp_cap stats-4 $V --json stats
	[ "$CMP_LIVE" = 1 ] && cmp_live
	# issue 22: xl and vmbuild over dirty memory on this Xen (XBENCH
	# lines, tests/lab/xenbench.sh), after the counters above are taken.
	if [ "$CMP_DIRTY" = 1 ]; then xb_dirty; fi
}

# cmp_pf: the series' test of its first patch (tools/tests/populate-flush:
# a domain under construction gets the TLB flush its pages are owed), on
# this Xen; its output as CMPPF lines, the flush counter around each
# cycle's populate and its exit status as one record.
cmp_pf() {
	test-populate-flush > /tmp/cmp.pf 2>&1
	_cprc=$?
	sed 's/^/CMPPF /' /tmp/cmp.pf
	_cpc=$(sed -n 's/.*": \([0-9][0-9]*\) -> \([0-9][0-9]*\)$/[\1,\2]/p' /tmp/cmp.pf |
	    tr '\n' ',' | sed 's/,$//')
	echo "CMPJSON populate-flush rc=$_cprc {\"cycles\":[$_cpc],\"skipped\":$(grep -c 'Skip:' /tmp/cmp.pf)}"
}

# cmp_live: the series' tools/tests/mm-stats on this Xen, through the
# series' libxenctrl (CMP_LIVE: tests/lab/companion/run.sh); its output
# as CMPLIVE lines, its exit status and failures as one record.
cmp_live() {
	LD_LIBRARY_PATH=/opt/live /opt/live/test-mm-stats > /tmp/cmp.live 2>&1
	_clrc=$?
	sed 's/^/CMPLIVE /' /tmp/cmp.live
	echo "CMPJSON mm-stats rc=$_clrc {\"failures\":$(grep -c 'Fail:' /tmp/cmp.live),\"skips\":$(grep -c 'Skip:' /tmp/cmp.live)}"
}

cmp_shadow() {
	cmp_cap stats-0 $V --json stats
	cmp_perf perf-0
	cmp_build cmp-sh $CMP_SHADOW_MB done ptwrite=$CMP_PTWRITE || return
	grep -q "(d$_id).*vmbuild-guest: ptwrite $CMP_PTWRITE+$CMP_PTWRITE rounds, 0 bad reads" $XLOG ||
	    fail cmp-ptwrite "the guest's page-table workload did not finish cleanly"
	cmp_cap stats-1 $V --json stats
	cmp_perf perf-1
	cmp_destroy cmp-sh
	[ "$CMP_RUNTIME_OFF" = 1 ] || return
	timed cmp-flood-off xl set-parameters shadow-flood=0 ||
	    fail cmp-flood-off "xl set-parameters shadow-flood=0"
	cmp_cap stats-2 $V --json stats
	cmp_perf perf-2
	cmp_build cmp-sh0 $CMP_SHADOW_MB done ptwrite=$CMP_PTWRITE || return
	cmp_cap stats-3 $V --json stats
	cmp_perf perf-3
	cmp_destroy cmp-sh0
	cmp_pf
}

cmp_stock() {
	cmp_cap scrub-stock $V --json scrub
	cmp_cap stats-stock $V --json stats
	cmp_build cmp-st $SMALL_MB done || return
	cmp_destroy cmp-st
}

echo "MARK begin step=companion-$CMP_MODE"
if start_vmbuildd; then
	cmp_cap host $V --json host
	case $CMP_MODE in
	numa) cmp_numa ;;
	shadow) cmp_shadow ;;
	stock) cmp_stock ;;
	*) fail companion "unknown CMP_MODE '$CMP_MODE'" ;;
	esac
	xsync
	kill $vpid 2>/dev/null
	sed 's/^/  vmbuildd| /' /tmp/vmbuildd.log | tail -n 20
fi
echo "MARK step=companion-$CMP_MODE rc=0 secs=0"
