#!/bin/bash
# vmpt export sqlite and postgresql against perf 6.1's own export scripts
# (perf script --itrace=bep -s export-to-sqlite.py / export-to-postgresql.py
# DB all calls, with PySide2's QtSql as they need) on the same recordings:
# synthesized user code, user and kernel code (--vmlinux), a per-cpu
# recording of four processes with forks and context switches, and the
# real hase recordings.  Every row of selected_events, machines, threads,
# comms, comm_threads, dsos, symbols, branch_types, samples, call_paths,
# calls, cbr and context_switches is equal, but one pinned difference:
# loopy's label 'exit' (no size, last in .text) ends where perf's data
# label 'msg' starts (perf sizes code symbols by all symbols, vmpt by its
# code symbols).  The SQL that perf's exported-sql-viewer.py runs (its call
# graph, call tree, branch and top-calls queries) gives the same answers
# on both files.  PostgreSQL: a server of its own (initdb, pg_ctl) as the
# unprivileged user nobody on a Unix socket in a temporary directory.
# usage: export-vs-perf.sh VMPT_SYNTH PERCPU_MERGE
set -u
SYNTH=$(realpath "$1")
MERGE=$(realpath "$2")
D=$(dirname "$SYNTH")
H="$SHARED/realtraces/perf-data-hase"
PY=/usr/lib/perf-core/scripts/python
tmp=$(mktemp -d)
chmod 755 "$tmp"
pgdata=""
# PostgreSQL refuses root: as root the server runs as nobody.
as_pg() {
	if [ "$(id -u)" -eq 0 ]; then runuser -u nobody -- "$@"; else "$@"; fi
}
cleanup() {
	[ -n "$pgdata" ] && as_pg "$PGBIN/pg_ctl" -D "$pgdata" -m immediate stop > /dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT
fail=0
rows=0
export HOME=$tmp/home
mkdir -p "$HOME"
# The clients: missing ones fail the test (tools/install-deps.sh installs them).
for need in perf sqlite3 psql; do
	command -v "$need" > /dev/null || { echo "FAIL: $need not installed (tools/install-deps.sh)"; exit 1; }
done
/usr/bin/python3 -c 'from PySide2.QtSql import QSqlDatabase' 2> /dev/null ||
	{ echo "FAIL: perf's export scripts need python3-pyside2.qtsql (tools/install-deps.sh)"; exit 1; }
[ -f "$PY/export-to-sqlite.py" ] || { echo "FAIL: no $PY/export-to-sqlite.py"; exit 1; }
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2> /dev/null | sort -V | tail -1)
[ -x "$PGBIN/initdb" ] || { echo "FAIL: PostgreSQL's server (package postgresql) not installed"; exit 1; }

TABLES="selected_events machines threads comms comm_threads dsos symbols branch_types samples
call_paths calls cbr ptwrite context_switches"
# The viewer's queries (exported-sql-viewer.py of perf 6.1: call graph,
# call tree, branches, top calls), over all threads and comms.
QUERIES=(
"SELECT call_path_id, name, short_name, COUNT(calls.id), SUM(return_time - call_time), SUM(insn_count), SUM(cyc_count), SUM(branch_count) FROM calls INNER JOIN call_paths ON calls.call_path_id = call_paths.id INNER JOIN symbols ON call_paths.symbol_id = symbols.id INNER JOIN dsos ON symbols.dso_id = dsos.id GROUP BY call_path_id, name, short_name, parent_call_path_id, comm_id, thread_id ORDER BY call_path_id, comm_id, thread_id"
"SELECT calls.id, name, short_name, call_time, return_time - call_time, insn_count, cyc_count, branch_count FROM calls INNER JOIN call_paths ON calls.call_path_id = call_paths.id INNER JOIN symbols ON call_paths.symbol_id = symbols.id INNER JOIN dsos ON symbols.dso_id = dsos.id ORDER BY calls.parent_id, call_time, calls.id"
"SELECT samples.id, time, cpu, comm, pid, tid, branch_types.name, CASE WHEN in_tx = '0' THEN 'No' ELSE 'Yes' END, ip, symbols.name, sym_offset, dsos.short_name, to_ip, to_symbols.name, to_sym_offset, to_dsos.short_name FROM samples INNER JOIN comms ON comm_id = comms.id INNER JOIN threads ON thread_id = threads.id INNER JOIN branch_types ON branch_type = branch_types.id INNER JOIN symbols ON symbol_id = symbols.id INNER JOIN symbols to_symbols ON to_symbol_id = to_symbols.id INNER JOIN dsos ON samples.dso_id = dsos.id INNER JOIN dsos AS to_dsos ON samples.to_dso_id = to_dsos.id WHERE samples.id > 0 ORDER BY samples.id"
"SELECT comm, pid, tid, name, CASE WHEN (short_name = '[kernel.kallsyms]') THEN '[kernel]' ELSE short_name END AS dso, call_time, return_time, (return_time - call_time) AS elapsed_time, branch_count, CASE WHEN (calls.flags = 1) THEN 'no call' WHEN (calls.flags = 2) THEN 'no return' WHEN (calls.flags = 3) THEN 'no call/return' ELSE '' END AS flags FROM calls INNER JOIN call_paths ON calls.call_path_id = call_paths.id INNER JOIN symbols ON call_paths.symbol_id = symbols.id INNER JOIN dsos ON symbols.dso_id = dsos.id INNER JOIN comms ON calls.comm_id = comms.id INNER JOIN threads ON calls.thread_id = threads.id ORDER BY elapsed_time DESC, calls.id"
"SELECT name FROM selected_events WHERE id > 0 ORDER BY id"
"SELECT * FROM samples_view ORDER BY id"
"SELECT * FROM calls_view ORDER BY id"
)

# sqlite_same NAME PERF.DATA [ARGS] [-- PINNED-DIFF]: both files' tables.
sqlite_same() {
	local name=$1 data=$2 t n
	shift 2
	local args=() pinned=""
	while [ $# -gt 0 ]; do
		[ "$1" = "--" ] && { pinned=$2; break; }
		args+=("$1")
		shift
	done
	rm -f "$tmp/p.db" "$tmp/v.db"
	perf script -i "$data" --itrace=bep "${args[@]}" -s "$PY/export-to-sqlite.py" \
		"$tmp/p.db" all calls > "$tmp/perf.log" 2>&1 ||
		{ echo "FAIL $name: perf's export-to-sqlite.py: $(tail -2 "$tmp/perf.log")"; fail=1; return; }
	"$VMPT" export sqlite -i "$data" "${args[@]}" -o "$tmp/v.db" 2> "$tmp/vmpt.log" ||
		{ echo "FAIL $name: vmpt export sqlite: $(cat "$tmp/vmpt.log")"; fail=1; return; }
	for t in $TABLES; do
		sqlite3 "$tmp/p.db" "SELECT * FROM $t ORDER BY id" > "$tmp/p.$t" 2> /dev/null
		sqlite3 "$tmp/v.db" "SELECT * FROM $t ORDER BY id" > "$tmp/v.$t" 2> /dev/null
		n=$(wc -l < "$tmp/p.$t")
		rows=$((rows + n))
		if [ "$t" = symbols ] && [ -n "$pinned" ]; then
			diff "$tmp/p.$t" "$tmp/v.$t" | grep '^[<>]' > "$tmp/d"
			printf '%s\n' "$pinned" | cmp -s - "$tmp/d" ||
				{ echo "FAIL $name: symbols: $(head -4 "$tmp/d")"; fail=1; }
		elif ! cmp -s "$tmp/p.$t" "$tmp/v.$t"; then
			echo "FAIL $name: $t ($n rows in perf's): $(diff "$tmp/p.$t" "$tmp/v.$t" | head -3)"
			fail=1
		fi
	done
	for q in "${QUERIES[@]}"; do
		sqlite3 "$tmp/p.db" "$q" > "$tmp/pq" 2>&1
		sqlite3 "$tmp/v.db" "$q" > "$tmp/vq" 2>&1 ||
			{ echo "FAIL $name: the viewer's query fails on vmpt's file: $(head -1 "$tmp/vq")"; fail=1; }
		cmp -s "$tmp/pq" "$tmp/vq" ||
			{ echo "FAIL $name: query '${q:0:60}...' answers differ"; fail=1; }
	done
	[ "$(sqlite3 "$tmp/v.db" "SELECT COUNT(*) FROM samples")" -gt 10 ] ||
		{ echo "FAIL $name: too few samples"; fail=1; }
}

# The recordings.
"$SYNTH" -q --branches 4000 --elf /usr/bin/bash --seed 41 -o "$tmp/u"
"$SYNTH" -q --branches 4000 --elf /usr/bin/bash --seed 42 --irq-period 300 \
	--host-kernel "$D/guest-kernel" -o "$tmp/uk"
T0=$((0x2a00000000))
"$SYNTH" -q --branches 1500 --elf /usr/bin/bash --seed 21 --pid 100 --tsc0 $T0 -o "$tmp/a"
"$SYNTH" -q --branches 1500 --elf /usr/bin/ls --seed 22 --pid 200 --tsc0 $((T0 + 5000)) -o "$tmp/b"
"$SYNTH" -q --branches 1500 --elf /usr/bin/dash --seed 23 --pid 300 --tsc0 $((T0 + 400000)) \
	-o "$tmp/c"
"$SYNTH" -q --branches 1500 --elf /usr/bin/bash --seed 24 --pid 400 --tsc0 $((T0 + 800000)) \
	-o "$tmp/e"
"$MERGE" "$tmp/m.data" 0:"$tmp/a.perf.data" 1:"$tmp/b.perf.data" 0:"$tmp/c.perf.data" \
	1:"$tmp/e.perf.data":100
for p in /home/joerg/git/hase /home/joerg/git/angr/hase; do
	for n in loopy control_flow; do
		mkdir -p "$tmp/symfs$p/tests/bin/$n"
		ln -s "$H/$n/$n" "$tmp/symfs$p/tests/bin/$n/$n"
	done
done

sqlite_same user "$tmp/u.perf.data"
sqlite_same user+kernel "$tmp/uk.perf.data" --vmlinux "$D/guest-kernel"
sqlite_same per-cpu "$tmp/m.data"
EXIT_PIN='< 3|1|281|316|0|exit
> 3|1|281|8192|0|exit'
sqlite_same loopy "$H/loopy/loopy-20180404T162955.perf" --symfs "$tmp/symfs" -- "$EXIT_PIN"
sqlite_same loopy-201805 "$H/loopy/loopy-201805.perf.data" --symfs "$tmp/symfs" -- "$EXIT_PIN"
sqlite_same control_flow "$H/control_flow/control_flow-20180404T163033.perf" --symfs "$tmp/symfs"
echo "sqlite: $rows rows of perf's export-to-sqlite.py compared"

# PostgreSQL: a server of our own (as nobody when we are root).
mkdir "$tmp/pg"
[ "$(id -u)" -eq 0 ] && chown nobody "$tmp/pg"
pgdata=$tmp/pg/data
pguser=$(id -un)
[ "$(id -u)" -eq 0 ] && pguser=nobody
as_pg "$PGBIN/initdb" -D "$pgdata" -A trust -U "$pguser" > "$tmp/initdb.log" 2>&1 ||
	{ echo "FAIL: initdb: $(tail -3 "$tmp/initdb.log")"; pgdata=""; exit 1; }
as_pg "$PGBIN/pg_ctl" -D "$pgdata" -o "-k $tmp/pg -c listen_addresses=''" \
	-l "$tmp/pg/log" -w start > /dev/null ||
	{ echo "FAIL: pg_ctl start: $(tail -3 "$tmp/pg/log")"; exit 1; }
export PGHOST=$tmp/pg PGUSER=$pguser
pgrows=0
pg_same() {
	local name=$1 data=$2 db=$3 t n
	shift 3
	perf script -i "$data" --itrace=bep "$@" -s "$PY/export-to-postgresql.py" \
		"p$db" all calls > "$tmp/perf.log" 2>&1 ||
		{ echo "FAIL $name: perf's export-to-postgresql.py: $(tail -2 "$tmp/perf.log")"; fail=1; return; }
	"$VMPT" export postgresql -i "$data" "$@" -o "v$db" 2> "$tmp/vmpt.log" ||
		{ echo "FAIL $name: vmpt export postgresql: $(cat "$tmp/vmpt.log")"; fail=1; return; }
	for t in $TABLES; do
		psql -d "p$db" -XAtc "SELECT * FROM $t ORDER BY id" > "$tmp/p.$t" 2> /dev/null
		psql -d "v$db" -XAtc "SELECT * FROM $t ORDER BY id" > "$tmp/v.$t" 2> /dev/null
		n=$(wc -l < "$tmp/p.$t")
		pgrows=$((pgrows + n))
		cmp -s "$tmp/p.$t" "$tmp/v.$t" ||
			{ echo "FAIL $name (postgresql): $t: $(diff "$tmp/p.$t" "$tmp/v.$t" | head -3)"; fail=1; }
	done
	# the same rows as the SQLite file's
	[ "$(psql -d "v$db" -XAtc 'SELECT COUNT(*) FROM calls')" = \
	  "$(sqlite3 "$tmp/$db.db" 'SELECT COUNT(*) FROM calls')" ] ||
		{ echo "FAIL $name: postgresql and sqlite calls differ"; fail=1; }
}
for db in u m; do
	rm -f "$tmp/$db.db"
	f=$tmp/$db.perf.data
	[ "$db" = m ] && f=$tmp/m.data
	"$VMPT" export sqlite -i "$f" -o "$tmp/$db.db" 2> /dev/null
	pg_same "$db" "$f" "$db"
done
echo "postgresql: $pgrows rows of perf's export-to-postgresql.py compared"
# A database that exists already is refused, in PostgreSQL's words.
"$VMPT" export postgresql -i "$tmp/u.perf.data" -o vu > /dev/null 2> "$tmp/err" &&
	{ echo "FAIL: an existing database overwritten"; fail=1; }
grep -q 'vu: CREATE DATABASE vu: ERROR:  database "vu" already exists' "$tmp/err" ||
	{ echo "FAIL: existing database: $(cat "$tmp/err")"; fail=1; }
exit $fail
