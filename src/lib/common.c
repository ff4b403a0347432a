/* SPDX-License-Identifier: Apache-2.0 */
/* common.c -- allocation wrappers, LSN text, clocks. */
#include <math.h>
#include <stdarg.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/common.h"

static void oom(size_t n)
{
	/* The slot replays whatever was not confirmed: dying loses nothing. */
	fprintf(stderr, "FATAL: out of memory allocating %zu bytes\n", n);
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (p == NULL)
		oom(n);
	return p;
}

void *xcalloc(size_t n, size_t m)
{
	void *p = calloc(n ? n : 1, m ? m : 1);
	if (p == NULL)
		oom(n * m);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (q == NULL)
		oom(n);
	return q;
}

char *xread_stream(FILE *f, size_t *len)
{
	char *text = NULL;
	size_t cap = 0, n;

	*len = 0;
	do {
		if (cap - *len < 4096) {
			cap = cap ? cap * 2 : 8192;
			text = xrealloc(text, cap);
		}
		n = fread(text + *len, 1, cap - *len, f);
		*len += n;
	} while (n > 0);
	if (ferror(f)) {
		int e = errno;
		free(text);
		errno = e;
		return NULL;
	}
	return text;
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static size_t hex32(char *o, uint32_t v)
{
	char t[8];
	size_t n = 0, i = 0;

	do {
		t[n++] = "0123456789ABCDEF"[v & 15];
		v >>= 4;
	} while (v != 0);
	while (n > 0)
		o[i++] = t[--n];
	return i;
}

size_t lsn_format(char *buf, uint64_t lsn)
{
	size_t n = hex32(buf, (uint32_t)(lsn >> 32));

	buf[n++] = '/';
	n += hex32(buf + n, (uint32_t)lsn);
	buf[n] = '\0';
	return n;
}

size_t i64_format(char *buf, int64_t v)
{
	char t[20];
	size_t n = 0, i = 0;
	/* The magnitude in unsigned arithmetic: -INT64_MIN overflows. */
	uint64_t m = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

	do {
		t[n++] = (char)('0' + m % 10);
		m /= 10;
	} while (m != 0);
	if (v < 0)
		buf[i++] = '-';
	while (n > 0)
		buf[i++] = t[--n];
	buf[i] = '\0';
	return i;
}

int lsn_parse(const char *s, size_t len, uint64_t *out)
{
	uint64_t hi = 0, lo = 0;
	size_t i = 0, digits = 0;

	/* Each half is 1-8 hex digits, as pg_lsn_in accepts. */
	for (; i < len && s[i] != '/'; i++, digits++) {
		int v = hexval(s[i]);
		if (v < 0 || digits >= 8)
			return -1;
		hi = (hi << 4) | (uint64_t)v;
	}
	if (digits == 0 || i >= len)
		return -1;
	i++; /* '/' */
	for (digits = 0; i < len; i++, digits++) {
		int v = hexval(s[i]);
		if (v < 0 || digits >= 8)
			return -1;
		lo = (lo << 4) | (uint64_t)v;
	}
	if (digits == 0)
		return -1;
	*out = (hi << 32) | lo;
	return 0;
}

int64_t now_mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t now_mono_coarse_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t now_wall_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void errbuf_set(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

size_t utf8_decode(const unsigned char *s, size_t n, unsigned *cp)
{
	size_t len;
	unsigned c;

	if (s[0] < 0x80) {
		if (cp != NULL)
			*cp = s[0];
		return 1;
	}
	if (s[0] >= 0xC2 && s[0] <= 0xDF)
		len = 2, c = s[0] & 0x1F;
	else if (s[0] >= 0xE0 && s[0] <= 0xEF)
		len = 3, c = s[0] & 0x0F;
	else if (s[0] >= 0xF0 && s[0] <= 0xF4)
		len = 4, c = s[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3F);
	}
	/* Overlong forms, surrogates, beyond U+10FFFF. */
	if ((len == 3 && c < 0x800) || (len == 4 && c < 0x10000) ||
	    (c >= 0xD800 && c <= 0xDFFF) || c > 0x10FFFF)
		return 0;
	if (cp != NULL)
		*cp = c;
	return len;
}

void fmt_bytes(char *buf, size_t len, double v)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB",
		                                "PiB", "EiB" };
	size_t u = 0;

	if (fabs(v) < 1024) {
		snprintf(buf, len, "%.0f B", v);
		return;
	}
	while (fabs(v) >= 1024 && u + 1 < sizeof(unit) / sizeof(unit[0])) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%.1f %s", v, unit[u]);
}
