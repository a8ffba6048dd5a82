#!/bin/bash
# tests/lab/debhost/run.sh - the debhost lab (`make check-debhost`): a real
# Debian 12 Xen host under QEMU TCG, vmbuild installed from its package
# and run by systemd.
#
# Host steps:
#  1. package: the .debs of this tree (dpkg-buildpackage -b from a copy of
#     the tracked files, as tests/ops/deb.sh), in build/debhost/pkg; built
#     again only when a file changed.  DEBHOST_DEBS=DIR takes CI's instead.
#  2. rootfs: mmdebstrap makes a Debian 12 tree from this machine's apt
#     sources with systemd as PID 1, Debian's kernel, Xen 4.17 (hypervisor
#     and tools), OpenSSH and Prometheus, and installs vmbuild with
#     `apt-get install ./vmbuild_*.deb` in its --customize-hook
#     (customize.sh); mkfs.ext4 -d turns it into build/debhost/rootfs.img
#     (no mount).  Made again only when the package list, the .debs or the
#     files put into the image change (their md5 is the key); the
#     archive's .debs are kept in build/debhost/apt-cache, so a rebuild
#     downloads nothing already fetched.
#     The upgrade check's package: vmbuild_*.deb repacked with its
#     version bumped (VERSION+lab1).
#  3. the Linux guest's initramfs (tests/lab/linux-init.sh as /init) and
#     disk; the lab disk (lab.img, label labchecks, mounted on /lab):
#     lab-checks, the guests' configs, the newer .deb, lab.conf (the
#     security score the repository claims, from man/vmbuildd.8.scd).
#  4. boot: Xen + Debian's kernel and initrd, root on a virtio disk (a copy
#     of rootfs.img, so each run starts from the same state), the lab's
#     machine (tests/lab/run.sh: -cpu max,-smap,-rdtscp, eager FPU); the
#     serial console, time-stamped, in build/debhost/console.log.
#     lab-checks.service runs the checks, reboots the host once (QEMU
#     runs without -no-reboot: the same disk boots again), checks what
#     vmbuild-guests did, and powers the host off.
#  5. judge.sh reads the log (summary also in build/debhost/summary.txt).
#
# Settings (environment):
#   DEBHOST_DIR=build/debhost   cache and work directory (one run at a time)
#   DEBHOST_DEBS=               a directory with vmbuild_*.deb and
#                               python3-vmbuild_*.deb to install instead
#   DEBHOST_STOP=               "image": stop after making the disks
#   DEBHOST_TIMEOUT=1800        hard limit of the QEMU run, seconds
#   DEBHOST_SMP=4 DEBHOST_MEM=3072 DEBHOST_DOM0_MEM=1536M
#                               (4 CPUs as the main lab: with 2 the Linux
#                               guest triple-faulted far more often, see
#                               tests/lab/README.md)
#   DEBHOST_XEN_EXTRA= DEBHOST_DOM0_EXTRA= DEBHOST_QEMU_EXTRA=
set -uo pipefail

top=$(cd "$(dirname "$0")/../../.." && pwd)
cd "$top" || exit 2
here=tests/lab/debhost

DIR=${DEBHOST_DIR:-build/debhost}
DEBHOST_DEBS=${DEBHOST_DEBS:-}
DEBHOST_STOP=${DEBHOST_STOP:-}
DEBHOST_TIMEOUT=${DEBHOST_TIMEOUT:-1800}
DEBHOST_SMP=${DEBHOST_SMP:-4}
DEBHOST_MEM=${DEBHOST_MEM:-3072}
DEBHOST_DOM0_MEM=${DEBHOST_DOM0_MEM:-1536M}
DEBHOST_XEN_EXTRA=${DEBHOST_XEN_EXTRA:-}
DEBHOST_DOM0_EXTRA=${DEBHOST_DOM0_EXTRA:-}
DEBHOST_QEMU_EXTRA=${DEBHOST_QEMU_EXTRA:-}
XENVER=4.17
# What the root file system holds (mmdebstrap --variant=apt adds apt and
# the Essential set).  vmbuild comes from its .deb, in customize.sh.
PACKAGES="systemd systemd-sysv udev dbus kmod procps iproute2 util-linux
	curl linux-image-amd64 initramfs-tools xen-hypervisor-$XENVER-amd64
	xen-utils-$XENVER xen-utils-common xenstore-utils openssh-server
	prometheus iputils-ping"
# This machine's Debian archive (deb822): the first sources file naming
# deb.debian.org with Types: deb.
SOURCES=$(grep -l '^Types: deb$' /etc/apt/sources.list.d/*.sources 2>/dev/null |
    xargs -r grep -l 'deb.debian.org' | head -n 1)
CONSOLE=$DIR/console.log
t_start=${EPOCHREALTIME/./}

elapsed() {
	local d=$(( (${EPOCHREALTIME/./} - t_start) / 100000 ))
	printf '%d.%d' $((d / 10)) $((d % 10))
}
log() { printf '[debhost %6.1fs] %s\n' "$(elapsed)" "$*" >&2; }
fail() {
	log "FAIL in host step '$1': $2"
	echo "debhost lab: FAILED (host step $1)" >&2
	exit 1
}
secs_since() { echo $(( (${EPOCHREALTIME/./} - $1) / 1000000 )); }

# ------------------------------------------------------------- prerequisites
step=prerequisites
for t in mmdebstrap qemu-system-x86_64 mkfs.ext4 dpkg-deb dpkg-buildpackage timeout md5sum; do
	command -v "$t" >/dev/null || fail $step "missing $t (scripts/deps.sh debhost)"
done
[ "$(id -u)" = 0 ] || fail $step "mmdebstrap's root mode and the image's file owners need root"
[ -n "$SOURCES" ] || fail $step "no deb822 sources file naming deb.debian.org in /etc/apt/sources.list.d"
mkdir -p "$DIR" || fail $step "cannot create $DIR"
exec 9>"$DIR/.lock"
flock -n 9 || { log "another run holds $DIR/.lock; waiting"; flock 9 || fail $step "lock"; }

# ------------------------------------------------------------- package
# Keyed by the content of every file the package is built from (the
# lab's own files, tests/lab/, go into no package).
step=package
if [ -n "$DEBHOST_DEBS" ]; then
	debs=$DEBHOST_DEBS
else
	debs=$DIR/pkg
	files() { git ls-files -z --cached --others --exclude-standard |
		while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done; }
	key=$(files | xargs -0 md5sum | grep -v '  tests/lab/' | md5sum | cut -d' ' -f1)
	if [ "$(cat "$debs/.key" 2>/dev/null)" != "$key" ]; then
		log "dpkg-buildpackage -b (log: $debs/build.log)"
		t=${EPOCHREALTIME/./}
		rm -rf "$debs" && mkdir -p "$debs/src" &&
		    files | xargs -0 cp -a --parents -t "$debs/src" ||
		    fail $step "copy the tree"
		(cd "$debs/src" && DEB_BUILD_OPTIONS="nocheck parallel=2" \
		    dpkg-buildpackage -b -us -uc) > "$debs/build.log" 2>&1 ||
		    fail $step "dpkg-buildpackage: $(tail -n 3 "$debs/build.log")"
		rm -rf "$debs/src"
		echo "$key" > "$debs/.key"
		log "packages built in $(secs_since $t)s"
	fi
fi
ls "$debs"/vmbuild_*.deb "$debs"/python3-vmbuild_*.deb >/dev/null 2>&1 ||
    fail $step "no vmbuild_*.deb and python3-vmbuild_*.deb in $debs"
log "vmbuild $(dpkg-deb -f "$(ls "$debs"/vmbuild_*.deb | head -n 1)" Version) from $debs"

# ------------------------------------------------------------- newer
# The upgrade check's package: this vmbuild_*.deb with its version
# bumped (VERSION+lab1), repacked by dpkg-deb (same files, so its
# DEBIAN/md5sums still hold); lab-checks installs it with
# `apt-get install ./FILE` while the Linux guest runs.
step=newer
deb=$(ls "$debs"/vmbuild_*.deb | head -n 1)
ver=$(dpkg-deb -f "$deb" Version)
newer=$DIR/newer/vmbuild_${ver}+lab1_$(dpkg-deb -f "$deb" Architecture).deb
rm -rf "$DIR/newer" && mkdir -p "$DIR/newer/x" &&
    dpkg-deb -R "$deb" "$DIR/newer/x" &&
    sed -i "s/^Version: .*/Version: ${ver}+lab1/" "$DIR/newer/x/DEBIAN/control" &&
    dpkg-deb --root-owner-group -b "$DIR/newer/x" "$newer" >/dev/null &&
    rm -rf "$DIR/newer/x" || fail $step "repack $deb as version ${ver}+lab1"
log "upgrade package: $(basename "$newer")"

# ------------------------------------------------------------- rootfs
step=rootfs
img=$DIR/rootfs.img
boot=$DIR/boot
key=$( (echo $PACKAGES; cat "$SOURCES"; md5sum "$debs"/vmbuild_*.deb "$debs"/python3-vmbuild_*.deb | cut -d' ' -f1
	cat "$here/customize.sh" "$here/lab-checks.service" "$here/prometheus.yml") | md5sum | cut -d' ' -f1)
if [ "$(cat "$DIR/rootfs.key" 2>/dev/null)" != "$key" ] || [ ! -f "$img" ] ||
    [ ! -f "$boot/kver" ]; then
	tree=$DIR/tree
	rm -rf "$tree" "$img" "$boot" "$DIR/rootfs.key" && mkdir -p "$DIR/apt-cache" ||
	    fail $step "cannot clean $tree"
	log "mmdebstrap bookworm ($SOURCES; log: $DIR/mmdebstrap.log)"
	t=${EPOCHREALTIME/./}
	# The archive's .debs go in from apt-cache and come back out before
	# mmdebstrap empties /var/cache/apt/archives (its manual's recipe).
	mmdebstrap --mode=root --variant=apt --include="$(echo $PACKAGES | tr ' ' ,)" \
	    --skip=download/empty \
	    --setup-hook='mkdir -p "$1"/var/cache/apt/archives/' \
	    --setup-hook="sync-in $DIR/apt-cache /var/cache/apt/archives/" \
	    --customize-hook="sync-out /var/cache/apt/archives $DIR/apt-cache" \
	    --customize-hook="$here/customize.sh \"\$1\" $debs" \
	    bookworm "$tree" "$SOURCES" > "$DIR/mmdebstrap.log" 2>&1 ||
	    fail $step "mmdebstrap: $(tail -n 5 "$DIR/mmdebstrap.log")"
	log "mmdebstrap took $(secs_since $t)s; tree $(du -sh "$tree" | cut -f1), apt-cache $(du -sh "$DIR/apt-cache" | cut -f1)"
	# What QEMU boots comes from the tree's /boot: Debian's Xen, kernel
	# and the initrd initramfs-tools made (virtio_blk and ext4 are
	# modules).
	mkdir -p "$boot" &&
	    zcat "$tree"/boot/xen-$XENVER-amd64.gz > "$boot/xen" &&
	    cp "$(ls "$tree"/boot/vmlinuz-* | head -n 1)" "$boot/vmlinuz" &&
	    cp "$(ls "$tree"/boot/initrd.img-* | head -n 1)" "$boot/initrd.img" &&
	    ls "$tree"/lib/modules | head -n 1 > "$boot/kver" ||
	    fail $step "no xen-$XENVER-amd64.gz, vmlinuz or initrd.img in $tree/boot"
	# The tree's size plus room for the journal, Prometheus' data and
	# vmbuildd's state.
	mb=$(( $(du -sm "$tree" | cut -f1) + 1024 ))
	truncate -s ${mb}M "$img" &&
	    mkfs.ext4 -q -F -L debhost -d "$tree" "$img" ||
	    fail $step "mkfs.ext4 -d $tree"
	rm -rf "$tree"
	echo "$key" > "$DIR/rootfs.key"
	log "rootfs.img: ${mb} MiB, $(du -sh "$img" | cut -f1) used"
fi

# ------------------------------------------------------------- Linux guest
# The Linux guest of the main lab (tests/lab/linux-init.sh as /init):
# the host's own kernel (lab-checks takes it from /boot), an initramfs
# of this machine's static busybox, xenstore and the guest's device
# modules, both from the archive's .debs the rootfs was made of; and
# its disk, an ext2 image holding payload.bin and its md5.
# /sbin/poweroff is what Linux runs when the toolstack asks it to shut
# down (control/shutdown): busybox's poweroff -f, as /init is no init
# daemon to signal.
step=guest
kver=$(cat "$boot/kver")
G=$DIR/guest
rm -rf "$G" && mkdir -p "$G/x" "$G/root"/{bin,sbin,proc,sys,dev,tmp,lib64,lib/modules,usr/lib/x86_64-linux-gnu} "$G/disk" ||
    fail $step "mkdir $G"
for d in "$DIR"/apt-cache/linux-image-"$kver"_*.deb "$DIR"/apt-cache/xenstore-utils_*.deb \
    "$DIR"/apt-cache/libxenstore4_*.deb "$DIR"/apt-cache/libxentoolcore1_*.deb; do
	dpkg-deb -x "$d" "$G/x" || fail $step "dpkg-deb -x $d (not in $DIR/apt-cache?)"
done
R=$G/root
cp /bin/busybox "$R/bin/" && cp "$G/x/usr/bin/xenstore" "$R/bin/" &&
    ln -s xenstore "$R/bin/xenstore-read" && ln -s ../usr/lib/x86_64-linux-gnu "$R/lib/x86_64-linux-gnu" &&
    install -m 0755 tests/lab/linux-init.sh "$R/init" &&
    printf '#!/bin/busybox sh\nexec /bin/busybox poweroff -f\n' > "$R/sbin/poweroff" &&
    chmod 0755 "$R/sbin/poweroff" || fail $step "busybox (scripts/deps.sh lab), xenstore, /init"
for l in $(LD_LIBRARY_PATH=$G/x/usr/lib/x86_64-linux-gnu ldd "$R/bin/xenstore" |
    awk '/=> \// {print $3} /^[ \t]*\/lib64\// {print $1}'); do
	case $l in
	*/ld-linux-x86-64.so.2) cp -L "$l" "$R/lib64/" ;;
	*) cp -L "$l" "$R/usr/lib/x86_64-linux-gnu/" ;;
	esac || fail $step "copy $l"
done
# gmods M...: each module and, first, what it depends on (modinfo's
# depends=), in the order linux-init.sh loads them (devices.order).
gmods() {
	local m f dep
	for m in "$@"; do
		grep -qx "$m" "$R/lib/modules/devices.order" 2>/dev/null && continue
		f=$(find "$G/x/lib/modules/$kver/kernel" -name "$m.ko*" | head -n 1)
		[ -n "$f" ] || { log "module $m not in linux-image-$kver"; return 1; }
		case $f in
		*.xz) xz -dc "$f" ;; *.zst) zstd -qdc "$f" ;; *) cat "$f" ;;
		esac > "$R/lib/modules/$m.ko" || return 1
		for dep in $(tr '\0' '\n' < "$R/lib/modules/$m.ko" |
		    sed -n 's/^depends=//p' | head -n 1 | tr ',' ' '); do
			gmods "$dep" || return 1
		done
		echo "$m" >> "$R/lib/modules/devices.order"
	done
}
gmods xen-blkfront xen-netfront ext4 crc32c_generic || fail $step "the guest's modules"
(cd "$R" && find . | cpio -o -H newc 2>/dev/null | gzip -1) > "$G/linux-initrd.gz" ||
    fail $step "cpio"
head -c 1048576 /dev/urandom > "$G/disk/payload.bin" &&
    (cd "$G/disk" && md5sum payload.bin > payload.md5) &&
    truncate -s 8M "$G/linux-disk.img" &&
    mke2fs -q -F -t ext2 -L debhost-linux -d "$G/disk" "$G/linux-disk.img" ||
    fail $step "the guest's disk (mke2fs -d)"
log "Linux guest: kernel $kver, initramfs $(du -h "$G/linux-initrd.gz" | cut -f1)"

# ------------------------------------------------------------- lab disk
step=labdisk
score=$(sed -n 's/.*rates it \([0-9.]*\).*/\1/p' man/vmbuildd.8.scd | head -n 1)
[ -n "$score" ] || fail $step "no 'rates it N' in man/vmbuildd.8.scd"
rm -rf "$DIR/lab" && mkdir -p "$DIR/lab" &&
    install -m 0755 "$here/lab-checks" "$DIR/lab/" &&
    install -m 0644 "$here/debhost-hello.cfg" "$here/debhost-linux.cfg" "$DIR/lab/" &&
    install -m 0644 "$newer" "$G/linux-initrd.gz" "$G/linux-disk.img" "$DIR/lab/" &&
    echo "CLAIMED_SCORE=$score" > "$DIR/lab/lab.conf" ||
    fail $step "fill $DIR/lab"
rm -f "$DIR/lab.img" && truncate -s 64M "$DIR/lab.img" &&
    mkfs.ext4 -q -F -L labchecks -d "$DIR/lab" "$DIR/lab.img" ||
    fail $step "mkfs.ext4 -d $DIR/lab"
# Each run boots a fresh copy: the journal, vmbuildd's state and
# Prometheus' data of an earlier run would change what is checked.
cp --sparse=always "$img" "$DIR/disk.img" || fail $step "copy rootfs.img"
[ "$DEBHOST_STOP" = image ] && { log "disks made; stopping (DEBHOST_STOP=image)"; exit 0; }

# ------------------------------------------------------------- boot
# The lab's machine and Xen command line (tests/lab/run.sh), without NUMA:
# spec-ctrl=eager-fpu because Xen's lazy FPU switching on the emulated
# AMD CPU let dom0's programs die of faults now and then under TCG.
step=qemu
xen_cmdline="console=com1 com1=115200,8n1 dom0_mem=$DEBHOST_DOM0_MEM,max:$DEBHOST_DOM0_MEM loglvl=all guest_loglvl=all conring_size=4m console_timestamps=boot spec-ctrl=eager-fpu $DEBHOST_XEN_EXTRA"
dom0_cmdline="root=/dev/vda ro console=hvc0 $DEBHOST_DOM0_EXTRA"
log "qemu: -smp $DEBHOST_SMP -m $DEBHOST_MEM, timeout ${DEBHOST_TIMEOUT}s; console -> $CONSOLE"
log "xen: $xen_cmdline"
log "dom0: $dom0_cmdline"
q0=${EPOCHREALTIME/./}
timeout --kill-after=5 "$DEBHOST_TIMEOUT" qemu-system-x86_64 -accel tcg,thread=multi \
    -cpu max,-smap,-rdtscp -m "$DEBHOST_MEM" -smp "$DEBHOST_SMP" -nographic \
    -monitor none -serial stdio $DEBHOST_QEMU_EXTRA \
    -d cpu_reset,guest_errors -D "$DIR/qemu-debug.log" \
    -drive file="$DIR/disk.img",if=virtio,format=raw \
    -drive file="$DIR/lab.img",if=virtio,format=raw,readonly=on \
    -kernel "$boot/xen" -append "$xen_cmdline" \
    -initrd "$boot/vmlinuz $dom0_cmdline,$boot/initrd.img" </dev/null 2>&1 |
while IFS= read -r line; do
	el=$(( (${EPOCHREALTIME/./} - q0) / 10000 ))
	printf "[%4d.%02d] %s\n" $((el / 100)) $((el % 100)) "${line//$'\r'/}"
done > "$CONSOLE"
qrc=${PIPESTATUS[0]}
qsecs=$(secs_since $q0)

# ------------------------------------------------------------- judge
"$here/judge.sh" "$CONSOLE" "$qrc" "$qsecs" | tee "$DIR/summary.txt"
rc=${PIPESTATUS[0]}
log "done in $(elapsed)s"
exit "$rc"
