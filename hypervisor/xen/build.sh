#!/bin/bash
# hypervisor/xen/build.sh [stock|perfc|lockprof|check|source] - the companion
# hypercalls in Xen: fetch Debian's Xen 4.17 source package, check that
# the series (hypervisor/xen/series) applies cleanly, build xen.gz with
# Debian's hypervisor config plus shadow paging, cache it under build/xen/.
#
#   stock   build/xen/xen.gz (the default)
#   perfc   build/xen/xen-perfc.gz: the same with CONFIG_PERF_COUNTERS=y,
#           the reference the lab checks the series' counters against
#   lockprof build/xen/xen-lockprof.gz: the same with lock profiling
#           (CONFIG_DEBUG_LOCK_PROFILE), for LAB_LOCKPROF=1; not in CI
#   check   fetch the source and check that the series applies; no build
#   source  only fetch the source package into build/xen/src/
#
# A build is redone only when its key changes: the source package (.dsc),
# the series and its patches, the config fragments, and RECIPE below
# (bumped when this script builds differently).  The key,
# the source version, the config and the build time are in
# build/xen/<variant>.info.
#
# The source package comes from Debian's archive through apt only.  When
# apt has no deb-src entries (a fresh Debian 12 machine), root gets them
# added in /etc/apt/sources.list.d/vmbuild-deb-src.sources, for the same
# archives, suites and keyrings as the binary entries; anyone else is told
# to.  The newest 4.17 source that downloads is used (in this project's
# lab machines the security archive lists 4.17.7+13 but serves 404 for its
# source, so 4.17.5+72 from the main archive is used; see README.md).
set -euo pipefail
RECIPE=3

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
here=hypervisor/xen
XB=${XEN_BUILD_DIR:-build/xen}
what=${1:-stock}
t_start=${EPOCHREALTIME/./}

log() {
	local d=$(( (${EPOCHREALTIME/./} - t_start) / 100000 ))
	printf '[xen %d.%ds] %s\n' $((d / 10)) $((d % 10)) "$*" >&2
}
die() { log "FAILED: $*"; exit 1; }

case $what in
stock) out=xen.gz frags="shadow.cfg" ;;
perfc) out=xen-perfc.gz frags="shadow.cfg perfc.cfg" ;;
lockprof) out=xen-lockprof.gz frags="shadow.cfg lockprof.cfg" ;;
check|source) out="" frags="" ;;
*) die "usage: build.sh [stock|perfc|lockprof|check|source]" ;;
esac
for t in apt-get apt-cache dpkg-source patch gcc make bison flex python3 sha256sum; do
	command -v "$t" >/dev/null || die "missing $t (scripts/deps.sh build xen)"
done
mkdir -p "$XB/src"

# ------------------------------------------------------------- source
# deb-src entries mirroring every active binary entry of Debian's archive.
add_deb_src() {
	local f=/etc/apt/sources.list.d/vmbuild-deb-src.sources
	[ "$(id -u)" = 0 ] ||
	    die "apt has no deb-src entry for Xen: as root, add 'deb-src' to the Types of /etc/apt/sources.list.d/debian.sources and run apt-get update"
	log "adding deb-src entries ($f) and running apt-get update"
	python3 - "$f" <<'EOF' || die "cannot write deb-src entries"
import glob, re, sys
out = []
# deb822 .sources files: stanzas whose Types include deb.
for path in sorted(glob.glob('/etc/apt/sources.list.d/*.sources')):
    if path == sys.argv[1]:
        continue
    for stanza in re.split(r'\n\s*\n', open(path).read()):
        fields = {}
        for line in stanza.splitlines():
            m = re.match(r'^([A-Za-z-]+):\s*(.*)$', line)
            if m:
                fields[m.group(1)] = m.group(2)
        if 'deb' not in fields.get('Types', '').split():
            continue
        if fields.get('Enabled', 'yes') == 'no':
            continue
        if 'debian' not in fields.get('URIs', ''):
            continue
        out.append('Types: deb-src\n' + ''.join(
            '%s: %s\n' % (k, fields[k]) for k in
            ('URIs', 'Suites', 'Components', 'Signed-By') if k in fields))
# One-line sources.list entries.
for path in ['/etc/apt/sources.list'] + sorted(glob.glob('/etc/apt/sources.list.d/*.list')):
    try:
        lines = open(path).read().splitlines()
    except OSError:
        continue
    for line in lines:
        m = re.match(r'^\s*deb\s+(\[[^]]*\]\s+)?(\S+)\s+(\S+)\s+(.*)$', line)
        if m and 'debian' in m.group(2):
            opts = m.group(1) or ''
            sb = re.search(r'signed-by=(\S+?)\]?(\s|$)', opts)
            out.append('Types: deb-src\nURIs: %s\nSuites: %s\nComponents: %s\n%s' % (
                m.group(2), m.group(3), m.group(4),
                'Signed-By: %s\n' % sb.group(1) if sb else ''))
if not out:
    sys.exit('no Debian archive entry to mirror')
open(sys.argv[1], 'w').write('# Added by vmbuild hypervisor/xen/build.sh: source packages\n# of the archives already configured.\n\n' + '\n'.join(out))
EOF
	apt-get update -qq >/dev/null 2>&1 || die "apt-get update failed"
}

fetch_source() {
	local versions v tmp
	# apt-cache fails (100) without any deb-src entry.
	versions=$(apt-cache showsrc xen 2>/dev/null | sed -n 's/^Version: //p' || true)
	if [ -z "$versions" ]; then
		add_deb_src
		versions=$(apt-cache showsrc xen 2>/dev/null | sed -n 's/^Version: //p' || true)
	fi
	versions=$(echo "$versions" | grep '^4\.17\.' | sort -Vru)
	[ -n "$versions" ] || die "apt knows no Xen 4.17 source package"
	tmp=$XB/src.tmp
	for v in $versions; do
		rm -rf "$tmp" && mkdir -p "$tmp"
		log "apt-get source --download-only xen=$v"
		if (cd "$tmp" && apt-get source --download-only "xen=$v" >download.log 2>&1); then
			rm -rf "$XB/src" && mv "$tmp" "$XB/src"
			rm -f "$XB/src/download.log"
			echo "$v" > "$XB/src/version"
			return 0
		fi
		log "xen=$v did not download: $(grep -m1 -E '^(E|Err):' "$tmp/download.log" || tail -n 1 "$tmp/download.log")"
		echo "$v: $(grep -m1 -E '^(E|Err):' "$tmp/download.log")" >> "$XB/skipped-versions"
	done
	rm -rf "$tmp"
	die "no Xen 4.17 source package could be downloaded"
}

dsc=$(ls "$XB"/src/xen_4.17*.dsc 2>/dev/null | head -1 || true)
if [ -z "$dsc" ]; then
	fetch_source
	dsc=$(ls "$XB"/src/xen_4.17*.dsc | head -1)
fi
srcver=$(sed -n 's/^Version: //p' "$dsc")
log "source: Debian xen $srcver ($dsc)"
[ "$what" = source ] && exit 0

# ------------------------------------------------------------- series
patches=$(grep -v -e '^#' -e '^[[:space:]]*$' "$here/series")
[ -n "$patches" ] || die "$here/series lists no patch"
for p in $patches; do
	[ -f "$here/$p" ] || die "$here/series names $p, which does not exist"
done

# Extract Debian's tree (its own patches applied) and the series on top;
# every patch must apply with no fuzz.
extract() {
	local tree=$1 p o
	rm -rf "$tree" "$tree.tmp"
	# The files' checksums are checked; their signature was checked by
	# apt (the archive's signed Sources index), dpkg-source would need
	# Debian's developer keyring for it: its warning goes to the log.
	dpkg-source -x "$dsc" "$tree.tmp" >"$XB/dpkg-source.log" 2>&1 ||
	    die "dpkg-source -x $dsc: $(tail -n 3 "$XB/dpkg-source.log")"
	for p in $patches; do
		o=$(patch -d "$tree.tmp" -p1 -F0 -N --no-backup-if-mismatch < "$here/$p" 2>&1) ||
		    die "$p does not apply cleanly to xen $srcver:
$o"
		if grep -q 'offset' <<<"$o"; then
			log "$p: applies with offsets: $(grep -c offset <<<"$o") hunk(s)"
		fi
	done
	mv "$tree.tmp" "$tree"
	log "series applied to xen $srcver: $(echo "$patches" | wc -l) patches, no fuzz"
}

# The xen backend's copy of the series' interface must equal the series'.
abi_check() {
	gcc -std=gnu11 -fsyntax-only -Wall -Werror -D__XEN_TOOLS__ \
	    -I"$1/xen/include" -Ihypervisor/include "$here/abi-check.c" ||
	    die "the series' public headers do not match libvmbuild/xen/xen_series.h (abi-check.c)"
	log "abi-check: libvmbuild/xen/xen_series.h matches the series"
}

if [ "$what" = check ]; then
	extract "$XB/tree-check"
	abi_check "$XB/tree-check"
	rm -rf "$XB/tree-check"
	exit 0
fi

# ------------------------------------------------------------- build
key=$( (echo "recipe $RECIPE"; cat "$dsc"
	for p in $patches; do cat "$here/$p"; done
	for f in $frags; do cat "$here/config/$f"; done) | sha256sum | cut -c1-16)
info=$XB/${out%.gz}.info
if [ -f "$XB/$out" ] && grep -qx "key=$key" "$info" 2>/dev/null; then
	log "$XB/$out is up to date (key $key)"
	exit 0
fi
tree=$XB/tree-$what
extract "$tree"
abi_check "$tree"

# Debian's hypervisor config (debian/xen-kconfig, then olddefconfig, as
# debian/rules does) plus our fragments; each fragment line must survive
# (CONFIG_X=n as "# CONFIG_X is not set" or not at all).
cp "$tree/debian/xen-kconfig" "$tree/xen/.config"
for f in $frags; do cat "$here/config/$f" >> "$tree/xen/.config"; done
make -s -C "$tree/xen" olddefconfig >/dev/null 2>&1 || die "make olddefconfig"
for f in $frags; do
	while read -r line; do
		case $line in
		''|'#'*) continue ;;
		*=n) ! grep -q "^${line%=n}=" "$tree/xen/.config" ;;
		*) grep -qx "$line" "$tree/xen/.config" ;;
		esac || die "$line from config/$f did not survive olddefconfig"
	done < "$here/config/$f"
done

jobs=$(nproc)
log "building xen $srcver + series ($what: $frags), make -j$jobs"
b0=${EPOCHREALTIME/./}
# DEB_VERSION shows in Xen's boot banner and `xl info` (Debian's patch
# 0003): the series' key tells a patched hypervisor from Debian's.
make -C "$tree/xen" -j"$jobs" \
    DEB_VERSION="$srcver+vmbuild.$key" \
    DEB_MAINTAINER="vmbuild <vmbuild@localhost>" \
    EXTRA_CFLAGS_XEN_CORE="-ffile-prefix-map=$PWD/$tree=." \
    > "$XB/build-$what.log" 2>&1 ||
    { tail -n 30 "$XB/build-$what.log" >&2; die "make -C xen (log: $XB/build-$what.log)"; }
bsecs=$(( (${EPOCHREALTIME/./} - b0) / 1000000 ))
cp "$tree/xen/xen.gz" "$XB/$out.tmp" && mv "$XB/$out.tmp" "$XB/$out"
cp "$tree/xen/.config" "$XB/${out%.gz}.config"
cat > "$info" <<EOF
key=$key
source=$srcver
variant=$what
config=debian/xen-kconfig + $frags
patches=$(echo $patches)
build_seconds=$bsecs
jobs=$jobs
built=$(date -u +%Y-%m-%dT%H:%M:%SZ)
EOF
# The tree is only needed again for a new key: keep the space.
rm -rf "$tree"
log "built $XB/$out in ${bsecs}s ($(du -h "$XB/$out" | cut -f1)); key $key"
