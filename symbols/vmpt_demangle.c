/* SPDX-License-Identifier: MIT */
/* Demangling with libiberty, as perf's demangle_sym does it. */
#include "vmpt/demangle.h"

#include <libiberty/demangle.h>

char *vmpt_demangle(const char *name)
{
	/* Every mangling cplus_demangle knows (C++ _Z, Rust _ZN..17h..E and
	 * _R, _GLOBAL_ constructors) starts with an underscore: C names
	 * skip the call.
	 */
	if (name[0] != '_')
		return NULL;
	/* perf passes DMGL_NO_OPTS unless verbose: no parameter lists. */
	return cplus_demangle(name, DMGL_NO_OPTS);
}
