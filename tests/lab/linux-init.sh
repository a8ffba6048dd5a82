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

facts() {
	domid=$(xenstore-read domid 2>/dev/null || echo unknown)
	memtotal=$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)
	cpus=$(count_list "$(cat /sys/devices/system/cpu/online)")
	nodes=$(ls -d /sys/devices/system/node/node[0-9]* 2>/dev/null | wc -l)
	say "vmbuild-linux: domid=$domid memtotal_kib=$memtotal cpus=$cpus nodes=$nodes"
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

main() {
	mounts
	pv_control
	facts
	details
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
