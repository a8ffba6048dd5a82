#!/bin/bash
# deps.sh GROUP... - install the Debian packages a group of targets needs.
#
# Groups: build (compile everything), check (run the tests), bench (make
# bench: its plots), lab (boot Xen under QEMU), migrate (the two-host
# lab's keys), debhost (the Debian host lab), demo (make demo), xen (build the patched hypervisor,
# hypervisor/xen).  Only missing packages
# are installed, with one
# `apt-get update` per run; as non-root it lists them and fails instead.
set -eu
declare -A pk
# build: scdoc for the man pages.
pk[build]="build-essential pkg-config libxen-dev libyajl-dev libevent-dev
	   libsystemd-dev uuid-dev liblzma-dev zlib1g-dev scdoc"
# check: cmocka for the unit tests, promtool and the server (prometheus)
# for the metrics and rules tests, systemd-analyze (systemd) for the unit
# files, python3 for the protocol tests; tests/ops: the package build
# (dpkg-dev, debhelper, dh-python) and lintian, man and lexgrog (man-db),
# bash-completion, ansible-core and the checkers of ansible-test sanity
# (python3-voluptuous, pycodestyle, pylint, yamllint), pip in a venv (python3-venv,
# python3-pip, python3-setuptools, python3-wheel), strace (the units'
# system call filter); clang with its sanitizer and libFuzzer runtimes
# for the fuzz targets (their corpora are replayed), ss (iproute2) for
# the load test, useradd and groupadd (passwd) for the access test,
# OpenSSH's sshd and ssh (openssh-server, openssh-client) for migssh.py;
# grub-xen-host: GRUB for Xen PVH, which bootloader = "grub" loads;
# fdisk and grub-pc-bin for tests/lab/grubdisk-test.sh (the lab's GRUB
# disk image, read back by grub-fstest).
pk[check]="libcmocka-dev prometheus systemd procps util-linux python3
	   dpkg-dev debhelper dh-python lintian man-db bash-completion
	   ansible-core python3-voluptuous pycodestyle pylint yamllint
	   python3-venv python3-pip python3-setuptools
	   python3-wheel strace clang-14 libclang-rt-14-dev iproute2 passwd
	   openssh-server openssh-client grub-xen-host fdisk grub-pc-bin"
# bench: gnuplot draws bench/results/*.svg (gnuplot-nox: no X11 needed).
pk[bench]="gnuplot-nox python3"
# lab: e2fsprogs makes the Linux guest's disk image (mke2fs -d).
# fdisk: sfdisk writes the partition table of the grub step's disk,
# grub-pc-bin its GRUB for BIOS (grub-mkimage, boot.img).
pk[lab]="qemu-system-x86 busybox-static cpio xz-utils zstd gzip e2fsprogs
	 fdisk grub-pc-bin"
# migrate: the two-host lab (make check-xen-migrate) makes its ssh keys
# with ssh-keygen; its dom0s' OpenSSH comes from Debian's .debs.
pk[migrate]="openssh-client"
# debhost: the Debian host lab (make check-debhost) also makes dom0's
# root file system with mmdebstrap and builds the .debs (dpkg-dev,
# debhelper, dh-python: as tests/ops/deb.sh).
pk[debhost]="mmdebstrap dpkg-dev debhelper dh-python"
# xen-upstream: hypervisor/xen/check-upstream.sh and check-4.17.sh also
# configure Xen's tools (./configure wants iasl; Debian's source has only
# configure.ac: autoconf, autotools-dev) to build the series' tools/tests.
pk[xen-upstream]="build-essential bison flex python3 acpica-tools uuid-dev
	   libyajl-dev zlib1g-dev libncurses-dev autoconf autotools-dev"
# demo: python3 picks a free port and reads JSON and the metrics.
pk[demo]="python3"
# xen: Xen's hypervisor build (its Kconfig needs bison and flex, its
# build python3), dpkg-source to unpack Debian's source package.
pk[xen]="build-essential dpkg-dev bison flex python3 xz-utils"

want=()
for g in "$@"; do
	[ -n "${pk[$g]+x}" ] || { echo "deps.sh: unknown group $g" >&2; exit 2; }
	want+=(${pk[$g]})
done
missing=()
for p in "${want[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "deps.sh: missing packages: ${missing[*]}" >&2
	echo "deps.sh: run as root: apt-get install ${missing[*]}" >&2
	exit 1
fi
echo "deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
