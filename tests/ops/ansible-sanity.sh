#!/bin/bash
# ansible-sanity.sh - `ansible-test sanity` over the collection
# contrib/ansible (vmbuild.xen), one TAP line per sanity test, offline.
#
# ansible-test wants the collection at ansible_collections/NS/NAME: a
# copy is made there.  Most of its tests run in a virtual environment of
# their own, into which ansible-test installs pinned checkers with pip
# from the network; with no network here, each such environment is made
# beforehand from Debian's python3 and packages (--system-site-packages:
# python3-voluptuous, pycodestyle, pylint, yamllint; scripts/deps.sh)
# and marked as made, so ansible-test uses it as it is.  Debian's
# checkers are not ansible-test's pinned versions: their verdicts are
# those of Debian's releases.  A test that has no file to check, or whose
# tool is missing (shellcheck, pwsh), is reported as skipped, saying so.
set -u
. "$(dirname "$0")/../tap.sh"
TOP=$(cd "$(dirname "$0")/../.." && pwd)

if ! command -v ansible-test >/dev/null; then
	skip "ansible-test sanity" "ansible-test is not installed (ansible-core)"
	echo "1..$tap_n"
	exit 0
fi
RUN=$(mktemp -d "${TMPDIR:-/tmp}/vmbuild-sanity.XXXXXX")
trap 'rm -rf "$RUN"' EXIT
COLL=$RUN/ansible_collections/vmbuild/xen
mkdir -p "$(dirname "$COLL")"
cp -r "$TOP/contrib/ansible" "$COLL"
# Debian's python3 (a version manager's first in PATH would make the
# environments from another Python), and ansible-test's environments and
# caches in $RUN, not in ~/.ansible.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=$RUN/home
export ANSIBLE_TEST_PREFER_PODMAN=0
mkdir -p "$HOME"
pyver=$(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
cd "$COLL" || bail "cd $COLL"

# run_sanity TEST: ansible-test sanity --test TEST; when it stops for
# want of pip in an environment, make that one from Debian's Python and
# run again.  Its output in $RUN/TEST.log, its status returned.
run_sanity() {
	local t=$1 try env rc
	for try in 1 2 3; do
		ansible-test sanity -v --local --python "$pyver" --test "$t" \
		    >"$RUN/$t.log" 2>&1
		rc=$?
		env=$(sed -n 's/.*Python [0-9.]* at "\(.*\)\/bin\/python" does not have pip available.*/\1/p' \
		    "$RUN/$t.log")
		[ -n "$env" ] || return $rc
		rm -rf "$env"
		/usr/bin/python3 -m venv --system-site-packages --without-pip "$env" ||
			return 1
		# PyYAML's libyaml support, as ansible-test records it.
		/usr/bin/python3 -c 'import yaml; print("true" if yaml.__with_libyaml__ else "false")' \
		    >"$env/meta.yaml.json" && touch "$env/marker.txt" || return 1
	done
	return $rc
}

tests=$(ansible-test sanity --list-tests 2>/dev/null)
[ -n "$tests" ] || bail "ansible-test sanity --list-tests listed nothing"
for t in $tests; do
	if run_sanity "$t"; then
		if grep -q 'No tests applicable' "$RUN/$t.log"; then
			skip "sanity $t" "no file of the collection it applies to"
		elif grep -qE "^WARNING: Skipping|Skipping sanity test" "$RUN/$t.log"; then
			skip "sanity $t" "$(grep -E 'Skipping' "$RUN/$t.log" | head -1)"
		else
			ok "sanity $t"
		fi
	elif grep -q "Unable to find.*shellcheck\|Unable to find.*pwsh" "$RUN/$t.log"; then
		skip "sanity $t" "its tool is not installed"
	else
		not_ok "sanity $t"
		grep -vE 'Using locale|^Running|Reviewing previous' "$RUN/$t.log" |
		    head -20 | sed 's/^/# /'
	fi
done
echo "1..$tap_n"
[ "$tap_failed" -eq 0 ]
