#!/bin/bash
# version.sh - one version everywhere.
#
# VMB_VERSION in libvmbuild/vmbuild.h is the source: vmctl, vmbuildd and
# hvsim print it with --version, server.hello and vmbuild_build_info
# carry it, hvsim's hello names it (vmctl host), and the Debian
# changelog, the pkg-config file and the Python client say the same.
. "$(dirname "$0")/../e2e/lib.sh"

v=$(sed -n 's/^#define VMB_VERSION[^"]*"\(.*\)"/\1/p' "$E2E_TOP/libvmbuild/vmbuild.h")
require "VMB_VERSION is set in vmbuild.h ($v)" test -n "$v"

for prog in vmctl vmbuildd hvsim; do
	out=$("$BIN/$prog" --version 2>&1)
	rc=$?
	check "$prog --version: $out" test "$rc" -eq 0 -a \
		"$(awk '{ print $3 }' <<<"$out" | tr -d ,)" = "$v"
done
check "vmctl --help lists --version" grep -q -- '--version' \
	<("$VMCTL" --help)

deb=$(sed -n '1s/^[^(]*(\([^)]*\)).*/\1/p' "$E2E_TOP/debian/changelog")
check "debian/changelog's version ($deb) is $v, as a native package's" \
	test "$deb" = "$v"
py_v=$(sed -n 's/^version = "\(.*\)"/\1/p' "$E2E_TOP/clients/python/pyproject.toml")
check "clients/python/pyproject.toml says $py_v" test "$py_v" = "$v"
mod_v=$(cd "$E2E_TOP/clients/python" && "$PYTHON" -c \
	'import vmbuild; print(vmbuild.__version__)')
check "vmbuild.__version__ is $mod_v" test "$mod_v" = "$v"
pc_v=$(make -s -C "$E2E_TOP" --no-print-directory -f Makefile \
	-f - print-pc-version <<<'print-pc-version: ; @echo $(VMB_PC_VERSION)' \
	2>/dev/null | tail -n 1)
check "the pkg-config file's Version ($pc_v)" test "$pc_v" = "$v"

start_hvsim --nodes 1 --cpus-per-node 2 --threads-per-core 1 \
	--mem-per-node 256M --backing phantom || bail "hvsim did not start"
start_daemon || bail "vmbuildd did not start"
port=${VMB_METRICS##*:}
hello=$("$PYTHON" - "$SOCK" <<'EOF'
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"server.hello"}\n')
f = s.makefile()
print(json.loads(f.readline())["result"]["version"])
EOF
)
check "server.hello's version ($hello)" test "$hello" = "$v"
metric=$("$PYTHON" -c '
import sys, urllib.request
t = urllib.request.urlopen(sys.argv[1], timeout=30).read().decode()
print([l for l in t.splitlines() if l.startswith("vmbuild_build_info{")][0])
' "http://127.0.0.1:$port/metrics")
check "vmbuild_build_info carries it: $metric" grep -qF "version=\"$v\"" \
	<<<"$metric"
hv=$("$VMCTL" --json host | py 'j["hypervisor"]')
check "hvsim's hello names it: $hv" test "${hv#hvsim "$v"}" != "$hv"
tap_done
