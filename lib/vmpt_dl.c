/* SPDX-License-Identifier: MIT */
/* Libraries opened at first use (vmpt_dl.h). */
#include "vmpt_dl.h"
#include "vmpt/error.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

/* Loads are rare (once per library and run): one lock for all. */
static pthread_mutex_t vmpt_dl_lock = PTHREAD_MUTEX_INITIALIZER;

static int vmpt_dl_fail(struct vmpt_dl *lib, const char *why)
{
	snprintf(lib->errmsg, sizeof(lib->errmsg),
		 "cannot use %s (Debian package %s): %s", lib->soname,
		 lib->package, why ? why : "unknown dlopen error");
	return -VMPT_ERR_NO_LIBRARY;
}

static int vmpt_dl_open(struct vmpt_dl *lib)
{
	/* Never closed: libvirt and libcurl keep threads and atexit hooks. */
	void *h = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);

	if (!h)
		return vmpt_dl_fail(lib, dlerror());
	for (size_t i = 0; i < lib->n; i++) {
		dlerror();
		lib->addr[i] = dlsym(h, lib->names[i]);
		if (!lib->addr[i])
			return vmpt_dl_fail(lib, dlerror());
	}
	return 1;
}

int vmpt_dl_load(struct vmpt_dl *lib)
{
	int state;

	pthread_mutex_lock(&vmpt_dl_lock);
	if (!lib->state)
		lib->state = vmpt_dl_open(lib);
	state = lib->state;
	pthread_mutex_unlock(&vmpt_dl_lock);
	return state < 0 ? state : 0;
}

const char *vmpt_dl_errmsg(const struct vmpt_dl *lib)
{
	return lib->errmsg;
}
