/* SPDX-License-Identifier: MIT */
/* The image model on real files: the Unzip recording's page cache against
 * its ELF, bases, raw files, reads across sections, asid matching, errors.
 */
#include "vmpt/error.h"
#include "vmpt/image.h"

#include <elf.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

static char unzip[4096], unzip_pc[4096], unzip_addr[4096];
static const char *self;

static void test_pagecache_matches_elf(void **state)
{
	struct vmpt_image *pc = vmpt_image_new(), *elf = vmpt_image_new();
	struct vmpt_asid any = vmpt_asid_any();
	const struct vmpt_section *p, *e;

	(void)state;
	assert_int_equal(vmpt_image_add_pagecache(pc, unzip_pc, &any), 0);
	/* 39 adjacent pages from 0x400000 merge into one section. */
	assert_int_equal(vmpt_image_count(pc), 1);
	p = vmpt_image_section(pc, 0);
	assert_int_equal(p->vaddr, 0x400000);
	assert_int_equal(p->size, 39 * 4096);
	assert_int_equal(vmpt_image_add_elf(elf, unzip, VMPT_ELF_LINK_ADDR, &any), 0);
	/* Only the executable PT_LOAD: 0x400000, 0x26984 bytes. */
	assert_int_equal(vmpt_image_count(elf), 1);
	e = vmpt_image_section(elf, 0);
	assert_int_equal(e->vaddr, 0x400000);
	assert_int_equal(e->size, 0x26984);
	assert_memory_equal(e->data, p->data, e->size);
	assert_ptr_equal(vmpt_image_find(elf, &any, 0x426983), e);
	assert_null(vmpt_image_find(elf, &any, 0x426984));
	vmpt_image_free(pc);
	vmpt_image_free(elf);
}

static void test_elf_base_and_symbols(void **state)
{
	struct vmpt_image *img = vmpt_image_new();
	struct vmpt_asid any = vmpt_asid_any();
	const struct vmpt_section *s;
	int found = 0;
	uint64_t from, to;

	(void)state;
	assert_int_equal(vmpt_image_add_elf(img, unzip, 0x10000000, &any), 0);
	s = vmpt_image_section(img, 0);
	assert_int_equal(s->vaddr, 0x10000000);
	vmpt_image_free(img);

	/* This test program is a PIE with a .symtab: main is in it. */
	img = vmpt_image_new();
	assert_int_equal(vmpt_image_add_elf(img, self, 0x555555554000, &any), 0);
	for (unsigned i = 0; i < vmpt_image_count(img); i++) {
		s = vmpt_image_section(img, i);
		for (size_t k = 0; k < s->n_syms; k++) {
			if (strcmp(s->syms[k].name, "main"))
				continue;
			found = 1;
			assert_true(s->syms[k].addr + s->sym_bias >= 0x555555554000);
			assert_ptr_equal(vmpt_section_symbol_span(s, s->syms[k].addr +
								  s->sym_bias + 1,
								  &from, &to),
					 &s->syms[k]);
		}
		/* A span has one answer throughout and ends where it changes. */
		for (size_t k = 0; k < s->n_syms; k++) {
			uint64_t at = s->syms[k].addr + s->sym_bias;
			const uint64_t probe[] = { at - 1, at, at + s->syms[k].size };

			for (size_t p = 0; p < 3; p++) {
				const struct vmpt_symbol *sym =
					vmpt_section_symbol_span(s, probe[p], &from, &to);
				uint64_t f2, t2;

				assert_true(from <= probe[p] && probe[p] < to);
				assert_ptr_equal(vmpt_section_symbol_span(s, from, &f2, &t2), sym);
				assert_ptr_equal(vmpt_section_symbol_span(s, to - 1, &f2, &t2), sym);
				if (to != UINT64_MAX) {
					vmpt_section_symbol_span(s, to, &f2, &t2);
					assert_int_equal(f2, to);
				}
			}
		}
	}
	assert_true(found);
	vmpt_image_free(img);
}

static void test_raw_read_across_sections(void **state)
{
	struct vmpt_image *img = vmpt_image_new();
	struct vmpt_asid any = vmpt_asid_any();
	uint8_t a[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, b[4] = { 9, 10, 11, 12 };
	uint8_t buf[16];

	(void)state;
	assert_int_equal(vmpt_image_add_buffer(img, a, 8, 0x1000, "a", &any), 0);
	assert_int_equal(vmpt_image_add_buffer(img, b, 4, 0x1008, "b", &any), 0);
	/* An instruction may start in one section and end in the next. */
	assert_int_equal(vmpt_image_read(img, &any, 0x1006, buf, 16), 6);
	assert_memory_equal(buf, "\x07\x08\x09\x0a\x0b\x0c", 6);
	assert_int_equal(vmpt_image_read(img, &any, 0x2000, buf, 1), -VMPT_ERR_NO_IMAGE);
	/* A raw file piece: 16 bytes from offset 0x1000 at 0x8000. */
	assert_int_equal(vmpt_image_add_raw(img, unzip, 0x1000, 16, 0x8000, &any), 0);
	assert_int_equal(vmpt_image_section(img, 2)->size, 16);
	assert_int_equal(vmpt_image_section(img, 2)->file_offset, 0x1000);
	assert_int_equal(vmpt_image_add_raw(img, "/nonexistent", 0, 0, 0x9000, &any),
			 -VMPT_ERR_IO);
	assert_int_equal(errno, ENOENT);
	/* Not an ELF: the page cache's address list. */
	assert_int_equal(vmpt_image_add_elf(img, unzip_addr, VMPT_ELF_LINK_ADDR, &any),
			 -VMPT_ERR_FORMAT);
	vmpt_image_free(img);
}

/* vmpt_image_patch (TEXT_POKE): across sections, all or nothing, and a
 * mapped file's copy changed, not the file.
 */
static void test_patch(void **state)
{
	struct vmpt_image *img = vmpt_image_new();
	struct vmpt_asid any = vmpt_asid_any();
	uint8_t a[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, b[4] = { 9, 10, 11, 12 };
	uint8_t buf[16], file[64];
	char path[] = "/tmp/vmpt-test-patch-XXXXXX";
	int fd = mkstemp(path);
	FILE *f;

	(void)state;
	assert_true(fd >= 0);
	for (int i = 0; i < 64; i++)
		file[i] = (uint8_t)i;
	assert_int_equal(write(fd, file, 64), 64);
	close(fd);
	assert_int_equal(vmpt_image_add_buffer(img, a, 8, 0x1000, "a", &any), 0);
	assert_int_equal(vmpt_image_add_buffer(img, b, 4, 0x1008, "b", &any), 0);
	assert_int_equal(vmpt_image_patch(img, &any, 0x1006, (const uint8_t *)"\xe8\x19\x01\x00", 4), 0);
	assert_int_equal(vmpt_image_read(img, &any, 0x1004, buf, 8), 8);
	assert_memory_equal(buf, "\x05\x06\xe8\x19\x01\x00\x0b\x0c", 8);
	/* Past the end: nothing written. */
	assert_int_equal(vmpt_image_patch(img, &any, 0x100b, (const uint8_t *)"\x90\x90", 2),
			 -VMPT_ERR_NO_IMAGE);
	assert_int_equal(vmpt_image_read(img, &any, 0x100b, buf, 1), 1);
	assert_int_equal(buf[0], 0x0c);
	assert_int_equal(vmpt_image_patch(img, &any, 0x1000, buf, 0), -VMPT_ERR_INVAL);
	/* A mapped file (read-only, MAP_PRIVATE): the image sees the bytes. */
	assert_int_equal(vmpt_image_add_raw(img, path, 0, 0, 0x8000, &any), 0);
	assert_int_equal(vmpt_image_patch(img, &any, 0x8010, (const uint8_t *)"\xcc\xcc", 2), 0);
	assert_int_equal(vmpt_image_read(img, &any, 0x800f, buf, 4), 4);
	assert_memory_equal(buf, "\x0f\xcc\xcc\x12", 4);
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fread(buf, 1, 16, f), 16);
	assert_int_equal(fread(buf, 1, 2, f), 2);
	fclose(f);
	assert_memory_equal(buf, "\x10\x11", 2);
	unlink(path);
	vmpt_image_free(img);
}

static void test_asids(void **state)
{
	struct vmpt_image *img = vmpt_image_new();
	struct vmpt_asid host_p = { VMPT_MACHINE_HOST, 0x1000 };
	struct vmpt_asid guest = { 0x5000, VMPT_ASID_ANY };
	struct vmpt_asid guest_p = { 0x5000, 0x2000 };
	struct vmpt_asid host_q = { VMPT_MACHINE_HOST, 0x3000 };
	struct vmpt_asid any = vmpt_asid_any();
	uint8_t code[16] = { 0 };
	const struct vmpt_section *s;

	(void)state;
	assert_int_equal(vmpt_image_add_buffer(img, code, 16, 0x4000, "host-proc", &host_p), 0);
	assert_int_equal(vmpt_image_add_buffer(img, code, 16, 0x4000, "guest-kernel", &guest), 0);
	assert_string_equal(vmpt_image_find(img, &host_p, 0x4004)->name, "host-proc");
	assert_null(vmpt_image_find(img, &host_q, 0x4004));
	/* A guest process sees its machine's kernel. */
	assert_string_equal(vmpt_image_find(img, &guest_p, 0x4004)->name, "guest-kernel");
	/* "The guest" serves every guest machine, never the host. */
	{
		struct vmpt_asid any_guest = { VMPT_MACHINE_GUEST, VMPT_ASID_ANY };
		struct vmpt_asid host_k = { VMPT_MACHINE_HOST, VMPT_ASID_ANY };
		struct vmpt_asid other_guest = { 0x9000, 0x1000 };

		assert_int_equal(vmpt_image_add_buffer(img, code, 16, 0x6000, "any-guest",
						       &any_guest), 0);
		assert_string_equal(vmpt_image_find(img, &other_guest, 0x6000)->name,
				    "any-guest");
		assert_null(vmpt_image_find(img, &host_k, 0x6000));
		assert_null(vmpt_image_find(img, &host_p, 0x6000));
	}
	/* Unknown asid: the last added wins. */
	s = vmpt_image_find(img, &any, 0x4004);
	assert_string_equal(s->name, "guest-kernel");
	vmpt_image_free(img);
}

/* A process's exec sees its previous program where it maps nothing, and
 * that one its parent's at the fork; its own code wins; a corrupt
 * recording's cycle of links ends.
 */
static void test_inherit(void **state)
{
	struct vmpt_image *img = vmpt_image_new();
	struct vmpt_asid parent = { VMPT_MACHINE_HOST, vmpt_pid_space(10, 0) };
	struct vmpt_asid child = { VMPT_MACHINE_HOST, vmpt_pid_space(11, 0) };
	struct vmpt_asid exec1 = { VMPT_MACHINE_HOST, vmpt_pid_space(11, 1) };
	struct vmpt_asid other = { VMPT_MACHINE_HOST, vmpt_pid_space(12, 0) };
	struct vmpt_asid guest = { VMPT_MACHINE_GUEST, vmpt_pid_space(11, 1) };
	uint8_t code[16] = { 0 };

	(void)state;
	assert_int_equal(vmpt_pid_space(11, 1) & 0xffffffffu, 11);
	assert_int_equal(vmpt_space_pid(vmpt_pid_space(11, 3)), 11);
	assert_int_equal(vmpt_space_gen(vmpt_pid_space(11, 3)), 3);
	assert_int_equal(vmpt_image_add_buffer(img, code, 16, 0x4000, "parent-lib", &parent), 0);
	assert_int_equal(vmpt_image_add_buffer(img, code, 16, 0x5000, "parent-bin", &parent), 0);
	assert_int_equal(vmpt_image_add_buffer(img, code, 16, 0x4000, "child-lib", &child), 0);
	assert_int_equal(vmpt_image_add_buffer(img, code, 16, 0x6000, "exec-bin", &exec1), 0);
	assert_null(vmpt_image_find(img, &exec1, 0x5000));
	assert_int_equal(vmpt_image_inherit(img, &exec1, child.cr3), 0);
	assert_int_equal(vmpt_image_inherit(img, &child, parent.cr3), 0);
	assert_string_equal(vmpt_image_find(img, &exec1, 0x6000)->name, "exec-bin");
	assert_string_equal(vmpt_image_find(img, &exec1, 0x4004)->name, "child-lib");
	assert_string_equal(vmpt_image_find(img, &exec1, 0x5004)->name, "parent-bin");
	assert_string_equal(vmpt_image_find(img, &child, 0x4004)->name, "child-lib");
	assert_null(vmpt_image_find(img, &parent, 0x6000));
	assert_null(vmpt_image_find(img, &other, 0x5004));
	/* Links are the host's: a guest key of the same value has none. */
	assert_null(vmpt_image_find(img, &guest, 0x5004));
	/* A cycle (pid 10's parent 11) is followed a bounded number of times. */
	assert_int_equal(vmpt_image_inherit(img, &parent, exec1.cr3), 0);
	assert_null(vmpt_image_find(img, &parent, 0x7000));
	vmpt_image_free(img);
}

/* A kcore_dir of one page of module code at 0xffffffffc0001000 and its
 * kallsyms, module_exit's alias listed after the function. */
static void write_kcore_dir(const char *dir)
{
	static uint8_t core[0x2000];
	Elf64_Ehdr *eh = (Elf64_Ehdr *)core;
	Elf64_Phdr *ph = (Elf64_Phdr *)(core + sizeof(*eh));
	char path[4096];
	FILE *f;

	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_CORE;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof(*eh);
	eh->e_ehsize = sizeof(*eh);
	eh->e_phentsize = sizeof(*ph);
	eh->e_phnum = 1;
	ph->p_type = PT_LOAD;
	ph->p_flags = PF_R | PF_W | PF_X;
	ph->p_offset = 0x1000;
	ph->p_vaddr = 0xffffffffc0001000ull;
	ph->p_filesz = ph->p_memsz = 0x1000;
	snprintf(path, sizeof(path), "%s/kcore", dir);
	assert_non_null(f = fopen(path, "wb"));
	assert_int_equal(fwrite(core, 1, sizeof(core), f), sizeof(core));
	assert_int_equal(fclose(f), 0);
	snprintf(path, sizeof(path), "%s/kallsyms", dir);
	assert_non_null(f = fopen(path, "w"));
	fputs("ffffffffc0001000 t e1000_init_module\t[e1000]\n"
	      "ffffffffc0001040 t e1000_exit_module\t[e1000]\n"
	      "ffffffffc0001080 t e1000_probe\t[e1000]\n"
	      "ffffffffc0001000 T init_module\t[e1000]\n"
	      "ffffffffc0001040 T cleanup_module\t[e1000]\n", f);
	assert_int_equal(fclose(f), 0);
}

/* Of aliases perf names the last listed in kallsyms, at its first byte
 * as anywhere inside (it alone gets a size). */
static void test_kallsyms_aliases(void **state)
{
	struct vmpt_image *img = vmpt_image_new();
	struct vmpt_asid any = vmpt_asid_any();
	const struct vmpt_section *s;
	const struct vmpt_symbol *sym;
	uint64_t from, to;
	char dir[] = "/tmp/vmpt-kcore-XXXXXX", path[4096];

	(void)state;
	assert_non_null(mkdtemp(dir));
	write_kcore_dir(dir);
	assert_int_equal(vmpt_image_add_kcore_dir(img, dir, &any), 0);
	assert_non_null(s = vmpt_image_find(img, &any, 0xffffffffc0001040ull));
	assert_int_equal(s->n_syms, 3);
	sym = vmpt_section_symbol_span(s, 0xffffffffc0001040ull, &from, &to);
	assert_string_equal(sym->name, "cleanup_module");
	assert_int_equal(from, 0xffffffffc0001040ull);
	assert_int_equal(to, 0xffffffffc0001080ull);
	assert_string_equal(vmpt_section_symbol_span(s, 0xffffffffc000107full,
						     &from, &to)->name, "cleanup_module");
	assert_string_equal(vmpt_section_symbol_span(s, 0xffffffffc0001000ull,
						     &from, &to)->name, "init_module");
	vmpt_image_free(img);
	snprintf(path, sizeof(path), "%s/kcore", dir);
	assert_int_equal(unlink(path), 0);
	snprintf(path, sizeof(path), "%s/kallsyms", dir);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
}

int main(int argc, char **argv)
{
	const char *shared = getenv("SHARED");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pagecache_matches_elf),
		cmocka_unit_test(test_elf_base_and_symbols),
		cmocka_unit_test(test_raw_read_across_sections),
		cmocka_unit_test(test_patch),
		cmocka_unit_test(test_asids),
		cmocka_unit_test(test_inherit),
		cmocka_unit_test(test_kallsyms_aliases),
	};

	(void)argc;
	self = argv[0];
	if (!shared)
		shared = "../shared";
	snprintf(unzip, sizeof(unzip), "%s/realtraces/kvm-pt/Unzip/data", shared);
	/* The recording names its ELF and its page cache alike. */
	snprintf(unzip_pc, sizeof(unzip_pc), "%s/realtraces/kvm-pt/Unzip/data", shared);
	snprintf(unzip_addr, sizeof(unzip_addr), "%s/realtraces/kvm-pt/Unzip/data.addr", shared);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
