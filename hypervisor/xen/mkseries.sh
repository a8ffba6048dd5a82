#!/bin/bash
# hypervisor/xen/mkseries.sh TREE BASE OUT [BASE-COMMIT]
#
# Write the series from a git tree of Xen (TREE, the series committed on
# top of BASE) as `git format-patch --cover-letter` output in OUT (the
# files 0000-cover-letter.patch, 0001-...), ready for git send-email:
# every commit authored and signed off by the series' author, subjects
# "[PATCH v2 NN/MM] component: ...", the cover letter's subject and text
# from cover-letter.txt (its first line is the subject).  BASE-COMMIT, if
# given, goes to the cover letter as "base-commit:" (the upstream tree's
# commit; the 4.17 tree is Debian's source package, named in its text).
#
# The author: XEN_SERIES_FROM ("Name <address>"), else git config
# sendemail.from, else user.name and user.email of TREE.  A placeholder
# (an address with "noreply", "invalid" or "localhost", or none) is
# refused, a .example address warned about: the sign-off is a Developer's
# Certificate of Origin, and xen-devel answers to From:.
#
# The trees: hypervisor/xen/README.md, "Making the series".
set -euo pipefail

die() { echo "mkseries: $*" >&2; exit 1; }
[ $# -ge 3 ] || die "usage: mkseries.sh TREE BASE OUT [BASE-COMMIT]"
tree=$1 base=$2 out=$3 basecommit=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
cover=$here/cover-letter.txt
[ -f "$cover" ] || die "no $cover"
git -C "$tree" rev-parse -q --verify "$base^{commit}" >/dev/null ||
    die "$tree: no commit $base"
for d in rebase-merge rebase-apply; do
	[ ! -e "$(git -C "$tree" rev-parse --path-format=absolute --git-path $d)" ] ||
	    die "$tree: a rebase or am is in progress ($d): finish or abort it first"
done

from=${XEN_SERIES_FROM:-$(git -C "$tree" config sendemail.from || true)}
if [ -z "$from" ]; then
	n=$(git -C "$tree" config user.name || true)
	e=$(git -C "$tree" config user.email || true)
	[ -n "$n" ] && [ -n "$e" ] && from="$n <$e>"
fi
case $from in
*'<'*@*'>') ;;
*) die "no author: set XEN_SERIES_FROM=\"Name <address>\" (or git config sendemail.from)" ;;
esac
case ${from,,} in
*noreply*|*invalid*|*localhost*) die "author '$from' is a placeholder: set XEN_SERIES_FROM" ;;
*.example'>') echo "mkseries: warning: '$from' has no deliverable address (.example): set XEN_SERIES_FROM before git send-email" >&2 ;;
esac
name=${from%% <*} email=${from##*<} email=${email%>}

# Every commit of the series authored and signed off by $from.
export GIT_AUTHOR_NAME=$name GIT_AUTHOR_EMAIL=$email
export GIT_COMMITTER_NAME=$name GIT_COMMITTER_EMAIL=$email
git -C "$tree" -c user.name="$name" -c user.email="$email" \
    rebase -q --exec 'git commit -q --amend --no-edit --reset-author --signoff' "$base"

rm -rf "$out.tmp"
mkdir -p "$out.tmp"
tmp=$(cd "$out.tmp" && pwd)	# OUT may be relative or absolute
git -C "$tree" format-patch -q --cover-letter --subject-prefix="PATCH v2" \
    --no-signature --zero-commit -o "$tmp" \
    ${basecommit:+--base=$basecommit} "$base..HEAD"
python3 - "$out.tmp/0000-cover-letter.patch" "$cover" <<'EOF'
import sys
path, cover = sys.argv[1], sys.argv[2]
lines = open(cover).read().rstrip('\n').split('\n')
subject, blurb = lines[0], '\n'.join(lines[1:]).strip('\n')
s = open(path).read()
assert '*** SUBJECT HERE ***' in s and '*** BLURB HERE ***' in s
s = s.replace('*** SUBJECT HERE ***', subject).replace('*** BLURB HERE ***', blurb)
open(path, 'w').write(s)
EOF
rm -rf "$out"
mv "$out.tmp" "$out"
echo "mkseries: $(ls "$out" | grep -vc cover-letter) patches and a cover letter in $out, from $from"
