#!/bin/bash
# customize.sh ROOT DEBDIR - mmdebstrap's --customize-hook for the debhost
# lab (run.sh): make the Debian 12 tree in ROOT a Xen host that runs
# vmbuild from its package.  Runs on the build machine as root, before
# mmdebstrap cleans up; ROOT's /proc, /sys and /dev are mounted.
#
#  - vmbuild and python3-vmbuild with `apt-get install ./vmbuild_*.deb`:
#    apt resolves their dependencies from the archive, nothing is copied
#    by hand;
#  - users alice (in group vmbuild, made by the package's sysusers.d
#    file) and bob (not: read-only access);
#  - fstab: / on the first virtio disk, the lab disk (label labchecks,
#    tests/lab/debhost/lab-checks and the guest config) on /lab;
#  - lab-checks.service, enabled; Prometheus scraping vmbuildd;
#  - the bridge xenbr0 (10.99.0.1/24) by systemd-networkd, for the Linux
#    guest's vif; xenconsoled logs each guest's console to a file;
#    xendomains masked (vmbuild-guests has the guests at shutdown and
#    boot: xendomains would `xl save` domains xl did not build);
#  - a persistent journal (the second boot reads the first's shutdown);
#  - the hostname, and no password for root on the console.
set -eux
root=$1 debs=$2 here=$(dirname "$0")

mkdir -p "$root/tmp/vmbuild-debs"
cp "$debs"/vmbuild_*.deb "$debs"/python3-vmbuild_*.deb "$root/tmp/vmbuild-debs/"
chroot "$root" sh -c 'cd /tmp/vmbuild-debs && DEBIAN_FRONTEND=noninteractive \
	apt-get install -y --no-install-recommends ./vmbuild_*.deb ./python3-vmbuild_*.deb'
rm -rf "$root/tmp/vmbuild-debs"
chroot "$root" dpkg-query -W vmbuild python3-vmbuild

chroot "$root" getent group vmbuild
chroot "$root" useradd -m -s /bin/bash -G vmbuild alice
chroot "$root" useradd -m -s /bin/bash bob

echo debhost > "$root/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\tdebhost\n' > "$root/etc/hosts"
cat > "$root/etc/fstab" <<'FSTAB'
/dev/vda		/	ext4	errors=remount-ro	0 1
LABEL=labchecks	/lab	ext4	ro,nofail		0 2
FSTAB
mkdir -p "$root/lab"
chroot "$root" passwd -d root

install -m 0644 "$here/lab-checks.service" "$root/etc/systemd/system/"
chroot "$root" systemctl enable lab-checks.service
install -m 0644 "$here/prometheus.yml" "$root/etc/prometheus/prometheus.yml"
# A lab machine has no keys to keep: sshd's are made at package
# install; nothing else needs a network.
chroot "$root" systemctl enable prometheus.service ssh.service

cat > "$root/etc/systemd/network/50-xenbr0.netdev" <<'NETDEV'
[NetDev]
Name=xenbr0
Kind=bridge
NETDEV
cat > "$root/etc/systemd/network/50-xenbr0.network" <<'NETWORK'
[Match]
Name=xenbr0

[Network]
Address=10.99.0.1/24
ConfigureWithoutCarrier=yes
NETWORK
chroot "$root" systemctl enable systemd-networkd.service
# Nothing here waits for a network to come online: the bridge has no
# uplink, and the wait would hold the boot up to its timeout.
chroot "$root" systemctl mask systemd-networkd-wait-online.service
echo 'XENCONSOLED_ARGS="--log=guest"' >> "$root/etc/default/xen"
chroot "$root" systemctl mask xendomains.service
mkdir -p "$root/var/log/journal"
chroot "$root" systemd-tmpfiles --create --prefix /var/log/journal
