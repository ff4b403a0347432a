/* SPDX-License-Identifier: Apache-2.0 */
/* hist.c -- log-linear latency histogram. */
#include <string.h>

#include "lib/hist.h"

static unsigned bucket_of(uint64_t v)
{
	unsigned msb, sub;

	if (v < HIST_SUB)
		return (unsigned)v;
	msb = 63u - (unsigned)__builtin_clzll(v);
	/* The three bits below the top one pick the sub-bucket. */
	sub = (unsigned)(v >> (msb - 3)) & (HIST_SUB - 1);
	return (msb - 2) * HIST_SUB + sub;
}

uint64_t hist_bucket_upper(unsigned b)
{
	unsigned msb, sub;

	if (b < HIST_SUB)
		return b;
	msb = b / HIST_SUB + 2;
	sub = b % HIST_SUB;
	return ((uint64_t)(HIST_SUB + sub + 1) << (msb - 3)) - 1;
}

void hist_reset(struct hist *h)
{
	memset(h, 0, sizeof(*h));
}

void hist_record(struct hist *h, int64_t us)
{
	uint64_t v = us < 0 ? 0 : (uint64_t)us;
	unsigned b = bucket_of(v);

	if (b >= HIST_BUCKETS)
		b = HIST_BUCKETS - 1;
	h->bucket[b]++;
	h->count++;
	h->sum_us += v;
	if (v > h->max_us)
		h->max_us = v;
}

uint64_t hist_percentile(const struct hist *h, double q)
{
	uint64_t rank, seen = 0;

	if (h->count == 0)
		return 0;
	rank = (uint64_t)(q * (double)h->count + 0.5);
	if (rank == 0)
		rank = 1;
	for (unsigned b = 0; b < HIST_BUCKETS; b++) {
		seen += h->bucket[b];
		if (seen >= rank) {
			uint64_t up = hist_bucket_upper(b);
			return up < h->max_us ? up : h->max_us;
		}
	}
	return h->max_us;
}
