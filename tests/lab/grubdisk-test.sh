#!/bin/bash
# grubdisk-test.sh - the grub steps' disk image (tests/lab/grubdisk.sh)
# without QEMU: made from a stand-in kernel and initramfs tree, then read
# back with GRUB's own file-system and partition code (grub-fstest), its
# MBR and boot gap compared with what grub-install would write, and its
# cache: kept while its inputs are the same, made again when one changed.
# TAP on stdout.  Skipped without the Debian tools it uses.
set -u
cd "$(dirname "$0")/../.." || exit 2
n=0 bad=0
ok() {	# ok COND-RC NAME [WHY]
	n=$((n + 1))
	if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2${3:+: $3}"; bad=$((bad + 1)); fi
}
for t in mkfs.ext4 sfdisk grub-fstest grub-mkimage; do
	command -v $t >/dev/null || { echo "1..0 # SKIP $t missing (scripts/deps.sh lab)"; exit 0; }
done
[ -f /usr/lib/grub/i386-pc/boot.img ] || { echo "1..0 # SKIP grub-pc-bin missing (scripts/deps.sh lab)"; exit 0; }
log() { echo "# $*"; }
. tests/lab/grubdisk.sh
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
mkdir -p "$w/tree/bin" && echo '#!/bin/sh' > "$w/tree/init" && ln -s init "$w/tree/bin/sh" &&
    head -c 3000000 /dev/urandom > "$w/vmlinuz" && head -c 700000 /dev/urandom > "$w/initrd.gz" &&
    cp tests/lab/grub.cfg "$w/grub.cfg" || exit 2
gd=$w/gd img=$w/gd/disk.img
fs() { grub-fstest "$img" "$@" 2>&1; }

grub_disk "$gd" "$w/vmlinuz" "$w/initrd.gz" "$w/tree" "$w/grub.cfg" >/dev/null
ok $? "grub_disk makes the disk"
d=$(sfdisk --dump "$img" 2>&1 | grep '^/')
echo "$d" | grep -qE 'start= *2048, size= *[0-9]+, type=83, bootable$' && [ $(echo "$d" | wc -l) = 1 ]
ok $? "one bootable Linux partition at sector 2048" "$d"
[ "$(fs cat '(loop0,msdos1)/boot/grub/grub.cfg')" = "$(cat "$w/grub.cfg")" ]
ok $? "GRUB finds /boot/grub/grub.cfg in partition 1 (msdos, ext4)" "$(fs ls '(loop0,msdos1)/')"
fs cmp '(loop0,msdos1)/boot/vmlinuz' "$w/vmlinuz" >/dev/null &&
    fs cmp '(loop0,msdos1)/boot/initrd.gz' "$w/initrd.gz" >/dev/null
ok $? "GRUB reads the kernel and the initramfs back unchanged"
grep -q 'menuentry' "$w/grub.cfg" && grep -q 'linux /boot/vmlinuz root=/dev/xvda1 .*lab_grub' "$w/grub.cfg" &&
    grep -q 'initrd /boot/initrd.gz' "$w/grub.cfg" && grep -q 'grub_platform.*xen_pvh' "$w/grub.cfg"
ok $? "grub.cfg boots /boot/vmlinuz with root=/dev/xvda1 lab_grub, the console by \$grub_platform"

# The MBR: boot.img's code (its drive-check jump NOPed, as grub-install
# does for a hard disk), then the partition table and the signature.
boot=/usr/lib/grub/i386-pc/boot.img
cmp -s -n $((0x66)) "$boot" "$img" && [ "$(od -An -tx1 -j $((0x66)) -N 2 "$img" | tr -d ' ')" = 9090 ] &&
    cmp -s -i $((0x68)) -n $((440 - 0x68)) "$boot" "$img"
ok $? "the MBR holds boot.img's code, the drive check NOPed"
[ "$(od -An -tx1 -j 510 -N 2 "$img" | tr -d ' ')" = 55aa ] &&
    [ "$(od -An -tx1 -j 446 -N 1 "$img" | tr -d ' ')" = 80 ]
ok $? "the partition table and the boot signature survive boot.img"
# Sector 1: diskboot.img (core.img's first sector), whose block list
# (start 2, then the rest of core.img) reaches its last sector before
# the partition.
dboot=/usr/lib/grub/i386-pc/diskboot.img
start=$(od -An -tu8 -j $((512 + 0x1f4)) -N 8 "$img" | tr -d ' ')
len=$(od -An -tu2 -j $((512 + 0x1fc)) -N 2 "$img" | tr -d ' ')
cmp -s -n $((0x1f4)) "$dboot" <(dd if="$img" bs=512 skip=1 count=1 status=none) &&
    [ "$start" = 2 ] && [ "$len" -gt 0 ] && [ $((start + len)) -le 2048 ]
ok $? "core.img from sector 1, its block list within the gap" "start=$start len=$len"

# The cache: the same inputs keep the disk, a changed one remakes it.
ino=$(stat -c %i:%Y "$img")
out=$(grub_disk "$gd" "$w/vmlinuz" "$w/initrd.gz" "$w/tree" "$w/grub.cfg")
[ $? = 0 ] && [ -z "$out" ] && [ "$(stat -c %i:%Y "$img")" = "$ino" ]
ok $? "the same inputs: the cached disk is kept" "$out"
touch -d '2001-01-01' "$w/tree/init"
out=$(grub_disk "$gd" "$w/vmlinuz" "$w/initrd.gz" "$w/tree" "$w/grub.cfg")
[ -z "$out" ]
ok $? "a new time on an initramfs file only: kept" "$out"
echo 'echo changed' >> "$w/tree/init"
out=$(grub_disk "$gd" "$w/vmlinuz" "$w/initrd.gz" "$w/tree" "$w/grub.cfg")
[ -n "$out" ]
ok $? "a changed initramfs file: made again"
echo '# changed' >> "$w/grub.cfg"
grub_disk "$gd" "$w/vmlinuz" "$w/initrd.gz" "$w/tree" "$w/grub.cfg" >/dev/null &&
    [ "$(fs cat '(loop0,msdos1)/boot/grub/grub.cfg')" = "$(cat "$w/grub.cfg")" ]
ok $? "a changed grub.cfg: made again, the new one on the disk"
echo "1..$n"
exit $((bad > 0))
