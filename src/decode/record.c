/* SPDX-License-Identifier: Apache-2.0 */
/* record.c -- the record every decoder fills (record.h): who owns its
 * strings, and PostgreSQL's timestamp text.
 *
 * Apart from w2j.c and pgo.c because neither owns the record: both hand
 * their strings to it, event.c and the runbook clear it whatever decoded
 * it, and the timestamp parser reads the server's text, not a plugin's. */
#include <assert.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "decode/record.h"

/* rec->root_ holds what the strings of a record point into: w2j.c's
 * jansson tree, or one heap block from record_adopt() marked by this low
 * bit (malloc() aligns both, so the bit is otherwise always clear). */
#define REC_ROOT_BUF ((uintptr_t)1)

/* ------------------------------------------------------------ ownership */

void record_clear(struct record *rec)
{
	uintptr_t root = (uintptr_t)rec->root_;

	if (root & REC_ROOT_BUF)
		free((void *)(root & ~REC_ROOT_BUF));
	else if (root != 0)
		json_decref((json_t *)rec->root_);
	memset(rec, 0, sizeof(*rec));
	rec->xid = -1;
}

void record_adopt(struct record *rec, void *buf)
{
	assert(rec->root_ == NULL && ((uintptr_t)buf & REC_ROOT_BUF) == 0);
	rec->root_ = (void *)((uintptr_t)buf | REC_ROOT_BUF);
}

/* ------------------------------------------------------------ timestamps */

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar
 * (Howard Hinnant's days_from_civil). Used instead of timegm() so the
 * result never depends on the process time zone or its database. */
static int64_t rec_days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static bool rec_leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* Reads exactly n digits at *p into *out and advances *p. */
static bool rec_digits(const char **p, int n, int *out)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		char ch = (*p)[i];
		if (ch < '0' || ch > '9')
			return false;
		v = v * 10 + (ch - '0');
	}
	*p += n;
	*out = v;
	return true;
}

int record_parse_timestamp(const char *s, int64_t *out_us)
{
	static const int mdays[12] = { 31, 28, 31, 30, 31, 30,
		                           31, 31, 30, 31, 30, 31 };
	const char *p = s;
	int y, mo, d, h, mi, sec, oh, om = 0, os = 0, frac = 0, ndig = 0;
	int sign;
	int64_t t;

	/* timestamptz_to_str() always writes ISO: "YYYY-MM-DD HH:MM:SS",
	 * then up to six fraction digits with trailing zeros dropped, then
	 * the session's UTC offset as +HH, +HH:MM or +HH:MM:SS. */
	if (!rec_digits(&p, 4, &y) || *p++ != '-' || !rec_digits(&p, 2, &mo) ||
	    *p++ != '-' || !rec_digits(&p, 2, &d) || *p++ != ' ' ||
	    !rec_digits(&p, 2, &h) || *p++ != ':' || !rec_digits(&p, 2, &mi) ||
	    *p++ != ':' || !rec_digits(&p, 2, &sec))
		return -1;
	if (mo < 1 || mo > 12 || d < 1 ||
	    d > mdays[mo - 1] + (mo == 2 && rec_leap(y)) || h > 23 || mi > 59 ||
	    sec > 59)
		return -1;
	if (*p == '.') {
		p++;
		while (*p >= '0' && *p <= '9') {
			if (++ndig > 6)
				return -1;
			frac = frac * 10 + (*p++ - '0');
		}
		if (ndig == 0)
			return -1;
		for (int i = ndig; i < 6; i++)
			frac *= 10;
	}
	if (*p != '+' && *p != '-')
		return -1;
	sign = *p++ == '-' ? -1 : 1;
	if (!rec_digits(&p, 2, &oh))
		return -1;
	if (*p == ':') {
		p++;
		if (!rec_digits(&p, 2, &om))
			return -1;
		if (*p == ':') {
			p++;
			if (!rec_digits(&p, 2, &os))
				return -1;
		}
	}
	/* PostgreSQL limits UTC offsets to 15:59:59. */
	if (*p != '\0' || oh > 15 || om > 59 || os > 59)
		return -1;

	t = rec_days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 +
	    h * 3600 + mi * 60 + sec;
	t -= sign * (oh * 3600 + om * 60 + os);
	*out_us = t * 1000000 + frac;
	return 0;
}
