/* SPDX-License-Identifier: MIT */
/* Guest TSC <-> host TSC under VMX scaling (vmpt_guest_tsc, vmpt_host_tsc,
 * vmpt_tsc_to_host) and the scale fit of the correlator
 * (vmpt_tsc_fit_scale), against exact arithmetic:
 * - ratio >= 1: host -> guest -> host is the identity, for every tick;
 * - ratio < 1: a guest tick spans up to ceil(1/ratio) host ticks and the
 *   way back gives the first of them (so for ratios in [0.5, 1) the host
 *   TSC of a guest TSC is 0 or 1 tick early, never late);
 * - from samples (host, 7-byte guest TSC) of KVM's ratios (48 fraction
 *   bits, rounded down from guest kHz / host kHz) and offsets of both signs
 *   and beyond 2^55, the fit finds the very multiplier and offset where its
 *   fraction is the simplest inside the feasible interval (1.5, 0.75, 1.1,
 *   2.4 GHz / 3.2 GHz...), and in every case a scale that all samples fit
 *   exactly, with the true multiplier inside [lo, hi];
 * - one sample (or none) says nothing about the ratio: 1.0.
 */
#include "vmpt/guest_time.h"
#include "../vmpt_tsc_fit.h"
#include "../vmpt_tsc_offset.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#define ONE (1ull << 48)
#define SEVEN 0xffffffffffffffull

static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* KVM's multiplier: (guest kHz << 48) / host kHz, rounded down. */
static uint64_t kvm_mult(uint64_t guest_khz, uint64_t host_khz)
{
	return (uint64_t)(((unsigned __int128)guest_khz << 48) / host_khz);
}

static void test_round_trip(void **state)
{
	static const uint64_t mults[] = { ONE, ONE + ONE / 2, 2 * ONE, ONE + 1,
					  0x1199999999999ull };
	(void)state;
	for (size_t m = 0; m < sizeof(mults) / sizeof(mults[0]); m++) {
		struct vmpt_tsc_scale s = { 0xfffffff000000000ull, mults[m], 48 };

		for (int i = 0; i < 100000; i++) {
			uint64_t h = 0x2a00000000ull + (rnd() & 0xffffffffffull);

			assert_int_equal(vmpt_host_tsc(&s, vmpt_guest_tsc(&s, h)), h);
			/* and through the 7 bytes a TSC packet holds */
			assert_int_equal(vmpt_tsc_to_host(&s, vmpt_guest_tsc(&s, h) & SEVEN,
							  h + (rnd() & 0xffffff)), h);
		}
	}
}

static void test_below_one(void **state)
{
	static const uint64_t mults[] = { ONE / 2 + ONE / 4, ONE / 2, ONE / 3, ONE - 1 };
	(void)state;
	for (size_t m = 0; m < sizeof(mults) / sizeof(mults[0]); m++) {
		struct vmpt_tsc_scale s = { 0x5000000, mults[m], 48 };
		uint64_t span = (ONE + mults[m] - 1) / mults[m];	/* ceil(1/ratio) */

		for (int i = 0; i < 100000; i++) {
			uint64_t h = 0x2a00000000ull + (rnd() & 0xffffffffffull);
			uint64_t back = vmpt_host_tsc(&s, vmpt_guest_tsc(&s, h));

			assert_true(back <= h);
			assert_true(h - back <= span - 1);
			assert_int_equal(vmpt_guest_tsc(&s, back), vmpt_guest_tsc(&s, h));
			if (back)
				assert_int_not_equal(vmpt_guest_tsc(&s, back - 1),
						     vmpt_guest_tsc(&s, h));
		}
	}
}

/* n samples of (mult, offset) over span host ticks; fit; check. */
static size_t fit_case(uint64_t mult, uint64_t offset, size_t n, uint64_t span,
		       struct vmpt_tsc_scale *got, uint64_t *lo, uint64_t *hi)
{
	struct vmpt_tsc_scale s = { offset, mult == ONE ? 0 : mult, 48 };
	uint64_t *h = malloc(n * sizeof(*h)), *g = malloc(n * sizeof(*g)), t = 0x2a00000000ull;
	size_t agree;

	assert_non_null(h);
	assert_non_null(g);
	for (size_t i = 0; i < n; i++) {
		t += 1 + rnd() % (2 * span / n);
		h[i] = t;
		g[i] = vmpt_guest_tsc(&s, t) & SEVEN;
	}
	agree = vmpt_tsc_fit_scale(h, g, n, got, lo, hi);
	/* Every sample's guest TSC comes back from the fit. */
	for (size_t i = 0; i < n; i++)
		assert_int_equal(vmpt_guest_tsc(got, h[i]) & SEVEN, g[i]);
	free(h);
	free(g);
	return agree;
}

static void test_fit_simple(void **state)
{
	struct {
		uint64_t mult;
		uint64_t offset;
	} c[] = {
		{ ONE + ONE / 2, (uint64_t)-0x1000 },
		{ ONE / 2 + ONE / 4, 0x5000000 },
		{ kvm_mult(11, 10), (uint64_t)-0x2a00000000ll },
		{ kvm_mult(2400000, 3200000), 0x90000000000000ull },	/* > 2^55 */
		{ kvm_mult(2893210, 3192000), 0x123456789aull },
		{ ONE, (uint64_t)-0x40000000000ll },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct vmpt_tsc_scale got;
		uint64_t lo, hi;
		size_t agree = fit_case(c[i].mult, c[i].offset, 40, 1ull << 34, &got, &lo, &hi);

		assert_int_equal(agree, 40);
		assert_true(lo <= c[i].mult && c[i].mult <= hi);
		/* 2893210/3192000 is no simple fraction: any multiplier of the
		 * interval fits the samples; the others come out exactly.
		 */
		if (i == 4)
			continue;
		assert_int_equal(got.mult ? got.mult : ONE, c[i].mult);
		assert_int_equal(got.offset & SEVEN, c[i].offset & SEVEN);
	}
}

static void test_fit_random(void **state)
{
	(void)state;
	for (int i = 0; i < 200; i++) {
		uint64_t mult = ONE / 4 + rnd() % (3 * ONE), lo, hi;
		struct vmpt_tsc_scale got;

		assert_int_equal(fit_case(mult, rnd(), 20, 1ull << 32, &got, &lo, &hi), 20);
		assert_true(lo <= mult && mult <= hi);
	}
}

static void test_fit_one_sample(void **state)
{
	struct vmpt_tsc_scale got;
	uint64_t h = 0x2a00001234ull, g = 0x1a00001234ull, lo, hi;

	(void)state;
	assert_int_equal(vmpt_tsc_fit_scale(&h, &g, 1, &got, &lo, &hi), 1);
	assert_int_equal(got.mult, 0);
	assert_int_equal(got.offset, (uint64_t)-0x1000000000ll);
	assert_int_equal(vmpt_tsc_fit_scale(&h, &g, 0, &got, &lo, &hi), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_below_one),
		cmocka_unit_test(test_fit_simple),
		cmocka_unit_test(test_fit_random),
		cmocka_unit_test(test_fit_one_sample),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
