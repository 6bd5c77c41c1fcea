#!/bin/bash
# The whole `vmpt guest` path through a real sshd on loopback, with this
# machine as the guest: host key checks, key refusal, agent deployment,
# guest sideband of a real command, the binaries it maps, the compact
# kcore, and a hostile agent that must not get anything written outside
# the recording's sysroot nor fill the host's disk.
set -euo pipefail
: "${VMPT:?}" "${BUILDDIR:?}" "${SRCDIR:?}"
AGENT=$BUILDDIR/guest-agent/vmpt-agent
CRAFT=$BUILDDIR/guest-agent/tests/craft-sideband
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: needs root (cpu-wide perf events, /proc/kcore, root login)"
	exit 77
fi
for p in /usr/sbin/sshd /usr/lib/openssh/sftp-server ssh-keygen perf python3; do
	command -v "$p" >/dev/null || { echo "SKIP: $p missing (tools/install-deps.sh)"; exit 77; }
done

# A private mount namespace (sshd and so the "guest" in it too) for the
# small file systems of the disk-space checks; they go with it.
if [ -z "${VMPT_GUEST_TEST_NS:-}" ] && unshare -m true 2>/dev/null; then
	VMPT_GUEST_TEST_NS=1 exec unshare -m --propagation private "$0" "$@"
fi

W=$(mktemp -d /tmp/vmpt-guest-test.XXXXXX)
# shellcheck source=sshd_fixture.sh
. "$SRCDIR/guest-agent/tests/sshd_fixture.sh"
cleanup() { sshd_stop; rm -rf "$W"; }
trap cleanup EXIT
sshd_start "$W"
URL=ssh://root@127.0.0.1:$SSHD_PORT
CONN=(-i "$W/client_key" --known-hosts "$W/known_hosts" --timeout 30)
fails=0

# expect_fail TEXT CMD...: CMD fails and its stderr holds TEXT.
expect_fail() {
	local text=$1
	shift
	if "$@" > "$W/out" 2> "$W/err"; then
		echo "FAIL: '$*' succeeded; expected: $text"
		fails=$((fails + 1))
	elif ! grep -qF -- "$text" "$W/err"; then
		echo "FAIL: '$*': expected '$text' in:"
		cat "$W/err"
		fails=$((fails + 1))
	else
		echo "ok: $(grep -F -- "$text" "$W/err" | head -1)"
	fi
}

check() {	# check DESCRIPTION COMMAND...
	local what=$1
	shift
	if "$@"; then
		echo "ok: $what"
	else
		echo "FAIL: $what"
		fails=$((fails + 1))
	fi
}

# --- Where there is no guest ---
expect_fail "vmpt guest: connecting to 127.0.0.1 port 1: Connection refused" \
	"$VMPT" guest check ssh://root@127.0.0.1:1 "${CONN[@]}"
expect_fail "vmpt guest: http://127.0.0.1: not an ssh://user@host[:port] URL" \
	"$VMPT" guest check http://127.0.0.1 "${CONN[@]}"

# --- Host keys and authentication ---
: > "$W/empty_known_hosts"
expect_fail "host key of 127.0.0.1 port $SSHD_PORT (SHA256:" \
	"$VMPT" guest check "$URL" -i "$W/client_key" --known-hosts "$W/empty_known_hosts"
expect_fail "is not in $W/empty_known_hosts: check the fingerprint, then trust it with --accept-new-host-key" \
	"$VMPT" guest check "$URL" -i "$W/client_key" --known-hosts "$W/empty_known_hosts"
expect_fail "host key of 127.0.0.1 port $SSHD_PORT has CHANGED" \
	"$VMPT" guest check "$URL" -i "$W/client_key" --known-hosts "$W/wrong_known_hosts"
check "a changed key is not replaced" \
	grep -qF "$(cut -d' ' -f2 "$W/impostor_key.pub")" "$W/wrong_known_hosts"
expect_fail "root@127.0.0.1 port $SSHD_PORT refused key authentication (tried $W/other_key)" \
	"$VMPT" guest check "$URL" -i "$W/other_key" --known-hosts "$W/known_hosts"
expect_fail "cannot read the private key $W/nokey" \
	"$VMPT" guest check "$URL" -i "$W/nokey" --known-hosts "$W/known_hosts"

# --accept-new-host-key trusts and remembers an unknown key.
: > "$W/new_known_hosts"
set +e
"$VMPT" guest check "$URL" -i "$W/client_key" --known-hosts "$W/new_known_hosts" \
	--accept-new-host-key --remote-dir "$W/remote" --agent "$AGENT" > "$W/check.out" 2> "$W/check.err"
rc=$?
set -e
check "check ran (exit 0 ready / 1 not ready, got $rc)" test "$rc" -le 1
check "the new host key was added" grep -q . "$W/new_known_hosts"
check "check reports perf_event_paranoid" \
	grep -qx "perf_event_paranoid: $(cat /proc/sys/kernel/perf_event_paranoid)" "$W/check.out"
check "check reports the clocksource" grep -qx \
	"clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)" "$W/check.out"
check "check reports the BPF JIT" \
	grep -qx "bpf_jit_enable: $(cat /proc/sys/net/core/bpf_jit_enable)" "$W/check.out"
check "the agent was deployed" grep -q "vmpt: deploying $AGENT to 127.0.0.1:$W/remote/vmpt-agent" "$W/check.err"
check "deployed agent is ours" cmp -s "$AGENT" "$W/remote/vmpt-agent"
"$VMPT" guest check "$URL" "${CONN[@]}" --remote-dir "$W/remote" --agent "$AGENT" > /dev/null 2> "$W/check2.err" || true
check "same version: not deployed again" bash -c "! grep -q deploying '$W/check2.err'"

# --- Collect guest sideband of a real command ---
mkdir -p "$W/bin"
cp /bin/true "$W/bin/vmpt-probe"
"$VMPT" guest collect "$URL" "${CONN[@]}" --remote-dir "$W/remote" --agent "$AGENT" \
	-o "$W/rec" -- "$W/bin/vmpt-probe" > "$W/collect.out" 2> "$W/collect.err" ||
	{ echo "FAIL: collect"; cat "$W/collect.err"; exit 1; }
G=$W/rec/guest
perf script -i "$G/perf.data" --show-mmap-events --show-task-events > "$W/script.out" 2> "$W/script.err"
check "perf script: the command's exec" grep -q "PERF_RECORD_COMM exec: vmpt-probe:" "$W/script.out"
check "perf script: its mmap2" grep -qE "PERF_RECORD_MMAP2 .* r-xp $W/bin/vmpt-probe\$" "$W/script.out"
check "perf script: its exit" grep -q "vmpt-probe .*PERF_RECORD_EXIT" "$W/script.out"
PD_LIST=$BUILDDIR/perfdata/tests/pd-list
if [ -x "$PD_LIST" ]; then
	"$PD_LIST" "$G/perf.data" > "$W/pd.out"
	check "vmpt's reader: as many MMAP2 records as perf" test \
		"$(grep -c 'PERF_RECORD_MMAP2' "$W/pd.out")" = "$(grep -c 'PERF_RECORD_MMAP2' "$W/script.out")"
	check "vmpt's reader: TIME_CONV" grep -q "PERF_RECORD_TIME_CONV" "$W/pd.out"
fi
check "the command's binary is in the sysroot" cmp -s "$W/bin/vmpt-probe" "$G/root$W/bin/vmpt-probe"
libc=$(grep -m1 -oE 'r-xp (/usr)?/lib/x86_64-linux-gnu/libc\.so\.6$' "$W/script.out" | cut -d' ' -f2)
check "libc ($libc) is in the sysroot" cmp -s "$libc" "$G/root$libc"
check "the vdso is an ELF image" test "$(head -c4 "$G/vdso" | od -An -c | tr -d ' ')" = '177ELF'
check "collect summary" grep -qE "^guest: [0-9]+ files \([0-9]+ bytes\) in $W/rec/guest, [0-9]+ missing, 0 rejected$" "$W/collect.out"

# A busy guest: 500 execs while recording, none lost.
"$VMPT" guest collect "$URL" "${CONN[@]}" --remote-dir "$W/remote" --agent "$AGENT" \
	-o "$W/busy" --no-binaries -- /bin/sh -c 'for i in $(seq 500); do /bin/true; done' \
	> /dev/null 2> "$W/busy.err" || { echo "FAIL: busy collect"; cat "$W/busy.err"; exit 1; }
perf script -i "$W/busy/guest/perf.data" --show-task-events > "$W/busy.script" 2>&1
check "busy guest: all 500 execs in the sideband" \
	test "$(grep -c 'PERF_RECORD_COMM exec: true:' "$W/busy.script")" = 500
check "busy guest: nothing lost" bash -c "! grep -q 'records lost' '$W/busy.err'"

# A different agent binary in the guest is replaced.
printf x >> "$W/remote/vmpt-agent"
"$VMPT" guest collect "$URL" "${CONN[@]}" --remote-dir "$W/remote" --agent "$AGENT" \
	-o "$W/rec2" --no-binaries -d 0.2 > /dev/null 2> "$W/redeploy.err" || cat "$W/redeploy.err"
check "a changed agent is deployed again" grep -q "vmpt: deploying" "$W/redeploy.err"
check "guest sideband for a duration" test -s "$W/rec2/guest/perf.data"

# vmpt record --guest takes vmpt guest's options with a guest- prefix.
mkdir -p "$W/rec4"
"$VMPT" record -q --event dummy -o "$W/rec4/perf.data" --guest "$URL" \
	--guest-identity "$W/client_key" --guest-known-hosts "$W/known_hosts" --guest-timeout 30 \
	--guest-remote-dir "$W/remote" --guest-agent "$AGENT" -- /bin/true 2> "$W/record.err" ||
	{ echo "FAIL: record --guest"; cat "$W/record.err"; fails=$((fails + 1)); }
check "vmpt record --guest: the guest's sideband beside the recording" \
	test -s "$W/rec4/perf.data.guest/perf.data" -a ! -e "$W/rec4/guest"
check "vmpt record --guest: libc in the guest's sysroot" cmp -s "$libc" "$W/rec4/perf.data.guest/root$libc"

# --- The compact kcore (this machine's kernel may have no /proc/kcore:
# then the error must say so; the guest-vm suite checks a real one) ---
if [ ! -e /proc/kcore ]; then
	expect_fail "the guest gave no [kcore]: No such file or directory: vmpt-agent: kcore: opening /proc/kcore: No such file or directory" \
		"$VMPT" guest collect "$URL" "${CONN[@]}" --remote-dir "$W/remote" --agent "$AGENT" \
		-o "$W/rec3" --kcore --no-binaries -d 0.1
	expect_fail "vmpt-agent: kcore: /proc/kcore: No such file or directory (kernel built without CONFIG_PROC_KCORE)" \
		"$AGENT" kcore "$W/agent_kcore"
else
	"$VMPT" guest collect "$URL" "${CONN[@]}" --remote-dir "$W/remote" --agent "$AGENT" \
		-o "$W/rec3" --kcore --no-binaries -d 0.1 > /dev/null 2> "$W/kcore.err" ||
		{ echo "FAIL: collect --kcore"; cat "$W/kcore.err"; fails=$((fails + 1)); }
	K=$W/rec3/guest/kcore_dir
	check "kallsyms and modules fetched" cmp -s /proc/modules "$K/modules"
	check "kcore holds the kernel text as /proc/kcore has it" \
		python3 "$SRCDIR/guest-agent/tests/check_kcore.py" "$K" /proc/kcore
	check "vmpt-agent kcore DIR: the same kernel text" \
		sh -c '"$1" kcore "$2" && python3 "$3" "$2" /proc/kcore' sh \
		"$AGENT" "$W/agent_kcore" "$SRCDIR/guest-agent/tests/check_kcore.py"
fi

# --- A failing agent: its stderr is in the error ---
H=$W/remote-hostile
mkdir -p "$H"
"$AGENT" --version | cut -d' ' -f2 > "$H/version"
HOSTILE=(--remote-dir "$H" --agent "$SRCDIR/guest-agent/tests/hostile-agent.py")
echo fail > "$H/mode"
expect_fail "vmpt-agent record in the guest failed (exit 3): boom: the guest kernel said no" \
	"$VMPT" guest collect "$URL" "${CONN[@]}" "${HOSTILE[@]}" -o "$W/h0" -d 0.1

# --- A hostile agent ---
echo garbage > "$H/mode"
expect_fail "vmpt-agent record: agent reply offset 0: not a vmpt-agent reply (bad magic)" \
	"$VMPT" guest collect "$URL" "${CONN[@]}" "${HOSTILE[@]}" -o "$W/h1" -d 0.1
# 5 s: the agent's start (python) must fit in it on a loaded machine; it
# stays silent for 10.
echo silent > "$H/mode"
expect_fail "vmpt guest: vmpt-agent record: 127.0.0.1 sent nothing for 5 s" \
	"$VMPT" guest collect "$URL" -i "$W/client_key" --known-hosts "$W/known_hosts" --timeout 5 \
	"${HOSTILE[@]}" -o "$W/h1" -d 0.1
echo noready > "$H/mode"
expect_fail "vmpt guest: vmpt-agent record answered 'Welcome to the guest! Have a nice day' instead of 'VMPT-AGENT READY'" \
	"$VMPT" guest collect "$URL" "${CONN[@]}" "${HOSTILE[@]}" -o "$W/h1" -d 0.1
echo badperf > "$H/mode"
expect_fail "vmpt guest: $W/h1/guest/perf.data: " \
	"$VMPT" guest collect "$URL" "${CONN[@]}" "${HOSTILE[@]}" -o "$W/h1" -d 0.1
mkdir -p "$W/outside"
"$CRAFT" "$H/sideband" "/../../../../..$W/outside/escape" "/usr/lib/../../../..$W/outside/up" \
	"/lib/evil.so" "/bin/ok" "relative/path" "[vdso]" "/bin/ok" "/lib/evil.so"
echo rename > "$H/mode"
expect_fail "vmpt-agent pack: agent reply offset 8: frame names another file than /bin/ok" \
	"$VMPT" guest collect "$URL" "${CONN[@]}" "${HOSTILE[@]}" -o "$W/h2" -d 0.1
check "traversal names were rejected" grep -qF \
	"vmpt: guest path rejected: '/../../../../..$W/outside/escape': '.' or '..' component" "$W/err"
check "nothing outside the sysroot" test -z "$(ls -A "$W/outside")"
check "no /tmp/vmpt-pwned" test ! -e /tmp/vmpt-pwned
# A symlink planted in the sysroot is not followed.
mkdir -p "$W/h3/guest/root"
ln -s "$W/outside" "$W/h3/guest/root/lib"
echo honest > "$H/mode"
expect_fail "/lib/evil.so: cannot create root/lib/evil.so: Not a directory" \
	"$VMPT" guest collect "$URL" "${CONN[@]}" "${HOSTILE[@]}" -o "$W/h3" -d 0.1
check "nothing through the symlink" test -z "$(ls -A "$W/outside")"
echo oversize > "$H/mode"
expect_fail "vmpt-agent pack: agent reply offset 8: /bin/ok is 1099511627776 bytes, over the limit of 1048576" \
	"$VMPT" guest collect "$URL" "${CONN[@]}" "${HOSTILE[@]}" -o "$W/h4" -d 0.1 \
	--max-file-size 1048576
check "no partial file" test ! -e "$W/h4/guest/root/bin/ok"
echo honest > "$H/mode"
# and a symlink planted at a file's final name: replaced, not written through
mkdir -p "$W/h5/guest/root/bin"
ln -s "$W/outside/ok" "$W/h5/guest/root/bin/ok"
"$VMPT" guest collect "$URL" "${CONN[@]}" "${HOSTILE[@]}" -o "$W/h5" -d 0.1 > "$W/h5.out" 2> "$W/h5.err"
check "honest reply: only the sanitized names land" test \
	"$(cd "$W/h5/guest" && find . -type f | sort | tr '\n' ' ')" = \
	"./perf.data ./root/bin/ok ./root/lib/evil.so ./vdso "
check "honest reply: 2 rejected" grep -q "3 files .* 0 missing, 2 rejected" "$W/h5.out"
# After a run that writes, with traversal names in its sideband.
check "honest reply: files were written" test -s "$W/h5/guest/root/bin/ok"
check "honest reply: nothing outside the sysroot" test -z "$(ls -A "$W/outside")"
"$VMPT" guest maps "$W/h5" > "$W/maps.out"
check "maps: a traversal name is shown rejected" grep -qxF \
	"1002/1002     ?                0000000000400000-0000000000401000 /../../../../..$W/outside/escape ('.' or '..' component)" \
	"$W/maps.out"
check "maps: a fetched file" grep -qE " /bin/ok \(in sysroot\)$" "$W/maps.out"
check "maps: a relative name" grep -qE " relative/path \(no file\)$" "$W/maps.out"

# --- A guest that would fill the host's disk ---
# no_partial DIR: no temporary (half-received) file anywhere in DIR
no_partial() { test -z "$(find "$1" -name '.vmpt-tmp.*')"; }
MiB=1048576
sb=$(stat -c %s "$H/sideband")
echo big > "$H/mode"
echo $MiB > "$H/size"
expect_fail "vmpt guest: vmpt-agent pack: agent reply offset $((8 + 24 + 7 + MiB)): /lib/evil.so is $MiB bytes: with the $((sb + MiB)) taken from the guest before, over the budget of 1572864 for all its files; $W/h6/guest keeps the 1 file ($MiB bytes) fetched before" \
	"$VMPT" guest collect "$URL" "${CONN[@]}" "${HOSTILE[@]}" -o "$W/h6" -d 0.1 \
	--max-total-size 1536K
check "budget: the file before is whole" test "$(stat -c %s "$W/h6/guest/root/bin/ok")" = $MiB
check "budget: the file over it is not there" test ! -e "$W/h6/guest/root/lib/evil.so"
check "budget: no partial file" no_partial "$W/h6"
check "budget: nothing outside the sysroot" test -z "$(ls -A "$W/outside")"
expect_fail "vmpt: '1.5G': expected a size in bytes (or with K, M, G)" \
	"$VMPT" guest collect "$URL" "${CONN[@]}" "${HOSTILE[@]}" -o "$W/h6" --max-total-size 1.5G
# The same budget through vmpt record --guest.
mkdir -p "$W/h7"
expect_fail "vmpt record: guest: vmpt-agent pack: agent reply offset $((8 + 24 + 7 + MiB)): /lib/evil.so is $MiB bytes: with the $((sb + MiB)) taken from the guest before, over the budget of 1572864 for all its files; $W/h7/p.data.guest keeps the 1 file ($MiB bytes) fetched before" \
	"$VMPT" record -q --event dummy -o "$W/h7/p.data" --guest "$URL" \
	--guest-identity "$W/client_key" --guest-known-hosts "$W/known_hosts" --guest-timeout 30 \
	--guest-remote-dir "$H" --guest-agent "$SRCDIR/guest-agent/tests/hostile-agent.py" \
	--guest-max-total-size 1536K -- /bin/true
check "record --guest budget: the recording is kept" test -s "$W/h7/p.data"
check "record --guest budget: no partial file" no_partial "$W/h7"

# A small file system for the guest directory: 80 MiB, of which vmpt
# keeps 64 MiB free (it is a private mount, gone with the test).
if [ -n "${VMPT_GUEST_TEST_NS:-}" ]; then
	S=$W/small
	mkdir "$S"
	mount -t tmpfs -o size=80m none "$S"
	# The disk fills while a file comes: an 8 MiB file fits when it
	# starts (80 MiB free), then 10 MiB of something else arrive after
	# its first 2 MiB.
	echo fillwhile > "$H/mode"
	echo $((8 * MiB)) > "$H/size"
	echo "$S/filler $((10 * MiB))" > "$H/fill"
	expect_fail "vmpt guest: vmpt-agent pack: /bin/ok: $S/h8/guest has " \
		"$VMPT" guest collect "$URL" "${CONN[@]}" "${HOSTILE[@]}" -o "$S/h8" -d 0.1
	check "disk filling: the reason and what was kept" grep -qE \
		"^vmpt guest: vmpt-agent pack: /bin/ok: $S/h8/guest has [0-9]+ bytes free now, too few for the [0-9]+ bytes still to come with 67108864 kept free: stopped, the partial file removed; no file of this fetch is kept\$" "$W/err"
	check "disk filling: no partial file" no_partial "$S/h8"
	check "disk filling: the file is not there" test ! -e "$S/h8/guest/root/bin/ok"
	check "disk filling: the sideband is kept" test -s "$S/h8/guest/perf.data"
	rm -rf "$S/filler" "$S/h8"
	# The disk fills after the sideband came: nothing is asked for.
	echo fillafterrecord > "$H/mode"
	echo "$S/filler $((20 * MiB))" > "$H/fill"
	expect_fail "vmpt guest: $S/h9/guest has " \
		"$VMPT" guest collect "$URL" "${CONN[@]}" "${HOSTILE[@]}" -o "$S/h9" -d 0.1
	check "disk full before the fetch: the reason" grep -qE \
		"^vmpt guest: $S/h9/guest has [0-9]+ bytes free, less than the 67108864 kept free: no guest files fetched\$" "$W/err"
	check "disk full before the fetch: no root" test ! -e "$S/h9/guest/root"
	# Already too full for the sideband: refused before it is written.
	echo honest > "$H/mode"
	expect_fail "vmpt guest: vmpt-agent record: agent reply offset 8: [perf.data] is $sb bytes, more than $S/h10/guest can take: " \
		"$VMPT" guest collect "$URL" "${CONN[@]}" "${HOSTILE[@]}" -o "$S/h10" -d 0.1
	check "disk full: no sideband written" test -z "$(ls -A "$S/h10/guest")"
	umount "$S"
fi

if [ "$fails" -ne 0 ]; then
	echo "$fails checks failed"
	exit 1
fi
echo "all guest collect checks passed"
