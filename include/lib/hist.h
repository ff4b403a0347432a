/* SPDX-License-Identifier: Apache-2.0 */
/* hist.h -- a fixed-size log-linear latency histogram (no allocation).
 *
 * Values are microseconds. Each power of two is split into 8 sub-buckets,
 * so a reported percentile is within 12.5% of the true value. */
#ifndef RELAY_HIST_H
#define RELAY_HIST_H

#include <stdint.h>

#define HIST_SUB 8
#define HIST_BUCKETS (64 * HIST_SUB)

struct hist {
	uint64_t count;
	uint64_t sum_us;
	uint64_t max_us;
	uint64_t bucket[HIST_BUCKETS];
};

void hist_reset(struct hist *h);
void hist_record(struct hist *h, int64_t us);
/* The upper bound (inclusive, µs) of bucket b: what a count in it is
 * reported as (hist_percentile(), the /metrics buckets). */
uint64_t hist_bucket_upper(unsigned b);
/* Upper bound of the bucket holding percentile q (0 < q <= 1); 0 if empty. */
uint64_t hist_percentile(const struct hist *h, double q);

#endif
