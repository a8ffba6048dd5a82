#!/bin/bash
# hypervisor/xen/check-patches.sh TREE BASE OBJ - a quick bisectability
# check when full builds per patch cost too much: at every commit of
# BASE..HEAD of the git tree TREE, in a scratch worktree, compile
# (-fsyntax-only, with the flags of OBJ's own build: its .cmd files and
# generated headers, so OBJ must hold a build of the series' last patch)
# every C file under xen/ the commit changes, and, when it changes a
# header, the main files of the series that include it.  One line per
# commit.  SKIP=shadow leaves the shadow code out (a config without
# CONFIG_SHADOW_PAGING); SHADOW_EXTRA=-DCONFIG_SHADOW_PAGING=1 compiles it
# anyway.  Not a substitute for check-upstream.sh's incremental builds:
# generated headers are the last patch's, and nothing is linked.
tree=$(cd "$1" && pwd) base=$2 obj=$(cd "$3" && pwd)
wt=$obj.percommit
git -C "$tree" worktree remove --force "$wt" 2>/dev/null; rm -rf "$wt"
git -C "$tree" worktree add -q --detach "$wt" "$base" || exit 2
src0=$(sed -n '1s/^cmd_common\/bitmap.o := //p' "$obj/common/.bitmap.o.cmd")
T=$(echo "$src0" | tr ' ' '\n' | grep '/common/bitmap.c$' | sed 's|/common/bitmap.c$||')
fail=0
cd "$obj" || exit 2
for c in $(git -C "$tree" rev-list --reverse "$base..HEAD"); do
	git -C "$wt" checkout -q "$c"
	subj=$(git -C "$wt" log -1 --format=%s)
	files=$(git -C "$wt" diff --name-only "$c~1" "$c" -- 'xen/*.c' | sed 's|^xen/||')
	# Headers: check the files in the series that include them too.
	for h in $(git -C "$wt" diff --name-only "$c~1" "$c" -- 'xen/*.h'); do
		files="$files common/memory.c common/page_alloc.c common/domain.c common/sysctl.c arch/x86/mm.c"
	done
	case " $SKIP " in *" shadow "*) files=$(echo $files | tr " " "\n" | grep -v "^arch/x86/mm/shadow/") ;; esac
	files=$(echo $files | tr ' ' '\n' | sort -u | while read f; do [ -f "$wt/xen/$f" ] && echo $f; done)
	st=ok
	for f in $files; do
		extra=""
		case $f in arch/x86/mm/shadow/multi.c) extra="-DGUEST_PAGING_LEVELS=4 $SHADOW_EXTRA" ;;
		arch/x86/mm/shadow/*) extra="$SHADOW_EXTRA" ;;
		xsm/flask/*) extra="-I$wt/xen/xsm/flask/include -I$obj/xsm/flask/include" ;; esac
		cmd=$(echo "$src0" | sed -e "s# -MMD -MP -MF common/.bitmap.o.d##" \
		    -e "s#-o common/.bitmap.o.tmp -MQ common/bitmap.o#-fsyntax-only $extra#" \
		    -e "s#$T/common/bitmap.c#$wt/xen/$f#" -e "s#'-D__OBJECT_LABEL__=common/bitmap.o'##" \
		    -e "s#-I$T/#-I$wt/xen/#g" -e "s#-include $T/#-include $wt/xen/#g")
		out=$(nice -n 19 sh -c "$cmd" 2>&1) || { st="FAILED in $f"; echo "$out" | head -5; fail=1; }
	done
	printf '%s %-70s %s (%s)\n' "$(git -C "$wt" log -1 --format=%h)" "$subj" "$st" "$(echo $files | wc -w) files"
done
git -C "$tree" worktree remove --force "$wt"
exit $fail
