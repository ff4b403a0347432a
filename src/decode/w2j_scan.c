/* SPDX-License-Identifier: Apache-2.0 */
/* w2j_scan.c -- the two scanners in front of wal2json's decoder: B/C
 * records, and I records with the relay's options, read without a
 * jansson tree.
 *
 * Apart from w2j.c because they are an optimisation, not the decoder:
 * on anything they are not sure about they return 1 and w2j_decode_slow()
 * (jansson, the reference) reads the line, so that both ways give the
 * same record and the same error, byte for byte. check_w2j.c and
 * fuzz_w2j.c compare the two on every line they have. */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "decode/json_check.h"
#include "decode/record.h"
#include "w2j_int.h"

/* ------------------------------------------------------------ B/C path */

/* Scans a JSON string body starting after its opening quote: printable
 * ASCII only, no escapes. Returns its length and moves *p past the
 * closing quote, or -1 for anything else (the full parser decides). */
static long w2j_fast_str(const char **p, const char *end)
{
	const char *start = *p, *s = *p;

	while (s < end && *s != '"') {
		unsigned char ch = (unsigned char)*s;
		if (ch < 0x20 || ch >= 0x7f || ch == '\\')
			return -1;
		s++;
	}
	if (s >= end)
		return -1;
	*p = s + 1;
	return (long)(s - start);
}

/* Reads an "xid" value: a plain JSON integer of 32 bits. */
static bool w2j_fast_xid(const char **p, const char *end, int64_t *out)
{
	const char *s = *p;
	uint64_t xid = 0;
	long n;

	while (s < end && *s >= '0' && *s <= '9' && s - *p < 11)
		xid = xid * 10 + (uint64_t)(*s++ - '0');
	n = (long)(s - *p);
	/* JSON has no leading zeros; xids are 32 bits. */
	if (n == 0 || n > 10 || (n > 1 && **p == '0') || xid > UINT32_MAX)
		return false;
	*out = (int64_t)xid;
	*p = s;
	return true;
}

/* Most records of a busy database are B/C pairs of transactions that
 * touched no outbox row, so they get a scanner of their own instead of a
 * jansson tree (about ten times faster). It accepts only the exact shape
 * wal2json's C code prints:
 *     {"action":"B","xid":731,"timestamp":"...","lsn":"0/1","nextlsn":"0/2"}
 * with members optional, and returns 1 on anything else (whitespace,
 * escapes, other members, duplicates, bad values, a C without nextlsn):
 * w2j_decode() then parses the line with jansson, which gives the same
 * result or the proper error message. Returns 0 with rec filled. */
static int w2j_fast_bc(const char *line, size_t len, struct record *rec)
{
	const char *p = line, *end = line + len;
	bool seen[4] = { false, false, false, false };
	bool have_next = false;
	char kind;

	while (end > p && (end[-1] == '\n' || end[-1] == '\r'))
		end--;
	if (len < 14 || memcmp(p, "{\"action\":\"", 11) != 0)
		return 1;
	p += 11;
	kind = *p;
	if ((kind != 'B' && kind != 'C') || p[1] != '"')
		return 1;
	p += 2;

	while (p < end && *p == ',') {
		const char *key, *val;
		long klen, vlen;
		int which;

		p++;
		if (p >= end || *p != '"')
			return 1;
		key = ++p;
		if ((klen = w2j_fast_str(&p, end)) < 0 || p >= end || *p++ != ':')
			return 1;
		if (klen == 3 && memcmp(key, "xid", 3) == 0)
			which = 0;
		else if (klen == 9 && memcmp(key, "timestamp", 9) == 0)
			which = 1;
		else if (klen == 3 && memcmp(key, "lsn", 3) == 0)
			which = 2;
		else if (klen == 7 && memcmp(key, "nextlsn", 7) == 0)
			which = 3;
		else
			return 1;
		if (seen[which])
			return 1;
		seen[which] = true;

		if (end - p >= 4 && memcmp(p, "null", 4) == 0) {
			p += 4;
			continue; /* null: as if absent, like the full path */
		}
		if (which == 0) {
			if (!w2j_fast_xid(&p, end, &rec->xid))
				return 1;
			continue;
		}
		if (p >= end || *p != '"')
			return 1;
		val = ++p;
		if ((vlen = w2j_fast_str(&p, end)) < 0)
			return 1;
		if (which == 1) {
			/* record_parse_timestamp() wants a NUL-terminated string. */
			char ts[64];
			if ((size_t)vlen >= sizeof(ts))
				return 1;
			memcpy(ts, val, (size_t)vlen);
			ts[vlen] = '\0';
			if (record_parse_timestamp(ts, &rec->commit_ts_us) != 0)
				return 1;
		} else if (lsn_parse(val, (size_t)vlen,
		                     which == 2 ? &rec->lsn : &rec->nextlsn) != 0) {
			return 1;
		} else if (which == 3) {
			have_next = true;
		}
	}
	if (p + 1 != end || *p != '}')
		return 1;
	if (kind == 'C' && !have_next)
		return 1;
	rec->kind = kind == 'B' ? REC_BEGIN : REC_COMMIT;
	return 0;
}

/* -------------------------------------------------------------- I path */

/* What the I scanner knows of one JSON value, without copying it. */
struct w2j_span {
	const char *ptr;  /* a string's body (after its quote), or the token */
	size_t len;
	char kind;        /* 's'tring, 'i'nteger, 'r'eal, 'b'oolean, 'n'ull */
	bool esc;         /* a string body with backslash escapes */
	long long ival;   /* an integer's value */
};

/* Bytes that a string body holds as they are: printable ASCII and DEL
 * (jansson refuses only controls). The rest stops the fast loop. */
static const unsigned char w2j_plain[256] = {
	/* 00 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	/* 10 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	/* 20 */ 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	/* 30 */ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	/* 40 */ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	/* 50 */ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,
	/* 60 */ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	/* 70 */ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	/* 80-ff: 0, UTF-8 is checked apart */
};

/* Whether any of the eight bytes in w is not w2j_plain[]: exact, since
 * each test below only flags a byte that has the property (the borrow
 * of a lower byte cannot set a high bit that ~w has cleared). */
#define W2J_ONES UINT64_C(0x0101010101010101)
#define W2J_HIGH UINT64_C(0x8080808080808080)
static inline bool w2j_special8(uint64_t w)
{
	uint64_t q = w ^ (W2J_ONES * '"'), b = w ^ (W2J_ONES * '\\');

	return ((w | ((w - W2J_ONES * 0x20) & ~w) | ((q - W2J_ONES) & ~q) |
	         ((b - W2J_ONES) & ~b)) & W2J_HIGH) != 0;
}

static bool w2j_lit(const char **p, const char *end, const char *lit,
                    size_t n)
{
	if ((size_t)(end - *p) < n || memcmp(*p, lit, n) != 0)
		return false;
	*p += n;
	return true;
}

#define W2J_LIT(p, end, s) w2j_lit(p, end, s, sizeof(s) - 1)

/* Four hex digits at s, or -1. */
static long w2j_hex4(const unsigned char *s)
{
	long v = 0;

	for (int i = 0; i < 4; i++) {
		unsigned char ch = s[i];
		v <<= 4;
		if (ch >= '0' && ch <= '9')
			v |= ch - '0';
		else if (ch >= 'a' && ch <= 'f')
			v |= ch - 'a' + 10;
		else if (ch >= 'A' && ch <= 'F')
			v |= ch - 'A' + 10;
		else
			return -1;
	}
	return v;
}

/* Length of the UTF-8 sequence at s, or 0 when jansson would refuse it:
 * overlong forms, surrogates, values beyond U+10FFFF, a cut sequence. */
static size_t w2j_utf8_len(const unsigned char *s, const unsigned char *end)
{
	uint32_t v;
	size_t n;

	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, v = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, v = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, v = s[0] & 0x07;
	else
		return 0;
	if ((size_t)(end - s) < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3f);
	}
	if (v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff) ||
	    (n == 3 && v < 0x800) || (n == 4 && v < 0x10000))
		return 0;
	return n;
}

/* Scans a string body after its opening quote and checks all that
 * jansson checks: no control characters, only JSON's escapes, no
 * \u0000 (refused without JSON_ALLOW_NUL), surrogates only as a high-low
 * pair, strict UTF-8. Moves *p past the closing quote; false on anything
 * else, including the end of the input. */
static bool w2j_scan_str(const char **p, const char *end, struct w2j_span *v)
{
	const unsigned char *s = (const unsigned char *)*p;
	const unsigned char *e = (const unsigned char *)end;
	bool esc = false;
	size_t n;

	for (;;) {
		/* Eight bytes a step while none is special (a quote, a
		 * backslash, a control character or a high bit): payloads are
		 * long runs of plain ASCII, and this loop was the relay's
		 * hottest in a wal2json drain (perf: 10 % of its samples). */
		while (e - s >= 8) {
			uint64_t w;

			memcpy(&w, s, sizeof(w));
			if (w2j_special8(w))
				break;
			s += 8;
		}
		while (s < e && w2j_plain[*s])
			s++;
		if (s >= e)
			return false;
		if (*s == '"')
			break;
		if (*s == '\\') {
			long u, lo;

			esc = true;
			if (e - s < 2)
				return false;
			switch (s[1]) {
			case '"': case '\\': case '/': case 'b':
			case 'f': case 'n': case 'r': case 't':
				s += 2;
				continue;
			}
			if (s[1] != 'u' || e - s < 6 || (u = w2j_hex4(s + 2)) <= 0 ||
			    (u >= 0xdc00 && u <= 0xdfff))
				return false;
			s += 6;
			if (u < 0xd800 || u > 0xdbff)
				continue;
			if (e - s < 6 || s[0] != '\\' || s[1] != 'u' ||
			    (lo = w2j_hex4(s + 2)) < 0xdc00 || lo > 0xdfff)
				return false;
			s += 6;
			continue;
		}
		/* A control character, or UTF-8 (0 when bad). */
		if ((n = w2j_utf8_len(s, e)) == 0)
			return false;
		s += n;
	}
	v->ptr = *p;
	v->len = (size_t)((const char *)s - *p);
	v->kind = 's';
	v->esc = esc;
	*p = (const char *)s + 1;
	return true;
}

/* Scans a number with jansson's grammar. Integers must fit in long long:
 * beyond that jansson fails and w2j_decode_slow() reads the whole line
 * again with every integer a real, which is not worth mimicking. A real
 * is taken only when it is plainly below DBL_MAX (fewer than 309 digits
 * before the point once the exponent is applied): jansson refuses one
 * that strtod() overflows, and w2j_decode_slow() then takes the line
 * through w2j_load_wide(). Its value is never needed. */
static bool w2j_scan_num(const char **p, const char *end, struct w2j_span *v)
{
	const char *s = *p, *d;
	bool neg = false, over = false;
	uint64_t mag = 0;
	long ndig = 0;

	if (s < end && *s == '-') {
		neg = true;
		s++;
	}
	if (s >= end || *s < '0' || *s > '9')
		return false;
	if (*s == '0') {
		s++;
		if (s < end && *s >= '0' && *s <= '9')
			return false; /* no leading zeros */
	} else {
		for (d = s; s < end && *s >= '0' && *s <= '9'; s++) {
			unsigned dig = (unsigned)(*s - '0');
			if (mag > (UINT64_MAX - dig) / 10)
				over = true;
			else
				mag = mag * 10 + dig;
		}
		ndig = (long)(s - d);
	}
	if (s < end && (*s == '.' || *s == 'e' || *s == 'E')) {
		long exp = 0;
		bool eneg = false;

		if (*s == '.') {
			s++;
			if (s >= end || *s < '0' || *s > '9')
				return false;
			while (s < end && *s >= '0' && *s <= '9')
				s++;
		}
		if (s < end && (*s == 'e' || *s == 'E')) {
			s++;
			if (s < end && (*s == '+' || *s == '-'))
				eneg = *s++ == '-';
			if (s >= end || *s < '0' || *s > '9')
				return false;
			for (d = s; s < end && *s >= '0' && *s <= '9'; s++) {
				if (s - d >= 6)
					return false;
				exp = exp * 10 + (*s - '0');
			}
		}
		if (ndig + (eneg ? -exp : exp) > 308)
			return false;
		v->kind = 'r';
	} else {
		if (over || mag > (uint64_t)LLONG_MAX + neg)
			return false;
		v->kind = 'i';
		/* -mag done in unsigned arithmetic: LLONG_MIN has no positive. */
		v->ival = neg ? (long long)(0 - mag) : (long long)mag;
	}
	v->ptr = *p;
	v->len = (size_t)(s - *p);
	*p = s;
	return true;
}

static bool w2j_scan_value(const char **p, const char *end,
                           struct w2j_span *v)
{
	if (*p >= end)
		return false;
	switch (**p) {
	case '"':
		(*p)++;
		return w2j_scan_str(p, end, v);
	case 'n':
		v->kind = 'n';
		return W2J_LIT(p, end, "null");
	case 't':
		v->kind = 'b';
		return W2J_LIT(p, end, "true");
	case 'f':
		v->kind = 'b';
		return W2J_LIT(p, end, "false");
	default:
		return w2j_scan_num(p, end, v);
	}
}

/* Decodes the escape at *p in a body that w2j_scan_str() accepted into
 * out (up to 4 bytes, UTF-8 as jansson writes it) and moves *p past it.
 * Returns the number of bytes written. */
static size_t w2j_unescape_one(const char **p, char *out)
{
	const unsigned char *s = (const unsigned char *)*p;
	uint32_t u;

	*p += 2;
	switch (s[1]) {
	case 'b': out[0] = '\b'; return 1;
	case 'f': out[0] = '\f'; return 1;
	case 'n': out[0] = '\n'; return 1;
	case 'r': out[0] = '\r'; return 1;
	case 't': out[0] = '\t'; return 1;
	case 'u': break;
	default: out[0] = (char)s[1]; return 1; /* " \ / */
	}
	u = (uint32_t)w2j_hex4(s + 2);
	*p += 4;
	if (u >= 0xd800 && u <= 0xdbff) {
		u = ((u - 0xd800) << 10) + ((uint32_t)w2j_hex4(s + 8) - 0xdc00) +
		    0x10000;
		*p += 6;
	}
	if (u < 0x80) {
		out[0] = (char)u;
		return 1;
	}
	if (u < 0x800) {
		out[0] = (char)(0xc0 | u >> 6);
		out[1] = (char)(0x80 | (u & 0x3f));
		return 2;
	}
	if (u < 0x10000) {
		out[0] = (char)(0xe0 | u >> 12);
		out[1] = (char)(0x80 | (u >> 6 & 0x3f));
		out[2] = (char)(0x80 | (u & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | u >> 18);
	out[1] = (char)(0x80 | (u >> 12 & 0x3f));
	out[2] = (char)(0x80 | (u >> 6 & 0x3f));
	out[3] = (char)(0x80 | (u & 0x3f));
	return 4;
}

/* Writes the unescaped string v and a NUL to out (room for v->len + 1
 * is enough: no escape gets longer). Returns the length. */
static inline __attribute__((always_inline)) size_t
w2j_unescape(const struct w2j_span *v, char *out)
{
	const char *s = v->ptr, *e = v->ptr + v->len;
	char *o = out;

	while (s < e) {
		const char *bs = v->esc ? memchr(s, '\\', (size_t)(e - s)) : NULL;
		size_t n = (size_t)((bs != NULL ? bs : e) - s);

		memcpy(o, s, n);
		o += n;
		s += n;
		if (bs != NULL)
			o += w2j_unescape_one(&s, o);
	}
	*o = '\0';
	return (size_t)(o - out);
}

/* Is the unescaped string v exactly want (as strcmp() sees it: jansson
 * strings hold no NUL)? */
static bool w2j_span_eq(const struct w2j_span *v, const char *want,
                        size_t wantlen)
{
	const char *s = v->ptr, *e = v->ptr + v->len;
	size_t i = 0;

	if (!v->esc)
		return v->len == wantlen && memcmp(s, want, wantlen) == 0;
	if (wantlen > v->len) /* unescaping never makes a string longer */
		return false;
	while (s < e) {
		char u[4];
		size_t n;

		if (*s != '\\') {
			if (i >= wantlen || want[i] != *s)
				return false;
			i++;
			s++;
			continue;
		}
		n = w2j_unescape_one(&s, u);
		if (n > wantlen - i || memcmp(want + i, u, n) != 0)
			return false;
		i += n;
	}
	return i == wantlen;
}

/* A column of the outbox row that the spec asks for. */
struct w2j_found {
	bool seen;
	struct w2j_span type, value;
};

/* The event of a scanned outbox row: the same fields w2j_event() fills,
 * with the strings unescaped into one heap block that rec->root_ owns.
 * Returns 1 on every case w2j_event() or w2j_decode_slow() would fail
 * on, so that the message comes from there. */
static int w2j_fast_event(struct record *rec, const struct w2j_span *ts,
                          const struct w2j_found *found, size_t nextra)
{
	struct rec_str *dst[REC_NCOLS] = { &rec->id, &rec->key, &rec->type,
		                               &rec->route, &rec->payload };
	size_t need = 0;
	char tsbuf[64], *buf, *o;
	int k;

	for (k = 0; k < REC_NCOLS; k++) {
		const struct w2j_span *v = &found[k].value;
		if (!found[k].seen)
			return 1;
		if (v->kind == 's')
			need += v->len + 1;
		else if (!(v->kind == 'i' && k != REC_COL_PAYLOAD) &&
		         !(v->kind == 'n' && k == REC_COL_TYPE))
			return 1;
	}
	/* The extra columns (record.h): absent, NULL, text, an integer or
	 * a boolean; anything else is jansson's to name. */
	for (size_t x = 0; x < nextra; x++) {
		const struct w2j_span *v = &found[REC_NCOLS + x].value;
		if (!found[REC_NCOLS + x].seen)
			continue;
		if (v->kind == 's')
			need += v->len + 1;
		else if (v->kind == 'i')
			need += 24; /* "-9223372036854775808" and its NUL */
		else if (v->kind != 'n' && v->kind != 'b')
			return 1;
	}
	/* Timestamps are short and plain; anything else is left to jansson. */
	if (ts->esc || ts->len >= sizeof(tsbuf))
		return 1;
	memcpy(tsbuf, ts->ptr, ts->len);
	tsbuf[ts->len] = '\0';
	if (record_parse_timestamp(tsbuf, &rec->commit_ts_us) != 0)
		return 1;

	buf = malloc(need);
	if (buf == NULL)
		return 1;
	o = buf;
	for (k = 0; k < REC_NCOLS; k++) {
		const struct w2j_span *v = &found[k].value;
		if (v->kind == 's') {
			dst[k]->ptr = o;
			dst[k]->len = w2j_unescape(v, o);
			o += dst[k]->len + 1;
		} else if (v->kind == 'i') {
			int n = snprintf(rec->num_[k], sizeof(rec->num_[k]),
			                 "%" JSON_INTEGER_FORMAT, (json_int_t)v->ival);
			dst[k]->ptr = rec->num_[k];
			dst[k]->len = (size_t)n;
		}
	}
	for (size_t x = 0; x < nextra; x++) {
		const struct w2j_span *v = &found[REC_NCOLS + x].value;
		struct rec_str *d = &rec->extra[x];
		if (!found[REC_NCOLS + x].seen)
			continue;
		rec->extra_seen |= 1u << x;
		if (v->kind == 's') {
			d->ptr = o;
			d->len = w2j_unescape(v, o);
			o += d->len + 1;
		} else if (v->kind == 'i') {
			int n = snprintf(o, 24, "%lld", v->ival);
			d->ptr = o;
			d->len = (size_t)n;
			o += 24;
		} else if (v->kind == 'b') {
			d->ptr = v->ptr[0] == 't' ? "true" : "false";
			d->len = strlen(d->ptr);
		}
	}
	if (!w2j_span_eq(&found[REC_COL_PAYLOAD].type, "jsonb", 5) &&
	    !w2j_span_eq(&found[REC_COL_PAYLOAD].type, "json", 4)) {
		struct jc_error jc;
		if (w2j_check_payload(rec->payload.ptr, rec->payload.len, &jc) !=
		    0) {
			free(buf);
			return 1;
		}
	}
	rec->kind = REC_EVENT;
	record_adopt(rec, buf);
	return 0;
}

/* Inserts are most of what the relay reads when it has work, and their
 * jansson tree (a node and a copy per member, all malloc'd and freed)
 * took half of the relay's CPU time. This scanner reads the exact line
 * wal2json 2.5 prints for one with the relay's options, in one pass and
 * with one malloc(), no whitespace:
 *     {"action":"I","xid":N,"timestamp":"...","lsn":"X/X","schema":"...",
 *      "table":"...","columns":[{"name":"...","type":"...","value":V},...]}
 * It checks the whole line as jansson would (a record of another table
 * is skipped only once it is known to be valid JSON, or the two paths
 * would disagree on a broken one) but looks into columns only on the
 * outbox table. Returns 1 on any other shape (pk, typeoid, optional
 * members, null xid/lsn/timestamp, numbers beyond 64 bits) and on every
 * error: w2j_decode_slow() then reads the line and names the cause. */
static int w2j_fast_i(const char *line, size_t len,
                      const struct record_spec *spec, struct record *rec)
{
	const char *want[REC_NROLES] = { spec->col_id, spec->col_key,
		                             spec->col_type, spec->col_route,
		                             spec->col_payload };
	const char *p = line, *end = line + len;
	struct w2j_found found[REC_NROLES];
	struct w2j_span ts, lsn, schema, table;
	size_t wantlen[REC_NROLES];
	int nwant = REC_NCOLS + (int)spec->nextra;
	bool ours;
	int k;

	while (end > p && (end[-1] == '\n' || end[-1] == '\r'))
		end--;
	if (!W2J_LIT(&p, end, "{\"action\":\"I\",\"xid\":") ||
	    !w2j_fast_xid(&p, end, &rec->xid) ||
	    !W2J_LIT(&p, end, ",\"timestamp\":\"") ||
	    !w2j_scan_str(&p, end, &ts) || !W2J_LIT(&p, end, ",\"lsn\":\"") ||
	    !w2j_scan_str(&p, end, &lsn) || lsn.esc ||
	    lsn_parse(lsn.ptr, lsn.len, &rec->lsn) != 0 ||
	    !W2J_LIT(&p, end, ",\"schema\":\"") ||
	    !w2j_scan_str(&p, end, &schema) ||
	    !W2J_LIT(&p, end, ",\"table\":\"") ||
	    !w2j_scan_str(&p, end, &table) ||
	    !W2J_LIT(&p, end, ",\"columns\":["))
		return 1;
	ours = w2j_span_eq(&schema, spec->schema, strlen(spec->schema)) &&
	       (w2j_any_table(spec) ||
	        w2j_span_eq(&table, spec->table, strlen(spec->table)));
	memset(found, 0, (size_t)nwant * sizeof(found[0]));
	for (k = REC_NCOLS; k < nwant; k++)
		want[k] = spec->col_extra[k - REC_NCOLS];
	for (k = 0; k < nwant; k++)
		wantlen[k] = strlen(want[k]);

	if (p < end && *p == ']') {
		p++;
	} else {
		for (;;) {
			struct w2j_span name, type, value;

			if (!W2J_LIT(&p, end, "{\"name\":\"") ||
			    !w2j_scan_str(&p, end, &name) ||
			    !W2J_LIT(&p, end, ",\"type\":\"") ||
			    !w2j_scan_str(&p, end, &type) ||
			    !W2J_LIT(&p, end, ",\"value\":") ||
			    !w2j_scan_value(&p, end, &value) ||
			    !W2J_LIT(&p, end, "}"))
				return 1;
			/* The first column of a name wins, as in w2j_event(). */
			for (k = 0; ours && k < nwant; k++) {
				if (!found[k].seen &&
				    w2j_span_eq(&name, want[k], wantlen[k])) {
					found[k].seen = true;
					found[k].type = type;
					found[k].value = value;
				}
			}
			if (p < end && *p == ',') {
				p++;
				continue;
			}
			if (!W2J_LIT(&p, end, "]"))
				return 1;
			break;
		}
	}
	if (p + 1 != end || *p != '}')
		return 1;
	if (!ours) {
		/* As w2j_decode_slow(): no timestamp for a skipped row. */
		rec->kind = REC_SKIP;
		return 0;
	}
	if (w2j_fast_event(rec, &ts, found, spec->nextra) != 0)
		return 1;
	if (spec->want_types) {
		rec->key_type = wire_type_of(found[REC_COL_KEY].type.ptr,
		                             found[REC_COL_KEY].type.len);
		rec->payload_type = wire_type_of(found[REC_COL_PAYLOAD].type.ptr,
		                                 found[REC_COL_PAYLOAD].type.len);
	}
	return 0;
}

/* -------------------------------------------------------------- entry */

/* The scanners alone: 0 with rec filled, or 1 with rec cleared when the
 * line is not theirs to decode. */
int w2j_decode_fast(const char *line, size_t len,
                    const struct record_spec *spec, struct record *rec)
{
	int r;

	memset(rec, 0, sizeof(*rec));
	rec->xid = -1;
	if (len > 11 && line[11] == 'I')
		r = w2j_fast_i(line, len, spec, rec);
	else
		r = w2j_fast_bc(line, len, rec);
	if (r != 0) {
		/* Whatever the scanner filled in is redone from scratch. */
		memset(rec, 0, sizeof(*rec));
		rec->xid = -1;
	}
	return r;
}
