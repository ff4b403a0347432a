/* SPDX-License-Identifier: Apache-2.0 */
/* json_check.c -- strict RFC 8259 validation, one pass, no tree.
 *
 * A value is read, then the container it stands in (one bit per level:
 * object or array) says what may follow it. The grammar is RFC 8259's.
 * Where the RFC leaves a choice (UTF-8 strictness, unpaired surrogate
 * escapes, nesting depth) jansson's is taken, so the relay refuses what
 * it refused before; only numbers have no limit here. */
#include <stdint.h>
#include <string.h>

#include "decode/json_check.h"

struct jc_scan {
	const unsigned char *p;     /* next byte to read */
	const unsigned char *start;
	const unsigned char *end;
	struct jc_error *err;
};

static int jc_fail(struct jc_scan *s, const unsigned char *at,
                   const char *reason)
{
	if (s->err != NULL) {
		s->err->offset = (size_t)(at - s->start);
		s->err->reason = reason;
	}
	return -1;
}

static bool jc_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static bool jc_alpha(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* RFC 8259 white space: space, tab, line feed, carriage return. */
static void jc_ws(struct jc_scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' ||
	                         *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

/* Length of the UTF-8 sequence at p (whose first byte is >= 0x80), or 0
 * when it is none: a stray continuation byte, an overlong form, a
 * surrogate, a value beyond U+10FFFF, a sequence cut short. */
static size_t jc_utf8(const unsigned char *p, const unsigned char *end)
{
	uint32_t v;
	size_t n;

	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2, v = p[0] & 0x1f;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3, v = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4, v = p[0] & 0x07;
	else
		return 0;
	if ((size_t)(end - p) < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (p[i] & 0x3f);
	}
	if ((n == 3 && v < 0x800) || (n == 4 && v < 0x10000) || v > 0x10ffff ||
	    (v >= 0xd800 && v <= 0xdfff))
		return 0;
	return n;
}

size_t jc_utf8_check(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + len;

	while (p < end) {
		size_t n;

		/* Payloads are mostly ASCII: eight bytes a step while no byte
		 * has its high bit set (callgrind: 5 instructions a byte
		 * before, most of what pgo_decode() spent on an event). */
		while (end - p >= 8) {
			uint64_t w;

			memcpy(&w, p, sizeof(w));
			if ((w & UINT64_C(0x8080808080808080)) != 0)
				break;
			p += 8;
		}
		if (p == end)
			break;
		if (*p < 0x80) {
			p++;
			continue;
		}
		if ((n = jc_utf8(p, end)) == 0)
			return (size_t)(p - (const unsigned char *)s);
		p += n;
	}
	return len;
}

/* The four hex digits at p, or -1 (also when fewer than four are left). */
static long jc_hex4(const unsigned char *p, const unsigned char *end)
{
	long v = 0;

	if (end - p < 4)
		return -1;
	for (int i = 0; i < 4; i++) {
		unsigned char c = p[i];
		v <<= 4;
		if (jc_digit(c))
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return -1;
	}
	return v;
}

/* A string; s->p is at its opening quote and ends past the closing one. */
static int jc_string(struct jc_scan *s)
{
	const unsigned char *p = s->p + 1, *end = s->end;

	for (;;) {
		long u, lo;
		size_t n;

		/* The common case first: printable ASCII. */
		while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' &&
		       *p != '\\')
			p++;
		if (p >= end)
			return jc_fail(s, end, "unterminated string");
		if (*p == '"')
			break;
		if (*p < 0x20)
			return jc_fail(s, p, "control character in a string");
		if (*p >= 0x80) {
			if ((n = jc_utf8(p, end)) == 0)
				return jc_fail(s, p, "invalid UTF-8");
			p += n;
			continue;
		}
		/* A backslash. */
		if (end - p < 2)
			return jc_fail(s, end, "unterminated string");
		switch (p[1]) {
		case '"': case '\\': case '/': case 'b':
		case 'f': case 'n': case 'r': case 't':
			p += 2;
			continue;
		case 'u':
			break;
		default:
			return jc_fail(s, p, "invalid escape");
		}
		if ((u = jc_hex4(p + 2, end)) < 0)
			return jc_fail(s, p, "invalid \\u escape");
		/* A surrogate only as a high-low pair, as jansson wants. */
		if (u >= 0xdc00 && u <= 0xdfff)
			return jc_fail(s, p, "unpaired surrogate in a \\u escape");
		if (u >= 0xd800 && u <= 0xdbff) {
			if (end - p < 12 || p[6] != '\\' || p[7] != 'u' ||
			    (lo = jc_hex4(p + 8, end)) < 0xdc00 || lo > 0xdfff)
				return jc_fail(s, p, "unpaired surrogate in a \\u escape");
			p += 12;
			continue;
		}
		p += 6;
	}
	s->p = p + 1;
	return 0;
}

/* A number: -? (0 | [1-9][0-9]*) (.[0-9]+)? ([eE][+-]?[0-9]+)?, of any
 * size, not run into a digit, letter, point or sign ("01", "1.5.2"). */
static int jc_number(struct jc_scan *s, jc_number_fn on_number, void *arg)
{
	const unsigned char *tok = s->p, *p = s->p, *end = s->end;

	if (*p == '-')
		p++;
	if (p >= end || !jc_digit(*p))
		return jc_fail(s, tok, "invalid number");
	if (*p == '0')
		p++;
	else
		while (p < end && jc_digit(*p))
			p++;
	if (p < end && *p == '.') {
		p++;
		if (p >= end || !jc_digit(*p))
			return jc_fail(s, tok, "invalid number");
		while (p < end && jc_digit(*p))
			p++;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		if (p >= end || !jc_digit(*p))
			return jc_fail(s, tok, "invalid number");
		while (p < end && jc_digit(*p))
			p++;
	}
	if (p < end && (jc_digit(*p) || jc_alpha(*p) || *p == '.' ||
	                *p == '+' || *p == '-'))
		return jc_fail(s, tok, "invalid number");
	if (on_number != NULL)
		on_number((const char *)tok, (size_t)(p - tok), arg);
	s->p = p;
	return 0;
}

/* true, false or null, not run into more letters ("nulls", "True"). */
static int jc_literal(struct jc_scan *s, const char *word, size_t n)
{
	if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0 ||
	    ((size_t)(s->end - s->p) > n &&
	     (jc_alpha(s->p[n]) || jc_digit(s->p[n]))))
		return jc_fail(s, s->p, "invalid literal");
	s->p += n;
	return 0;
}

/* After the '{' or ',' of an object: a member's name and its ':'. */
static int jc_member_name(struct jc_scan *s)
{
	jc_ws(s);
	if (s->p >= s->end)
		return jc_fail(s, s->end, "unexpected end of input");
	if (*s->p != '"')
		return jc_fail(s, s->p, "member name expected");
	if (jc_string(s) != 0)
		return -1;
	jc_ws(s);
	if (s->p >= s->end)
		return jc_fail(s, s->end, "unexpected end of input");
	if (*s->p != ':')
		return jc_fail(s, s->p, "':' expected");
	s->p++;
	return 0;
}

int jc_check(const char *str, size_t len, jc_number_fn on_number, void *arg,
             struct jc_error *err)
{
	/* Bit d set: the container at depth d + 1 is an object. */
	unsigned char is_obj[JC_MAX_DEPTH / 8];
	size_t depth = 0;
	struct jc_scan s;
	bool obj;

	s.start = s.p = (const unsigned char *)str;
	s.end = s.start + len;
	s.err = err;
	for (;;) {
		/* A value is due. */
		jc_ws(&s);
		if (s.p >= s.end)
			return jc_fail(&s, s.end, "unexpected end of input");
		/* The value itself is a level, as jansson counts: inside 2048
		 * containers only an empty one's end may follow. */
		if (depth == JC_MAX_DEPTH)
			return jc_fail(&s, s.p, "nested deeper than 2048 levels");
		switch (*s.p) {
		case '{':
		case '[':
			obj = *s.p == '{';
			if (obj)
				is_obj[depth / 8] |= (unsigned char)(1u << depth % 8);
			else
				is_obj[depth / 8] &= (unsigned char)~(1u << depth % 8);
			depth++;
			s.p++;
			jc_ws(&s);
			if (s.p < s.end && *s.p == (obj ? '}' : ']')) {
				s.p++;
				depth--;
				break; /* empty: a value done */
			}
			if (obj && jc_member_name(&s) != 0)
				return -1;
			continue; /* its first value is due */
		case '"':
			if (jc_string(&s) != 0)
				return -1;
			break;
		case 't':
			if (jc_literal(&s, "true", 4) != 0)
				return -1;
			break;
		case 'f':
			if (jc_literal(&s, "false", 5) != 0)
				return -1;
			break;
		case 'n':
			if (jc_literal(&s, "null", 4) != 0)
				return -1;
			break;
		default:
			if (*s.p == '-' || jc_digit(*s.p)) {
				if (jc_number(&s, on_number, arg) != 0)
					return -1;
				break;
			}
			/* NaN, Infinity, True, 'x', a byte order mark, "]"... */
			return jc_fail(&s, s.p, jc_alpha(*s.p) ? "invalid literal"
			                                       : "value expected");
		}

		/* A value is done: what may follow depends on where it stands. */
		for (;;) {
			jc_ws(&s);
			if (depth == 0) {
				if (s.p != s.end)
					return jc_fail(&s, s.p, "end of input expected");
				return 0;
			}
			if (s.p >= s.end)
				return jc_fail(&s, s.end, "unexpected end of input");
			obj = (is_obj[(depth - 1) / 8] >> (depth - 1) % 8) & 1;
			if (*s.p == (obj ? '}' : ']')) {
				s.p++;
				depth--;
				continue; /* the container is a value done */
			}
			if (*s.p != ',')
				return jc_fail(&s, s.p, obj ? "',' or '}' expected"
				                            : "',' or ']' expected");
			s.p++;
			if (obj && jc_member_name(&s) != 0)
				return -1;
			break; /* the next value is due */
		}
	}
}

/* ------------------------------------------------------------- numbers */

/* 2^1024 - 2^970, halfway between DBL_MAX and 2^1024: the least magnitude
 * that strtod() rounds to infinity (a tie goes to the even 2^1024). Its
 * 309 digits, so a number 0.d1d2... x 10^309 is compared digit by digit. */
static const char jc_dbl_limit[] =
	"179769313486231580793728971405303415079934132710037826936173778980"
	"444968292764750946649017977587207096330286416692887910946555547851"
	"940402630657488671505820681908902000708383676273854845817711531764"
	"475730270069855571366959622842914819860834936475292719074168444365"
	"510704342711559699508093042880177904174497792";

bool jc_beyond_double(const char *tok, size_t len)
{
	const char *p = tok, *end = tok + len, *ip, *fp;
	size_t nint, nfrac, total, lead;
	long long exp = 0, pos;
	bool eneg = false;

	if (p < end && *p == '-')
		p++;
	ip = p;
	while (p < end && jc_digit((unsigned char)*p))
		p++;
	nint = (size_t)(p - ip);
	fp = p;
	if (p < end && *p == '.') {
		fp = ++p;
		while (p < end && jc_digit((unsigned char)*p))
			p++;
	}
	nfrac = (size_t)(p - fp);
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			eneg = *p++ == '-';
		/* Saturates: beyond 1e9 the answer no longer changes. */
		for (; p < end && jc_digit((unsigned char)*p); p++)
			if (exp < 1000000000)
				exp = exp * 10 + (*p - '0');
	}
	if (eneg)
		exp = -exp;

	/* The digits as one run, integer part then fraction. */
#define JC_DIGIT(i) ((i) < nint ? ip[(i)] : fp[(i) - nint])
	total = nint + nfrac;
	for (lead = 0; lead < total && JC_DIGIT(lead) == '0'; lead++)
		;
	if (lead == total)
		return false; /* zero */
	/* The value is 0.d1d2... x 10^pos, d1 the first non-zero digit. */
	pos = (long long)nint - (long long)lead + exp;
	if (pos != 309)
		return pos > 309;
	for (size_t i = 0; i < sizeof(jc_dbl_limit) - 1; i++) {
		char got = lead + i < total ? JC_DIGIT(lead + i) : '0';
		if (got != jc_dbl_limit[i])
			return got > jc_dbl_limit[i];
	}
#undef JC_DIGIT
	return true; /* the limit itself, or more in later digits */
}
