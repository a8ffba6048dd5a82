#!/bin/bash
# man.sh - the manual pages that make builds from man/*.scd.
#
# Each page renders without groff warnings and has a NAME line whatis
# understands (lexgrog); the pages document what the programs really
# have: every option of vmctl, its commands and their options, vmbuildd
# and hvsim (from their --help), and every xl.cfg key libvmbuild reads or
# refuses as not supported (from libvmbuild/keys.def and unsupported.c).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
# VMB_BUILD=build/asan (make asan etc.): a variant build's pages and programs.
b=${VMB_BUILD:-build}
bin=$b/bin
. "$top/tests/tap.sh"

pages=(man1/vmctl.1 man8/vmbuildd.8 man8/hvsim.8 man5/vmbuild.cfg.5
	man8/vmbuild-guests.8)
for p in "${pages[@]}"; do
	f=$b/man/$p
	if [ ! -s "$f" ]; then
		not_ok "$p built"
		continue
	fi
	w=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings=w -l "$f" 2>&1 >/dev/null)
	if [ -z "$w" ]; then ok "$p renders without warnings"; else
		not_ok "$p renders without warnings"; sed 's/^/# /' <<<"$w" | head -5; fi
	name=${p#*/}
	name=${name%.*}
	if lexgrog "$f" 2>/dev/null | grep -q "\"$name - "; then
		ok "$p: whatis entry \"$name - ...\""
	else
		not_ok "$p: whatis entry"; lexgrog "$f" 2>&1 | sed 's/^/# /'
	fi
done

# want_words PAGE WHAT WORD...: each WORD appears in PAGE's source as
# scdoc bold (*WORD*) or in a literal block.
want_words() {
	local page=$1 what=$2 w missing=()
	shift 2
	for w in "$@"; do
		grep -qF -- "*$w*" "man/$page.scd" || grep -qF -- "$w" \
			<(sed -n '/^```/,/^```/p' "man/$page.scd") || missing+=("$w")
	done
	if [ ${#missing[@]} -eq 0 ]; then
		ok "$page documents $what ($#)"
	else
		not_ok "$page documents $what: missing ${missing[*]}"
	fi
}

# Long options in a --help text.
opts_of() { grep -oE -- '(^|[ ,])--[a-z][a-z-]*' | tr -d ' ,' | sort -u; }

want_words vmctl.1 "vmctl's options" $("$bin/vmctl" --help | opts_of)
cmds=$("$bin/vmctl" --help | sed -n '/^Commands:/,/^$/s/^  \([a-z-]*\) .*/\1/p')
[ -n "$cmds" ] || not_ok "vmctl --help lists commands"
want_words vmctl.1 "vmctl's commands" $cmds
for c in $cmds; do
	o=$("$bin/vmctl" help "$c" | opts_of | grep -v '^--help$')
	[ -n "$o" ] && want_words vmctl.1 "vmctl $c's options" $o
done
want_words vmbuildd.8 "vmbuildd's options" $("$bin/vmbuildd" --help | opts_of)
want_words hvsim.8 "hvsim's options" $("$bin/hvsim" --help | opts_of)

# xl.cfg keys: the keys of libvmbuild/keys.def and the xl keys accepted
# with a warning, as libvmbuild/unsupported.c has them.
keys=$(sed -n 's/^VMB_KEY([A-Z_]*, "\([a-z_]*\)".*/\1/p' libvmbuild/keys.def)
unsupported=$(sed -n '/^} xl_unsupported\[\] = {/,/^};/s/^\t{ "\([a-z_0-9]*\)".*/\1/p' libvmbuild/unsupported.c)
[ "$(wc -w <<<"$keys")" -ge 10 ] || not_ok "found the keys in keys.def ($keys)"
[ "$(wc -w <<<"$unsupported")" -ge 10 ] || not_ok "found the unsupported keys in unsupported.c"
want_words vmbuild.cfg.5 "the keys vmbuild reads" $keys
want_words vmbuild.cfg.5 "the xl keys it does not support" $unsupported

# The man page is vmctl's only manual: cli/vmctl.md points to it.
if grep -q 'man/vmctl.1.scd' cli/vmctl.md && ! grep -q '^| `create' cli/vmctl.md; then
	ok "cli/vmctl.md points to man/vmctl.1.scd (one source)"
else
	not_ok "cli/vmctl.md points to man/vmctl.1.scd (one source)"
fi

tap_done; exit
