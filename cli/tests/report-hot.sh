#!/bin/bash
# vmpt report's hot spots count what perf counts: per comm, symbol and
# dso, the instructions of vmpt report --json equal perf script's
# --itrace=i0ns samples (and vmpt script's) on synthesized recordings of a
# VM (host and guest kernels, one thread and vCPU threads), of a KVM
# selftest's guest code and of user code with its kernel; the text equals
# perf report --itrace=i0ns --stdio -n --sort comm,dso,sym sample for
# sample; --percent-limit keeps the rows perf keeps; --time counts what
# perf script --time samples; --sort dso adds up; the JSON is valid
# against docs/report.schema.json.  perf 6.1 names kvm-selftest's PLT
# stub after the symbol before it (_init), vmpt printf@plt: that row is
# left out of the user trace's comparison.
# usage: report-hot.sh   (env: VMPT SYNTH VMX_KERNEL GUEST_KERNEL KVM_SELFTEST SRCDIR)
set -u
: "${VMPT:?}" "${SYNTH:?}" "${VMX_KERNEL:?}" "${GUEST_KERNEL:?}" "${KVM_SELFTEST:?}" "${SRCDIR:?}"
command -v perf > /dev/null || { echo "perf not found"; exit 77; }
python3 -c 'import jsonschema' 2> /dev/null || { echo "python3-jsonschema missing"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HOME=$tmp/home
mkdir -p "$HOME"
cd "$tmp" || exit 1
cp "$VMX_KERNEL" "$GUEST_KERNEL" "$KVM_SELFTEST" .
SCHEMA=$SRCDIR/docs/report.schema.json
fail=0 insns=0
GUEST_COMM=:TID	# perf's guest thread (--guest-code: [guest/PID])

# perf script's instruction samples as "COUNT COMM SYM (DSO)" (a guest's
# comm as perf prints it, ":PID")
perf_counts() {
	perf script --itrace=i0ns -F comm,ip,sym,dso "$@" 2> /dev/null | python3 -c '
import collections, re, sys
c = collections.Counter()
for l in sys.stdin:
    m = re.match(r"^\s*(.*?)\s+[0-9a-f]+\s+(.*?)\s+\((.*)\)$", l)
    c[(m.group(1), m.group(2), m.group(3))] += 1
for (comm, sym, dso), n in c.items():
    print(n, comm, sym, "(%s)" % dso)' | sort
}
# vmpt report --json's rows the same way
vmpt_counts() {
	"$VMPT" report --json --sort comm,tid,dso,sym "$@" 2> /dev/null > r.json
	python3 - "$SCHEMA" "$GUEST_COMM" <<'PY'
import json, sys, jsonschema
d = json.load(open('r.json'))
jsonschema.validate(d, json.load(open(sys.argv[1])))
for r in d['rows']:
    comm = r['comm'] if r['machine'] == 'host' else sys.argv[2].replace('TID', str(r['tid']))
    print(r['instructions'], comm, r['sym'] or '[unknown]', '(%s)' % (r['dso'] or '[unknown]'))
PY
}

# same NAME DROP ARGS...: vmpt's rows equal perf's (rows matching DROP aside)
same() {
	local name=$1 drop=$2
	shift 2
	perf_counts "$@" | grep -v "$drop" > p.txt
	vmpt_counts "$@" | sort | grep -v "$drop" > v.txt
	if ! cmp -s p.txt v.txt; then
		echo "FAIL $name: $(diff p.txt v.txt | head -5)"
		fail=1
	fi
	n=$(awk '{ s += $1 } END { print s }' p.txt)
	insns=$((insns + n))
	echo "$name: $(wc -l < p.txt) rows, $n instructions as perf's"
}

VM=(--vm --host-kernel ./vmx-kernel --guest-elf ./guest-kernel --guest-start start_kernel
    --psb-period 1024 --branches 6000 --tsc-offset 0,0,0)
K=(--vmlinux ./vmx-kernel --guestvmlinux ./guest-kernel)
"$SYNTH" "${VM[@]}" --vcpus 2 --event --seed 7 -o vm1 -q || exit 1
"$SYNTH" "${VM[@]}" --vcpus 2 --event --cyc --seed 8 -o vm0 -q || exit 1
same "VM, one thread, CYC" "^$" -i vm0.perf.data "${K[@]}"
same "VM, one thread" "^$" -i vm1.perf.data "${K[@]}"
"$SYNTH" "${VM[@]}" --per-thread --cpus 2 --vcpus 3 --seed 6 -o vm2 -q || exit 1
same "VM, vCPU threads" "^$" -i vm2.perf.data "${K[@]}"
"$SYNTH" --vm --guest-code --elf ./kvm-selftest --host-kernel ./vmx-kernel --branches 4000 \
	--seed 7 --tsc-offset 0 -o gc -q || exit 1
GUEST_COMM=[guest/4242] same "KVM selftest guest code" "@plt\|_init\|\[unknown\] (./kvm" \
	-i gc.perf.data --guest-code --vmlinux ./vmx-kernel
"$SYNTH" --elf ./kvm-selftest --host-kernel ./guest-kernel --start guest_code --irq-period 400 \
	--event --ptw --cyc --branches 4000 --seed 4 -o u -q || exit 1
same "user and kernel" "@plt\|_init\|\[unknown\] (./kvm" -i u.perf.data --vmlinux ./guest-kernel

# the text as perf report's: overhead, samples, comm, dso, symbol
perf report -i u.perf.data --itrace=i0ns --stdio -n --sort comm,dso,sym --vmlinux ./guest-kernel \
	2> /dev/null | grep -v '^#' | grep . | awk '{ print $1, $2, $3, $4, $6 }' |
	grep -v '_init\|@plt\|kvm-selftest \[unknown\]' > p.txt
"$VMPT" report -i u.perf.data --vmlinux ./guest-kernel --sort comm,dso,sym 2> /dev/null |
	grep -v '^#' | awk '{ print $1, $2, $7, $8, $9 }' |
	grep -v '_init\|@plt\|kvm-selftest \[unknown\]' > v.txt
cmp -s p.txt v.txt || { echo "FAIL text vs perf report: $(diff p.txt v.txt | head -5)"; fail=1; }
# --percent-limit: the rows perf report keeps
perf report -i u.perf.data --itrace=i0ns --stdio -n --sort comm,dso,sym --percent-limit 2 \
	--vmlinux ./guest-kernel 2> /dev/null | grep -v '^#' | grep . | awk '{ print $1, $2, $6 }' > p.txt
"$VMPT" report -i u.perf.data --vmlinux ./guest-kernel --percent-limit 2 2> /dev/null |
	grep -v '^#' | awk '{ print $1, $2, $9 }' > v.txt
cmp -s p.txt v.txt || { echo "FAIL --percent-limit 2: $(diff p.txt v.txt | head -5)"; fail=1; }
# --time: a range's samples (MTC timing: CYC times are perf's only in part)
first=$(perf script -i vm1.perf.data --itrace=i0ns -F time "${K[@]}" 2> /dev/null | head -1 | tr -d ' :')
last=$(perf script -i vm1.perf.data --itrace=i0ns -F time "${K[@]}" 2> /dev/null | tail -1 | tr -d ' :')
mid=$(awk -v a="$first" -v b="$last" 'BEGIN { printf "%.6f", a + (b - a) / 3 }')
end=$(awk -v a="$first" -v b="$last" 'BEGIN { printf "%.6f", a + 2 * (b - a) / 3 }')
same "--time $mid,$end" "^$" -i vm1.perf.data "${K[@]}" --time "$mid,$end"
# --sort dso: the same instructions, summed by dso
"$VMPT" report --json --sort dso -i vm1.perf.data "${K[@]}" 2> /dev/null |
	python3 -c 'import json, sys; d = json.load(sys.stdin); print(sorted((r["dso"], r["instructions"]) for r in d["rows"]))' > v.txt
perf_counts -i vm1.perf.data "${K[@]}" |
	awk '{ d = $NF; gsub(/[()]/, "", d); s[d] += $1 } END { for (k in s) print k, s[k] }' | sort |
	python3 -c 'import sys; print(sorted((l.split()[0], int(l.split()[1])) for l in sys.stdin))' > p.txt
cmp -s p.txt v.txt || { echo "FAIL --sort dso: $(diff p.txt v.txt | head -3)"; fail=1; }
echo "$insns instructions counted as perf's"
exit $fail
