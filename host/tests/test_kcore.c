/* SPDX-License-Identifier: MIT */
/* --kcore: perf's kcore_dir cut from a kcore.
 *   test_kcore            a synthetic procfs (kcore ELF with kernel text,
 *                         direct map and module segments) built here
 *   test_kcore here       this machine's /proc (skips when /proc/kcore is
 *                         absent or unreadable, saying why)
 *   test_kcore procfs DIR only writes the synthetic procfs to DIR
 * Either way: every core-kernel text symbol of the copied kallsyms, and
 * every module symbol, falls inside a copied segment, whose bytes equal
 * the source's.
 */
#include "vmpt/error.h"
#include "vmpt/kcore.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int failures;
#define CHECK(cond, ...)                                                   \
	do {                                                               \
		if (!(cond)) {                                             \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);        \
			printf(__VA_ARGS__);                               \
			printf("\n");                                      \
			failures++;                                        \
		}                                                          \
	} while (0)

struct seg {
	uint64_t vaddr, size, offset;
};

static int read_segs(const char *path, struct seg *segs, int max)
{
	int fd = open(path, O_RDONLY);
	Elf64_Ehdr eh;
	if (fd < 0 || pread(fd, &eh, sizeof(eh), 0) != sizeof(eh))
		return -1;
	int n = 0;
	for (int i = 0; i < eh.e_phnum && n < max; i++) {
		Elf64_Phdr ph;
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) != sizeof(ph))
			return -1;
		if (ph.p_type != PT_LOAD)
			continue;
		segs[n].vaddr = ph.p_vaddr;
		segs[n].size = ph.p_filesz;
		segs[n].offset = ph.p_offset;
		n++;
	}
	close(fd);
	return n;
}

static const struct seg *find(const struct seg *segs, int n, uint64_t addr)
{
	for (int i = 0; i < n; i++)
		if (addr >= segs[i].vaddr && addr < segs[i].vaddr + segs[i].size)
			return &segs[i];
	return NULL;
}

/* Check the kallsyms copy against the kcore copy, and n bytes at each
 * symbol against the source kcore. */
static void check_dir(const char *dir, const char *src_kcore, unsigned *nsyms)
{
	char path[4200];
	struct seg out[64], in[256];
	snprintf(path, sizeof(path), "%s/kcore", dir);
	int nout = read_segs(path, out, 64), nin = read_segs(src_kcore, in, 256);
	CHECK(nout > 0 && nin > 0, "segments: %d out, %d in", nout, nin);
	int ofd = open(path, O_RDONLY), ifd = open(src_kcore, O_RDONLY);
	snprintf(path, sizeof(path), "%s/kallsyms", dir);
	FILE *f = fopen(path, "r");
	CHECK(f != NULL, "%s missing", path);
	char line[512];
	*nsyms = 0;
	while (f && fgets(line, sizeof(line), f)) {
		uint64_t addr;
		char type, name[256];
		if (sscanf(line, "%" SCNx64 " %c %255s", &addr, &type, name) != 3 ||
		    (type != 'T' && type != 't') || !addr)
			continue;
		/* symbols outside any source segment (e.g. __init text freed
		 * and unmapped) cannot be copied by anyone */
		if (!find(in, nin, addr))
			continue;
		const struct seg *o = find(out, nout, addr);
		CHECK(o != NULL, "%s at 0x%" PRIx64 " is outside the copied text", name, addr);
		if (!o)
			continue;
		const struct seg *s = find(in, nin, addr);
		uint8_t a[16], b[16];
		size_t len = sizeof(a);
		if (addr + len > o->vaddr + o->size)
			len = (size_t)(o->vaddr + o->size - addr);
		CHECK(pread(ofd, a, len, (off_t)(o->offset + addr - o->vaddr)) == (ssize_t)len &&
		      pread(ifd, b, len, (off_t)(s->offset + addr - s->vaddr)) == (ssize_t)len &&
		      !memcmp(a, b, len), "bytes at %s differ", name);
		(*nsyms)++;
	}
	if (f)
		fclose(f);
	close(ofd);
	close(ifd);
}

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "w");
	if (!f || fwrite(data, 1, len, f) != len || fclose(f)) {
		printf("FAIL: cannot write %s\n", path);
		exit(1);
	}
}

static const char modules[] =
	"kvm_intel 65536 0 - Live 0xffffffffc0040000\n"
	"kvm 131072 1 kvm_intel, Live 0xffffffffc0010000\n";

#define KTEXT 0xffffffff81000000ULL
#define DMAP 0xffff888000000000ULL
#define MODS 0xffffffffc0000000ULL

/* A procfs with kcore, kallsyms and modules in root. */
static void make_procfs(const char *root, uint8_t **image)
{
	char path[4400];
	/* kcore: ELF header, 3 PT_LOAD (kernel text 2 MiB, direct map 1 MiB,
	 * module area 1 MiB), data after the headers */
	const struct { uint64_t vaddr, size; } src[3] = {
		{ KTEXT, 0x200000 }, { DMAP, 0x100000 }, { MODS, 0x100000 },
	};
	size_t total = 0x1000 + 0x400000;
	uint8_t *img = calloc(1, total);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_CORE;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(*eh);
	eh->e_ehsize = sizeof(*eh);
	eh->e_phentsize = sizeof(Elf64_Phdr);
	eh->e_phnum = 4;
	Elf64_Phdr *ph = (Elf64_Phdr *)(img + sizeof(*eh));
	ph[0].p_type = PT_NOTE;		/* /proc/kcore starts with notes */
	uint64_t off = 0x1000;
	for (int i = 0; i < 3; i++) {
		ph[i + 1] = (Elf64_Phdr){ .p_type = PT_LOAD, .p_flags = PF_R | PF_W | PF_X,
					  .p_offset = off, .p_vaddr = src[i].vaddr,
					  .p_filesz = src[i].size, .p_memsz = src[i].size,
					  .p_align = 0x1000 };
		for (uint64_t j = 0; j < src[i].size; j++)
			img[off + j] = (uint8_t)((src[i].vaddr + j) * 2654435761U >> 13);
		off += src[i].size;
	}
	snprintf(path, sizeof(path), "%s/kcore", root);
	write_file(path, img, total);
	const char *kallsyms =
		"ffffffff81000000 T _text\n"
		"ffffffff81000000 T startup_64\n"
		"ffffffff81001000 T _stext\n"
		"ffffffff81002340 t do_one_initcall\n"
		"ffffffff81100000 T _etext\n"
		"ffffffff81180000 T __init_begin_text\n"
		"ffffffff81a00000 D _sdata\n"
		"ffffffffc0012000 t kvm_vcpu_ioctl\t[kvm]\n"
		"ffffffffc0041000 t vmx_vcpu_run\t[kvm_intel]\n";
	snprintf(path, sizeof(path), "%s/kallsyms", root);
	write_file(path, kallsyms, strlen(kallsyms));
	snprintf(path, sizeof(path), "%s/modules", root);
	write_file(path, modules, strlen(modules));
	*image = img;
}

static int synthetic(void)
{
	char root[] = "/tmp/vmpt-kcore-XXXXXX", path[4400], out[4200];
	if (!mkdtemp(root))
		return 1;
	uint8_t *img;
	make_procfs(root, &img);

	snprintf(out, sizeof(out), "%s/kcore_dir", root);
	struct vmpt_kcore_stats st;
	char err[1024];
	int rc = vmpt_kcore_copy(root, out, &st, err, sizeof(err));
	CHECK(rc == 0, "vmpt_kcore_copy: %s", err);
	/* kernel text: lowest text symbol to past the highest, page aligned */
	CHECK(st.text_start == KTEXT && st.text_end == KTEXT + 0x181000,
	      "text 0x%" PRIx64 "-0x%" PRIx64, st.text_start, st.text_end);
	CHECK(st.modules_start == MODS + 0x10000 && st.modules_end == MODS + 0x50000,
	      "modules 0x%" PRIx64 "-0x%" PRIx64, st.modules_start, st.modules_end);
	CHECK(st.nr_segments == 2, "%u segments", st.nr_segments);
	CHECK(st.bytes == 0x181000 + 0x40000, "%" PRIu64 " bytes", st.bytes);
	struct seg segs[8];
	snprintf(path, sizeof(path), "%s/kcore", out);
	int n = read_segs(path, segs, 8);
	CHECK(n == 2 && segs[0].vaddr == KTEXT && segs[1].vaddr == MODS + 0x10000,
	      "output segments");
	unsigned nsyms;
	snprintf(path, sizeof(path), "%s/kcore", root);
	check_dir(out, path, &nsyms);
	CHECK(nsyms == 8, "%u text symbols checked", nsyms);

	/* the symbol files are copied as they were */
	char buf[1024];
	snprintf(path, sizeof(path), "%s/modules", out);
	FILE *f = fopen(path, "r");
	size_t got = f ? fread(buf, 1, sizeof(buf), f) : 0;
	if (f)
		fclose(f);
	CHECK(got == strlen(modules) && !memcmp(buf, modules, got), "modules copy");

	/* errors name the file and why */
	snprintf(path, sizeof(path), "%s/kcore", root);
	unlink(path);
	rc = vmpt_kcore_copy(root, out, &st, err, sizeof(err));
	char want[4400];
	snprintf(want, sizeof(want), "%s/kcore: No such file or directory (kernel built "
		 "without CONFIG_PROC_KCORE)", root);
	CHECK(rc == -VMPT_ERR_NOT_FOUND && !strcmp(err, want), "missing kcore: %s", err);
	const char *hidden = "0000000000000000 T _text\n0000000000000000 T _stext\n";
	snprintf(path, sizeof(path), "%s/kallsyms", root);
	write_file(path, hidden, strlen(hidden));
	rc = vmpt_kcore_copy(root, out, &st, err, sizeof(err));
	snprintf(want, sizeof(want), "%s/kallsyms: no text symbol addresses (all zero: "
		 "kptr_restrict hides them; run as root or set "
		 "/proc/sys/kernel/kptr_restrict to 0)", out);
	CHECK(rc == -VMPT_ERR_PERM && !strcmp(err, want), "hidden kallsyms: %s", err);

	free(img);
	char cmd[4300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	if (system(cmd))
		printf("cannot remove %s\n", root);
	printf("%s: synthetic kcore\n", failures ? "FAIL" : "ok");
	return failures != 0;
}

static int here(void)
{
	int fd = open("/proc/kcore", O_RDONLY);
	if (fd < 0) {
		printf("SKIP: /proc/kcore: %s%s\n", strerror(errno),
		       errno == ENOENT ? " (this kernel is built without CONFIG_PROC_KCORE)"
				       : " (needs root)");
		return 77;
	}
	close(fd);
	char root[] = "/tmp/vmpt-kcore-here-XXXXXX", out[4200];
	if (!mkdtemp(root))
		return 1;
	snprintf(out, sizeof(out), "%s/kcore_dir", root);
	struct vmpt_kcore_stats st;
	char err[1024];
	int rc = vmpt_kcore_copy("/proc", out, &st, err, sizeof(err));
	if (rc == -VMPT_ERR_PERM) {
		printf("SKIP: %s\n", err);
		return 77;
	}
	CHECK(rc == 0, "vmpt_kcore_copy: %s", err);
	unsigned nsyms = 0;
	if (!rc)
		check_dir(out, "/proc/kcore", &nsyms);
	CHECK(nsyms > 1000, "only %u kernel text symbols checked", nsyms);
	printf("%s: /proc/kcore: %u segments, %" PRIu64 " bytes, %u symbols inside\n",
	       failures ? "FAIL" : "ok", st.nr_segments, st.bytes, nsyms);
	char cmd[4300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	if (system(cmd))
		printf("cannot remove %s\n", root);
	return failures != 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 2 && !strcmp(argv[1], "procfs")) {
		/* for record-kcore.sh: just the synthetic procfs */
		uint8_t *img;
		make_procfs(argv[2], &img);
		free(img);
		return 0;
	}
	return argc > 1 && !strcmp(argv[1], "here") ? here() : synthetic();
}
