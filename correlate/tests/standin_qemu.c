/* SPDX-License-Identifier: MIT */
/* A stand-in for a QEMU process, for recordings of "vCPU threads" without
 * a VM: N threads named "CPU n/KVM" as QEMU names them with -name
 * ...,debug-threads=on, thread n pinned to host CPU n modulo the CPUs
 * there are, each busy for a while and then asleep for a moment, so the
 * host sees them switch in and out.  Runs until killed.
 *
 *   standin-qemu N [ACCEL]     (ACCEL: KVM by default, or TCG)
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static const char *accel = "KVM";

static void *vcpu(void *arg)
{
	long n = (long)arg, cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct timespec nap = { 0, 1000000 };
	char name[16];
	cpu_set_t set;

	snprintf(name, sizeof(name), "CPU %ld/%s", n, accel);
	prctl(PR_SET_NAME, name);
	CPU_ZERO(&set);
	CPU_SET(n % (cpus > 0 ? cpus : 1), &set);
	sched_setaffinity(0, sizeof(set), &set);
	for (;;) {
		for (volatile long i = 0; i < 500000; i++)
			;
		nanosleep(&nap, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 0;
	pthread_t t;

	if (n < 1 || n > 64) {
		fprintf(stderr, "usage: standin-qemu N [ACCEL]   (1 <= N <= 64)\n");
		return 2;
	}
	if (argc > 2)
		accel = argv[2];
	for (long i = 0; i < n; i++)
		if (pthread_create(&t, NULL, vcpu, (void *)i)) {
			perror("pthread_create");
			return 1;
		}
	for (;;)
		pause();
}
