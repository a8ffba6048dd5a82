#!/bin/bash
# deb.sh - the Debian packages, built from a throwaway copy of this tree
# (tracked files and new ones not ignored, as they are now).
#
# dpkg-buildpackage -b -us -uc builds vmbuild, hvsim, libvmbuild-dev and
# python3-vmbuild; lintian reports no error; each package holds what it
# should; the programs carry dpkg-buildflags' hardening (RELRO, BIND_NOW,
# fortified calls, stack protector), -Werror is not forced on the
# packager, and none of those flags reached the freestanding guest.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vmbuild-deb.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
. "$top/tests/tap.sh"

for tool in dpkg-buildpackage dh lintian readelf; do
	if ! command -v "$tool" >/dev/null; then
		echo "ok 1 - Debian packages # SKIP $tool is not installed"
		exit 0
	fi
done

if ! git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
	echo "ok 1 - Debian packages # SKIP not a git tree (the copy takes git's file list)"
	exit 0
fi
mkdir "$tmp/src"
(cd "$top" && git ls-files -z --cached --others --exclude-standard |
	while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
	xargs -0 cp -a --parents -t "$tmp/src")
cd "$tmp/src" || exit 1
if DEB_BUILD_OPTIONS="parallel=2" dpkg-buildpackage -b -us -uc \
    >"$tmp/build.log" 2>&1; then
	ok "dpkg-buildpackage -b -us -uc"
else
	not_ok "dpkg-buildpackage -b -us -uc"
	tail -25 "$tmp/build.log" | sed 's/^/# /'
	tap_done; exit
fi
cd "$tmp" || exit 1
for p in vmbuild hvsim libvmbuild-dev python3-vmbuild; do
	check "package $p built" test -n "$(ls ${p}_*.deb 2>/dev/null)"
done

if lintian --fail-on error ./*.deb >"$tmp/lintian.log" 2>&1; then
	ok "lintian --fail-on error: no error ($(grep -c '^[WI]:' "$tmp/lintian.log") warnings and notes)"
else
	not_ok "lintian --fail-on error"
	grep '^E:' "$tmp/lintian.log" | head -10 | sed 's/^/# /'
fi
grep '^[WI]:' "$tmp/lintian.log" | sed 's/^/# /'

# contents PACKAGE PATH...: each path is in the package.
contents() {
	local p=$1 f missing=()
	shift
	dpkg-deb -c "$tmp"/${p}_*.deb | awk '{print $6}' | sed 's|^\./|/|' >"$tmp/$p.list"
	for f in "$@"; do
		grep -qx -- "$f" "$tmp/$p.list" || missing+=("$f")
	done
	if [ ${#missing[@]} -eq 0 ]; then ok "$p holds its $# files"; else
		not_ok "$p lacks ${missing[*]}"; fi
}
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
contents vmbuild /usr/sbin/vmbuildd /usr/bin/vmctl \
	/usr/bin/vmb-config-check /usr/share/man/man1/vmb-config-check.1.gz \
	/lib/systemd/system/vmbuildd.service /lib/systemd/system/vmbuildd.socket \
	/usr/lib/sysusers.d/vmbuild.conf /usr/lib/tmpfiles.d/vmbuild.conf \
	/usr/share/man/man1/vmctl.1.gz /usr/share/man/man8/vmbuildd.8.gz \
	/usr/share/man/man5/vmbuild.cfg.5.gz /usr/share/man/man5/vmbuild-stream.5.gz \
	/usr/share/bash-completion/completions/vmctl \
	/usr/lib/vmbuild/hello.elf /usr/share/doc/vmbuild/examples/numa2.cfg \
	/usr/share/vmbuild/prometheus/vmbuild.rules.yml \
	/lib/systemd/system/vmbuild-guests.service \
	/usr/libexec/vmbuild/vmbuild-guests /etc/default/vmbuild /etc/vmbuild/auto/ \
	/usr/share/man/man8/vmbuild-guests.8.gz
contents hvsim /usr/sbin/hvsim /usr/share/man/man8/hvsim.8.gz \
	/lib/systemd/system/hvsim.service /etc/default/hvsim
contents libvmbuild-dev /usr/include/vmbuild/vmbuild.h \
	/usr/lib/$ma/libvmbuild.a /usr/lib/$ma/libhvclient.a \
	/usr/lib/$ma/pkgconfig/vmbuild.pc
contents python3-vmbuild /usr/lib/python3/dist-packages/vmbuild/client.py \
	/usr/share/ansible/collections/ansible_collections/vmbuild/xen/plugins/modules/vm.py

mkdir "$tmp/x"
for d in "$tmp"/vmbuild_*.deb "$tmp"/hvsim_*.deb; do dpkg-deb -x "$d" "$tmp/x"; done
dpkg-deb -e "$tmp"/vmbuild_*.deb "$tmp/ctl"
check "the postinst makes group vmbuild (systemd-sysusers)" \
	grep -q 'systemd-sysusers.*vmbuild.conf' "$tmp/ctl/postinst"
check "the postinst makes /run/vmbuild (systemd-tmpfiles)" \
	grep -q 'systemd-tmpfiles.*--create vmbuild.conf' "$tmp/ctl/postinst"
check "the postinst enables vmbuildd.socket" \
	grep -q "deb-systemd-helper enable 'vmbuildd.socket'" "$tmp/ctl/postinst"
check "/etc/default/vmbuild is a conffile" \
	grep -qx /etc/default/vmbuild "$tmp/ctl/conffiles"
# Started at installation (its stop runs only if it is active), but an
# upgrade must not stop it: that would save or shut down every guest.
check "the postinst enables vmbuild-guests.service" \
	grep -q "deb-systemd-helper enable 'vmbuild-guests.service'" "$tmp/ctl/postinst"
if grep -q "vmbuild-guests.service" "$tmp/ctl/prerm" 2>/dev/null &&
    ! sed -n '/vmbuild-guests/,/^fi/p' "$tmp/ctl/prerm" | grep -q upgrade &&
    ! grep -q "restart 'vmbuild-guests.service'\|restart vmbuild-guests" "$tmp/ctl/postinst"; then
	ok "vmbuild-guests.service: an upgrade neither stops nor restarts it"
else
	not_ok "vmbuild-guests.service: an upgrade neither stops nor restarts it"
	grep -n -A3 vmbuild-guests "$tmp/ctl/prerm" "$tmp/ctl/postinst" 2>&1 | sed 's/^/# /' | head -20
fi
dpkg-deb -e "$tmp"/hvsim_*.deb "$tmp/hctl"
# --no-enable --no-start: enabled again on upgrade only if the
# administrator had enabled it, never started by the package.
if grep -qs "deb-systemd-helper debian-installed 'hvsim.service'" "$tmp/hctl/postinst" &&
    ! grep -qs 'deb-systemd-invoke' "$tmp/hctl/postinst"; then
	ok "hvsim.service is neither enabled nor started on installation"
else
	not_ok "hvsim.service is neither enabled nor started on installation"
fi

# Hardening of the programs, from dpkg-buildflags.
for b in usr/sbin/vmbuildd usr/bin/vmctl usr/bin/vmb-config-check \
    usr/sbin/hvsim; do
	f=$tmp/x/$b
	dyn=$(readelf -d "$f")
	hdr=$(readelf -lW "$f")
	syms=$(readelf -sW --dyn-syms "$f")
	if grep -q GNU_RELRO <<<"$hdr" && grep -q 'BIND_NOW' <<<"$dyn" &&
	    grep -q '__[a-z_]*_chk' <<<"$syms" && grep -q __stack_chk_fail <<<"$syms"; then
		ok "$b: RELRO, BIND_NOW, fortified calls, stack protector"
	else
		not_ok "$b: hardened"
	fi
done
line=$(grep -e '-c -o build/obj/daemon/main.o' "$tmp/build.log")
if [[ $line == *-fstack-protector-strong* && $line == *-D_FORTIFY_SOURCE=2* &&
      $line != *" -Werror "* ]]; then
	ok "vmbuildd compiled with dpkg's flags, without -Werror"
else
	not_ok "vmbuildd compiled with dpkg's flags, without -Werror"
	echo "# $line"
fi
guest=$(grep -e 'guest/' "$tmp/build.log" | grep -e ' -c \| -o build/guest')
if [ -n "$guest" ] && ! grep -q -e '-fstack-protector-strong\|-D_FORTIFY_SOURCE\|-z,relro\|-ffile-prefix-map' <<<"$guest"; then
	ok "the guest got none of dpkg's flags ($(wc -l <<<"$guest") commands)"
else
	not_ok "the guest got none of dpkg's flags"
	grep -e '-fstack-protector-strong\|-D_FORTIFY_SOURCE' <<<"$guest" | head -2 | sed 's/^/# /'
fi
if readelf -sW "$tmp/x/usr/lib/vmbuild/hello.elf" | grep -q __stack_chk; then
	not_ok "hello.elf in the package has no stack protector"
else
	ok "hello.elf in the package: freestanding, no stack protector"
fi
check "the unit in the package runs /usr/sbin/vmbuildd" \
	grep -q '^ExecStart=/usr/sbin/vmbuildd ' "$tmp/x/lib/systemd/system/vmbuildd.service"
tap_done; exit
