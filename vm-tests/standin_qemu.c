/* SPDX-License-Identifier: MIT */
/* A stand-in for QEMU where none can run a guest: threads named as
 * QEMU's vCPU threads ("CPU n/KVM", or "CPU n/TCG" with --tcg) that block
 * and run again, so a recording of them has comm, mmap and context
 * switches as a real QEMU's would.  Runs until killed, or SECONDS.
 *
 * usage: standin_qemu [--tcg] NR_VCPUS [SECONDS]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static const char *accel = "KVM";

static void *vcpu_thread(void *arg)
{
	char name[16];
	unsigned long x = 0;

	snprintf(name, sizeof(name), "CPU %d/%s", (int)(long)arg, accel);
	prctl(PR_SET_NAME, name);
	for (;;) {
		for (int i = 0; i < 20000; i++)
			x += (unsigned long)i;
		/* the work is kept: the compiler may not drop the loop */
		__asm__ volatile("" : : "r"(x));
		usleep(2000);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int a = 1, nr;
	double seconds = 0;

	if (a < argc && !strcmp(argv[a], "--tcg")) {
		accel = "TCG";
		a++;
	}
	if (a >= argc || (nr = atoi(argv[a])) < 1 || nr > 64) {
		fprintf(stderr, "usage: standin_qemu [--tcg] NR_VCPUS (1-64) [SECONDS]\n");
		return 2;
	}
	if (a + 1 < argc)
		seconds = atof(argv[a + 1]);
	prctl(PR_SET_NAME, "qemu-standin");
	for (long i = 0; i < nr; i++) {
		pthread_t t;

		if (pthread_create(&t, NULL, vcpu_thread, (void *)i)) {
			perror("pthread_create");
			return 1;
		}
	}
	printf("standin_qemu: %d vCPU threads 'CPU n/%s'\n", nr, accel);
	fflush(stdout);
	if (seconds > 0) {
		struct timespec ts = { (time_t)seconds,
				       (long)((seconds - (double)(time_t)seconds) * 1e9) };
		nanosleep(&ts, NULL);
		return 0;
	}
	for (;;)
		pause();
}
