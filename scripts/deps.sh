#!/bin/bash
# deps.sh GROUP... - install the Debian packages a group of targets needs.
#
# Groups: build (compile everything), check (run the tests), lab (boot
# Xen under QEMU), xen (build the patched hypervisor, hypervisor/xen).  Only missing packages are installed, with one
# `apt-get update` per run; as non-root it lists them and fails instead.
set -eu
declare -A pk
pk[build]="build-essential pkg-config libxen-dev libyajl-dev libevent-dev
	   libsystemd-dev"
# check: cmocka for the unit tests, promtool (prometheus) for the metrics
# test, systemd-analyze (systemd) for the unit files, python3 for the
# protocol tests.
pk[check]="libcmocka-dev prometheus systemd procps util-linux python3"
pk[lab]="qemu-system-x86 busybox-static cpio xz-utils zstd gzip"
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
