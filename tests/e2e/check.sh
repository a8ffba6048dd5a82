#!/bin/bash
# check.sh - vmctl check and vmctl create --dry-run (issue 19): six
# configurations as libvirt and xl write them (tests/e2e/check/*.cfg),
# each valid on this host or refused with every reason at once
# (NAME.err: the lines on stderr, the run directory written as @DIR@);
# nothing is created; a populate too quick to time shows no rate.
. "$(dirname "$0")/lib.sh"

need_binaries
SRC=$E2E_TOP/tests/e2e/check
start_hvsim --nodes 2 --cpus-per-node 2 --mem-per-node 512M || bail hvsim
start_daemon || bail "vmbuildd"

# The images the configs name: a disk, a ramdisk, a file no kernel.
truncate -s 16M "$RUN/disk.img"
head -c 4096 /dev/zero >"$RUN/initrd.img"
echo "not an ELF file" >"$RUN/not-a-kernel"
for f in "$SRC"/*.cfg; do
	sed -e "s|@KERNEL@|$GUEST_KERNEL|g" -e "s|@DIR@|$RUN|g" "$f" \
	    >"$RUN/$(basename "$f")"
done

for f in "$SRC"/*.cfg; do
	name=$(basename "$f" .cfg)
	"$VMCTL" check "$RUN/$name.cfg" >"$RUN/out" 2>"$RUN/err"
	rc=$?
	sed -i "s|$RUN|@DIR@|g" "$RUN/err" "$RUN/out"
	if [ -f "$SRC/$name.err" ]; then
		want=1
		# The summary line is vmctl's; the reasons are the daemon's.
		grep -v ': invalid (' "$RUN/err" >"$RUN/reasons"
		if diff -u "$SRC/$name.err" "$RUN/reasons" >"$RUN/diff"; then
			ok "$name: every reason at once, file:line: key: why"
		else
			not_ok "$name: the reasons"
			diag "$(cat "$RUN/diff")"
		fi
	else
		want=0
		if grep -q '^placement:' "$RUN/out" &&
		    grep -q "\"name\": \"$name\"" "$RUN/out"; then
			ok "$name: valid: normalised config and placement"
		else
			not_ok "$name: valid: normalised config and placement"
			diag "$(cat "$RUN/out" "$RUN/err")"
		fi
	fi
	if [ "$rc" -eq "$want" ]; then
		ok "$name: exit $rc"
	else
		not_ok "$name: exit $rc, want $want"
		diag "$(cat "$RUN/err")"
	fi
done

# hvsim has no network interfaces: the bridge is named as not checked.
"$VMCTL" check "$RUN/libvirt-vif.cfg" >/dev/null 2>"$RUN/err"
check "hvsim: a bridge is said not to be checked" \
	grep -q 'vif: warning: vif 0: bridge "xenbr1" not checked' "$RUN/err"

# The normalised config as an operator reads it: an empty list is "[]",
# not "[", a blank line and "]"; brackets inside a string are kept.
write_cfg "$RUN/brackets.cfg" brackets 64 'cmdline = "a [ ] { } b"'
"$VMCTL" check "$RUN/brackets.cfg" >"$RUN/out" 2>&1
check "check: empty lists print as []" \
	grep -qE '"disks": \[\],?$' "$RUN/out"
check "check: no list or map opens on one line and closes empty on the next" \
	test -z "$(awk '/[[{]$/ { o = NR } /^ *$/ && o == NR - 1 { print NR }
	    /^ *[]}],?$/ && o == NR - 1 { print NR }' "$RUN/out")"
check "check: brackets inside a string are kept" \
	grep -qF '"cmdline": "a [ ] { } b"' "$RUN/out"

# --json: the method's result as it is.
"$VMCTL" --json check "$RUN/libvirt-host.cfg" >"$RUN/json" 2>/dev/null
n=$(py 'len(j["errors"])' <"$RUN/json")
check "--json: ok false, three errors with their lines" test "$n" = 3 -a \
	"$(py 'j["ok"] is False and all(e["line"] > 0 for e in j["errors"])' \
	<"$RUN/json")" = True
"$VMCTL" --json check "$RUN/libvirt-smp.cfg" >"$RUN/json" 2>/dev/null
check "--json: placement with nodes, node_bytes, reason, free_bytes" \
	test "$(py 'sum(j["placement"]["node_bytes"]) == 192 << 20 and
	    len(j["placement"]["free_bytes"]) == 2 and
	    bool(j["placement"]["reason"])' <"$RUN/json")" = True

# create --dry-run is the same check; nothing is created either way.
"$VMCTL" create --dry-run "$RUN/libvirt-pvh.cfg" >"$RUN/out" 2>&1
check "create --dry-run: exit 0, changes nothing" \
	grep -q 'valid on this host; nothing was changed' "$RUN/out"
"$VMCTL" create --dry-run "$RUN/libvirt-bad.cfg" >/dev/null 2>&1
check "create --dry-run of a bad file: exit 1" test $? -eq 1
check "nothing was created" test "$("$VMCTL" --json list |
	py 'len(j["vms"])')" = 0

# create finds a vnode on a node the host lacks at build time: it says
# which file and line too.
write_cfg "$RUN/vnode.cfg" vnode 64 \
	'vnuma = [ [ "pnode=5", "size=64", "vcpus=0" ] ]'
"$VMCTL" create "$RUN/vnode.cfg" >/dev/null 2>"$RUN/err"
check "create: a vnode on a missing node names file:line" \
	grep -q "vnode.cfg:6: vnuma: vnode 0 is on node 5" "$RUN/err"

# A populate of clean memory takes milliseconds: no rate for it.
write_cfg "$RUN/quick.cfg" quick 32
"$VMCTL" create "$RUN/quick.cfg" >"$RUN/out" 2>"$RUN/err"
check "create of 32 MiB: done" grep -q 'created VM' "$RUN/out"
if grep -E '[0-9.]+ ?[KMGTP]i?B/s' "$RUN/err" >"$RUN/rates"; then
	not_ok "create of 32 MiB: no rate shown for so little work"
	diag "$(cat "$RUN/rates")"
else
	ok "create of 32 MiB: no rate shown for so little work"
fi
tap_done
