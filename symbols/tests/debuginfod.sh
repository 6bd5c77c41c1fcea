#!/bin/bash
# debuginfod: binaries and debug files missing here are fetched by build-id
# from the servers of DEBUGINFOD_URLS, off when it is unset.  Debian's
# debuginfod serves a directory on loopback; a recording (its build-ids
# written by perf inject) of a C++ program whose binary is then only on
# the server decodes to the lines perf script printed while the binary was
# here; a stripped binary whose debug file is only on the server gets its
# symbols and source lines from it.
# usage: debuginfod.sh VMPT_SYNTH
set -u
SYNTH=$1
tmp=$(mktemp -d)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2> /dev/null && wait "$pid" 2> /dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
command -v perf > /dev/null || { echo "perf not found"; exit 77; }
command -v debuginfod > /dev/null || { echo "debuginfod not found (tools/install-deps.sh)"; exit 77; }
export HOME=$tmp/home
export DEBUGINFOD_CACHE_PATH=$tmp/cache
unset DEBUGINFOD_URLS
mkdir -p "$HOME" "$tmp/srv" "$tmp/app"
fail=0
runs=0

# same NAME REC WANT-DIR MODE...: vmpt's output equals perf's, saved before.
same() {
	local name=$1 rec=$2 dir=$3 i=0 m
	shift 3
	for m in "$@"; do
		i=$((i + 1))
		# shellcheck disable=SC2086
		"$VMPT" script -i "$rec" $m > "$tmp/v" 2> "$tmp/verr"
		runs=$((runs + 1))
		cmp -s "$dir/$i" "$tmp/v" ||
			{ echo "FAIL $name [$m]: $(diff "$dir/$i" "$tmp/v" | head -3)"; fail=1; }
	done
}
# save DIR REC MODE...: perf's output, binaries still here.
save() {
	local dir=$1 rec=$2 i=0 m
	shift 2
	mkdir -p "$dir"
	for m in "$@"; do
		i=$((i + 1))
		# shellcheck disable=SC2086
		perf script -i "$rec" $m > "$dir/$i" 2> /dev/null
		[ -s "$dir/$i" ] || { echo "FAIL: perf printed nothing [$m]"; fail=1; }
	done
}
MODES=("--itrace=b -F ip,sym,dso" "" "--itrace=b -F ip,sym,srcline" "--call-trace")

# The binary: recorded at app/shapes, then moved to the server.
${CXX:-c++} -O2 -g -o "$tmp/app/shapes" "$SRCDIR/symbols/tests/shapes.cpp" || exit 1
objcopy -N _init "$tmp/app/shapes" || exit 1	# see demangle.sh
"$SYNTH" -q --elf "$tmp/app/shapes" --seed 5 --branches 3000 -o "$tmp/t" || exit 1
perf inject --buildid-all -i "$tmp/t.perf.data" -o "$tmp/a.data" 2> /dev/null || exit 1
id=$(perf buildid-list -i "$tmp/a.data" 2> /dev/null | awk '/shapes/ { print $1 }')
[ -n "$id" ] || { echo "FAIL: no build-id recorded"; exit 1; }
save "$tmp/want-a" "$tmp/a.data" "${MODES[@]}"
mv "$tmp/app/shapes" "$tmp/srv/shapes"

# A stripped binary here (another build), its debug file only on the server.
${CXX:-c++} -O1 -g -o "$tmp/full" "$SRCDIR/symbols/tests/shapes.cpp" || exit 1
objcopy -N _init "$tmp/full" || exit 1
cp "$tmp/full" "$tmp/app/stripped"
"$SYNTH" -q --elf "$tmp/app/stripped" --seed 6 --branches 3000 -o "$tmp/s" || exit 1
perf inject --buildid-all -i "$tmp/s.perf.data" -o "$tmp/b.data" 2> /dev/null || exit 1
save "$tmp/want-b" "$tmp/b.data" "${MODES[@]}"
objcopy --only-keep-debug "$tmp/full" "$tmp/srv/stripped.debug"
objcopy --strip-all "$tmp/full" "$tmp/app/stripped"
# perf inject filed the binaries in its build-id cache: not there.
rm -rf "$HOME/.debug"

# Off: the binary is missing, the stripped one has no names.
"$VMPT" script -i "$tmp/a.data" --itrace=b -F ip,sym,dso > "$tmp/off" 2> "$tmp/offerr"
grep -q "missing $tmp/app/shapes" "$tmp/offerr" ||
	{ echo "FAIL: without DEBUGINFOD_URLS: $(cat "$tmp/offerr")"; fail=1; }

# Without libdebuginfod (hidden by mounting /dev/null over it in a mount
# namespace of our own: root only): as off, and one line saying why.
if [ "$(id -u)" = 0 ] && unshare -m true 2> /dev/null; then
	lib=$(ldconfig -p | awk '$1 == "libdebuginfod.so.1" && /x86-64/ { print $NF; exit }')
	DEBUGINFOD_URLS=http://127.0.0.1:1 unshare -m sh -c 'mount --bind /dev/null "$1" &&
		exec "$2" script -i "$3" --itrace=b -F ip,sym,dso' sh "$(readlink -f "$lib")" \
		"$VMPT" "$tmp/a.data" > "$tmp/nolib" 2> "$tmp/nolib-err"
	why="vmpt: DEBUGINFOD_URLS is set, but no debuginfod lookups: cannot use \
libdebuginfod.so.1 (Debian package libdebuginfod1): $lib: file too short"
	cmp -s "$tmp/off" "$tmp/nolib" || { echo "FAIL: no libdebuginfod: not as off"; fail=1; }
	[ "$(grep -cxF "$why" "$tmp/nolib-err")" = 1 ] &&
		grep -vxF "$why" "$tmp/nolib-err" | cmp -s - "$tmp/offerr" ||
		{ echo "FAIL: no libdebuginfod: $(cat "$tmp/nolib-err")"; fail=1; }
fi

port=$((20000 + RANDOM % 20000))
debuginfod -F -p "$port" -d "$tmp/db.sqlite" -t 0 -g 0 -c 1 "$tmp/srv" > "$tmp/dlog" 2>&1 &
pid=$!
export DEBUGINFOD_URLS=http://127.0.0.1:$port
# Up and the directory scanned: the binary's build-id is served.
for _ in $(seq 1 100); do
	curl -sf -o /dev/null "$DEBUGINFOD_URLS/buildid/$id/executable" && break
	kill -0 "$pid" 2> /dev/null || { echo "FAIL: debuginfod exited: $(tail -3 "$tmp/dlog")"; exit 1; }
	sleep 0.2
done
same "binary from debuginfod" "$tmp/a.data" "$tmp/want-a" "${MODES[@]}"
grep -q missing "$tmp/verr" && { echo "FAIL: $(cat "$tmp/verr")"; fail=1; }
ls "$DEBUGINFOD_CACHE_PATH/$id/executable" > /dev/null 2>&1 ||
	{ echo "FAIL: nothing in debuginfod's cache for $id"; fail=1; }
same "debug file from debuginfod" "$tmp/b.data" "$tmp/want-b" "${MODES[@]}"
"$VMPT" script -i "$tmp/b.data" --itrace=b -F ip,sym 2> /dev/null | grep -q ' area_of$' ||
	{ echo "FAIL: the stripped binary's local functions are not named"; fail=1; }

[ $fail = 0 ] && echo "vmpt script with debuginfod = perf script with the files here, in $runs runs"
exit $fail
