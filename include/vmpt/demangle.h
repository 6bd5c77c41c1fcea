/* SPDX-License-Identifier: MIT */
/* Symbol names as perf shows them: C++ and Rust names demangled by
 * libiberty's cplus_demangle (the demangler perf 6.1 links), without
 * function parameters, as perf prints them unless verbose.
 */
#ifndef VMPT_DEMANGLE_H
#define VMPT_DEMANGLE_H

#ifdef __cplusplus
extern "C" {
#endif

/* The demangled form of name, malloc'd; NULL when name is not mangled
 * (C, assembly) or memory ran out.
 */
char *vmpt_demangle(const char *name);

#ifdef __cplusplus
}
#endif

#endif
