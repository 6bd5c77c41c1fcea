/* SPDX-License-Identifier: MIT */
/* libelf helpers the image, the debug-file lookup and source lines share
 * (internal to libvmpt).
 */
#ifndef VMPT_ELF_H
#define VMPT_ELF_H

#include <gelf.h>

/* The first section named want (its header in *sh), NULL if none. */
Elf_Scn *vmpt_elf_section(Elf *elf, const char *want, GElf_Shdr *sh);

#endif
