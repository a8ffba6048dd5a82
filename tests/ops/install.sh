#!/bin/bash
# install.sh - make install and make uninstall with DESTDIR and PREFIX.
#
# The installed tree is exactly the expected list; units and example
# configs name the programs where PREFIX put them; the pkg-config file
# builds and links a program against the installed libvmbuild, which
# parses an installed example; the installed Python client imports;
# make uninstall leaves only configuration behind.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$top/tests/tap.sh"

expected() {
	local p=$1	# PREFIX
	cat <<EOF
etc/default/hvsim
etc/default/vmbuild
lib/systemd/system/hvsim.service
lib/systemd/system/vmbuild-guests.service
lib/systemd/system/vmbuildd-ro.socket
lib/systemd/system/vmbuildd.service
lib/systemd/system/vmbuildd.socket
${p#/}/bin/vmb-config-check
${p#/}/bin/vmctl
${p#/}/include/vmbuild/vmbuild.h
$(sed -n 's/^#include "\([^"]*\)".*/\1/p' libvmbuild/vmbuild.h | sed "s|^|${p#/}/include/vmbuild/|")
${p#/}/lib/libhvclient.a
${p#/}/lib/libvmbuild.a
${p#/}/lib/pkgconfig/vmbuild.pc
${p#/}/lib/python3/dist-packages/vmbuild/__init__.py
${p#/}/lib/python3/dist-packages/vmbuild/client.py
${p#/}/lib/python3/dist-packages/vmbuild/connection.py
${p#/}/lib/python3/dist-packages/vmbuild/errors.py
${p#/}/lib/python3/dist-packages/vmbuild/events.py
${p#/}/lib/vmbuild/hello.elf
${p#/}/libexec/vmbuild/vmbuild-guests
${p#/}/sbin/hvsim
${p#/}/sbin/vmbuildd
${p#/}/share/ansible/collections/ansible_collections/vmbuild/xen/README.md
${p#/}/share/ansible/collections/ansible_collections/vmbuild/xen/changelogs/changelog.yaml
${p#/}/share/ansible/collections/ansible_collections/vmbuild/xen/galaxy.yml
${p#/}/share/ansible/collections/ansible_collections/vmbuild/xen/meta/runtime.yml
${p#/}/share/ansible/collections/ansible_collections/vmbuild/xen/playbooks/drain.yml
${p#/}/share/ansible/collections/ansible_collections/vmbuild/xen/playbooks/tasks/drain_one.yml
${p#/}/share/ansible/collections/ansible_collections/vmbuild/xen/plugins/module_utils/client.py
${p#/}/share/ansible/collections/ansible_collections/vmbuild/xen/plugins/modules/vm.py
${p#/}/share/ansible/collections/ansible_collections/vmbuild/xen/plugins/modules/vm_info.py
${p#/}/share/bash-completion/completions/vmctl
$(for f in configs/*.cfg; do echo "${p#/}/share/doc/vmbuild/examples/${f##*/}"; done)
${p#/}/share/doc/vmbuild/examples/vmbuildd-devices.conf
${p#/}/share/man/man1/vmb-config-check.1
${p#/}/share/man/man1/vmctl.1
${p#/}/share/man/man5/vmbuild-stream.5
${p#/}/share/man/man5/vmbuild.cfg.5
${p#/}/share/man/man8/hvsim.8
${p#/}/share/man/man8/vmbuild-guests.8
${p#/}/share/man/man8/vmbuildd.8
${p#/}/share/vmbuild/prometheus/vmbuild.rules.yml
usr/lib/sysusers.d/vmbuild.conf
usr/lib/tmpfiles.d/vmbuild.conf
EOF
}

for prefix in /usr /usr/local; do
	d=$tmp/root${prefix//\//_}
	if ! make install DESTDIR="$d" PREFIX="$prefix" >"$tmp/install.log" 2>&1; then
		not_ok "make install PREFIX=$prefix"
		tail -5 "$tmp/install.log" | sed 's/^/# /'
		continue
	fi
	(cd "$d" && find . -type f | sed 's|^\./||' | sort) >"$tmp/got"
	expected "$prefix" | grep . | sort >"$tmp/want"
	if diff -u "$tmp/want" "$tmp/got" >"$tmp/diff"; then
		ok "make install PREFIX=$prefix: $(wc -l <"$tmp/got") files, as expected"
	else
		not_ok "make install PREFIX=$prefix: the installed files"
		sed 's/^/# /' "$tmp/diff"
	fi
	check "PREFIX=$prefix: ExecStart=$prefix/sbin/vmbuildd" \
		grep -q "^ExecStart=$prefix/sbin/vmbuildd " "$d/lib/systemd/system/vmbuildd.service"
	check "PREFIX=$prefix: hvsim.service runs $prefix/sbin/hvsim" \
		grep -q "^ExecStart=$prefix/sbin/hvsim " "$d/lib/systemd/system/hvsim.service"
	check "PREFIX=$prefix: vmbuild-guests.service runs $prefix/libexec/vmbuild/vmbuild-guests" \
		grep -q "^ExecStop=$prefix/libexec/vmbuild/vmbuild-guests stop" "$d/lib/systemd/system/vmbuild-guests.service"
	check "PREFIX=$prefix: an empty etc/vmbuild/auto" test -d "$d/etc/vmbuild/auto"
	check "PREFIX=$prefix: examples boot $prefix/lib/vmbuild/hello.elf" \
		grep -q "^kernel = \"$prefix/lib/vmbuild/hello.elf\"" "$d/${prefix#/}/share/doc/vmbuild/examples/hello.cfg"
	check "PREFIX=$prefix: vmbuild.pc says prefix=$prefix" \
		grep -qx "prefix=$prefix" "$d/${prefix#/}/lib/pkgconfig/vmbuild.pc"
done

# A second make install keeps the administrator's configuration.
d=$tmp/root_usr
echo 'HVSIM_OPTS="--nodes 4"' >"$d/etc/default/hvsim"
echo 'ON_SHUTDOWN=shutdown' >"$d/etc/default/vmbuild"
make install DESTDIR="$d" PREFIX=/usr >"$tmp/install.log" 2>&1
check "make install again keeps an edited /etc/default/vmbuild" \
	grep -qx 'ON_SHUTDOWN=shutdown' "$d/etc/default/vmbuild"
check "make install again keeps an edited /etc/default/hvsim" \
	grep -qx 'HVSIM_OPTS="--nodes 4"' "$d/etc/default/hvsim"

# Build a program with the installed library through pkg-config.
d=$tmp/root_usr
cat >"$tmp/parse.c" <<'EOF'
#include <stdio.h>
#include <vmbuild.h>

int
main(int argc, char **argv)
{
	struct vmb_guest *g = NULL;
	struct vmb_diags diags = { 0 };
	int rc;

	if (argc != 2)
		return 2;
	rc = vmb_config_parse_file(argv[1], &g, &diags);
	if (rc < 0)
		return 1;
	printf("%s %s\n", g->name, VMB_VERSION);
	vmb_guest_free(g);
	vmb_diags_done(&diags);
	return 0;
}
EOF
export PKG_CONFIG_PATH=$d/usr/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$d
if flags=$(pkg-config --cflags --libs vmbuild 2>&1) &&
    cc -o "$tmp/parse" "$tmp/parse.c" $flags 2>"$tmp/cc.log"; then
	ok "a program builds with pkg-config --cflags --libs vmbuild"
	# The installed example names the installed kernel: point it at the
	# staged copy.
	sed "s|\"/usr/lib/vmbuild/hello.elf\"|\"$d/usr/lib/vmbuild/hello.elf\"|" \
		"$d/usr/share/doc/vmbuild/examples/numa2.cfg" >"$tmp/numa2.cfg"
	out=$("$tmp/parse" "$tmp/numa2.cfg" 2>&1)
	check "and parses an installed example with the installed library ($out)" \
		test "$out" = "numa2 $(sed -n 's/^Version: //p' "$d/usr/lib/pkgconfig/vmbuild.pc")"
else
	not_ok "a program builds with pkg-config --cflags --libs vmbuild"
	sed 's/^/# /' <<<"$flags"
	head -5 "$tmp/cc.log" | sed 's/^/# /'
fi
unset PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR

out=$(cd / && PYTHONPATH=$d/usr/lib/python3/dist-packages python3 -c \
	'import vmbuild; print(vmbuild.__file__)' 2>&1)
check "the installed Python client imports ($out)" \
	test "$out" = "$d/usr/lib/python3/dist-packages/vmbuild/__init__.py"

for prefix in /usr /usr/local; do
	d=$tmp/root${prefix//\//_}
	make uninstall DESTDIR="$d" PREFIX="$prefix" >"$tmp/uninstall.log" 2>&1 ||
		not_ok "make uninstall PREFIX=$prefix failed"
	left=$(cd "$d" && find . -type f | sed 's|^\./||' | sort | tr '\n' ' ')
	if [ "$left" = "etc/default/hvsim etc/default/vmbuild " ]; then
		ok "make uninstall PREFIX=$prefix leaves only etc/default/hvsim and vmbuild"
	else
		not_ok "make uninstall PREFIX=$prefix left: $(echo $left)"
	fi
done

tap_done; exit
