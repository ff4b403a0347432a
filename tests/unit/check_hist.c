/* SPDX-License-Identifier: Apache-2.0 */
/* check_hist.c -- latency histogram percentiles stay within a bucket. */
#include <check.h>
#include <stdlib.h>

#include "lib/hist.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

START_TEST(test_empty_and_small)
{
	struct hist h;
	hist_reset(&h);
	ck_assert_uint_eq(hist_percentile(&h, 0.5), 0);
	for (int i = 0; i < 8; i++)
		hist_record(&h, i);
	/* Below 8 µs every value has its own bucket. */
	ck_assert_uint_eq(hist_percentile(&h, 0.5), 3);
	ck_assert_uint_eq(hist_percentile(&h, 1.0), 7);
	hist_record(&h, -5); /* clock step backwards: counted as 0 */
	ck_assert_uint_eq(h.count, 9);
}
END_TEST

START_TEST(test_against_sorted)
{
	static uint64_t v[20000];
	static const double qs[] = { 0.01, 0.5, 0.9, 0.99, 0.999, 1.0 };
	struct hist h;

	srandom(7);
	for (int round = 0; round < 20; round++) {
		size_t n = 1 + (size_t)(random() % 20000);
		hist_reset(&h);
		for (size_t i = 0; i < n; i++) {
			/* Log-uniform from 1 µs to ~100 s. */
			v[i] = (uint64_t)1 << (random() % 27);
			v[i] += (uint64_t)random() % v[i];
			hist_record(&h, (int64_t)v[i]);
		}
		qsort(v, n, sizeof(v[0]), cmp_u64);
		for (size_t k = 0; k < sizeof(qs) / sizeof(qs[0]); k++) {
			size_t rank = (size_t)(qs[k] * (double)n + 0.5);
			uint64_t exact = v[rank == 0 ? 0 : rank - 1];
			uint64_t got = hist_percentile(&h, qs[k]);
			/* Never below the true value, at most one sub-bucket above. */
			ck_assert_msg(got >= exact && got <= exact + exact / 8 + 1,
			              "q=%g n=%zu exact=%llu got=%llu", qs[k], n,
			              (unsigned long long)exact, (unsigned long long)got);
		}
	}
}
END_TEST

Suite *hist_suite(void)
{
	Suite *s = suite_create("hist");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_empty_and_small);
	tcase_add_test(tc, test_against_sorted);
	suite_add_tcase(s, tc);
	return s;
}
