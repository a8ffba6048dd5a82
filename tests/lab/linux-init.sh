#!/bin/busybox sh
# linux-init.sh - /init of the lab's Linux guest (Debian's own kernel, a
# busybox initramfs built by run.sh), the same under xl and vmbuild.
#
# It prints one line, from what Linux itself sees:
#   vmbuild-linux: domid=N memtotal_kib=N cpus=N nodes=N
# on its PV console (hvc0: xenconsoled logs it per domain, dom0 reads it
# there).  Not on Xen's debug port 0xe9 through /dev/port: twice the lab's
# QEMU machine stopped right after such writes from a Linux guest.  Then
# it keeps a shell on the console, for whoever attaches to it.
#
# To add a check: write a function below and call it from main; start
# its lines with "vmbuild-linux: ".
/bin/busybox --install -s /bin
export PATH=/bin LD_LIBRARY_PATH=/lib/x86_64-linux-gnu

# say LINE: on the console.
say() {
	echo "$1" > /dev/console
}

# count_list "0-1,3": how many numbers a kernel list names.
count_list() {
	echo "$1" | tr ',' '\n' | awk -F- '
	    NF == 2 { n += $2 - $1 + 1; next } NF == 1 && $1 != "" { n++ }
	    END { print n + 0 }'
}

mounts() {
	mount -t proc proc /proc
	mount -t sysfs sys /sys
	mount -t devtmpfs dev /dev
	mkdir -p /proc/xen /dev/pts
	mount -t xenfs xenfs /proc/xen 2>/dev/null
}

# fact NAME CMD...: CMD's output, read up to three times while it is
# empty.  Each of these commands prints something whenever it runs, so
# an empty output is a program that died: under a loaded TCG the
# emulated CPU now and then kills one at its first thread-local read
# (tests/lab/README.md: dom0's programs).  A second try is said, so
# the machine's fault stays visible and is not the guest's answer.
fact() {
	local name=$1 v i
	shift
	for i in 1 2 3; do
		v=$("$@")
		if [ -n "$v" ]; then
			[ "$i" -gt 1 ] &&
			    say "vmbuild-linux: $name read again (try $i: the first died)"
			echo "$v"
			return 0
		fi
	done
	return 1
}

online_cpus() {
	count_list "$(cat /sys/devices/system/cpu/online)"
}

node_count() {
	ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l
}

facts() {
	domid=$(xenstore-read domid 2>/dev/null || echo unknown)
	memtotal=$(fact memtotal awk '/^MemTotal:/ { print $2 }' /proc/meminfo)
	cpus=$(fact cpus online_cpus)
	nodes=$(fact nodes node_count)
	say "vmbuild-linux: domid=$domid memtotal_kib=$memtotal cpus=$cpus nodes=$nodes"
}

# The lab's HVM guest (lab_hvm on its command line: dom0-init.sh's hvm
# step boots this kernel and initramfs through QEMU): one line on its
# console (the emulated serial port), with what devices() found of its
# PV disk and vif (no: it was given none, lab_nodev).
# Booted from its disk by its BIOS and GRUB (lab_grub, grub_facts): the
# line ends in booted_from=disk.
hvm_facts() {
	_from=""
	[ -n "$booted_from" ] && _from=" booted_from=disk"
	case "$booted_from" in fail*) _from=" booted_from=$booted_from" ;; esac
	say "vmbuild-hvm: domid=$domid memtotal_kib=$memtotal cpus=$cpus nodes=$nodes disk=${disk:-no} net=${net:-no}$_from"
}

# The lab's GRUB guest (lab_grub: the menu entry of the grub step's
# disk image, tests/lab/grub.cfg, which GRUB read from that disk): the
# disk it booted from is the one whose partition root= names, when that
# partition holds the grub.cfg of the entry; one line on its console:
#   vmbuild-grub: domid=N memtotal_kib=N booted_from=xvda
# (booted_from=fail(why) otherwise).
grub_facts() {
	dev_modules
	booted_from=$(grub_disk)
	say "vmbuild-grub: domid=$domid memtotal_kib=$memtotal booted_from=$booted_from"
}

# grub_disk: the disk of root= (xvda of /dev/xvda1) if it holds
# /boot/grub/grub.cfg with this entry; fail(why) if not.
grub_disk() {
	_part=$(arg root); _part=${_part#/dev/}
	_disk=$(echo "$_part" | sed 's/[0-9]*$//')
	[ -n "$_part" ] || { echo "fail(no-root=)"; return; }
	wait_for /dev/$_part 30 || { echo "fail(no-$_part)"; return; }
	ready $_part 30 dd if=/dev/$_part of=/dev/null bs=4096 count=1 ||
	    { echo "fail($_part-unreadable)"; return; }
	mkdir -p /mnt
	mount -t ext4 -o ro /dev/$_part /mnt 2>/tmp/mount.err ||
	    { say "vmbuild-grub: mount $_part: $(cat /tmp/mount.err)"; echo "fail(mount)"; return; }
	grep -q 'lab_grub' /mnt/boot/grub/grub.cfg 2>/dev/null ||
	    { umount /mnt; echo "fail(no-grub.cfg-on-$_part)"; return; }
	say "vmbuild-grub: $_part holds /boot/grub/grub.cfg, /boot/vmlinuz $(wc -c < /mnt/boot/vmlinuz) bytes; kernel $(uname -r)"
	umount /mnt
	echo "$_disk"
}

# What Linux made of the tables and map it was given, for the log.
details() {
	for n in /sys/devices/system/node/node[0-9]*; do
		[ -d "$n" ] || continue
		say "vmbuild-linux: ${n##*/} cpus=$(cat $n/cpulist) kib=$(awk '/MemTotal/ { print $4 }' $n/meminfo)"
	done
	dmesg | grep -E 'BIOS-e820|ACPI: (SRAT|SLIT|APIC|XSDT|RSDP)|ACPI Error|NUMA' |
	    sed 's/^\[[ 0-9.]*\] //' > /dev/console
}

# dev_modules: the PV device drivers, in their dependency order.
dev_modules() {
	for m in $(cat /lib/modules/devices.order 2>/dev/null); do
		insmod /lib/modules/$m.ko 2>/dev/null
	done
}

# arg NAME: the value of NAME= on the kernel command line.
arg() {
	sed -n "s/^.*[ ]$1=\([^ ]*\).*$/\1/p" /proc/cmdline
}

# The PV devices linux.cfg gives (xvda: an ext2 image holding
# payload.bin and its md5; eth0 on dom0's bridge), one line:
#   vmbuild-linux-dev: disk=ok net=ok    (=fail(why) otherwise)
devices() {
	dev_modules
	disk=$(dev_disk)
	net=$(dev_net)
	say "vmbuild-linux-dev: disk=$disk net=$net"
	hotplug_watch &
}

# wait_for PATH SECS
wait_for() {
	i=0
	while [ ! -e "$1" ] && [ $i -lt $2 ]; do sleep 1; i=$((i + 1)); done
	[ -e "$1" ]
}

# ready WHAT SECS CMD...: wait until CMD succeeds, saying so when it did
# not at once.  A device's node or sysfs entry comes before the device
# can be used: device_add_disk() makes /dev/xvdX before bdev_add() (an
# open in between, mount's, fails with ENXIO), and register_netdevice()
# makes /sys/class/net/ethN before it lists the device by name (ip finds
# no such device).  Under TCG on a loaded machine the window is wide.
ready() {
	_w=$1 _s=$2 _i=0; shift 2
	until "$@" >/dev/null 2>&1; do
		_i=$((_i + 1))
		[ $_i -ge $((_s * 5)) ] && { say "vmbuild-linux-dev: $_w not usable after ${_s} s"; return 1; }
		usleep 200000
	done
	[ $_i -gt 0 ] && say "vmbuild-linux-dev: $_w usable after $_i tries (its node came first)"
	return 0
}

# xvda (or lab_disk=: the grubhvm guest's boots from xvda, its payload
# disk is xvdb): mount it, check payload.bin against payload.md5, write a
# file (read-write), read it back after a read-only remount.
dev_disk() {
	d=$(arg lab_disk); d=${d:-xvda}
	wait_for /dev/$d 30 || { echo "fail(no-$d)"; return; }
	ready $d 30 dd if=/dev/$d of=/dev/null bs=4096 count=1 ||
	    { echo "fail($d-unreadable)"; return; }
	mkdir -p /mnt
	# Its error, and the kernel's last words, say why if it cannot.
	if ! mount -t ext4 /dev/$d /mnt 2>/tmp/mount.err; then
		say "vmbuild-linux-dev: mount $d: $(cat /tmp/mount.err); size $(cat /sys/block/$d/size) sectors"
		dmesg | tail -n 8 | sed 's/^/vmbuild-linux-dev: dmesg: /' | while read -r l; do say "$l"; done
		echo "fail(mount)"; return
	fi
	(cd /mnt && md5sum -c payload.md5 >/dev/null 2>&1) ||
	    { umount /mnt; echo "fail(md5)"; return; }
	echo "$domid" > /mnt/written-by-domain && sync && umount /mnt &&
	    mount -t ext4 -o ro /dev/$d /mnt &&
	    [ "$(cat /mnt/written-by-domain)" = "$domid" ] ||
	    { umount /mnt 2>/dev/null; echo "fail(write)"; return; }
	umount /mnt
	say "vmbuild-linux-dev: $d $(cat /sys/block/$d/size) sectors, payload.bin md5 ok, written and read back"
	echo ok
}

# eth0: lab_ip=/24 on it, then dom0 (lab_peer=) must answer a ping.
dev_net() {
	ip=$(arg lab_ip) peer=$(arg lab_peer)
	wait_for /sys/class/net/eth0 30 || { echo "fail(no-eth0)"; return; }
	ready eth0 30 ip link show dev eth0 || { echo "fail(eth0-unlisted)"; return; }
	ip link set eth0 up && ip addr add $ip/24 dev eth0 ||
	    { echo "fail(ip)"; return; }
	i=0
	until ping -c 1 -W 2 $peer >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -ge 15 ] && { echo "fail(ping-$peer)"; return; }
	done
	say "vmbuild-linux-dev: eth0 $(cat /sys/class/net/eth0/address) $ip pings $peer"
	echo ok
}

# lab_netonly (dom0-init.sh's migrate step): the vif only, no disk (a
# disk of one host's dom0 is not the other's): eth0 at lab_ip=, dom0
# (lab_peer=) answering a ping, one line:
#   vmbuild-linux-dev: disk=no net=ok
# Then it answers pings wherever it runs: after a migration its
# netfront reconnects to the new host's netback and announces its
# address (a gratuitous ARP), with nothing of ours to do.
net_only() {
	dev_modules
	net=$(dev_net)
	say "vmbuild-linux-dev: disk=no net=$net"
}

# Devices that come and go while it runs (vmctl disk-attach, net-attach):
# xvdb (its first line), eth1.
hotplug_watch() {
	disk=gone net=gone
	while :; do
		if [ -b /dev/xvdb ] && [ $disk = gone ] &&
		    ready xvdb 30 dd if=/dev/xvdb of=/dev/null bs=4096 count=1; then
			disk=seen
			say "vmbuild-linux-dev: hotplug xvdb=seen $(cat /sys/block/xvdb/ro 2>/dev/null | sed 's/1/ro/;s/0/rw/') $(head -n 1 /dev/xvdb 2>/dev/null)"
		elif [ ! -b /dev/xvdb ] && [ $disk = seen ]; then
			disk=gone
			say "vmbuild-linux-dev: hotplug xvdb=gone"
		fi
		if [ -e /sys/class/net/eth1 ] && [ $net = gone ] &&
		    ready eth1 30 ip link show dev eth1; then
			net=seen
			say "vmbuild-linux-dev: hotplug eth1=seen $(cat /sys/class/net/eth1/address)"
		elif [ ! -e /sys/class/net/eth1 ] && [ $net = seen ]; then
			net=gone
			say "vmbuild-linux-dev: hotplug eth1=gone"
		fi
		sleep 2
	done
}

# What the toolstack changes while it runs (vmctl mem-set and vcpu-set,
# xl's): MemTotal (the balloon driver gives pages back and takes them
# off the total) and the online CPUs (the xenbus cpu watcher follows
# cpu/N/availability), one line each time either changes:
#   vmbuild-linux-state: memtotal_kib=N cpus=N
# A read that came back empty (a program that died: see fact) is not a
# change and is not said.
resize_watch() {
	last=""
	while :; do
		m=$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)
		c=$(online_cpus)
		if [ -n "$m" ] && [ -n "$c" ] && [ "$m $c" != "$last" ]; then
			last="$m $c"
			say "vmbuild-linux-state: memtotal_kib=$m cpus=$c"
		fi
		sleep 2
	done
}

# The PV control node: Linux's xenbus shutdown watcher announces
# control/feature-poweroff and feature-reboot and, asked through
# control/shutdown (vmctl shutdown, xl shutdown), runs the kernel's
# poweroff_cmd, /sbin/poweroff (reboot_cmd, /sbin/reboot): busybox's,
# forced, as this init is no init busybox could signal.
pv_control() {
	mkdir -p /sbin
	printf '#!/bin/sh\nexec /bin/busybox poweroff -f\n' > /sbin/poweroff
	printf '#!/bin/sh\nexec /bin/busybox reboot -f\n' > /sbin/reboot
	chmod +x /sbin/poweroff /sbin/reboot
}

# lab_count (dom0-init.sh's saverestore and migrate): a count on the console each
# second with this boot's id, which a restored guest goes on with and a
# rebooted one would start again under a new id:
#   vmbuild-linux-count: n=N boot=B
counter() {
	b=$(cut -c1-8 /proc/sys/kernel/random/boot_id)
	n=0
	while :; do
		n=$((n + 1))
		say "vmbuild-linux-count: n=$n boot=$b"
		sleep 1
	done
}

main() {
	mounts
	pv_control
	facts
	details
	case " $(cat /proc/cmdline) " in
	*" lab_count "*) counter & ;;
	esac
	case " $(cat /proc/cmdline) " in
	*" lab_nodev "*) ;;
	*" lab_netonly "*) net_only ;;
	*) devices ;;
	esac
	case " $(cat /proc/cmdline) " in
	*" lab_grub "*) grub_facts ;;
	esac
	case " $(cat /proc/cmdline) " in
	*" lab_hvm "*) hvm_facts ;;
	esac
	resize_watch &
	case " $(cat /proc/cmdline) " in
	*" lab_poweroff "*) poweroff -f ;;
	esac
	# A shell on the console (xl console / vmctl console attach here).
	while :; do
		setsid sh -c 'exec sh </dev/hvc0 >/dev/hvc0 2>&1'
		sleep 1
	done
}

main
