#!/bin/bash
# The bash completion, in a real bash with the installed script's text:
# `vmpt scr<TAB>` gives script, `-F ip,sy<TAB>` the fields after the comma,
# every option of every command's --help is offered after '-', and
# --itrace offers perf's letters.
set -u
: "${VMPT:?}" "${SRCDIR:?}"
fail() { echo "FAIL: $*"; exit 1; }
bindir=$(mktemp -d)
trap 'rm -rf "$bindir"' EXIT
ln -s "$VMPT" "$bindir/vmpt"
export PATH=$bindir:$PATH

complete_words() {
	bash --norc --noprofile -c '
		. "$1/tools/completion/vmpt.bash"; shift
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _vmpt
		printf "%s\n" "${COMPREPLY[@]}"' bash "$SRCDIR" "$@"
}
check() {
	local want=$1; shift
	got=$(complete_words "$@" | tr '\n' ' ')
	[ "$got" = "$want" ] || fail "[$*]: got '$got', want '$want'"
}
check "script " vmpt scr
check "ip,sym ip,symoff ip,synth " vmpt script -F ip,sy
check "+ip +insn +insnlen +ipc +iregs +ins_lat " vmpt script -F +i
check "--itrace " vmpt script --itr
complete_words vmpt script --itrace i | grep -qx ib || fail "--itrace i: no ib"
n=0
for cmd in $(vmpt --list-cmds); do
	opts=$(complete_words vmpt "$cmd" -)
	[ -n "$opts" ] || fail "vmpt $cmd -<TAB>: nothing"
	for o in $(vmpt "$cmd" --help 2>&1 | grep -oE '(^|[[:space:],[])--[a-z][a-z0-9-]*' |
		   sed 's/^[[:space:],[]*//' | sort -u); do
		printf '%s\n' "$opts" | grep -qxF -- "$o" || fail "vmpt $cmd -<TAB> lacks $o"
		n=$((n + 1))
	done
done
[ "$n" -gt 50 ] || fail "only $n options seen"
echo "completion: commands, -F fields, --itrace letters, $n options of $(vmpt --list-cmds | wc -l) commands"
