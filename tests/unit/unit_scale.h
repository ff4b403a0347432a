/* SPDX-License-Identifier: Apache-2.0 */
/* unit_scale.h -- how many rounds the randomized tests run.
 *
 * UNIT_PROPERTY_SCALE=N divides the rounds of the property and mutation
 * tests by N (at least one round stays). Only make check-valgrind sets
 * it, where memcheck makes each round some 50 times slower; every other
 * run, make check included, does all of them. */
#ifndef RELAY_UNIT_SCALE_H
#define RELAY_UNIT_SCALE_H

#include <stdlib.h>

static inline long unit_rounds(long n)
{
	const char *s = getenv("UNIT_PROPERTY_SCALE");
	long d = s != NULL ? strtol(s, NULL, 10) : 1;

	if (d < 1)
		d = 1;
	return n / d > 0 ? n / d : 1;
}

#endif
