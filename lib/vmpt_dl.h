/* SPDX-License-Identifier: MIT */
/* Shared libraries only a few commands need (libvirt, libdebuginfod,
 * libpq), opened at their first use instead of by ld.so at every start:
 * loading them and the ~60 libraries they pull in cost every vmpt run
 * ~40 M instructions (issue 18).  Internal to libvmpt.
 *
 * A user lists its functions once and calls them through typed pointers:
 *
 *	#define PQ_FUNCS(X) X(PQexec) X(PQclear)
 *	VMPT_DL_TABLE(pq, PQ_FUNCS, "libpq.so.5", "libpq5");
 *	...
 *	if (vmpt_dl_load(&pq) < 0)
 *		report(vmpt_dl_errmsg(&pq));
 *	r = VMPT_DL(pq, PQexec)(conn, stmt);
 */
#ifndef VMPT_DL_H
#define VMPT_DL_H

#include <stddef.h>

struct vmpt_dl {
	const char *soname;		/* versioned: "libpq.so.5" */
	const char *package;		/* the Debian package that has it */
	const char *const *names;	/* its functions, as many as addr */
	void **addr;			/* their addresses once loaded */
	size_t n;
	int state;			/* 0 not tried, 1 loaded, < 0 the error */
	char errmsg[384];
};

/* Opens the library and resolves every name, once (later calls return
 * the first result; thread-safe): 0, or -VMPT_ERR_NO_LIBRARY with
 * vmpt_dl_errmsg() naming the soname, dlerror() and the package.
 */
int vmpt_dl_load(struct vmpt_dl *lib);
const char *vmpt_dl_errmsg(const struct vmpt_dl *lib);

/* A static table `name` of the functions FUNCS(X) lists.  A struct of one
 * char per function numbers them: offsetof is a function's index, and a
 * function of another table does not compile.
 */
#define VMPT_DL_TABLE(name, FUNCS, soname, package)			\
	struct name##_slots { FUNCS(VMPT_DL_SLOT_) };			\
	VMPT_DL_DEFINE_(static, name, FUNCS, soname, package)

/* A table the files of one concept share: declared in their header,
 * defined in one of them.
 */
#define VMPT_DL_DECLARE(name, FUNCS)					\
	struct name##_slots { FUNCS(VMPT_DL_SLOT_) };			\
	extern void *name##_addr[sizeof(struct name##_slots)];		\
	extern struct vmpt_dl name
#define VMPT_DL_DEFINE(name, FUNCS, soname, package)			\
	VMPT_DL_DEFINE_(, name, FUNCS, soname, package)

#define VMPT_DL_SLOT_(f) char f;
#define VMPT_DL_NAME_(f) #f,
#define VMPT_DL_DEFINE_(storage, name, FUNCS, soname, package)		\
	static const char *const name##_names[] = { FUNCS(VMPT_DL_NAME_) }; \
	storage void *name##_addr[sizeof(struct name##_slots)];		\
	storage struct vmpt_dl name = { soname, package, name##_names,	\
		name##_addr, sizeof(struct name##_slots), 0, "" }

/* Function f of a loaded table, with its type from the library's header. */
#define VMPT_DL(name, f) \
	((__typeof__(f) *)name##_addr[offsetof(struct name##_slots, f)])

#endif
