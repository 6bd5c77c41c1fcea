#!/bin/sh
# Code mapped over code a process mapped before, as perf script 6.1 names
# it: each sample from the mapping current at its time, not the last one
# at its address.  A C program recorded here (cpu-clock:u, with and without
# -g) runs a loop in library A, then the same loop in library B at A's
# address: dlclose'd and dlopen'd (the dynamic loader puts B where A was;
# checked), and its code mmap'd with MAP_FIXED over A's.  Each prints
# perf's lines byte for byte (default fields, -F ip,sym,dso), with samples
# in both libraries.
set -eu
: "${VMPT:?}"
command -v perf >/dev/null || { echo "SKIP: perf (linux-perf) not installed"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cat >"$T/lib.c" <<'EOF'
long SPIN(long n)
{
	volatile long x = 0;

	for (long i = 0; i < n; i++)
		x += i;
	return x;
}
EOF
# remap dl A B N: A's a_spin(N) then B's b_spin(N), each dlopen'd and
# dlclose'd.
# remap fixed A B N OFF_A OFF_B: each library's code segment mmap'd at one
# fixed address (B's over A's), its spin at symbol value OFF called there.
cat >"$T/remap.c" <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define AT 0x7e0000000000ul

static void *code_at(const char *path, unsigned long sym)
{
	int fd = open(path, O_RDONLY);
	Elf64_Ehdr eh;
	Elf64_Phdr ph;

	if (fd < 0 || pread(fd, &eh, sizeof(eh), 0) != sizeof(eh))
		return NULL;
	for (int i = 0; i < eh.e_phnum; i++) {
		unsigned long page;
		void *p;

		if (pread(fd, &ph, sizeof(ph), eh.e_phoff + i * sizeof(ph)) != sizeof(ph))
			return NULL;
		if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		page = ph.p_offset & ~0xffful;
		p = mmap((void *)AT, ph.p_offset - page + ph.p_filesz, PROT_READ | PROT_EXEC,
			 MAP_PRIVATE | MAP_FIXED, fd, page);
		close(fd);
		return p == MAP_FAILED ? NULL : (char *)p + sym - (ph.p_vaddr & ~0xffful);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long n = atol(argv[4]);

	for (int i = 0; i < 2; i++) {
		void *h = NULL, *f;

		if (!strcmp(argv[1], "fixed")) {
			f = argc > 6 ? code_at(argv[2 + i], strtoul(argv[5 + i], NULL, 16)) : NULL;
		} else {
			h = dlopen(argv[2 + i], RTLD_NOW);
			f = h ? dlsym(h, i ? "b_spin" : "a_spin") : NULL;
		}
		if (!f)
			return 1;
		((long (*)(long))f)(n);
		if (h)
			dlclose(h);
	}
	return 0;
}
EOF
${CC:-cc} -O1 -shared -fPIC -DSPIN=a_spin -o "$T/liba.so" "$T/lib.c" || fail "cc liba"
${CC:-cc} -O1 -shared -fPIC -DSPIN=b_spin -o "$T/libb.so" "$T/lib.c" || fail "cc libb"
${CC:-cc} -O1 -o "$T/remap" "$T/remap.c" -ldl || fail "cc remap"
sym() { nm "$T/lib$1.so" | awk -v s="$1_spin" '$3 == s { print $1 }'; }
off_a=$(sym a)
off_b=$(sym b)
[ -n "$off_a" ] && [ -n "$off_b" ] || fail "nm: no a_spin, b_spin"

# same NAME [options]: vmpt script's lines are perf script's, stderr empty.
same() {
	n=$1
	shift
	perf script -i "$T/$n.data" "$@" >"$T/$n.perf" 2>/dev/null
	"$VMPT" script -i "$T/$n.data" "$@" >"$T/$n.vmpt" 2>"$T/$n.err" ||
		{ cat "$T/$n.err"; fail "vmpt script $n $*: exit status"; }
	grep -q 'a_spin.*liba\.so' "$T/$n.perf" || fail "$n $*: perf named no sample in liba.so"
	grep -q 'b_spin.*libb\.so' "$T/$n.perf" || fail "$n $*: perf named no sample in libb.so"
	diff -u "$T/$n.perf" "$T/$n.vmpt" >&2 || fail "$n $*: not perf script's lines"
	[ ! -s "$T/$n.err" ] || { cat "$T/$n.err"; fail "$n $*: vmpt wrote to stderr"; }
}

# rec NAME MODE [perf record options]
rec() {
	n=$1
	m=$2
	shift 2
	perf record -q -e cpu-clock:u -c 100000 "$@" -o "$T/$n.data" -- setarch -R \
		"$T/remap" "$m" "$T/liba.so" "$T/libb.so" 30000000 "$off_a" "$off_b" \
		>"$T/$n.log" 2>&1
}

setarch -R true 2>/dev/null || { echo "SKIP: setarch -R not permitted"; exit 77; }
rec probe fixed ||
	{ cat "$T/probe.log"; echo "SKIP: perf record of cpu-clock not permitted"; exit 77; }
for m in dl fixed; do
	for g in "" -g; do
		rec "$m$g" $m $g || { cat "$T/$m$g.log"; fail "perf record $m $g"; }
		# Both libraries' code at one address (the loader's choice for
		# dl: where it is not, only MAP_FIXED's case is checked).
		at=$(perf script -i "$T/$m$g.data" --show-mmap-events 2>/dev/null |
			sed -n 's/.*MMAP2 .*\[\(0x[0-9a-f]*\)(.* r-xp .*lib[ab]\.so$/\1/p' | sort -u)
		[ "$(echo "$at" | wc -l)" = 1 ] || {
			[ $m = dl ] || fail "$m$g: liba.so and libb.so not mapped at one address"
			echo "note: the loader put libb.so elsewhere: $at"
			continue
		}
		same "$m$g"
		same "$m$g" -F ip,sym,dso
	done
done
echo "ok: remapped code named as perf names it (dlopen, MAP_FIXED; -g)"
