/* SPDX-License-Identifier: MIT */
/* The image model on crafted ELF files, made here byte by byte: a
 * .rela.plt whose size wraps the symbol array's size (sh_entsize 1), one
 * larger than the file, and a .strtab ending at the end of the file without
 * a NUL.  The code loads, the bad tables give no names, nothing is read or
 * written past a buffer (ASan in make check); a good .rela.plt names
 * puts@plt, as the control.  Mappings of one file, by one path or
 * another (a symlink), share its symbols, each at its own address.
 */
#include "vmpt/error.h"
#include "vmpt/image.h"

#include <elf.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#define FILE_SIZE 4096
#define BASE 0x400000ull

enum { S_NULL, S_TEXT, S_SYMTAB, S_STRTAB, S_SHSTRTAB, S_DYNSYM, S_DYNSTR,
       S_RELA, S_PLT, S_COUNT };

static const char shstr[] = "\0.text\0.symtab\0.strtab\0.shstrtab\0.dynsym\0"
			    ".dynstr\0.rela.plt\0.plt";
/* The last name runs to the end of the file: no NUL after "main". */
static const char strtab[] = "\0f1\0f2\0main";
#define STRTAB_SIZE (sizeof(strtab) - 1)

static unsigned shname(const char *name)
{
	for (unsigned i = 1; i < sizeof(shstr); i += (unsigned)strlen(shstr + i) + 1)
		if (!strcmp(shstr + i, name))
			return i;
	fail();
	return 0;
}

static void sym(uint8_t *at, uint32_t name, uint64_t value, uint64_t size,
		unsigned type, uint16_t shndx)
{
	Elf64_Sym s = { name, ELF64_ST_INFO(STB_GLOBAL, type), 0, shndx, value, size };

	memcpy(at, &s, sizeof(s));
}

static void shdr(uint8_t *f, unsigned i, const char *name, uint32_t type,
		 uint64_t flags, uint64_t addr, uint64_t off, uint64_t size,
		 uint32_t link, uint64_t entsize)
{
	Elf64_Shdr sh = { name ? shname(name) : 0, type, flags, addr, off, size,
			  link, 1, 8, entsize };

	memcpy(f + 0x400 + i * sizeof(sh), &sh, sizeof(sh));
}

/* A 4 KiB ELF: code at BASE+0x100 (f1, f2, main), .plt at BASE+0x180,
 * one .rela.plt entry for puts of rela_size bytes in entries of
 * rela_entsize.  Written to a temporary file: its path.
 */
static const char *craft(uint64_t rela_size, uint64_t rela_entsize)
{
	static char path[64];
	uint8_t *f = calloc(1, FILE_SIZE);
	Elf64_Ehdr eh = { .e_type = ET_EXEC, .e_machine = EM_X86_64,
			  .e_version = EV_CURRENT, .e_entry = BASE + 0x100,
			  .e_phoff = 0x40, .e_shoff = 0x400,
			  .e_ehsize = sizeof(Elf64_Ehdr),
			  .e_phentsize = sizeof(Elf64_Phdr), .e_phnum = 1,
			  .e_shentsize = sizeof(Elf64_Shdr), .e_shnum = S_COUNT,
			  .e_shstrndx = S_SHSTRTAB };
	Elf64_Phdr ph = { PT_LOAD, PF_R | PF_X, 0, BASE, BASE, 0x400, 0x400, 0x1000 };
	Elf64_Rela r = { BASE + 0x1000, ELF64_R_INFO(1, R_X86_64_JUMP_SLOT), 0 };
	int fd;

	assert_non_null(f);
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	memcpy(f, &eh, sizeof(eh));
	memcpy(f + 0x40, &ph, sizeof(ph));
	memset(f + 0x100, 0xc3, 0x100);
	sym(f + 0x200 + 24, 1, BASE + 0x100, 16, STT_FUNC, S_TEXT);
	sym(f + 0x200 + 48, 4, BASE + 0x110, 16, STT_FUNC, S_TEXT);
	sym(f + 0x200 + 72, 7, BASE + 0x120, 16, STT_FUNC, S_TEXT);
	sym(f + 0x280 + 24, 1, 0, 0, STT_FUNC, SHN_UNDEF);
	memcpy(f + 0x2c0, "\0puts", 6);
	memcpy(f + 0x2d0, &r, sizeof(r));
	memcpy(f + 0x300, shstr, sizeof(shstr));
	memcpy(f + FILE_SIZE - STRTAB_SIZE, strtab, STRTAB_SIZE);
	shdr(f, S_NULL, NULL, SHT_NULL, 0, 0, 0, 0, 0, 0);
	shdr(f, S_TEXT, ".text", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR,
	     BASE + 0x100, 0x100, 0x80, 0, 0);
	shdr(f, S_SYMTAB, ".symtab", SHT_SYMTAB, 0, 0, 0x200, 4 * 24, S_STRTAB, 24);
	shdr(f, S_STRTAB, ".strtab", SHT_STRTAB, 0, 0, FILE_SIZE - STRTAB_SIZE,
	     STRTAB_SIZE, 0, 0);
	shdr(f, S_SHSTRTAB, ".shstrtab", SHT_STRTAB, 0, 0, 0x300, sizeof(shstr), 0, 0);
	shdr(f, S_DYNSYM, ".dynsym", SHT_DYNSYM, SHF_ALLOC, 0, 0x280, 2 * 24, S_DYNSTR, 24);
	shdr(f, S_DYNSTR, ".dynstr", SHT_STRTAB, SHF_ALLOC, 0, 0x2c0, 6, 0, 0);
	shdr(f, S_RELA, ".rela.plt", SHT_RELA, SHF_ALLOC, 0, 0x2d0, rela_size,
	     S_DYNSYM, rela_entsize);
	shdr(f, S_PLT, ".plt", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR,
	     BASE + 0x180, 0x180, 0x40, 0, 16);
	snprintf(path, sizeof(path), "/tmp/vmpt-crafted-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, f, FILE_SIZE), FILE_SIZE);
	close(fd);
	free(f);
	return path;
}

/* The symbol at addr, "" for none. */
static const char *name_at(const struct vmpt_image *img, uint64_t addr)
{
	struct vmpt_asid any = vmpt_asid_any();
	const struct vmpt_section *s = vmpt_image_find(img, &any, addr);
	const struct vmpt_symbol *k;
	uint64_t from, to;

	assert_non_null(s);
	k = vmpt_section_symbol_span(s, addr, &from, &to);
	return k ? k->name : "";
}

static void load(uint64_t rela_size, uint64_t rela_entsize, const char *plt_name)
{
	struct vmpt_image *img = vmpt_image_new();
	struct vmpt_asid any = vmpt_asid_any();
	const char *path = craft(rela_size, rela_entsize);

	assert_int_equal(vmpt_image_add_elf(img, path, VMPT_ELF_LINK_ADDR, &any), 0);
	assert_string_equal(name_at(img, BASE + 0x104), "f1");
	assert_string_equal(name_at(img, BASE + 0x110), "f2");
	/* "main" has no NUL before the end of the file: no name. */
	assert_string_equal(name_at(img, BASE + 0x120), "");
	assert_string_equal(name_at(img, BASE + 0x190), plt_name);
	vmpt_image_free(img);
	unlink(path);
}

static void good_plt(void **state)
{
	(void)state;
	load(24, 24, "puts@plt");
}

/* (3 symbols + n + 1) * 24 wraps to 24 bytes: the old heap overflow. */
static void plt_size_wraps(void **state)
{
	(void)state;
	load((1ull << 61) - 3, 1, "");
}

static void plt_past_the_file(void **state)
{
	(void)state;
	load(24ull << 40, 24, "");
	load(48, 12, "");
}

static void mappings_share(void **state)
{
	struct vmpt_image *img = vmpt_image_new();
	struct vmpt_asid any = vmpt_asid_any();
	const char *path = craft(24, 24);
	const struct vmpt_section *a, *b;
	char link[80];
	uint64_t from, to;

	(void)state;
	snprintf(link, sizeof(link), "%s.link", path);
	assert_int_equal(symlink(path, link), 0);
	assert_int_equal(vmpt_image_add_elf_map_in(img, NULL, path, NULL, 0x7f0000000000,
						   0, &any), 0);
	assert_int_equal(vmpt_image_add_elf_map_in(img, NULL, link, "other", 0x7f1000000000,
						   0, &any), 0);
	a = vmpt_image_find(img, &any, 0x7f0000000110);
	b = vmpt_image_find(img, &any, 0x7f1000000110);
	assert_non_null(a);
	assert_non_null(b);
	assert_ptr_equal(a->data, b->data);
	assert_ptr_equal(a->syms, b->syms);
	assert_string_equal(a->name, path);
	assert_string_equal(b->name, "other");
	assert_string_equal(vmpt_section_symbol_span(b, 0x7f1000000114, &from, &to)->name, "f2");
	assert_int_equal(from, 0x7f1000000110);
	assert_int_equal(to, 0x7f1000000120);
	assert_string_equal(vmpt_section_symbol_span(a, 0x7f0000000104, &from, &to)->name, "f1");
	assert_int_equal(from, 0x7f0000000100);
	vmpt_image_free(img);
	unlink(link);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(good_plt),
		cmocka_unit_test(plt_size_wraps),
		cmocka_unit_test(plt_past_the_file),
		cmocka_unit_test(mappings_share),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
