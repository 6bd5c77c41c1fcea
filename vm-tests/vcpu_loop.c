/* SPDX-License-Identifier: MIT */
/* Several vCPUs, each in its own thread named like QEMU's ("CPU n/KVM"),
 * run checksum() as guest code and report each round through a ucall; the
 * host runs the same function at the same address and compares.
 *
 * usage: vcpu_loop [NR_VCPUS [ROUNDS [ITERATIONS [PAUSE_US]]]]
 * PAUSE_US: the host sleeps that long at each ucall, so a recording
 * sees the vCPU threads block and run again.
 */
#include "kvm_vm.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t rounds = 4, iterations = 500, pause_us;

/* A few branches per iteration: something for a tracer to see. */
GUEST_CODE static uint64_t checksum(uint64_t seed, uint64_t n)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
	for (uint64_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		if (x & 1)
			x += i;
		else
			x -= seed;
	}
	return x;
}

struct guest_args {
	uint64_t rounds, iterations;
};

/* Read by the guest from its copy of .data (set before the VM is made). */
static struct guest_args guest_args;

GUEST_CODE static void guest_code(uint64_t id)
{
	for (uint64_t r = 0; r < guest_args.rounds; r++)
		guest_ucall(UCALL_SYNC, r, checksum(id * 1000 + r, guest_args.iterations));
	guest_ucall(UCALL_DONE, id, 0);
	for (;;)
		guest_ucall(UCALL_ABORT, id, 0);
}

struct vcpu_thread {
	struct kvm_vcpu vcpu;
	pthread_t thread;
	int failed;
	uint64_t syncs;
};

static void *vcpu_thread(void *arg)
{
	struct vcpu_thread *t = arg;
	char name[16];
	snprintf(name, sizeof(name), "CPU %d/KVM", t->vcpu.id);
	pthread_setname_np(pthread_self(), name);
	for (;;) {
		struct ucall uc;
		if (kvm_vcpu_run(&t->vcpu, &uc)) {
			t->failed = 1;
			return NULL;
		}
		if (uc.cmd == UCALL_DONE)
			return NULL;
		uint64_t want = checksum((uint64_t)t->vcpu.id * 1000 + uc.arg0, iterations);
		if (uc.cmd != UCALL_SYNC || uc.arg0 != t->syncs || uc.arg1 != want) {
			printf("FAIL: vCPU %d: ucall %llu (%llu, 0x%llx), expected sync %llu "
			       "(0x%llx)\n", t->vcpu.id, (unsigned long long)uc.cmd,
			       (unsigned long long)uc.arg0, (unsigned long long)uc.arg1,
			       (unsigned long long)t->syncs, (unsigned long long)want);
			t->failed = 1;
			return NULL;
		}
		t->syncs++;
		if (pause_us)
			usleep((useconds_t)pause_us);
	}
}

int main(int argc, char **argv)
{
	int nr = argc > 1 ? atoi(argv[1]) : 2;
	if (argc > 2)
		rounds = strtoull(argv[2], NULL, 0);
	if (argc > 3)
		iterations = strtoull(argv[3], NULL, 0);
	if (argc > 4)
		pause_us = strtoull(argv[4], NULL, 0);
	if (nr < 1 || nr > 64) {
		fprintf(stderr, "usage: vcpu_loop [NR_VCPUS (1-64) [ROUNDS [ITERATIONS "
			"[PAUSE_US]]]]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	guest_args.rounds = rounds;
	guest_args.iterations = iterations;

	struct kvm_vm vm;
	int rc = kvm_vm_create(&vm);
	if (rc)
		return rc;
	struct vcpu_thread *t = calloc((size_t)nr, sizeof(*t));
	for (int i = 0; i < nr; i++)
		if (kvm_vcpu_create(&vm, &t[i].vcpu, i, guest_code))
			return 1;
	for (int i = 0; i < nr; i++)
		pthread_create(&t[i].thread, NULL, vcpu_thread, &t[i]);
	int failed = 0;
	for (int i = 0; i < nr; i++) {
		pthread_join(t[i].thread, NULL);
		failed |= t[i].failed || t[i].syncs != rounds;
		kvm_vcpu_destroy(&t[i].vcpu);
	}
	printf("%s: %d vCPUs x %llu rounds x %llu iterations, guest code at %p\n",
	       failed ? "FAIL" : "ok", nr, (unsigned long long)rounds,
	       (unsigned long long)iterations, (void *)checksum);
	free(t);
	kvm_vm_destroy(&vm);
	return failed;
}
