#!/bin/bash
# vmpt export's Chrome JSON and folded stacks open in speedscope (the npm
# package pinned in output/tests/clients, installed by tools/install-deps.sh
# with npm ci), served over HTTP on the loopback and rendered by Debian's
# chromium, headless: the page imports each file (the profile's name in
# the title bar, no import error) and its sandwich view lists the traced
# functions, host and guest.  The recordings: a VM's vCPU thread with
# its guest, and user code.
# usage: export-speedscope.sh VMPT_SYNTH
set -u
SYNTH=$(realpath "$1")
D=$(dirname "$SYNTH")
SS=$SRCDIR/output/tests/clients/node_modules/speedscope/dist/release
tmp=$(mktemp -d)
srv=""
cleanup() {
	[ -n "$srv" ] && kill "$srv" 2> /dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
fail=0
[ -f "$SS/index.html" ] ||
	{ echo "FAIL: speedscope not installed (tools/install-deps.sh: npm ci in output/tests/clients)"; exit 1; }
command -v chromium > /dev/null ||
	{ echo "FAIL: chromium not installed (tools/install-deps.sh)"; exit 1; }
cd "$tmp" || exit 1
mkdir www
cp -r "$SS"/. www/
"$SYNTH" -q --vm --host-kernel "$D/vmx-kernel" --guest-elf "$D/guest-kernel" \
	--guest-start start_kernel --branches 3000 --guest-period 500 --vcpus 1 \
	--psb-period 1024 --seed 3 --cyc -o vm
"$SYNTH" -q --branches 4000 --elf /usr/bin/bash --seed 41 -o u
V="--vmlinux $D/vmx-kernel --guest-elf $D/guest-kernel"
# shellcheck disable=SC2086
"$VMPT" export chrome -i vm.perf.data $V -o www/vm.json 2> /dev/null
# shellcheck disable=SC2086
"$VMPT" export folded -i vm.perf.data $V > www/vm.folded 2> /dev/null
"$VMPT" export folded -i u.perf.data > www/u.folded 2> /dev/null

# An HTTP server of our own on a free loopback port.
python3 -m http.server 0 --bind 127.0.0.1 --directory www > http.log 2>&1 &
srv=$!
port=""
for _ in $(seq 100); do
	port=$(sed -n 's/.*port \([0-9]*\).*/\1/p' http.log | head -1)
	[ -n "$port" ] && break
	sleep 0.1
done
[ -n "$port" ] || { echo "FAIL: the HTTP server did not start: $(cat http.log)"; exit 1; }

# open FILE VIEW: the page's DOM once speedscope has imported FILE.
open_in_speedscope() {
	local url="http://127.0.0.1:$port/index.html#profileURL=http://127.0.0.1:$port/$1&view=$2"

	# (a tall window: the sandwich table shows the rows it has room for;
	# a page that never settles must not hang the test)
	timeout 300 chromium --headless --no-sandbox --disable-gpu --enable-unsafe-swiftshader \
		--window-size=1200,6000 --virtual-time-budget=20000 --dump-dom "$url" \
		2> chromium.log
}
shows() {	# WHAT FILE VIEW WORD...
	local what=$1 file=$2 view=$3 w try
	shift 3
	# A loaded machine can dump the DOM before the table's rows are laid
	# out (seen once, beside two fuzzers and the suite): up to three loads.
	for try in 1 2 3; do
		open_in_speedscope "$file" "$view" > dom.html
		for w in "$@"; do
			grep -qF -- "$w" dom.html || continue 2
		done
		break
	done
	grep -q "Something went wrong\|Failed to\|Unrecognized format" dom.html &&
		{ echo "FAIL $what: speedscope's import error"; fail=1; }
	for w in "$@"; do
		grep -qF -- "$w" dom.html ||
			{ echo "FAIL $what: '$w' not on the page"; fail=1; }
	done
}
# The Chrome JSON: the vCPU thread's profile, its host and guest calls.
shows "vm.json" vm.json sandwich "synth 4242 (pid 4242), synth 4242 (tid 4242)" \
	"</span>guest</td>" "</span>start_kernel</td>" "</span>vmx_vmenter</td>" \
	"</span>vcpu_enter_guest</td>"
# The folded stacks: named by the file; guest frames through the host's.
shows "vm.folded" vm.folded sandwich "<title>vm.folded - speedscope</title>" \
	"</span>[guest]</td>" "</span>start_kernel</td>" "</span>vmx_handle_exit</td>"
shows "u.folded" u.folded sandwich "<title>u.folded - speedscope</title>" "</span>main</td>" \
	"</span>xmalloc</td>"
exit $fail
