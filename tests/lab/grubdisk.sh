# tests/lab/grubdisk.sh - the disk image of the lab's grub and grubhvm
# steps, sourced by tests/lab/run.sh and tests/lab/grubdisk-test.sh (which
# checks it without QEMU).  The caller gives log MESSAGE.
#
# The grub step's disk (LAB_STEPS grub): an MBR partition table with one
# bootable ext4 partition holding Debian's kernel, the Linux guest's
# initramfs and tests/lab/grub.cfg as /boot/grub/grub.cfg, which GRUB
# for Xen PVH finds and follows.  Made without root, loop devices or
# mounts (mkfs.ext4 -d into a partition image, sfdisk, dd), and made
# again only when what goes into it changed (its stamp: the contents,
# not the times, of the kernel, the initramfs tree, grub.cfg and this
# file's making of it).
GRUB_DISK_LIB=${BASH_SOURCE[0]}
GRUB_PC=${GRUB_PC:-/usr/lib/grub/i386-pc}

# grub_disk DIR KERNEL INITRD TREE CFG: DIR/disk.img with KERNEL, INITRD
# (made from the directory TREE: the stamp reads TREE, as the gzip'd
# cpio of it differs in its times from one run to the next) and CFG.
grub_disk() {
	local gd=$1 kernel=$2 initrd=$3 tree=$4 cfg=$5 st
	st=$( (md5sum "$kernel" "$cfg" "$GRUB_DISK_LIB"; ls -l $GRUB_PC/boot.img 2>/dev/null; cd "$tree" &&
	    find . -type f -exec md5sum {} + && find . -type l -printf '%p -> %l\n') |
	    sort | md5sum | cut -d' ' -f1)
	[ "$(cat "$gd/.stamp" 2>/dev/null)" = "$st" ] && [ -f "$gd/disk.img" ] && return 0
	rm -rf "$gd" && mkdir -p "$gd/root/boot/grub" || return 1
	cp "$kernel" "$gd/root/boot/vmlinuz" && cp "$initrd" "$gd/root/boot/initrd.gz" &&
	    cp "$cfg" "$gd/root/boot/grub/grub.cfg" || return 1
	# The partition: its files and 16 MiB more (the journal, GRUB's room).
	local mb=$(( $(du -sm "$gd/root" | cut -f1) + 16 ))
	truncate -s ${mb}M "$gd/part.img" &&
	    mkfs.ext4 -q -F -L vmbuild-grub -d "$gd/root" "$gd/part.img" || return 1
	# The disk: 1 MiB before the partition (sector 2048, as installers
	# leave it; GRUB for BIOS lives there), then the partition.
	truncate -s $((mb + 1))M "$gd/disk.img" &&
	    echo 'start=2048, type=83, bootable' | sfdisk -q --label dos "$gd/disk.img" &&
	    dd if="$gd/part.img" of="$gd/disk.img" bs=1M seek=1 conv=notrunc status=none &&
	    grub_bios "$gd" || return 1
	rm -rf "$gd/root" "$gd/part.img" "$gd/core.img" "$gd/early.cfg"
	echo "$st" > "$gd/.stamp"
	log "grub disk: $gd/disk.img, $((mb + 1)) MiB: MBR, ext4 partition 1 with /boot/{vmlinuz,initrd.gz,grub/grub.cfg}"
}

# grub_bios DIR: GRUB for BIOS (grub-pc-bin) on DIR/disk.img, for the
# grubhvm step's SeaBIOS, placed as grub-install places it: core.img
# (with the modules it needs: the disk has no /boot/grub/i386-pc) from
# sector 1 in the gap before the partition, where diskboot.img's and
# boot.img's default block lists point; boot.img's code in the MBR
# before the disk signature and partition table, its jump over the
# boot-drive check turned into NOPs (the BIOS's drive number is used).
grub_bios() {
	[ -f $GRUB_PC/boot.img ] || { log "no $GRUB_PC/boot.img (grub-pc-bin): the disk has no GRUB for BIOS"; return 0; }
	# Its first words on the serial port too (the guest's console; GRUB
	# says nothing there by default): the disk's grub.cfg comes next.
	printf '%s\n' 'serial --unit=0 --speed=115200' 'terminal_output serial console' \
	    'echo "lab-grub: GRUB for BIOS, prefix $prefix"' > "$1/early.cfg" &&
	    grub-mkimage -O i386-pc -d $GRUB_PC -p '(hd0,msdos1)/boot/grub' -c "$1/early.cfg" \
	    -o "$1/core.img" biosdisk part_msdos ext2 normal linux echo test configfile \
	    serial terminal || return 1
	# It must fit before the partition (sectors 1 to 2047).
	[ $(stat -c %s "$1/core.img") -le $((2047 * 512)) ] || { log "core.img too big"; return 1; }
	dd if="$1/core.img" of="$1/disk.img" bs=512 seek=1 conv=notrunc status=none &&
	    dd if=$GRUB_PC/boot.img of="$1/disk.img" bs=440 count=1 conv=notrunc status=none &&
	    printf '\220\220' | dd of="$1/disk.img" bs=1 seek=$((0x66)) conv=notrunc status=none
}
