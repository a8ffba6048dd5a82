# tests/lab/xenbench.sh - issue 22's side-by-side figures on real Xen.
#
# Sourced by the lab's /init (dom0-init.sh) from /etc/lab/xenbench.sh, with
# its helpers (timed, wait_guest, mkcfg, mklinux, linux_line, emu_fault,
# scrub_wait, gone, fail, q, up, secs) and $V.  dom0 only drives and
# records, one line per figure; bench/xen-results.py reads them from the
# console log on the host (medians, ratios, the summary lines judge.sh
# prints and bench/results/xen.json):
#
#   XBENCH create round=K tool=T domid=N return=S line=S
#       one create of the Linux guest (linux.cfg, as the linux steps build
#       it): seconds to the command's return and to its vmbuild-linux
#       line on its PV console (polled every second), both from the
#       create's start; then, to the line, CPU seconds: dom0_cpu and
#       dom0_steal (all of dom0, as the dirty records), tool_cpu (xl or
#       vmctl and what they waited for: xl's hotplug scripts; to the
#       return), vmbuildd_cpu (with the hotplug scripts it reaped; in
#       an xl round, what it spends beside), xenstored_cpu, guest_cpu
#       (the guest's own vCPUs, xl list's Time(s), read after the line)
#   XBENCH create round=K tool=T domid=N dropped=triple-fault
#       a round the emulated CPU's triple fault ended (emu_fault): not
#       counted, not a failure
#   XBENCH create round=K tool=T failed=WHY    (and a LAB-FAIL)
#   XBENCH dirty seq=K tool=T domid=N mb=M node=N xen=stock|companion hogs=H filled=F rc=R return=S
#       a hello guest of M MiB (most of node N's free memory, pinned
#       there) created at once after the destroy of one as big that
#       touched all of its memory, with H guests spinning, one per CPU
#       (xb_hogs_start), and F other nodes full (xb_fill_start); the time to its hello line is taken on the host
#       from Xen's console ("MARK begin step=xb-dirty-TAG" to "(dN)
#       vmbuild-guest: hello from domain N")
#       seq=0 is the sequence's first guest, vmbuild's over clean memory
#       (clean=1): what its create costs with nothing to scrub, the floor
#       under its dirty figures; tool=vmb1cpu (LAB_DIRTY_ONECPU of them,
#       xb_dirty_seq), vmbuild with vmbuildd's threads kept to dom0's
#       first CPU (xb_one_cpu): against tool=vmb, what its parallel
#       workers bring on this host
#   XBENCH dirty seq=K ... return=S dropped=triple-fault
#       the guest the emulated CPU triple-faulted before it held (and a
#       LAB-EMU line): not counted, not a failure
#   XBSTATS K before|after rc=R {json}   vmctl --json stats around that
#       destroy and create (the companion's scrubbed-inline pages and
#       flushes; rc != 0 on stock Xen, which reports none)
#   XBINFO K {json}   vmctl --json info of vmbuild's guest of seq K
#   XBLOCK seq=K tool=T heap_lock=... page_alloc_lock=...   Xen's lock
#       profile after that create (LOCKPROF=1; xb_lockprof)
#   XBENCH skip what=... reason=...     (and a LAB-SKIP)
#
# LAB_ROUNDS (lab.conf ROUNDS, default 3) rounds of creates, each round a
# pair in A B B A order (xl vmb, vmb xl, xl vmb ...) so that a drift of
# the machine's load falls on both alike; LAB_DIRTY (DIRTY, default 1):
# the dirty-memory sequence (xb_dirty_seq; 0: none), on a full and
# busy host (LAB_DIRTY_FILL, FILL: xb_fill_start; LAB_DIRTY_HOGS, HOGS:
# xb_hogs_start).

# Seconds of LAB_TIMEOUT a create round needs left (under load a Linux
# create and its line took over 200 s; the steps after, up to 300 s),
# and the dirty sequence's guests each (a create, its memory touched, a
# destroy: some 60 s quiet), with the dirty sequence after the rounds.
XB_ROUND_RESERVE=600
XB_DIRTY_RESERVE=300

# xb_time_for SECS: more than SECS of the run's LAB_TIMEOUT are left
# (dom0's uptime is less than QEMU's: on the safe side).
xb_time_for() {
	[ -z "$LAB_TIMEOUT" ] && return 0
	[ "$(awk -v u=$(up) -v t=$LAB_TIMEOUT -v r=$1 'BEGIN { print (t - u > r) }')" = 1 ]
}

xb_skip() {
	echo "XBENCH skip what=$1 reason=$2"
	echo "LAB-SKIP what=$1 reason=$2"
}

# xb_cmds TOOL: _xbc and _xbd, the create and destroy commands of TOOL.
xb_cmds() {
	case $1 in
	xl)
		_xbc="xl create -e"; _xbd="xl destroy"
		# libxl 4.17 cannot build the vNUMA PVH guest alone (linux_once).
		[ "$XL_SHIM" = 1 ] && _xbc="env LD_PRELOAD=/lib/xl-vnuma-shim.so $_xbc" ;;
	*) _xbc="$V create"; _xbd="$V destroy" ;;
	esac
}

# xb_line_wait TAG ID SECS: poll the guest's PV console every second for
# its vmbuild-linux line.  0: seen; 1: the guest is gone or SECS passed;
# 2: Xen saw it triple-fault.  Its domain's name in xenstore is cheaper
# to read than xl, and Xen's console (emu_fault: an xl dmesg) is read
# every 10 s only: every command costs the emulated machine.
xb_line_wait() {
	_xw0=$(up) _xwn=0
	while [ -z "$(linux_line $1)" ]; do
		_xwn=$((_xwn + 1))
		if [ $((_xwn % 10)) = 0 ]; then
			emu_fault $2 && return 2
			[ "$(timeout 20 xenstore-read /local/domain/$2/name 2>/dev/null)" = $1 ] ||
			    { emu_fault $2 && return 2; return 1; }
		fi
		[ "$(awk -v a=$_xw0 -v b=$(up) -v l=$3 'BEGIN { print (b - a > l) }')" = 1 ] &&
		    return 1
		sleep 1
	done
	return 0
}

# xb_faulted_gone TOOL TAG: what is left of a guest Xen saw triple-fault
# taken away.  xl -e leaves the crashed domain to an explicit destroy;
# vmbuildd destroys it itself (on_crash) and may still be at it (a
# destroy of ours then says "another operation ... in progress"): as
# linux() does, asked again until vmbuildd no longer lists it.
xb_faulted_gone() {
	if [ $1 = xl ]; then
		timed xb-emu-destroy-$2 xl destroy $2
		return
	fi
	vmb_forget $2
}

# xb_round K TOOL: one create of the Linux guest by TOOL, timed to the
# return and to the guest's line; destroyed; memory back (scrub_wait).
# The devices, resize and hot-plug steps of linux_once are left out.
xb_round() {
	_xt=$2-r$1
	xb_cmds $2
	mklinux $_xt
	# Its own name, so its own console log (xenconsoled appends to the
	# name's log: an earlier round's line must not be read for it).
	rm -f /var/log/xen/console/guest-$_xt.log
	xb_cpu_pids
	proc_ticks $XB_PIDS; _xpt0=$PT
	dom0_ticks; _xdb=$DT_BUSY _xds=$DT_STEAL
	_xs=$(up)
	LIMIT=600 timed xb-create-$_xt $_xbc /etc/lab/$_xt.cfg
	_xrc=$?
	# Read now, worked out after the line (no awk inside the window).
	proc_ticks shell=$$; _xpt_ret=$PT
	# timed's own figure (its _t0, _t1), as its MARK line has it.
	_xr=$(secs $_t0 $_t1)
	_xid=$(q xl domid $_xt)
	if [ $_xrc != 0 ] || [ -z "$_xid" ]; then
		if [ -n "$_xid" ] && emu_fault $_xid; then
			echo "XBENCH create round=$1 tool=$2 domid=$_xid dropped=triple-fault"
		elif [ $2 = xl ] && grep -q 'because of timeout' /tmp/out.xb-create-$_xt; then
			# libxl's fixed 40 s for a hotplug script, outlasted
			# under emulation (linux_once tries again; a round is
			# a figure, it is dropped and said).
			echo "XBENCH create round=$1 tool=$2 dropped=libxl-hotplug-timeout"
			xl destroy $_xt >/dev/null 2>&1
		else
			echo "XBENCH create round=$1 tool=$2 failed=create-rc-$_xrc"
			fail xb-create-$_xt "create rc=$_xrc (domain '${_xid:-none}')"
		fi
	else
		xb_line_wait $_xt $_xid 600
		case $? in
		0) _xl=$(secs $_xs $(up)) _xkc=""
		   dom0_ticks; proc_ticks $XB_PIDS
		   _xcpu=" dom0_cpu=$(ticks_s $((DT_BUSY - _xdb))) dom0_steal=$(ticks_s $((DT_STEAL - _xds))) tool_cpu=$(ticks_delta "$_xpt0" "$_xpt_ret" shell) vmbuildd_cpu=$(ticks_delta "$_xpt0" "$PT" vmbuildd) xenstored_cpu=$(ticks_delta "$_xpt0" "$PT" xenstored) guest_cpu=$(q xl list $_xt | awk 'NR == 2 { print $NF }')"
		   # vmbuildd's cache of unpacked kernels: said per round.
		   [ $2 = vmb ] && _xkc=" kernel_cached=$($V --json info $_xt 2>/dev/null |
		       grep -o '"kernel_cached": *[a-z]*' | sed 's/.*: *//; s/true/yes/; s/false/no/')"
		   echo "XBENCH create round=$1 tool=$2 domid=$_xid return=$_xr line=$_xl$_xkc$_xcpu" ;;
		2) echo "XBENCH create round=$1 tool=$2 domid=$_xid dropped=triple-fault"
		   grep -E "[] ]d${_xid}v[0-9]+ Triple fault" $XLOG | head -n 1 | sed 's/^/  emu-fault| /' ;;
		*) echo "XBENCH create round=$1 tool=$2 domid=$_xid failed=no-line"
		   fail xb-line-$_xt "no vmbuild-linux line from domain $_xid"
		   tail -n 5 /var/log/xen/console/guest-$_xt.log 2>/dev/null | sed "s/^/  $_xt| /" ;;
		esac
	fi
	if [ -n "$_xid" ] && emu_fault $_xid; then
		xb_faulted_gone $2 $_xt
	elif xl list $_xt >/dev/null 2>&1; then
		timed xb-destroy-$_xt $_xbd $_xt || fail xb-destroy-$_xt "destroy rc=$?"
	fi
	gone $_xt 60 || fail xb-gone-$_xt "$_xt still listed after destroy"
	# A faulted guest's disk may keep its loop device (linux() does the same).
	losetup -a | grep -E '/guest/disk2?\.img\)?$' | cut -d: -f1 | while read -r _lo; do
		echo "INFO $_lo left by $_xt; detached"
		losetup -d $_lo
	done
	scrub_wait 300
}

# xb_rounds N: N rounds, A B B A.
xb_rounds() {
	_xk=1 _xorder="xl vmb"
	scrub_wait 300
	while [ $_xk -le $1 ]; do
		for _xtool in $_xorder; do
			if ! xb_time_for $((XB_ROUND_RESERVE + ${DIRTY:-0} * XB_DIRTY_RESERVE)); then
				xb_skip create-rounds "round $_xk ($_xtool) and after: $(up) s of the run's $LAB_TIMEOUT s used"
				return 0
			fi
			xb_round $_xk $_xtool
		done
		# The next round starts with the tool that ended this one.
		case $_xorder in "xl vmb") _xorder="vmb xl" ;; *) _xorder="xl vmb" ;; esac
		_xk=$((_xk + 1))
	done
}

# xb_nodes_free: "NODE FREE_MIB" of each NUMA node (xl info -n: "   N:
# memsize  memfree  distances"), nothing if unknown.
xb_nodes_free() {
	q xl info -n | awk '
	    /^numa_info/ { on = 1; next }
	    on && /^ *[0-9]+: +[0-9]+ +[0-9]+/ {
		sub(":", "", $1); print $1, $3 + 0; next }
	    on && !/^node:/ { on = 0 }'
}

# xb_node: "NODE FREE_MIB" of the node with the most free memory.
xb_node() {
	xb_nodes_free | awk '$2 + 0 > best + 0 { best = $2 + 0; node = $1 }
	    END { if (best > 0) print node, best }'
}

# dom0_ticks: dom0's busy and steal time so far, in /proc/stat's ticks
# (USER_HZ, 100 a second), into DT_BUSY (user, nice, system, irq,
# softirq: a hypercall's time in Xen is its caller's system time) and
# DT_STEAL; read by the shell itself, no process started.  Around a
# dirty create: the CPU the whole of dom0 used for it (the tool, the
# commands that start it, xenstored, the kernel), which waiting for a
# pCPU does not lengthen; the steal, how long its vCPUs waited.
# DT_VCPUS: the same per vCPU ("N:busy:steal ..."): which vCPU did the
# work, and how long that one waited.
dom0_ticks() {
	DT_VCPUS=""
	while read -r _dc _du _dn _ds _di _dw _dq _dsq _dst _drest; do
		case $_dc in
		cpu) DT_BUSY=$((_du + _dn + _ds + _dq + _dsq)) DT_STEAL=$_dst ;;
		cpu[0-9]*) DT_VCPUS="$DT_VCPUS ${_dc#cpu}:$((_du + _dn + _ds + _dq + _dsq)):$_dst" ;;
		*) break ;;
		esac
	done < /proc/stat
}
ticks_s() { awk -v t="$1" 'BEGIN { printf "%.2f", t / 100 }'; }

# Where a create's CPU went besides dom0 as a whole (xb_round): xl or
# vmctl with every process they waited for (xl's hotplug scripts), as
# this shell's children; vmbuildd with the hotplug scripts it reaped;
# xenstored.  XB_PIDS: "NAME=PID ...", read before the create (pidof
# and cat are processes: not inside the window they would count in).
xb_cpu_pids() {
	XB_PIDS="shell=$$ vmbuildd=${vpid:-$(pidof vmbuildd)} xenstored=$(cat /var/run/xenstored.pid 2>/dev/null)"
}

# proc_ticks NAME=PID...: PT="NAME=TICKS ...", each process's CPU with
# that of the children it reaped (utime, stime, cutime, cstime of
# /proc/PID/stat, in ticks), read by the shell itself; "NAME=-" for one
# that is not there.
proc_stat_ticks() { set -- $1; _pv=$((${14} + ${15} + ${16} + ${17})); }
proc_ticks() {
	PT=""
	for _pp in "$@"; do
		_pv=-
		if [ -n "${_pp#*=}" ] && read -r _pl < /proc/${_pp#*=}/stat 2>/dev/null; then
			proc_stat_ticks "$_pl"
		fi
		PT="$PT ${_pp%%=*}=$_pv"
	done
}
# ticks_delta BEFORE AFTER NAME (two PT): NAME's CPU between, in seconds;
# "-" when either is missing (vmbuildd restarted in between, say).
ticks_delta() {
	echo "$1|$2" | awk -F'|' -v n="$3" '{
	    split($1, a, " "); split($2, b, " ")
	    for (i in a) { split(a[i], x, "="); if (x[1] == n) s = x[2] }
	    for (i in b) { split(b[i], y, "="); if (y[1] == n) e = y[2] }
	    if (s == "" || s == "-" || e == "" || e == "-" || e < s) print "-"
	    else printf "%.2f", (e - s) / 100 }'
}
# vcpus_delta BEFORE AFTER (two DT_VCPUS): N=BUSY/STEAL,... in seconds.
vcpus_delta() {
	echo "$1|$2" | awk -F'|' '{ n = split($1, a, " "); split($2, b, " ")
	    for (i = 1; i <= n; i++) { split(a[i], x, ":"); split(b[i], y, ":")
	        printf "%s%s=%.2f/%.2f", (i > 1 ? "," : ""), x[1], (y[2] - x[2]) / 100, (y[3] - x[3]) / 100 } }'
}

# xb_stats K WHEN: the companion's counters as one line (rc 1009 on stock).
xb_stats() {
	$V --json stats > /tmp/xb.stats 2>/dev/null
	echo "XBSTATS $1 $2 rc=$? $(tr -d '\n' < /tmp/xb.stats)"
}

# xb_hogs_start: a busy host for the dirty sequence.  Xen scrubs freed
# memory in its idle loop; on an idle host (this lab's, between two
# commands) the pages of a destroyed guest are clean again before the
# next create's populate reaches them, which then scrubs nothing and
# measures an idle host, not dirty memory.  HOGS (LAB_DIRTY_HOGS: a
# number, or "cpus", one per physical CPU, the default) one-vCPU hello
# guests spin, each pinned to its own CPU, so that no CPU goes idle:
# what a populate allocates of a destroyed guest's memory it scrubs
# inline, as on a host whose guests keep its CPUs busy.  xl creates
# them (not timed), 32 MiB each, before the free memory is read.  0:
# none, the idle host.
XB_HOGS=""

xb_hogs_start() {
	_xh=${HOGS:-cpus}
	[ "$_xh" = cpus ] && _xh=$(q xl info | awk '$1 == "nr_cpus" { print $3 }')
	case $_xh in ''|*[!0-9]*) xb_skip dirty-hogs "no CPU count from xl info"; return 0 ;; esac
	_xi=0
	while [ $_xi -lt $_xh ]; do
		mkcfg xbhog$_xi 32 spin
		echo "cpus = \"$_xi\"" >> /etc/lab/xbhog$_xi.cfg
		if timed xb-hog-$_xi xl create /etc/lab/xbhog$_xi.cfg; then
			XB_HOGS="$XB_HOGS xbhog$_xi"
		else
			fail xb-hog-$_xi "create of the busy host's guest $_xi failed"
		fi
		_xi=$((_xi + 1))
	done
	# Each spins once it has touched its memory and said so.
	for _xg in $XB_HOGS; do
		_xid=$(q xl domid $_xg)
		eval XB_HOGID_$_xg=\$_xid
		_xw=0
		until grep -q "(d$_xid).*vmbuild-guest: spinning, domain $_xid" $XLOG; do
			_xw=$((_xw + 1))
			[ $_xw -gt 600 ] && { fail xb-hog-$_xg "no 'spinning' line from domain $_xid"; break; }
			xsync
			usleep 200000
		done
	done
	echo "INFO busy host: $(echo $XB_HOGS | wc -w) guests spinning, one per CPU:$XB_HOGS"
}

# A hog the emulated CPU triple-faulted (on_crash destroyed it: the
# CPU it kept busy went idle from then on) is said, not failed; one
# gone otherwise is a failure.
xb_hogs_stop() {
	for _xg in $XB_HOGS; do
		_xid=$(eval echo \$XB_HOGID_$_xg)
		if ! xl list $_xg >/dev/null 2>&1 && emu_fault "$_xid"; then
			echo "LAB-EMU tool=xl domid=$_xid what=triple-fault uptime=$(up) guest=$_xg (a busy host's spinning guest: its CPU idle since)"
			continue
		fi
		timed xb-hog-destroy-$_xg xl destroy $_xg || fail xb-hog-destroy-$_xg "destroy rc=$?"
	done
	XB_HOGS=""
}

# xb_fill_start: the other nodes full.  Xen's allocator takes clean
# memory from any node before it scrubs dirty memory inline (the domain's
# nodes first, then the others): while another node has clean memory, a
# guest built over a destroyed one's dirty memory gets that node's
# memory, built as fast as on a clean host and remote to its vCPUs.  On
# a full host, the seed's case, there is no such memory.  FILL
# (LAB_DIRTY_FILL, 1): a hello guest holding all but FILL_SPARE MiB of
# each other node's free memory, pinned there; vmbuild creates them (not
# timed), before the hogs and while the host is idle: xl would take what
# its 1 GiB extents do not find free on the node from another node (seen:
# 1.4 GiB of the node to be measured), vmbuild keeps to the node.
XB_FILL="" XB_FILL_SPARE=96

xb_fill_start() {
	[ "${FILL:-1}" = 1 ] || return 0
	xb_nodes_free | awk -v skip=$1 '$1 != skip' > /tmp/xb.nodes
	while read -r _xn _xf; do
		_xm=$(( (_xf - XB_FILL_SPARE) / 2 * 2 ))
		[ $_xm -ge 64 ] || continue
		mkcfg xbfill$_xn $_xm hold
		echo "cpus = \"nodes:$_xn\"" >> /etc/lab/xbfill$_xn.cfg
		if LIMIT=300 timed xb-fill-$_xn $V create /etc/lab/xbfill$_xn.cfg &&
		    wait_guest xbfill$_xn holding 600; then
			XB_FILL="$XB_FILL xbfill$_xn"
			_xfid=$(q xl domid xbfill$_xn)
			eval XB_FILLID_xbfill$_xn=\$_xfid
		else
			fail xb-fill-$_xn "the guest filling node $_xn ($_xm MiB) did not come up"
		fi
	done < /tmp/xb.nodes
	echo "INFO full host: node(s) other than $1 filled:$XB_FILL ($XB_FILL_SPARE MiB left on each)"
}

# As the hogs: one the emulated CPU killed is said, not failed.
xb_fill_stop() {
	for _xg in $XB_FILL; do
		_xid=$(eval echo \$XB_FILLID_$_xg)
		if ! xl list $_xg >/dev/null 2>&1 && emu_fault "$_xid"; then
			echo "LAB-EMU tool=vmb domid=$_xid what=triple-fault uptime=$(up) guest=$_xg (the guest filling a node: its memory free since)"
			vmb_forget $_xg
			continue
		fi
		timed xb-fill-destroy-$_xg $V destroy $_xg || fail xb-fill-destroy-$_xg "destroy rc=$?"
	done
	XB_FILL=""
}

# xb_one_cpu on|off: vmbuildd's threads kept to dom0's first CPU
# (ONECPU_CPU, LAB_DIRTY_ONECPU_CPU: another one) for one create (tool
# vmb1cpu), then given back the CPUs they had.  One CPU
# is what xl's populate has (one thread); vmbuild's populate workers
# then take turns on it, so that create against vmb's says what the
# parallel workers bring over dirty memory on this host (under TCG, the
# emulated CPUs share the host's few).
# xb_taskset_all ARGS... PID: taskset -a -p, tried up to five times.
# It sets each of vmbuildd's threads in turn, and one that ends between
# the listing and its turn (a build's or a destroy's) fails it with
# ESRCH: CI's run at 617d08c lost the companion's lab so, its vmb1cpu
# create right after a destroy.
xb_taskset_all() {
	_xi=0
	while ! taskset -a -p "$@" >/dev/null 2>&1; do
		_xi=$((_xi + 1))
		[ $_xi -lt 5 ] || return 1
		sleep 0.2
	done
}

xb_one_cpu() {
	_xpid=${vpid:-$(pidof vmbuildd)}
	case $1 in
	on)
		_xmask=$(taskset -p $_xpid 2>/dev/null | sed -n 's/.*mask: *//p')
		# Without the mask to put back, vmbuildd would stay on CPU 0
		# for the rest of the run: not kept, and said.
		if [ -z "$_xmask" ]; then
			fail xb-one-cpu "no affinity mask of vmbuildd ($_xpid) from taskset -p"
			return 1
		fi
		xb_taskset_all -c ${ONECPU_CPU:-0} $_xpid ||
		    fail xb-one-cpu "taskset -a -p -c ${ONECPU_CPU:-0} $_xpid (vmbuildd), five times"
		echo "INFO vmbuildd ($_xpid) kept to dom0's CPU ${ONECPU_CPU:-0} (its mask was ${_xmask:-unknown})" ;;
	off)
		[ -n "$_xmask" ] && { xb_taskset_all $_xmask $_xpid ||
		    fail xb-one-cpu "taskset -a -p $_xmask $_xpid (vmbuildd), five times"; } ;;
	esac
}

# xb_lockprof reset | record K TOOL DOMAIN (LOCKPROF=1, a Xen with lock
# profiling): Xen's lock profile zeroed before a dirty create; after it,
#   XBLOCK seq=K tool=T heap_lock=N/HELD_MS/BLOCKED/BLOCKED_MS page_alloc_lock=...
# acquisitions, time held, times a CPU had to wait and the time it
# waited, of Xen's heap_lock and of the new domain's page_alloc_lock:
# whether parallel populate workers queue on Xen's locks.
xb_lockprof() {
	[ "${LOCKPROF:-0}" = 1 ] || return 0
	if [ $1 = reset ]; then
		xl debug-keys L >/dev/null 2>&1
		return 0
	fi
	_xln=$(xl dmesg | grep -c ' Global heap_lock: ')
	xl debug-keys l >/dev/null 2>&1 || { echo "XBLOCK seq=$2 tool=$3 rc=$?"; return 0; }
	# The keyhandler prints from a tasklet: wait for its heap_lock line.
	_xlw=0
	while [ $(xl dmesg | grep -c ' Global heap_lock: ') -le $_xln ] &&
	    [ $_xlw -lt 25 ]; do
		usleep 200000
		_xlw=$((_xlw + 1))
	done
	_xld=$(q xl domid $4)
	echo "XBLOCK seq=$2 tool=$3 $(xl dmesg | awk -v d="Domain $_xld page_alloc_lock:" '
	    function f(s,  a) {
		# "lock:N(NS), block:M(NS)" -> N/ms/M/ms
		gsub(/[^0-9]+/, " ", s); split(s, a, " ")
		return sprintf("%d/%.1f/%d/%.1f", a[1], a[2] / 1e6, a[3], a[4] / 1e6)
	    }
	    / Global heap_lock: / { h = 1; next }
	    index($0, d) { p = 1; next }
	    h && / lock:[0-9]+\(/ { hl = f(substr($0, index($0, " lock:"))); h = 0 }
	    p && / lock:[0-9]+\(/ { pl = f(substr($0, index($0, " lock:"))); p = 0 }
	    END { printf "heap_lock=%s page_alloc_lock=%s", hl ? hl : "-", pl ? pl : "-" }')"
}

# xb_dom0_weight on|off (DOM0_WEIGHT, LAB_DOM0_WEIGHT: unset, Xen's
# 256): dom0's credit2 weight for the dirty sequence, put back after.
# The hogs keep 256: with more, dom0's vCPUs (xl's populate, vmbuild's
# workers) get more of the pCPUs they share with the spinning guests.
xb_dom0_weight() {
	[ -n "${DOM0_WEIGHT:-}" ] || return 0
	if [ $1 = on ]; then
		_xdw=$(xl sched-credit2 -d Domain-0 | awk '$1 == "Domain-0" { print $3 }')
		case $_xdw in ''|*[!0-9]*)
			xb_skip dom0-weight "no weight for Domain-0 in xl sched-credit2"
			_xdw=""; return 0 ;;
		esac
		timed xb-dom0-weight xl sched-credit2 -d Domain-0 -w $DOM0_WEIGHT ||
		    fail xb-dom0-weight "xl sched-credit2 -w $DOM0_WEIGHT rc=$?"
		echo "INFO dirty memory: dom0's credit2 weight $DOM0_WEIGHT (was $_xdw; the hogs' 256)"
	elif [ -n "${_xdw:-}" ]; then
		xl sched-credit2 -d Domain-0 -w $_xdw
	fi
}

# xb_dirty_wait TAG SECS: 0 once the dirty guest TAG says it is holding;
# 2 when Xen saw it triple-fault first (emu_fault: the emulated CPU's,
# as xb_line_wait has it), with its domid in _xid; 1 when it is gone
# or SECS passed (wait_guest then says which).
xb_dirty_wait() {
	_xw0=$(up) _xwn=0 _xid=""
	while :; do
		xsync
		[ -z "$_xid" ] && _xid=$(guest_domid $1)
		[ -z "$_xid" ] && _xid=$(xl domid $1 2>/dev/null)
		[ -n "$_xid" ] &&
		    grep -q "(d$_xid).*vmbuild-guest: holding, domain $_xid" $XLOG &&
		    return 0
		# Xen's console and xl every 5 s only, as xb_line_wait: every
		# command costs the emulated machine.
		_xwn=$((_xwn + 1))
		if [ $((_xwn % 10)) = 0 ]; then
			emu_fault "$_xid" && return 2
			xl list $1 >/dev/null 2>&1 || return 1
		fi
		[ "$(awk -v a=$_xw0 -v b=$(up) -v l=$2 'BEGIN { print (b - a > l) }')" = 1 ] &&
		    return 1
		usleep 500000
	done
}

# xb_dirty_seq: the dirty sequence's tools in order.  vmb first, over
# clean memory; then xl and vmb three times each in A B B A order, and
# ONECPU (LAB_DIRTY_ONECPU: 3, the default, 1 or 0) vmb1cpu creates:
# three spread through the sequence as the others are, one at its end.
xb_dirty_seq() {
	case ${ONECPU:-3} in
	0) echo vmb xl vmb vmb xl xl vmb ;;
	1) echo vmb xl vmb vmb xl xl vmb vmb1cpu ;;
	*) echo vmb xl vmb vmb1cpu vmb1cpu vmb xl xl vmb vmb1cpu ;;
	esac
}

# xb_dirty: a hello guest of most of a node's free memory, holding
# (it touched all its memory); destroyed and at once another as big
# created on that node, by the tools of xb_dirty_seq in turn: each new
# guest is the next one's dirty memory.  The first is vmbuild's, over
# clean memory (recorded with clean=1, not a dirty figure).  On a full
# (xb_fill_start) and busy (xb_hogs_start) host, as what it measures
# needs: otherwise neither toolstack meets dirty memory.
xb_dirty() {
	scrub_wait 300
	set -- $(xb_node)
	if [ -z "$2" ]; then
		xb_skip dirty "no free memory per node in xl info -n"
		return 0
	fi
	_xnode=$1
	xb_fill_start $_xnode
	xb_hogs_start
	xb_dom0_weight on
	set -- $(xb_nodes_free | awk -v n=$_xnode '$1 == n')
	if [ -z "$2" ]; then
		xb_skip dirty "node $_xnode's free memory not in xl info -n"
		xb_hogs_stop
		xb_fill_stop
		return 0
	fi
	# Most of the node; 2 MiB multiples; room left for the guest's own
	# page tables and Xen's per-domain memory.
	_xmb=$(( $2 * 80 / 100 / 2 * 2 ))
	_xxen=stock
	$V --json stats >/dev/null 2>&1 && _xxen=companion
	_xhogs=$(echo $XB_HOGS | wc -w) _xfill=$(echo $XB_FILL | wc -w)
	echo "INFO dirty memory: node $_xnode has $2 MiB free; guests of $_xmb MiB pinned there; Xen: $_xxen; busy host: $_xhogs guests spinning; full host:${XB_FILL:- no}"
	# Where dom0's vCPUs and the hogs may run (each create's record
	# says which dom0 vCPU worked and how long it waited: dom0_vcpus=).
	timed xb-vcpu-list xl vcpu-list
	_xprev="" _xptool="" _xk=0
	for _xtool in $(xb_dirty_seq); do
		if ! xb_time_for $XB_DIRTY_RESERVE; then
			xb_skip dirty "seq $_xk and after: $(up) s of the run's $LAB_TIMEOUT s used"
			break
		fi
		_xt=xbd$_xk-$_xtool
		mkcfg $_xt $_xmb hold
		echo "cpus = \"nodes:$_xnode\"" >> /etc/lab/$_xt.cfg
		xb_cmds $_xtool
		_xbcreate=$_xbc
		_xclean=""
		[ $_xk = 0 ] && _xclean=" clean=1"
		xb_stats $_xk before
		if [ -n "$_xprev" ]; then
			xb_cmds $_xptool
			timed xb-dirty-destroy-$_xprev $_xbd $_xprev ||
			    fail xb-dirty-destroy-$_xprev "destroy rc=$?"
			gone $_xprev 60 || fail xb-dirty-gone-$_xprev "$_xprev still listed"
		fi
		# xl create -e of the hello guest has no shim: it has no vNUMA.
		_xbcreate=$(echo "$_xbcreate" | sed 's|^env LD_PRELOAD=[^ ]* ||')
		[ $_xtool = vmb1cpu ] && xb_one_cpu on
		xb_lockprof reset
		_xs=$(up)
		dom0_ticks; _xdb=$DT_BUSY _xds=$DT_STEAL _xdv=$DT_VCPUS
		LIMIT=300 timed xb-dirty-$_xt $_xbcreate /etc/lab/$_xt.cfg
		_xrc=$?
		dom0_ticks
		_xcpu=" dom0_cpu=$(ticks_s $((DT_BUSY - _xdb))) dom0_steal=$(ticks_s $((DT_STEAL - _xds))) dom0_vcpus=$(vcpus_delta "$_xdv" "$DT_VCPUS")"
		_xr=$(secs $_t0 $_t1)
		[ $_xtool = vmb1cpu ] && xb_one_cpu off
		[ $_xrc = 0 ] && xb_lockprof record $_xk $_xtool $_xt
		xb_stats $_xk after
		if [ $_xrc != 0 ]; then
			fail xb-dirty-$_xt "create rc=$_xrc"
			echo "XBENCH dirty seq=$_xk tool=$_xtool mb=$_xmb node=$_xnode xen=$_xxen hogs=$_xhogs filled=$_xfill rc=$_xrc$_xclean"
			xl destroy $_xt >/dev/null 2>&1
			break
		fi
		# The emulated CPU may triple-fault the new guest before its
		# line: that create is no figure (a LAB-EMU line, its record
		# dropped=triple-fault), what is left of it is taken away, and
		# the next create meets the memory it freed.
		xb_dirty_wait $_xt 600
		case $? in
		2) echo "LAB-EMU tool=$_xtool domid=$_xid what=triple-fault uptime=$(up) guest=$_xt (a dirty-memory create, not counted)"
		   grep -E "[] ]d${_xid}v[0-9]+ Triple fault" $XLOG | head -n 1 | sed 's/^/  emu-fault| /'
		   echo "XBENCH dirty seq=$_xk tool=$_xtool domid=$_xid mb=$_xmb node=$_xnode xen=$_xxen hogs=$_xhogs filled=$_xfill rc=$_xrc return=$_xr dropped=triple-fault$_xclean"
		   case $_xtool in xl) xb_faulted_gone xl $_xt ;; *) xb_faulted_gone vmb $_xt ;; esac
		   gone $_xt 60 || fail xb-dirty-gone-$_xt "$_xt still listed"
		   _xprev="" _xk=$((_xk + 1))
		   continue ;;
		1) wait_guest $_xt holding 5 ;;
		*) wait_guest $_xt holding 600 ;;
		esac
		# vmbuild's own account of the build (phases, placement,
		# populate: workers, pages scrubbed inline), for the record.
		[ $_xtool != xl ] &&
		    echo "XBINFO $_xk $($V --json info $_xt 2>/dev/null | tr -d '\n')"
		echo "XBENCH dirty seq=$_xk tool=$_xtool domid=$_id mb=$_xmb node=$_xnode xen=$_xxen hogs=$_xhogs filled=$_xfill rc=$_xrc return=$_xr$_xcpu$_xclean"
		_xprev=$_xt _xptool=$_xtool _xk=$((_xk + 1))
	done
	if [ -n "$_xprev" ] && xl list $_xprev >/dev/null 2>&1; then
		xb_cmds $_xptool
		timed xb-dirty-destroy-$_xprev $_xbd $_xprev
		gone $_xprev 60 || fail xb-dirty-gone-$_xprev "$_xprev still listed"
	fi
	xb_dom0_weight off
	xb_hogs_stop
	xb_fill_stop
	scrub_wait 300
}

# xb_main: what LAB_ROUNDS and LAB_DIRTY ask for, when both toolstacks run.
xb_main() {
	# Not asked for (the companion's runs call xb_dirty themselves).
	echo " $LAB_STEPS " | grep -qE " (xl|vmbuild) " || return 0
	echo " $tools " | grep -q " xl " && echo " $tools " | grep -q " vmb " || {
		xb_skip xenbench "needs both xl and vmbuild (tools: $tools)"
		return 0
	}
	if [ "${ROUNDS:-0}" -gt 0 ] && echo " $LAB_STEPS " | grep -q " linux "; then
		_xb0=$(up)
		xb_rounds $ROUNDS
		echo "MARK step=xb-rounds rc=0 secs=$(secs $_xb0 $(up))"
	fi
	if [ "${DIRTY:-0}" = 1 ]; then
		_xb0=$(up)
		xb_dirty
		echo "MARK step=xb-dirty rc=0 secs=$(secs $_xb0 $(up))"
	fi
}
