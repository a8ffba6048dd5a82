#!/bin/bash
# tests/lab/run.sh - the Xen lab (`make check-xen`): boot Debian 12's Xen 4.17
# and its 6.1 kernel as dom0 under QEMU TCG, create the hello guest with xl
# and with vmbuildd/vmctl, time both, and check the guest's own words on
# Xen's console.  Exit 0 only when every required step passed.
#
# Host steps: fetch .debs (cached in build/lab/debs), unpack them (cached in
# build/lab/root), build the dom0 initramfs (build/lab/dom0/), boot QEMU with
# a hard timeout, log the serial console to build/lab/console.log, judge
# (judge.sh; its report is also kept in build/lab/summary.txt).
# dom0 steps: tests/lab/dom0-init.sh (it prints MARK / LAB-FAIL / LAB-RESULT).
#
# Settings (environment):
#   LAB_DIR=build/lab        cache and work directory (one run at a time: lock)
#   LAB_DEBS=$LAB_DIR/debs   the .deb cache (share it between LAB_DIRs)
#   LAB_ROOT=$LAB_DIR/root   the unpacked .debs (shared by runs one after
#                            the other, e.g. the companion lab's)
#   LAB_STEPS="xl vmbuild guest linux"  what dom0 runs: xl, vmbuild (side by
#                            side), guest (the hello guest's memory-map
#                            fallbacks, by xl), linux (Debian's kernel as a
#                            4.5 GiB 2-node PVH guest, by each toolstack),
#                            hvm (off by default: the same kernel as an HVM
#                            guest, hvmloader + SeaBIOS + QEMU for Xen's
#                            direct kernel boot, by each toolstack),
#                            grub (off by default: a disk image with
#                            Debian's kernel and /boot/grub/grub.cfg
#                            booted as a PVH guest through GRUB for Xen
#                            PVH, grub-xen-host, by each toolstack),
#                            grubhvm (off by default: that disk as an HVM
#                            guest on AHCI, SeaBIOS and GRUB for BIOS in
#                            its MBR; make check-xen-hvm runs it)
#   LAB_HVM_MB=512           the hvm step's guest
#   LAB_HVM_DEV=1            its disk (xvda) and PV vif; 0: none
#   LAB_GRUB_MB=512          the grub step's guest
#   LAB_VMBUILD=require      require (default): the vmbuild steps must run and
#                            pass, and judge.sh wants their guests' hello.  auto:
#                            the vmbuild steps run when vmbuildd and vmctl
#                            are built; if vmbuildd cannot open the xen backend
#                            they are reported SKIPPED, not failed.  require: a
#                            skip is a failure.  off: never run them.
#   LAB_SMALL_MB=128 LAB_BIG_MB=512   guest sizes
#   LAB_LINUX_MB=4608        the Linux guest (split over its 2 vnodes)
#   LAB_SR_MB=256            the saverestore step's guest (LAB_STEPS
#                            saverestore, off by default: xl save/restore
#                            beside vmctl's; dom0 holds the saved file, so
#                            raise LAB_DOM0_MEM, e.g. 1536M)
#   LAB_SR_ENGINE=1          the saverestore step restores by vmbuild
#                            twice: by libxenguest, then (vmbuildd
#                            --xen-restore=engine) by its own reader
#   LAB_SR_ROUNDS=5          then this many rounds of the three restores
#                            (libxenguest, engine, xl) back to back
#   LAB_TIMEOUT=3000         hard limit for the QEMU run, seconds
#   LAB_HELLO=1              the hello guests' steps (0: skip them, e.g.
#                            to iterate on the Linux guest)
#   LAB_XEN=FILE             a xen.gz / xen ELF to boot instead of Debian's
#   LAB_XEN_EXTRA= LAB_QEMU_EXTRA= LAB_DOM0_EXTRA=   extra command-line words
#   LAB_CPU=max,-smap,-rdtscp LAB_SMP=4 LAB_MEM=6144 LAB_DOM0_MEM=512M
#   LAB_NUMA=2               host NUMA nodes QEMU gives Xen (LAB_MEM and
#                            LAB_SMP split evenly); 1: none
#   LAB_EXTRA_FILES="host/path:/initramfs/path ..."   more files for dom0
#   LAB_VMBUILDD_ARGS=       more vmbuildd arguments
#   LAB_XL_SHIM=1            run xl's create of the vNUMA Linux guest with
#                            tests/lab/xl-vnuma-shim.c preloaded (libxl 4.17
#                            cannot build a PVH guest with vnuma= without it);
#                            0: plain xl (its create of that guest fails)
#   LAB_HOTPLUG_TRACE=0      1: the hotplug scripts run with `set -x`
#                            (their trace in dom0's xen-hotplug.log, shown
#                            whole at the end of the run)
#   LAB_INJECT=""            spin:xl or spin:vmb: that toolstack's Linux
#                            guest is taken for one that spins without
#                            its line (guest_spun) at the next check of a
#                            wait after its boot, once.
#                            triple-fault:xl or triple-fault:vmb[:N]: that
#                            toolstack's Linux guest (its first N builds,
#                            1 by default) is made to look as if
#                            Xen saw it triple-fault (destroyed, with a line
#                            marked "injected" in dom0's copy of Xen's
#                            console), to try the lab's handling of the
#                            emulated CPU's triple faults (dom0-init.sh,
#                            emu_fault); never in CI.  sr-fault:xl or
#                            sr-fault:vmb[:N]: so the guest of saverestore's
#                            rounds, in its first N creates (1 by
#                            default; 3 fails the step); mig-fault:xl or
#                            mig-fault:vmb: so the migrate lab's guest,
#                            once, before its migration; sr-spin:TOOL,
#                            mig-spin:TOOL: that guest is taken for
#                            spinning without counting (guest_spun) at
#                            the next check of its wait.  boot-stuck[:N]:
#                            the first N boots (1 by default) are taken
#                            for stuck 20 s after QEMU started (the boot
#                            watch below).  silent: dom0 of the first
#                            boot stops printing after its init (the
#                            run watch below).  die: dom0 of the first
#                            boot reboots the host 5 s after its init
#                            (host_died below)
#   LAB_BOOT_WAIT=300        seconds dom0 has to reach its init (its
#                            "MARK dom0-init", 10 to 41 s seen) before
#                            the boot is taken for stuck, killed, kept
#                            as console.boot-N.log and made again
#   LAB_BOOTS=3              boots in all
#   LAB_QUIET_WAIT=300       seconds without a line of dom0's (its
#                            LAB-ALIVE every 30 s, its MARKs) after its
#                            init before Xen is asked for its state (debug
#                            keys on the serial line); 120 s more and the
#                            run is taken for silent: killed, kept as
#                            console.boot-N.log, and booted once more if
#                            LAB_BOOTS allows (one boot per lab lost
#                            to silence or to a host that ended by
#                            itself, host_died below, before or after
#                            dom0's init; stuck boots do not count)
#   LAB_ROUNDS=3             issue 22's create rounds after the Linux steps
#                            (tests/lab/xenbench.sh): N pairs of creates of
#                            the Linux guest, xl and vmbuild in A B B A
#                            order; 0: none
#   LAB_DIRTY=1              the dirty-memory sequence (xenbench.sh); 0: none
#   LAB_DIRTY_HOGS=cpus      guests spinning through it, one per CPU (a
#                            busy host: Xen's idle scrubber does not run),
#                            or a number; 0: an idle host
#   LAB_DIRTY_FILL=1         the other nodes filled first (a full host:
#                            no clean memory elsewhere); 0: not
#   LAB_DIRTY_ONECPU=3       creates in it with vmbuildd kept to one dom0
#                            CPU (vmb1cpu, what its populate workers
#                            bring): 3, 1 or 0
#   LAB_DIRTY_ONECPU_CPU=0   the dom0 CPU it keeps them to
#   LAB_LOCKPROF=0           1: Xen's lock profile reset before each
#                            dirty create and its heap_lock and the new
#                            domain's page_alloc_lock recorded after
#                            (XBLOCK); needs a Xen built with lock
#                            profiling (make -C hypervisor/xen lockprof,
#                            LAB_XEN=build/xen/xen-lockprof.gz)
#   LAB_DOM0_WEIGHT=         dom0's credit2 weight through the dirty
#                            sequence (the hogs keep Xen's 256); unset:
#                            Xen's
#   LAB_PEER=0               1: two hosts (the migrate step, make
#                            check-xen-migrate): a second QEMU, host B
#                            (console in $LAB_DIR/console-b.log), booted
#                            beside host A from the same initramfs, the
#                            two joined by a QEMU socket network on
#                            127.0.0.1 only (an e1000 each, in dom0's
#                            bridge xenbr0: A 10.77.0.1, B 10.77.0.2),
#                            OpenSSH from Debian's .debs in both dom0s
#                            with keys made here ($LAB_DIR/ssh).  Its
#                            defaults: LAB_MEM=4096 LAB_SMP=1 LAB_NUMA=1
#                            LAB_DOM0_MEM=2304M LAB_BOOTS=1
#                            LAB_TIMEOUT=3000 (per QEMU)
#   LAB_MIG_VCPUS=2          the migrate step's guest's vCPUs (.ci/run: 1,
#                            tests/lab/README.md)
#   LAB_MIG_MB=1024          the migrate step's guest
#   LAB_TESTS="..."          hvsim-free test programs (paths under build/) run
#                            in dom0 from a copy of the tree at /tree; default:
#                            the xen backend, placement, populate-plan and
#                            loader unit tests, those that are built
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 2
here=tests/lab

LAB_DIR=${LAB_DIR:-build/lab}
# Two hosts of 4 GiB and one CPU each: together they take what one
# default lab takes of this machine (2 host cores, 6 GiB), and one
# NUMA node each (one CPU cannot be split over two).
LAB_PEER=${LAB_PEER:-0}
if [ "$LAB_PEER" = 1 ]; then
	LAB_MEM=${LAB_MEM:-4096} LAB_SMP=${LAB_SMP:-1} LAB_NUMA=${LAB_NUMA:-1}
	LAB_DOM0_MEM=${LAB_DOM0_MEM:-2304M} LAB_BOOTS=${LAB_BOOTS:-1}
fi
LAB_MIG_MB=${LAB_MIG_MB:-1024}
LAB_MIG_VCPUS=${LAB_MIG_VCPUS:-2}
LAB_STEPS=${LAB_STEPS:-xl vmbuild guest linux}
export LAB_STEPS LAB_HELLO LAB_HVM_DEV
LAB_VMBUILD=${LAB_VMBUILD:-require}
export LAB_VMBUILD
LAB_SMALL_MB=${LAB_SMALL_MB:-128}
LAB_BIG_MB=${LAB_BIG_MB:-512}
LAB_LINUX_MB=${LAB_LINUX_MB:-4608}
export LAB_LINUX_MB
LAB_SR_MB=${LAB_SR_MB:-256}
LAB_SR_ENGINE=${LAB_SR_ENGINE:-1}
LAB_SR_ROUNDS=${LAB_SR_ROUNDS:-5}
LAB_HVM_MB=${LAB_HVM_MB:-512}
LAB_HVM_DEV=${LAB_HVM_DEV:-1}
LAB_GRUB_MB=${LAB_GRUB_MB:-512}
LAB_TIMEOUT=${LAB_TIMEOUT:-3000}
LAB_CPU=${LAB_CPU:-max,-smap,-rdtscp}
LAB_SMP=${LAB_SMP:-4}
LAB_MEM=${LAB_MEM:-6144}
LAB_NUMA=${LAB_NUMA:-2}
LAB_DOM0_MEM=${LAB_DOM0_MEM:-512M}
LAB_XEN=${LAB_XEN:-}
LAB_XEN_EXTRA=${LAB_XEN_EXTRA:-}
LAB_QEMU_EXTRA=${LAB_QEMU_EXTRA:-}
LAB_DOM0_EXTRA=${LAB_DOM0_EXTRA:-loglevel=4}
LAB_EXTRA_FILES=${LAB_EXTRA_FILES:-}
LAB_VMBUILDD_ARGS=${LAB_VMBUILDD_ARGS:-}
LAB_XL_SHIM=${LAB_XL_SHIM:-1}
LAB_HOTPLUG_TRACE=${LAB_HOTPLUG_TRACE:-0}
LAB_HELLO=${LAB_HELLO:-1}
LAB_INJECT=${LAB_INJECT:-}
LAB_BOOT_WAIT=${LAB_BOOT_WAIT:-300}
LAB_BOOTS=${LAB_BOOTS:-3}
LAB_QUIET_WAIT=${LAB_QUIET_WAIT:-300}
LAB_ROUNDS=${LAB_ROUNDS:-3}
LAB_DIRTY=${LAB_DIRTY:-1}
LAB_DIRTY_HOGS=${LAB_DIRTY_HOGS:-cpus}
LAB_DIRTY_FILL=${LAB_DIRTY_FILL:-1}
LAB_DIRTY_ONECPU=${LAB_DIRTY_ONECPU:-3}
LAB_DIRTY_ONECPU_CPU=${LAB_DIRTY_ONECPU_CPU:-0}
LAB_LOCKPROF=${LAB_LOCKPROF:-0}
LAB_DOM0_WEIGHT=${LAB_DOM0_WEIGHT:-}
LAB_TESTS=${LAB_TESTS-build/tests/xenbe/test_xen_backend build/tests/lib/test_placement build/tests/lib/test_populate_plan build/tests/lib/test_loader}
XENVER=4.17
ARCHLIB=usr/lib/x86_64-linux-gnu

DEBS=${LAB_DEBS:-$LAB_DIR/debs}
ROOT=${LAB_ROOT:-$LAB_DIR/root}
D0=$LAB_DIR/dom0
CONSOLE=$LAB_DIR/console.log
t_start=${EPOCHREALTIME/./}

log() { printf '[lab %5.1fs] %s\n' "$(elapsed)" "$*" >&2; }
elapsed() {
	local now=${EPOCHREALTIME/./}
	local d=$(( (now - t_start) / 100000 ))
	printf '%d.%d' $((d / 10)) $((d % 10))
}
# A host step failed: say which, and stop.
fail() {
	log "FAIL in host step '$1': $2"
	echo "lab: FAILED (host step $1)" >&2
	exit 1
}

# ------------------------------------------------------------- prerequisites
step=prerequisites
for t in qemu-system-x86_64 dpkg-deb cpio gzip xz apt-get ldd timeout; do
	command -v "$t" >/dev/null || fail $step "missing $t (scripts/deps.sh lab)"
done
[ -f build/guest/hello.elf ] || fail $step "build/guest/hello.elf not built (run make)"
mkdir -p "$DEBS" "$LAB_DIR" || fail $step "cannot create $DEBS"
# Two runs in one LAB_DIR would overwrite each other's initramfs and log.
exec 9>"$LAB_DIR/.lock"
if ! flock -n 9; then
	log "another lab run holds $LAB_DIR/.lock; waiting (or use another LAB_DIR)"
	flock 9 || fail $step "cannot lock $LAB_DIR/.lock"
fi

# ------------------------------------------------------------- download
# Every package once: a .deb already in the cache is not fetched again,
# so a second run touches no network.
step=download
kpkg=$(cd "$DEBS" && ls linux-image-6.1*-amd64_*.deb 2>/dev/null | grep -v -- '-dbg' | head -1)
kpkg=${kpkg%%_*}
if [ -z "$kpkg" ]; then
	kpkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
	    awk '/Depends: linux-image-6\.1[^ ]*-amd64$/ {print $2; exit}')
	[ -n "$kpkg" ] || fail $step "cannot find the current linux-image-6.1 package (apt-get update?)"
fi
kver=${kpkg#linux-image-}
pkgs="xen-hypervisor-$XENVER-amd64 $kpkg busybox-static xen-utils-$XENVER
      xenstore-utils libxenmisc$XENVER libxencall1 libxenevtchn1
      libxenforeignmemory1 libxengnttab1 libxenstore4 libxentoollog1
      libxenhypfs1 libxendevicemodel1 libxentoolcore1 libyajl2
      libevent-2.1-7 libevent-pthreads-2.1-7 libsystemd0 libnuma1
      xen-utils-common"
# The hvm step's device model and firmware: QEMU for Xen (its libraries
# beyond Xen's are those of qemu-system-x86, which the lab host has:
# scripts/deps.sh lab; dom0 checks them with ldd), SeaBIOS, and QEMU's
# data (linuxboot_dma.bin for direct kernel boot, keymaps); hvmloader
# is xen-utils-4.17's.
case " $LAB_STEPS " in
*" hvm "*|*" grubhvm "*) pkgs="$pkgs qemu-system-xen seabios qemu-system-data" ;;
esac
# The grub step's GRUB for Xen PVH (grub-i386-xen_pvh.bin).
case " $LAB_STEPS " in
*" grub "*) pkgs="$pkgs grub-xen-host" ;;
esac
# The two hosts' ssh (LAB_PEER=1): xl migrate and vmctl migrate run
# ssh to the other dom0.
[ "$LAB_PEER" = 1 ] && pkgs="$pkgs openssh-server openssh-client"
missing=""
for p in $pkgs; do
	ls "$DEBS/${p}_"*.deb >/dev/null 2>&1 || missing="$missing $p"
done
fetched=$(echo $missing | wc -w)
updated=0
if [ -n "$missing" ]; then
	# One apt-get for all of them: a few seconds, not a few per package.
	log "apt-get download$missing"
	err=$(cd "$LAB_DIR" && pwd)/apt-download.err
	until (cd "$DEBS" && apt-get download $missing >/dev/null 2>"$err"); do
		# Stale or missing package lists (a fresh CI machine): refresh once.
		[ $updated = 0 ] && [ "$(id -u)" = 0 ] ||
		    fail $step "apt-get download$missing: $(tail -n 2 "$err")"
		log "apt-get update (download failed)"
		apt-get update -qq >/dev/null 2>&1
		updated=1
	done
	rm -f "$err"
fi
log "packages: $fetched fetched, $(ls "$DEBS"/*.deb | wc -l) in $DEBS ($(du -sh "$DEBS" | cut -f1))"
# What was booted, so that a change in the archive shows in the log.
for p in xen-hypervisor-$XENVER-amd64 xen-utils-$XENVER $kpkg busybox-static; do
	d=$(ls "$DEBS/${p}_"*.deb 2>/dev/null | head -1)
	[ -n "$d" ] && log "package $(dpkg-deb -f "$d" Package) $(dpkg-deb -f "$d" Version)"
done

# ------------------------------------------------------------- unpack
# Re-extracted only when the set of .debs changed.
step=unpack
# The set of .debs, and what is taken from the kernel's (DEV_MODULES).
DEV_MODULES="drivers/block/loop.ko drivers/block/xen-blkfront.ko
    drivers/block/xen-blkback/xen-blkback.ko drivers/net/xen-netfront.ko
    drivers/net/xen-netback/xen-netback.ko net/bridge/bridge.ko
    net/802/stp.ko net/llc/llc.ko fs/ext4/ext4.ko fs/jbd2/jbd2.ko
    fs/mbcache.ko lib/crc16.ko crypto/crc32c_generic.ko
    drivers/net/ethernet/intel/e1000/e1000.ko"	# LAB_PEER's NIC
stamp=$( (ls "$DEBS"/*.deb; echo $DEV_MODULES) | md5sum | cut -d' ' -f1)
if [ "$(cat "$ROOT/.stamp" 2>/dev/null)" != "$stamp" ]; then
	rm -rf "$ROOT" && mkdir -p "$ROOT" || fail $step "cannot create $ROOT"
	for d in "$DEBS"/*.deb; do
		case "$d" in
		*/linux-image-*)	# only the kernel, Xen's and the devices' modules
			dpkg-deb --fsys-tarfile "$d" | tar -x -C "$ROOT" --wildcards \
			    './boot/vmlinuz-*' './lib/modules/*/kernel/drivers/xen/*' \
			    $(for m in $DEV_MODULES; do echo "./lib/modules/*/kernel/$m*"; done) ;;
		*)
			dpkg-deb -x "$d" "$ROOT" ;;
		esac || fail $step "unpack $d"
	done
	# The top Makefile -includes every build/**/*.d as a dependency file;
	# a package's foo.d directory would stop make.
	find "$ROOT" -name '*.d' -prune -exec rm -rf {} +
	echo "$stamp" > "$ROOT/.stamp"
	log "unpacked into $ROOT"
fi
xenbin=$ROOT/usr/lib/xen-$XENVER/bin
kernel=$ROOT/boot/vmlinuz-$kver
moddir=$ROOT/lib/modules/$kver/kernel/drivers/xen
[ -f "$kernel" ] || fail $step "no kernel $kernel in $kpkg"
if [ -n "$LAB_XEN" ]; then
	xen=$LAB_XEN
else
	xen=$LAB_DIR/xen
	zcat "$ROOT/boot/xen-$XENVER-amd64.gz" > "$xen" || fail $step "zcat xen-$XENVER-amd64.gz"
fi
case "$xen" in *.gz) zcat "$xen" > "$LAB_DIR/xen.custom" || fail $step "zcat $xen"; xen=$LAB_DIR/xen.custom;; esac

# ------------------------------------------------------------- devices
# Kernel modules with what they depend on (the "depends=" of their
# .modinfo: the package ships no modules.dep), uncompressed, into
# DIR/lib/modules, their names in load order appended to
# DIR/lib/modules/devices.order.
kmods() {
	local dir=$1 m f dep; shift
	mkdir -p "$dir/lib/modules" || return 1
	for m in "$@"; do
		grep -qx "$m" "$dir/lib/modules/devices.order" 2>/dev/null && continue
		f=$(find "$ROOT/lib/modules/$kver/kernel" -name "$m.ko*" | head -n 1)
		[ -n "$f" ] || { log "module $m not in $kpkg"; return 1; }
		case "$f" in
		*.xz) xz -dc "$f" ;; *.zst) zstd -qdc "$f" ;; *) cat "$f" ;;
		esac > "$dir/lib/modules/$m.ko" || return 1
		for dep in $(tr '\0' '\n' < "$dir/lib/modules/$m.ko" |
		    sed -n 's/^depends=//p' | head -n 1 | tr ',' ' '); do
			kmods "$dir" "$dep" || return 1
		done
		echo "$m" >> "$dir/lib/modules/devices.order"
	done
}
# The Linux guest's disks: disk.img, ext2 (the ext4 driver mounts it)
# holding 1 MiB of random bytes and their md5, for xvda; disk2.img, a
# raw 1 MiB with a known first line, hot-plugged as xvdb.
step=disks
rm -rf "$LAB_DIR/disks" && mkdir -p "$LAB_DIR/disks/root" || fail $step "mkdir"
head -c 1048576 /dev/urandom > "$LAB_DIR/disks/root/payload.bin" &&
    (cd "$LAB_DIR/disks/root" && md5sum payload.bin > payload.md5) &&
    truncate -s 8M "$LAB_DIR/disks/disk.img" &&
    mke2fs -q -F -t ext2 -L vmbuild-lab -d "$LAB_DIR/disks/root" \
	"$LAB_DIR/disks/disk.img" ||
    fail $step "mke2fs -d (e2fsprogs; scripts/deps.sh lab)"
{ echo vmbuild-hotplug-disk; head -c 1048576 /dev/zero; } | head -c 1048576 \
    > "$LAB_DIR/disks/disk2.img" || fail $step "disk2.img"
log "disks: disk.img (ext2, payload.bin md5 $(cut -d' ' -f1 "$LAB_DIR/disks/root/payload.md5")), disk2.img"

# ------------------------------------------------------------- Linux guest
# The Linux guest's initramfs: busybox, /init = linux-init.sh, and
# xenstore-read with its libraries (the guest reads its domid).  Its
# kernel is the same Debian kernel dom0 runs, a bzImage as /boot has it.
step=linux-initramfs
LG=$LAB_DIR/linux
rm -rf "$LG" && mkdir -p "$LG"/{bin,proc,sys,dev,tmp,lib,lib64,$ARCHLIB} ||
    fail $step "cannot create $LG"
cp "$ROOT/bin/busybox" "$LG/bin/" && cp "$ROOT/usr/bin/xenstore" "$LG/bin/" &&
    ln -s xenstore "$LG/bin/xenstore-read" &&
    cp "$here/linux-init.sh" "$LG/init" && chmod +x "$LG/init" ||
    fail $step "copy busybox, xenstore, linux-init.sh"
llibs=$(LD_LIBRARY_PATH=$PWD/$ROOT/$ARCHLIB:$PWD/$ROOT/lib/x86_64-linux-gnu \
    ldd "$LG/bin/xenstore" | awk '/=> \// {print $3} /^[ \t]*\/lib64\// {print $1}')
for l in $llibs; do
	case "$l" in
	*/ld-linux-x86-64.so.2) cp -L "$l" "$LG/lib64/" ;;
	*) cp -L "$l" "$LG/$ARCHLIB/" ;;
	esac || fail $step "copy $l"
done
ln -s ../$ARCHLIB "$LG/lib/x86_64-linux-gnu" || fail $step "lib link"
# Its PV disk and network drivers and the file system of its disk.
kmods "$LG" xen-blkfront xen-netfront ext4 crc32c_generic ||
    fail $step "the guest's device modules"
(cd "$LG" && find . | cpio -o -H newc 2>/dev/null | gzip -1) > "$LAB_DIR/linux-initrd.gz" ||
    fail $step "cpio"

# ------------------------------------------------------------- GRUB disk
# The grub and grubhvm steps' disk (tests/lab/grubdisk.sh), cached in
# $LAB_DIR/grub-disk.
case " $LAB_STEPS " in
*" grub "*|*" grubhvm "*)
	step=grub-disk
	. "$here/grubdisk.sh" &&
	    grub_disk "$LAB_DIR/grub-disk" "$kernel" "$LAB_DIR/linux-initrd.gz" "$LG" "$here/grub.cfg" ||
	    fail $step "the disk image (mkfs.ext4 -d, sfdisk, grub-mkimage: scripts/deps.sh lab)" ;;
esac

# ------------------------------------------------------------- dom0 initramfs
step=initramfs
rm -rf "$D0" && mkdir -p "$D0"/{bin,sbin,proc,sys,dev,run,var,tmp,etc/xen,etc/lab,lib/modules,guest,lib64,$ARCHLIB,usr/lib/xen-$XENVER/bin} ||
    fail $step "cannot create $D0"
cp "$ROOT/bin/busybox" "$D0/bin/" || fail $step "busybox"
# libxl-save-helper: xl save and restore run it (the saverestore step).
# xenctx: a guest that spins without counting has its vCPUs' registers
# shown (guest_spun).
for b in xl xenstored xenconsoled xen-init-dom0 libxl-save-helper xenctx; do
	cp "$xenbin/$b" "$D0/usr/lib/xen-$XENVER/bin/" || fail $step "copy $b"
done
cp "$ROOT/usr/bin/xenstore" "$D0/bin/" || fail $step "copy xenstore"
for t in read write ls list rm exists chmod; do ln -sf xenstore "$D0/bin/xenstore-$t"; done
cp build/guest/hello.elf "$D0/guest/hello.elf" || fail $step "copy hello.elf"
cp "$here/hello.cfg" "$D0/etc/lab/hello.cfg" || fail $step "copy hello.cfg"
cp "$kernel" "$D0/guest/vmlinuz" && cp "$LAB_DIR/linux-initrd.gz" "$D0/guest/" &&
    cp "$here/linux.cfg" "$D0/etc/lab/linux.cfg" || fail $step "copy the Linux guest"
if [ "$LAB_XL_SHIM" = 1 ]; then
	${CC:-cc} -shared -fPIC -O2 -Wall -Wextra -Werror -o "$D0/lib/xl-vnuma-shim.so" \
	    "$here/xl-vnuma-shim.c" $(pkg-config --cflags xencontrol) -ldl ||
	    fail $step "build xl-vnuma-shim.so"
fi
cp "$here/dom0-init.sh" "$D0/init" && chmod +x "$D0/init" || fail $step "copy dom0-init.sh"
# The hvm step: QEMU for Xen where libxl and vmbuildd look for it,
# hvmloader, SeaBIOS and the QEMU data the guest's boot reads.
hvm_bins=""
case " $LAB_STEPS " in
*" hvm "*|*" grubhvm "*)
	mkdir -p "$D0/usr/libexec" "$D0/usr/lib/xen-$XENVER/boot" \
	    "$D0/usr/share/qemu/keymaps" "$D0/usr/share/seabios" &&
	    cp "$ROOT/usr/libexec/xen-qemu-system-i386" "$D0/usr/libexec/" &&
	    cp "$ROOT/usr/lib/xen-$XENVER/boot/hvmloader" "$D0/usr/lib/xen-$XENVER/boot/" &&
	    cp -a "$ROOT/usr/share/seabios/." "$D0/usr/share/seabios/" &&
	    cp "$ROOT"/usr/share/qemu/linuxboot*.bin "$D0/usr/share/qemu/" &&
	    cp "$ROOT/usr/share/qemu/keymaps/en-us" "$D0/usr/share/qemu/keymaps/" ||
	    fail $step "copy QEMU for Xen, hvmloader, SeaBIOS, QEMU's data (the hvm step)"
	hvm_bins=$D0/usr/libexec/xen-qemu-system-i386 ;;
esac
# The grub step: GRUB for Xen PVH where both toolstacks look for it
# (kernel = under xl, bootloader = "grub" under vmbuild) and its disk.
case " $LAB_STEPS " in
*" grub "*)
	mkdir -p "$D0/usr/lib/grub-xen" &&
	    cp "$ROOT/usr/lib/grub-xen/grub-i386-xen_pvh.bin" "$D0/usr/lib/grub-xen/" ||
	    fail $step "copy GRUB for Xen PVH (the grub step)" ;;
esac
# The disk of both (grubhvm's GRUB is the one for BIOS in its MBR).
case " $LAB_STEPS " in
*" grub "*|*" grubhvm "*)
	cp "$LAB_DIR/grub-disk/disk.img" "$D0/guest/grub-disk.img" ||
	    fail $step "copy the grub disk (the grub and grubhvm steps)" ;;
esac
cp "$here/xenbench.sh" "$D0/etc/lab/xenbench.sh" || fail $step "copy xenbench.sh"
# Devices: blkback, netback, loop and the bridge; Debian's hotplug
# scripts (xen-utils-common) with what they call that busybox lacks or
# does differently (bash, util-linux's losetup and flock: locking.sh
# locks with it, and busybox-static has none; from this Debian host);
# the guest's disk images.
kmods "$D0" xen-blkback xen-netback loop bridge || fail $step "dom0's device modules"
mkdir -p "$D0/etc/xen" "$D0/usr/sbin" &&
    cp -a "$ROOT/etc/xen/scripts" "$D0/etc/xen/" &&
    cp /usr/bin/bash "$D0/bin/bash" && cp "$(command -v losetup)" "$D0/usr/sbin/losetup" &&
    cp "$(command -v flock)" "$D0/usr/sbin/flock" &&
    cp "$LAB_DIR/disks/disk.img" "$LAB_DIR/disks/disk2.img" "$D0/guest/" ||
    fail $step "copy the hotplug scripts, bash, losetup, the disk images"
if [ "$LAB_HOTPLUG_TRACE" = 1 ]; then
	for f in block vif-bridge; do
		sed -i '1a set -x' "$D0/etc/xen/scripts/$f" || fail $step "trace $f"
	done
fi
have_vmbuild=0
if [ -x build/bin/vmbuildd ] && [ -x build/bin/vmctl ]; then
	cp build/bin/vmbuildd build/bin/vmctl "$D0/bin/" || fail $step "copy vmbuildd/vmctl"
	have_vmbuild=1
fi
tests=""
for t in $LAB_TESTS; do
	# `make check-xen` builds only ALL: build the test if it can be built.
	[ -x "$t" ] || make -s "$t" >/dev/null 2>&1 ||
	    { log "test $t not built (make $t failed): not run in dom0"; continue; }
	mkdir -p "$D0/tree/$(dirname "$t")" && cp "$t" "$D0/tree/$t" || fail $step "copy $t"
	tests="$tests $t"
done
mkdir -p "$D0/tree/build/guest" && cp build/guest/hello.elf "$D0/tree/build/guest/" ||
    fail $step "copy hello.elf into /tree"
for f in $LAB_EXTRA_FILES; do
	mkdir -p "$D0/$(dirname "${f#*:}")" && cp "${f%%:*}" "$D0/${f#*:}" ||
	    fail $step "extra file $f"
done
# Two hosts (LAB_PEER=1): the NIC's driver, OpenSSH (Debian's .debs),
# and the keys, made here once per LAB_DIR: a host key for each dom0
# (dom0-init.sh takes its own by lab_host= on its command line), root's
# key pair, authorized on both, and known_hosts naming both hosts, so
# that no ssh asks anything.  sshd runs without PAM or syslog; root's
# sessions get xl's and vmctl's PATH (SetEnv), as xl migrate and vmctl
# migrate run `xl migrate-receive` and `vmctl migrate-receive` there.
# AES-GCM: the emulated CPU's AES-NI is the cheapest cipher under TCG.
ssh_bins=""
if [ "$LAB_PEER" = 1 ]; then
	kmods "$D0" e1000 || fail $step "the NIC's module (e1000)"
	K=$LAB_DIR/ssh
	mkdir -p "$K" || fail $step "mkdir $K"
	for k in id_ed25519 host_a host_b; do
		[ -f "$K/$k" ] || ssh-keygen -q -t ed25519 -N '' -C "lab-$k" -f "$K/$k" ||
		    fail $step "ssh-keygen $k (openssh-client on this host)"
	done
	mkdir -p "$D0/etc/ssh" "$D0/etc/lab/ssh" "$D0/usr/sbin" "$D0/usr/bin" &&
	    cp "$ROOT/usr/sbin/sshd" "$D0/usr/sbin/" && cp "$ROOT/usr/bin/ssh" "$D0/usr/bin/" &&
	    cp "$K"/id_ed25519 "$K"/id_ed25519.pub "$K"/host_a "$K"/host_b "$D0/etc/lab/ssh/" &&
	    cp "$K/id_ed25519.pub" "$D0/etc/lab/ssh/authorized_keys" &&
	    chmod 600 "$D0"/etc/lab/ssh/id_ed25519 "$D0"/etc/lab/ssh/host_[ab] ||
	    fail $step "copy sshd, ssh and the keys"
	{ echo "10.77.0.1 $(cut -d' ' -f1-2 "$K/host_a.pub")"
	  echo "10.77.0.2 $(cut -d' ' -f1-2 "$K/host_b.pub")"; } > "$D0/etc/lab/ssh/known_hosts"
	[ -f "$ROOT/etc/ssh/moduli" ] && cp "$ROOT/etc/ssh/moduli" "$D0/etc/ssh/"
	cat > "$D0/etc/ssh/sshd_config" <<EOF
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
UseDNS no
AuthorizedKeysFile /etc/lab/ssh/authorized_keys
PidFile /run/sshd.pid
Ciphers aes128-gcm@openssh.com,chacha20-poly1305@openssh.com
SetEnv PATH=/bin:/sbin:/usr/bin:/usr/sbin:/usr/lib/xen-$XENVER/bin LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu
LogLevel VERBOSE
EOF
	cat > "$D0/etc/ssh/ssh_config" <<EOF
Host *
	User root
	IdentityFile /etc/lab/ssh/id_ed25519
	UserKnownHostsFile /etc/lab/ssh/known_hosts
	StrictHostKeyChecking no
	BatchMode yes
	ConnectTimeout 30
	ServerAliveInterval 15
	ServerAliveCountMax 8
	Ciphers aes128-gcm@openssh.com
	LogLevel ERROR
EOF
	ssh_bins="$D0/usr/sbin/sshd $D0/usr/bin/ssh"
fi
# Libraries: what ldd resolves, Xen's own from the unpacked debs first,
# the rest (glibc & co., same Debian release) from this host; plus
# libgcc_s, which glibc dlopens for pthread_cancel (xl aborts without it).
libpath=$PWD/$ROOT/$ARCHLIB:$PWD/$ROOT/lib/x86_64-linux-gnu
bins=$(ls "$D0"/usr/lib/xen-$XENVER/bin/* "$D0/bin/xenstore" "$D0/bin/bash" "$D0/usr/sbin/losetup" "$D0/usr/sbin/flock" $hvm_bins; [ $have_vmbuild = 1 ] && ls "$D0/bin/vmbuildd" "$D0/bin/vmctl")
for t in $tests; do bins="$bins $D0/tree/$t"; done
bins="$bins $ssh_bins"
for f in $LAB_EXTRA_FILES; do ldd "$D0/${f#*:}" >/dev/null 2>&1 && bins="$bins $D0/${f#*:}"; done
libs=$(for b in $bins; do
	out=$(LD_LIBRARY_PATH=$libpath ldd "$b") || { echo "LDD-FAILED $b"; continue; }
	echo "$out" | grep -q 'not found' && echo "NOTFOUND $b: $(echo "$out" | grep 'not found' | tr -s ' \t' ' ')"
	echo "$out" | awk '/=> \// {print $3} /^[ \t]*\/lib64\// {print $1}'
done; ls /lib/x86_64-linux-gnu/libgcc_s.so.1)
bad=$(echo "$libs" | grep -E '^(LDD-FAILED|NOTFOUND)')
[ -z "$bad" ] || fail $step "unresolved libraries: $bad"
for l in $(echo "$libs" | sort -u); do
	case "$l" in
	*/ld-linux-x86-64.so.2) cp -L "$l" "$D0/lib64/" ;;
	*) cp -L "$l" "$D0/$ARCHLIB/" ;;
	esac || fail $step "copy $l"
done
ln -s ../$ARCHLIB "$D0/lib/x86_64-linux-gnu"
for m in xen-evtchn xen-privcmd xen-gntdev xen-gntalloc xenfs/xenfs; do
	f=$(ls "$moddir/$m".ko* 2>/dev/null | head -1)
	[ -n "$f" ] || continue		# built into the kernel
	case "$f" in
	*.xz) xz -dc "$f" > "$D0/lib/modules/$(basename $m).ko" ;;
	*.zst) zstd -qdc "$f" > "$D0/lib/modules/$(basename $m).ko" ;;
	*) cp "$f" "$D0/lib/modules/" ;;
	esac || fail $step "module $m"
done
printf 'root:x:0:0:root:/:/bin/sh\n' > "$D0/etc/passwd"
printf 'root:x:0:\nvmbuild:x:900:\n' > "$D0/etc/group"
# sshd's privilege separation user (its chroot, /run/sshd, is dom0's).
if [ "$LAB_PEER" = 1 ]; then
	printf 'sshd:x:100:65534::/run/sshd:/usr/sbin/nologin\n' >> "$D0/etc/passwd"
	printf 'nogroup:x:65534:\n' >> "$D0/etc/group"
fi
echo 'autoballoon="off"' > "$D0/etc/xen/xl.conf"
cat > "$D0/etc/lab/lab.conf" <<EOF
LAB_STEPS="$LAB_STEPS"
LAB_VMBUILD="$LAB_VMBUILD"
HAVE_VMBUILD=$have_vmbuild
SMALL_MB=$LAB_SMALL_MB
BIG_MB=$LAB_BIG_MB
LINUX_MB=$LAB_LINUX_MB
SR_MB=$LAB_SR_MB
SR_ENGINE=$LAB_SR_ENGINE
SR_ROUNDS=$LAB_SR_ROUNDS
HVM_MB=$LAB_HVM_MB
HVM_DEV=$LAB_HVM_DEV
GRUB_MB=$LAB_GRUB_MB
XENVER=$XENVER
VMBUILDD_ARGS="$LAB_VMBUILDD_ARGS"
XL_SHIM=$LAB_XL_SHIM
HOTPLUG_TRACE=$LAB_HOTPLUG_TRACE
HELLO=$LAB_HELLO
XS_TRACE=${LAB_XS_TRACE:-}
TESTS="$tests"
LAB_TIMEOUT=$LAB_TIMEOUT
INJECT=$LAB_INJECT
ROUNDS=$LAB_ROUNDS
DIRTY=$LAB_DIRTY
HOGS=$LAB_DIRTY_HOGS
FILL=$LAB_DIRTY_FILL
ONECPU=$LAB_DIRTY_ONECPU
ONECPU_CPU=$LAB_DIRTY_ONECPU_CPU
LOCKPROF=$LAB_LOCKPROF
DOM0_WEIGHT=$LAB_DOM0_WEIGHT
PEER=$LAB_PEER
MIG_MB=$LAB_MIG_MB
MIG_VCPUS=$LAB_MIG_VCPUS
EOF
(cd "$D0" && find . | cpio -o -H newc 2>/dev/null | gzip -1) > "$LAB_DIR/dom0-initrd.gz" ||
    fail $step "cpio"
log "dom0 initramfs $(du -h "$LAB_DIR/dom0-initrd.gz" | cut -f1); vmbuild steps: $([ $have_vmbuild = 1 ] && echo included || echo 'not built')"

# ------------------------------------------------------------- boot
step=qemu
# NUMA: LAB_NUMA nodes, each with an even share of the memory and CPUs,
# so that Xen finds them in the SRAT QEMU builds.
numa=""
if [ "$LAB_NUMA" -gt 1 ]; then
	[ $((LAB_MEM % LAB_NUMA)) = 0 ] && [ $((LAB_SMP % LAB_NUMA)) = 0 ] ||
	    fail $step "LAB_MEM=$LAB_MEM and LAB_SMP=$LAB_SMP must split evenly over LAB_NUMA=$LAB_NUMA nodes"
	per=$((LAB_SMP / LAB_NUMA))
	for n in $(seq 0 $((LAB_NUMA - 1))); do
		numa="$numa -object memory-backend-ram,id=m$n,size=$((LAB_MEM / LAB_NUMA))M"
		numa="$numa -numa node,nodeid=$n,cpus=$((n * per))-$((n * per + per - 1)),memdev=m$n"
	done
fi
# spec-ctrl=eager-fpu: Xen switches FPU/SSE state at every context
# switch instead of lazily through CR0.TS and #NM, its default on AMD,
# the vendor `-cpu max` shows.  With lazy switching dom0's programs died
# of faults now and then under TCG (Debian's QEMU 7.2), busybox first
# among them, at its first load through a pointer glibc had just copied
# (memcpy uses SSE registers): 1 to 6 a loaded run, with or without AVX
# or FSGSBASE.  With eager switching: none so far (tests/lab/README.md).
# A later spec-ctrl=no-eager-fpu in LAB_XEN_EXTRA puts it back.
# conring_size: Xen's console ring (16 KiB by default) holds what dom0
# reads with `xl dmesg -c`; heap dumps and guest lines between two reads
# could push a guest's triple-fault line out before the lab saw it.
xen_cmdline="console=com1 com1=115200,8n1 dom0_mem=$LAB_DOM0_MEM,max:$LAB_DOM0_MEM loglvl=all guest_loglvl=all conring_size=4m console_timestamps=boot spec-ctrl=eager-fpu $LAB_XEN_EXTRA"
log "qemu: -cpu $LAB_CPU -smp $LAB_SMP -m $LAB_MEM, $LAB_NUMA NUMA node(s), timeout ${LAB_TIMEOUT}s; console -> $CONSOLE"
log "xen: $xen_cmdline"
# The host's load (dom0's view of its own is meaningless): at QEMU's
# start and end, one line after the run (bench/xen-results.py reads it).
load0=$(cut -d' ' -f1 /proc/loadavg)
# The boot watch: CI's run at 5633f2a lost a companion boot whose dom0
# kernel stuck on its CPU 3 in its eighth second (soft lockups, RCU
# stalls, 1500 s until the timeout), before its init: the emulation's
# failure, as the guests' triple faults are.  A boot whose dom0 has not
# printed "MARK dom0-init" after LAB_BOOT_WAIT seconds is killed, its
# console kept as console.boot-N.log, and QEMU boots again, up to
# LAB_BOOTS boots; each such boot is said on a LAB-EMU line added to
# the console.  A run whose dom0 reached its init is never made again.
boot_watch() {	# boot_watch N
	local i=0 wait=$LAB_BOOT_WAIT
	case $LAB_INJECT in
	boot-stuck) [ "$1" -le 1 ] && wait=20 ;;
	boot-stuck:*) [ "$1" -le "${LAB_INJECT#boot-stuck:}" ] && wait=20 ;;
	esac
	while [ $i -lt "$wait" ]; do
		sleep 1
		i=$((i + 1))
		grep -q 'MARK dom0-init' "$CONSOLE" 2>/dev/null && { run_watch "$1"; return 0; }
	done
	i=what=dom0-stuck
	[ "$wait" = "$LAB_BOOT_WAIT" ] || i="$i injected"
	echo "$i no MARK dom0-init after $wait s" > "$LAB_DIR/boot-stuck"
	kill "$(cat "$LAB_DIR/qemu.pid" 2>/dev/null)" 2>/dev/null
}
# The run watch, from dom0's init to its end.  CI's run at f400aaf lost
# `make check-xen` so: at 642 s, in the dirty-memory sequence (a
# spinning guest pinned to every CPU, a guest just built), neither dom0
# nor Xen printed another line until the 3000 s timeout, 39 minutes
# later, with QEMU's four CPU threads busy.  dom0 prints LAB-ALIVE
# every 30 s (dom0-init.sh) besides its MARKs; after LAB_QUIET_WAIT s
# without either, Xen is asked for its state through its debug keys on
# the serial line (QEMU's stdin, a FIFO: CTRL-a three times switches
# the input to Xen; q: domains and vCPUs, r: run queues, d: each CPU's
# registers and stack; whether Xen answers at all says whether its CPUs
# still take interrupts), and the input given back to dom0.  Still
# nothing of dom0's 120 s later: QEMU is killed and the boot is said
# as lost (what=dom0-silent, with whether Xen answered); the lab boots
# once more if LAB_BOOTS allows, once per lab: a second silent boot
# is no longer the emulation's bad luck.
run_watch() {	# run_watch N
	local seen=-1 n last=$SECONDS asked=0 xen0=0 quiet
	while sleep 5; do
		n=$(grep -caE '(LAB-ALIVE|MARK) ' "$CONSOLE" 2>/dev/null)
		if [ "$n" != "$seen" ]; then
			[ $asked = 1 ] && echo "[lab] dom0 printed again $((SECONDS - last)) s after its last line, after Xen's debug keys" >> "$LAB_DIR/run-watch.log"
			seen=$n last=$SECONDS asked=0
			continue
		fi
		quiet=$((SECONDS - last))
		if [ $asked = 0 ] && [ $quiet -ge "$LAB_QUIET_WAIT" ]; then
			asked=1
			xen0=$(grep -ca '(XEN)' "$CONSOLE")
			echo "[lab] boot $1: nothing of dom0's for $quiet s (last: $(grep -aE '(LAB-ALIVE|MARK) ' "$CONSOLE" | tail -n 1)); Xen's debug keys q r d" >> "$LAB_DIR/run-watch.log"
			{ printf '\001\001\001'; sleep 2; printf q; sleep 5; printf r; sleep 5
			  printf d; sleep 10; printf '\001\001\001'; } >&7
		elif [ $asked = 1 ] && [ $quiet -ge $((LAB_QUIET_WAIT + 120)) ]; then
			echo "what=dom0-silent nothing of dom0's for $quiet s, Xen $( [ "$(grep -ca '(XEN)' "$CONSOLE")" -gt "$xen0" ] && echo answered || echo 'did not answer') its debug keys" > "$LAB_DIR/boot-stuck"
			kill "$(cat "$LAB_DIR/qemu.pid" 2>/dev/null)" 2>/dev/null
			return 0
		fi
	done
}
# What QEMU's own log (-d cpu_reset,guest_errors) says went wrong, its
# reasons counted: a triple fault ends a -no-reboot run with exit 0 and
# not a word on the console (seen once during vmctl net-attach).  Its
# register dumps stay in the file.
qemu_reasons() {	# qemu_reasons [N]: the N (20) most frequent
	grep -aE 'Triple fault|check_exception|invalid|unimplemented' "$LAB_DIR/qemu-debug.log" 2>/dev/null |
	    sort | uniq -c | sort -rn | head -n "${1:-20}"
}
# host_died QRC: the host ended by itself, before dom0's result and
# with no panic on the console.  CI's run at 44327fd: QEMU ended 216 s
# in, 5 s after the Linux guest's last line, in the middle of xl's
# create step, neither dom0 nor Xen saying why.  That is the
# emulation's end, as its triple faults are, not a step's failure:
# said (what=host-died, with QEMU's exit and its own log's reasons)
# and, once per lab, the boot is made again.  A panic of Xen or dom0,
# a step that failed, the hard timeout, the two-host lab: not this;
# the run is judged as it is.
host_died() {	# host_died QRC: prints the what= line, or fails
	local why last
	case $1 in 124|137) return 1 ;; esac
	[ "$LAB_PEER" = 1 ] && return 1
	grep -qa 'LAB-RESULT ' "$CONSOLE" && return 1
	grep -qaE 'Panic on CPU|Kernel panic|Xen BUG|FATAL|Attempted to kill init' "$CONSOLE" && return 1
	why=$(qemu_reasons 3 | awk '{ n = $1; $1 = ""; sub(/^ /, ""); printf "%s%sx %s", sep, n, $0; sep = "; " }')
	last=$(grep -aE 'MARK ' "$CONSOLE" | tail -n 1 | tr -d '\r' | sed 's/^\[[ 0-9.]*\] //; s/ *$//')
	echo "what=host-died QEMU ended by itself (exit $1) with no result from dom0 and no panic; last: ${last:-nothing}; QEMU's log: ${why:-nothing}"
}
# The second host (LAB_PEER=1), B: the same Xen, kernel and initramfs
# (lab_host=b on dom0's line), its own console (console-b.log) and hard
# timeout, connected to A's socket network.  A listens on a free port of
# 127.0.0.1 (nothing else can reach it), B connects once A's QEMU
# listens: it must, QEMU's connect does not wait.  A MAC each: the two
# NICs meet on the bridges.
net_a="" peer_pid=""
# listening PORT: 127.0.0.1:PORT is in LISTEN state (/proc/net/tcp: no
# probe connection, which A's QEMU would take for B).
listening() {
	awk -v p="$(printf '%04X' "$1")" '$2 == "0100007F:" p && $4 == "0A" { f = 1 } END { exit !f }' /proc/net/tcp
}
stamp_lines() {	# stamp_lines Q0: each line with the seconds since Q0
	local line now el
	while IFS= read -r line; do
		now=${EPOCHREALTIME/./}
		el=$(( (now - $1) / 10000 ))
		printf "[%4d.%02d] %s\n" $((el / 100)) $((el % 100)) "${line//$'\r'/}"
	done
}
peer_boot() {	# peer_boot PORT: host B, until it powers off or times out
	local i=0 q0b
	while ! listening "$1"; do
		i=$((i + 1))
		[ $i -gt 600 ] && { echo "host A's QEMU never listened on 127.0.0.1:$1" > "$LAB_DIR/console-b.log"; return 1; }
		sleep 0.1
	done
	q0b=${EPOCHREALTIME/./}
	timeout --kill-after=5 "$LAB_TIMEOUT" qemu-system-x86_64 -accel tcg,thread=multi \
	    -cpu "$LAB_CPU" -m "$LAB_MEM" -smp "$LAB_SMP" -nographic -no-reboot \
	    -monitor none -serial stdio $numa $LAB_QEMU_EXTRA \
	    -netdev socket,id=n1,connect=127.0.0.1:$1 -device e1000,netdev=n1,mac=52:54:00:77:00:02 \
	    -d cpu_reset,guest_errors -D "$LAB_DIR/qemu-debug-b.log" \
	    -pidfile "$LAB_DIR/qemu-b.pid" \
	    -kernel "$xen" -append "$xen_cmdline" \
	    -initrd "$kernel console=hvc0 $LAB_DOM0_EXTRA lab_host=b,$LAB_DIR/dom0-initrd.gz" </dev/null 2>&1 |
	    stamp_lines "$q0b" > "$LAB_DIR/console-b.log"
}
# peer_stop: B is told to power off by A's dom0 at its end; whatever is
# left of it after 60 s more is killed (and on any exit of this script).
peer_stop() {
	local i=0
	[ -n "$peer_pid" ] || return 0
	while kill -0 "$peer_pid" 2>/dev/null && [ $i -lt 60 ]; do sleep 1; i=$((i + 1)); done
	if kill -0 "$peer_pid" 2>/dev/null; then
		log "host B still runs 60 s after A ended: killed"
		kill "$(cat "$LAB_DIR/qemu-b.pid" 2>/dev/null)" 2>/dev/null
		sleep 2
		kill -9 "$(cat "$LAB_DIR/qemu-b.pid" 2>/dev/null)" 2>/dev/null
	fi
	wait "$peer_pid" 2>/dev/null
	peer_pid=""
}
if [ "$LAB_PEER" = 1 ]; then
	port=""
	for i in $(seq 1 50); do
		p=$((20000 + RANDOM % 20000))
		awk -v p="$(printf ':%04X' $p)" 'index($2, p) == length($2) - 4 { f = 1 } END { exit f }' \
		    /proc/net/tcp || continue
		port=$p
		break
	done
	[ -n "$port" ] || fail $step "no free port on 127.0.0.1"
	net_a="-netdev socket,id=n1,listen=127.0.0.1:$port -device e1000,netdev=n1,mac=52:54:00:77:00:01"
	log "two hosts: A listens on 127.0.0.1:$port, B connects; B's console -> $LAB_DIR/console-b.log"
	trap 'peer_stop' EXIT
	# Interrupted: both QEMUs go at once.
	trap 'kill "$(cat "$LAB_DIR/qemu-b.pid" 2>/dev/null)" "$(cat "$LAB_DIR/qemu.pid" 2>/dev/null)" 2>/dev/null; exit 130' INT TERM
	rm -f "$LAB_DIR/qemu-b.pid"
	peer_boot "$port" &
	peer_pid=$!
fi
boot=1 emu_boots="" lost=0
rm -f "$LAB_DIR/run-watch.log"
while :; do
	rm -f "$LAB_DIR/qemu.pid" "$LAB_DIR/boot-stuck" "$LAB_DIR/serial-in"
	# Xen's serial input (the run watch's debug keys): QEMU's stdin, a
	# FIFO this shell holds open for writing (fd 7), one per boot.
	mkfifo "$LAB_DIR/serial-in" || fail $step "mkfifo $LAB_DIR/serial-in"
	exec 7<>"$LAB_DIR/serial-in"
	inject=""
	case $LAB_INJECT in silent|die) [ $boot = 1 ] && inject=" lab_inject=$LAB_INJECT" ;; esac
	boot_watch $boot &
	watch=$!
	# Each console line gets the seconds since QEMU started, for the
	# timings.
	q0=${EPOCHREALTIME/./}
	timeout --kill-after=5 "$LAB_TIMEOUT" qemu-system-x86_64 -accel tcg,thread=multi \
	    -cpu "$LAB_CPU" -m "$LAB_MEM" -smp "$LAB_SMP" -nographic -no-reboot \
	    -monitor none -serial stdio $numa $LAB_QEMU_EXTRA $net_a \
	    -d cpu_reset,guest_errors -D "$LAB_DIR/qemu-debug.log" \
	    -pidfile "$LAB_DIR/qemu.pid" \
	    -kernel "$xen" -append "$xen_cmdline" \
	    -initrd "$kernel console=hvc0 $LAB_DOM0_EXTRA${net_a:+ lab_host=a}$inject,$LAB_DIR/dom0-initrd.gz" <"$LAB_DIR/serial-in" 2>&1 |
	    stamp_lines "$q0" > "$CONSOLE"
	qrc=${PIPESTATUS[0]}
	kill $watch 2>/dev/null
	wait $watch 2>/dev/null
	exec 7>&-
	rm -f "$LAB_DIR/serial-in"
	[ -f "$LAB_DIR/boot-stuck" ] || host_died "$qrc" > "$LAB_DIR/boot-stuck" || rm -f "$LAB_DIR/boot-stuck"
	[ -f "$LAB_DIR/boot-stuck" ] || break
	what=$(tr '\n' ' ' < "$LAB_DIR/boot-stuck")
	lockups=$(grep -c 'soft lockup\|rcu_preempt self-detected stall' "$CONSOLE")
	mv -f "$CONSOLE" "$LAB_DIR/console.boot-$boot.log"
	cp -f "$LAB_DIR/qemu-debug.log" "$LAB_DIR/qemu-debug.boot-$boot.log" 2>/dev/null
	emu_boots="$emu_boots|LAB-EMU boot=$boot ${what}lockups=$lockups kept=console.boot-$boot.log"
	log "boot $boot lost ($what; $lockups soft lockup/RCU stall lines): kept as console.boot-$boot.log"
	case $what in *dom0-silent*|*host-died*) lost=$((lost + 1)) ;; esac
	if [ $boot -ge "$LAB_BOOTS" ] || [ $lost -gt 1 ]; then
		cp "$LAB_DIR/console.boot-$boot.log" "$CONSOLE"
		break
	fi
	boot=$((boot + 1))
done
qsecs=$(( (${EPOCHREALTIME/./} - q0) / 1000000 ))
if [ "$LAB_PEER" = 1 ]; then
	peer_stop
	log "host B: $(grep -a 'LAB-RESULT' "$LAB_DIR/console-b.log" | tail -n 1 | sed 's/^\[[ 0-9.]*\] //')"
fi
printf '[%4d.00] LAB-HOST load_start=%s load_end=%s cpus=%s\n' "$qsecs" "$load0" \
    "$(cut -d' ' -f1 /proc/loadavg)" "$(nproc)" >> "$CONSOLE"
# The boots set aside by the boot and run watches, and what the run
# watch saw, for the judge and the reader.
if [ -n "$emu_boots" ]; then
	echo "${emu_boots#|}" | tr '|' '\n' | sed "s/^/[$(printf '%4d' "$qsecs").00] /" >> "$CONSOLE"
fi
if [ -s "$LAB_DIR/run-watch.log" ]; then
	sed 's/^/  /' "$LAB_DIR/run-watch.log" >&2
	sed "s/^\[lab\] /[$(printf '%4d' "$qsecs").00] LAB-EMU run-watch: /" "$LAB_DIR/run-watch.log" >> "$CONSOLE"
fi
# What QEMU itself saw go wrong in the boot judged.
if [ -n "$(qemu_reasons 1)" ]; then
	log "qemu's own log ($LAB_DIR/qemu-debug.log) says:"
	qemu_reasons | sed 's/^/  qemu| /'
fi

# ------------------------------------------------------------- judge
"$here/judge.sh" "$CONSOLE" "$qrc" "$qsecs" | tee "$LAB_DIR/summary.txt"
exit "${PIPESTATUS[0]}"
