/* SPDX-License-Identifier: Apache-2.0 */
/* w2j.c -- decodes one wal2json format-version 2 record.
 *
 * wal2json writes one JSON object per record: B and C around each
 * transaction, I/U/D/T per change, M per logical message. Only B, C, I
 * on the outbox table and M matter to the relay; everything else is
 * skipped. w2j_decode_emit() reads the content of outbox_emit()'s M.
 * See tests/fixtures/README.md for real examples of every kind.
 *
 * jansson is the reference: w2j_decode_slow() below is the whole
 * decoder. Two strict scanners in front of it read the exact shapes
 * wal2json prints for B/C and I records without building a tree; on
 * anything they are not sure about they step aside and jansson decides,
 * so both ways give the same record and the same error, byte for byte
 * (tests/unit/check_w2j.c compares them line by line).
 *
 * jansson cannot hold a number beyond a double (1e400), which is valid
 * JSON; jc_check() (json_check.c) decides for those, both for payloads in
 * text columns and for whole records (w2j_load_wide()). */
#include <assert.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "decode/json_check.h"
#include "decode/w2j.h"

/* The columns of an event, in struct w2j_spec order; the first four are
 * also the slots of struct w2j_record.num_ for numeric values. */
enum w2j_col {
	W2J_COL_ID = 0,
	W2J_COL_KEY,
	W2J_COL_TYPE,
	W2J_COL_ROUTE,
	W2J_COL_PAYLOAD,
	W2J_NCOLS
};

/* rec->root_ of an event holds what its strings point into: the jansson
 * tree, or, from the I scanner, one heap block marked by this low bit
 * (malloc() aligns both, so the bit is otherwise always clear). */
#define W2J_ROOT_BUF ((uintptr_t)1)

/* What is known about the record so far, for error messages. */
struct w2j_ctx {
	const struct w2j_record *rec;
	bool have_lsn;
	bool int_as_real;      /* parsed with JSON_DECODE_INT_AS_REAL */
	const char *schema;    /* of an I record, once read */
	const char *table;
	const char *event_id;  /* the outbox row's id, once read */
};

/* outbox.table "schema.*": every table of the schema is the outbox. For
 * a partitioned outbox whose partitions have a schema of their own:
 * wal2json names the partition in each record, never the parent. */
static bool w2j_any_table(const struct w2j_spec *spec)
{
	return strcmp(spec->table, "*") == 0;
}

/* Writes "<message> (LSN X/X, xid N)" into err, leaving out what the
 * record did not reveal before the failure. */
static void RELAY_PRINTF(4, 5)
w2j_error(char *err, size_t errlen, const struct w2j_ctx *c,
          const char *fmt, ...)
{
	va_list ap;
	int n;
	size_t used;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	n = vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	if (n < 0) {
		err[0] = '\0';
		return;
	}
	used = (size_t)n < errlen ? (size_t)n : errlen - 1;
	if (c == NULL || c->rec == NULL)
		return;
	if (c->table != NULL)
		used += (size_t)snprintf(err + used, errlen - used,
		                         " in %s.%s", c->schema ? c->schema : "?",
		                         c->table);
	if (used >= errlen)
		return;
	{
		/* "(event id ..., LSN X/X, xid N)": whatever is known. The id
		 * is row data, so it is cut short. */
		char tail[160];
		size_t t = 0;
		if (c->event_id != NULL)
			t += (size_t)snprintf(tail + t, sizeof(tail) - t,
			                      ", event id %.64s", c->event_id);
		if (c->have_lsn && t < sizeof(tail))
			t += (size_t)snprintf(tail + t, sizeof(tail) - t,
			                      ", LSN " LSN_FMT, LSN_ARGS(c->rec->lsn));
		if (c->rec->xid >= 0 && t < sizeof(tail))
			t += (size_t)snprintf(tail + t, sizeof(tail) - t, ", xid %lld",
			                      (long long)c->rec->xid);
		if (t > 0)
			snprintf(err + used, errlen - used, " (%s)", tail + 2);
	}
}

/* Reads an optional "X/X" member. Returns 1 when present, 0 when absent
 * or null, -1 when it is not an LSN. */
static int w2j_get_lsn(json_t *obj, const char *name, uint64_t *out)
{
	json_t *v = json_object_get(obj, name);

	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_string(v) ||
	    lsn_parse(json_string_value(v), json_string_length(v), out) != 0)
		return -1;
	return 1;
}

/* A JSON number that is a whole value in [lo, hi]; reals are accepted
 * only because the overflow retry in w2j_decode() turns every integer
 * of the record into one. */
static int w2j_get_whole(json_t *v, long long lo, long long hi,
                         long long *out)
{
	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);
		if (i < lo || i > hi)
			return -1;
		*out = (long long)i;
		return 0;
	}
	if (json_is_real(v)) {
		double d = json_real_value(v);
		if (!(d >= (double)lo && d <= (double)hi) || d != (double)(long long)d)
			return -1;
		*out = (long long)d;
		return 0;
	}
	return -1;
}

static int w2j_get_timestamp(json_t *obj, int64_t *out)
{
	json_t *v = json_object_get(obj, "timestamp");

	*out = 0;
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return -1;
	return w2j_parse_timestamp(json_string_value(v), out);
}

/* Fills an id/key/type/route slot from a column value: a string is
 * borrowed, an integer is printed into rec->num_[slot]. */
static int w2j_text_value(struct w2j_record *rec, int slot,
                          json_t *v, struct w2j_str *out, const char *col,
                          const struct w2j_ctx *c, char *err, size_t errlen)
{
	if (json_is_string(v)) {
		out->ptr = json_string_value(v);
		out->len = json_string_length(v);
		return 0;
	}
	if (json_is_integer(v)) {
		int n = snprintf(rec->num_[slot], sizeof(rec->num_[slot]),
		                 "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		out->ptr = rec->num_[slot];
		out->len = (size_t)n;
		return 0;
	}
	if (json_is_real(v) && c->int_as_real) {
		w2j_error(err, errlen, c,
		          "column \"%s\" is a number that cannot be printed "
		          "exactly: another column of the row holds a number "
		          "beyond 64 bits", col);
		return -1;
	}
	w2j_error(err, errlen, c,
	          "column \"%s\" must be a string or an integer, not %s", col,
	          json_is_real(v) ? "a real number" :
	          json_is_boolean(v) ? "a boolean" :
	          json_is_array(v) ? "an array" : "an object");
	return -1;
}

static bool w2j_is_json_type(json_t *type)
{
	const char *t = json_string_value(type);

	/* include-typmod never decorates these two: json has no typmod. */
	return t != NULL && (strcmp(t, "jsonb") == 0 || strcmp(t, "json") == 0);
}

/* Checks that a payload that is not json/jsonb is JSON. Both decode
 * paths call it, so they agree on what passes. jc_check() rather than
 * jansson: it builds no tree, and it takes numbers of any size (1e400,
 * which jansson refuses, is as valid in text as in jsonb). Returns 0, or
 * -1 with the offset and reason in jc. */
static int w2j_check_payload(const char *s, size_t len, struct jc_error *jc)
{
	return jc_check(s, len, NULL, NULL, jc);
}

/* ---------------------------------------------- numbers beyond a double */

/* jansson refuses a number that strtod() overflows (1e400, a 400-digit
 * integer), though it is valid JSON: wal2json prints a numeric column so,
 * and jsonb may hold one. w2j_load_wide() reads such a text all the same:
 * jc_check() says whether it is JSON, and jansson reads a copy in which
 * each of those numbers is "0.5" padded with spaces to the same length,
 * so that every other byte stays where it was (jansson's error positions
 * too). 0.5 is a real that is no whole number: wherever the decoder reads
 * a number (xid, an id or key column, the payload) it refuses it as it
 * would any real, so the stand-in never reaches an event. Values that are
 * published are cut from the original text (w2j_member_text()). */
struct w2j_wide {
	const char *orig;
	char *copy;
};

static void w2j_tame_number(const char *tok, size_t len, void *arg)
{
	struct w2j_wide *w = arg;
	size_t at = (size_t)(tok - w->orig);

	/* Never shorter than "2e308"; the length test only guards memset. */
	if (!jc_beyond_double(tok, len) || len < 3)
		return;
	memcpy(w->copy + at, "0.5", 3);
	memset(w->copy + at + 3, ' ', len - 3);
}

/* Parses s, which jansson refused with json_error_numeric_overflow, as
 * described above, with jansson's flags; when the copy still holds an
 * integer beyond 64 bits, again with JSON_DECODE_INT_AS_REAL, and then
 * *int_as_real is set. Returns the tree, or NULL with jc->reason set when
 * s is not JSON, or with jc->reason NULL and jerr filled when jansson
 * refuses the copy (a duplicate key, \u0000 without JSON_ALLOW_NUL). */
static json_t *w2j_load_wide(const char *s, size_t len, size_t flags,
                             bool *int_as_real, json_error_t *jerr,
                             struct jc_error *jc)
{
	struct w2j_wide w = { s, xmalloc(len ? len : 1) };
	json_t *root = NULL;

	jc->reason = NULL;
	memcpy(w.copy, s, len);
	if (jc_check(s, len, w2j_tame_number, &w, jc) == 0) {
		root = json_loadb(w.copy, len, flags, jerr);
		if (root == NULL && !(flags & JSON_DECODE_INT_AS_REAL) &&
		    json_error_code(jerr) == json_error_numeric_overflow) {
			root = json_loadb(w.copy, len, flags | JSON_DECODE_INT_AS_REAL,
			                  jerr);
			*int_as_real = true;
		}
	}
	free(w.copy);
	return root;
}

/* Line and column (in characters, as jansson counts them) of byte off. */
static void w2j_line_col(const char *s, size_t off, int *line, int *col)
{
	*line = 1;
	*col = 1;
	for (size_t i = 0; i < off; i++) {
		if (s[i] == '\n') {
			(*line)++;
			*col = 1;
		} else if (((unsigned char)s[i] & 0xc0) != 0x80) {
			(*col)++;
		}
	}
}

static int w2j_payload(json_t *col, json_t *v, struct w2j_str *out,
                       const char *name, const struct w2j_ctx *c, char *err,
                       size_t errlen)
{
	json_t *type = json_object_get(col, "type");
	struct jc_error jc;

	if (!json_is_string(v)) {
		w2j_error(err, errlen, c,
		          "column \"%s\" (type %s) is not a string but a JSON %s; "
		          "store the payload as json, jsonb or text", name,
		          json_is_string(type) ? json_string_value(type) : "unknown",
		          json_is_number(v) ? "number" :
		          json_is_boolean(v) ? "boolean" : "container");
		return -1;
	}
	out->ptr = json_string_value(v);
	out->len = json_string_length(v);
	/* PostgreSQL only stores valid json/jsonb, so parsing it again would
	 * cost time on every event and find nothing. */
	if (w2j_is_json_type(type))
		return 0;
	/* Any other type is free text: check it before it reaches consumers. */
	if (w2j_check_payload(out->ptr, out->len, &jc) != 0) {
		w2j_error(err, errlen, c,
		          "column \"%s\" (type %s): payload is not JSON: %s at "
		          "byte %zu", name,
		          json_is_string(type) ? json_string_value(type) : "unknown",
		          jc.reason, jc.offset);
		return -1;
	}
	return 0;
}

/* The I record of an outbox row: pull the five columns out of "columns". */
static int w2j_event(struct w2j_record *rec, json_t *root,
                     const struct w2j_spec *spec, struct w2j_ctx *c,
                     char *err, size_t errlen)
{
	const char *want[W2J_NCOLS] = { spec->col_id, spec->col_key,
		                            spec->col_type, spec->col_route,
		                            spec->col_payload };
	struct w2j_str *dst[W2J_COL_PAYLOAD] = { &rec->id, &rec->key,
		                                     &rec->type, &rec->route };
	json_t *found[W2J_NCOLS] = { NULL };
	json_t *cols = json_object_get(root, "columns");
	json_t *col;
	size_t i;
	int k;

	if (!json_is_array(cols)) {
		w2j_error(err, errlen, c, "I record without a \"columns\" array");
		return -1;
	}
	json_array_foreach(cols, i, col) {
		const char *name = json_string_value(json_object_get(col, "name"));
		if (name == NULL) {
			w2j_error(err, errlen, c, "column %zu has no \"name\"", i);
			return -1;
		}
		/* Exact names: the table's own spelling, case included. One
		 * column may serve two roles, so every slot is checked. */
		for (k = 0; k < W2J_NCOLS; k++)
			if (found[k] == NULL && strcmp(name, want[k]) == 0)
				found[k] = col;
	}
	for (k = 0; k < W2J_NCOLS; k++) {
		json_t *v;
		if (found[k] == NULL) {
			w2j_error(err, errlen, c, "column \"%s\" is missing", want[k]);
			return -1;
		}
		v = json_object_get(found[k], "value");
		if (v == NULL) {
			w2j_error(err, errlen, c, "column \"%s\" has no \"value\"",
			          want[k]);
			return -1;
		}
		if (json_is_null(v)) {
			if (k == W2J_COL_TYPE) /* may be NULL: no header then */
				continue;
			w2j_error(err, errlen, c, "column \"%s\" is NULL", want[k]);
			return -1;
		}
		if (k == W2J_COL_PAYLOAD) {
			if (w2j_payload(found[k], v, &rec->payload, want[k], c, err,
			                errlen) != 0)
				return -1;
		} else if (w2j_text_value(rec, k, v, dst[k], want[k], c, err,
		                          errlen) != 0) {
			return -1;
		}
		if (k == W2J_COL_ID)
			c->event_id = rec->id.ptr; /* later errors can name it */
	}
	return 0;
}

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
static int w2j_fast_bc(const char *line, size_t len, struct w2j_record *rec)
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
			/* w2j_parse_timestamp() wants a NUL-terminated string. */
			char ts[64];
			if ((size_t)vlen >= sizeof(ts))
				return 1;
			memcpy(ts, val, (size_t)vlen);
			ts[vlen] = '\0';
			if (w2j_parse_timestamp(ts, &rec->commit_ts_us) != 0)
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
	rec->kind = kind == 'B' ? W2J_BEGIN : W2J_COMMIT;
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
static size_t w2j_unescape(const struct w2j_span *v, char *out)
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
static int w2j_fast_event(struct w2j_record *rec, const struct w2j_span *ts,
                          const struct w2j_found *found)
{
	struct w2j_str *dst[W2J_NCOLS] = { &rec->id, &rec->key, &rec->type,
		                               &rec->route, &rec->payload };
	size_t need = 0;
	char tsbuf[64], *buf, *o;
	int k;

	for (k = 0; k < W2J_NCOLS; k++) {
		const struct w2j_span *v = &found[k].value;
		if (!found[k].seen)
			return 1;
		if (v->kind == 's')
			need += v->len + 1;
		else if (!(v->kind == 'i' && k != W2J_COL_PAYLOAD) &&
		         !(v->kind == 'n' && k == W2J_COL_TYPE))
			return 1;
	}
	/* Timestamps are short and plain; anything else is left to jansson. */
	if (ts->esc || ts->len >= sizeof(tsbuf))
		return 1;
	memcpy(tsbuf, ts->ptr, ts->len);
	tsbuf[ts->len] = '\0';
	if (w2j_parse_timestamp(tsbuf, &rec->commit_ts_us) != 0)
		return 1;

	buf = malloc(need);
	if (buf == NULL)
		return 1;
	o = buf;
	for (k = 0; k < W2J_NCOLS; k++) {
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
	if (!w2j_span_eq(&found[W2J_COL_PAYLOAD].type, "jsonb", 5) &&
	    !w2j_span_eq(&found[W2J_COL_PAYLOAD].type, "json", 4)) {
		struct jc_error jc;
		if (w2j_check_payload(rec->payload.ptr, rec->payload.len, &jc) !=
		    0) {
			free(buf);
			return 1;
		}
	}
	rec->kind = W2J_EVENT;
	rec->root_ = (void *)((uintptr_t)buf | W2J_ROOT_BUF);
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
                      const struct w2j_spec *spec, struct w2j_record *rec)
{
	const char *want[W2J_NCOLS] = { spec->col_id, spec->col_key,
		                            spec->col_type, spec->col_route,
		                            spec->col_payload };
	const char *p = line, *end = line + len;
	struct w2j_found found[W2J_NCOLS];
	struct w2j_span ts, lsn, schema, table;
	size_t wantlen[W2J_NCOLS];
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
	memset(found, 0, sizeof(found));
	for (k = 0; k < W2J_NCOLS; k++)
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
			for (k = 0; ours && k < W2J_NCOLS; k++) {
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
		rec->kind = W2J_SKIP;
		return 0;
	}
	return w2j_fast_event(rec, &ts, found);
}

/* -------------------------------------------------------------- decode */

/* Test hooks, deliberately not in w2j.h: tests/unit/check_w2j.c and
 * fuzz_w2j.c decode a line each way alone and compare. */
int w2j_decode_fast(const char *line, size_t len,
                    const struct w2j_spec *spec, struct w2j_record *rec);
int w2j_decode_slow(const char *line, size_t len,
                    const struct w2j_spec *spec, struct w2j_record *rec,
                    char *err, size_t errlen);

/* The scanners alone: 0 with rec filled, or 1 with rec cleared when the
 * line is not theirs to decode. */
int w2j_decode_fast(const char *line, size_t len,
                    const struct w2j_spec *spec, struct w2j_record *rec)
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

int w2j_decode(const char *line, size_t len, const struct w2j_spec *spec,
               struct w2j_record *rec, char *err, size_t errlen)
{
	if (w2j_decode_fast(line, len, spec, rec) == 0)
		return 0;
	return w2j_decode_slow(line, len, spec, rec, err, errlen);
}

/* jansson alone: the reference for every line, and the decoder of all
 * that the scanners leave. */
int w2j_decode_slow(const char *line, size_t len,
                    const struct w2j_spec *spec, struct w2j_record *rec,
                    char *err, size_t errlen)
{
	struct w2j_ctx c = { .rec = rec };
	struct jc_error jc = { 0, NULL };
	json_error_t jerr;
	json_t *root, *v;
	const char *action;
	long long xid = -1;
	bool xid_bad;
	int r;

	memset(rec, 0, sizeof(*rec));
	rec->xid = -1;

	root = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL && json_error_code(&jerr) == json_error_numeric_overflow) {
		/* A numeric column beyond 64 bits (wal2json prints it as a bare
		 * number) must not stop the relay on a record it skips anyway;
		 * read it again with every integer as a double. */
		root = json_loadb(line, len,
		                  JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL,
		                  &jerr);
		c.int_as_real = true;
	}
	if (root == NULL && json_error_code(&jerr) == json_error_numeric_overflow) {
		/* Still: a number beyond a double, which no column the relay
		 * reads can hold, and which must not stop it either. */
		c.int_as_real = false;
		root = w2j_load_wide(line, len, JSON_REJECT_DUPLICATES,
		                     &c.int_as_real, &jerr, &jc);
	}
	if (root == NULL && jc.reason != NULL) {
		int l, col;

		w2j_line_col(line, jc.offset, &l, &col);
		w2j_error(err, errlen, NULL,
		          "malformed JSON at line %d, column %d (byte %zu): %s", l,
		          col, jc.offset, jc.reason);
		return -1;
	}
	if (root == NULL) {
		w2j_error(err, errlen, NULL,
		          "malformed JSON at line %d, column %d (byte %d): %s",
		          jerr.line, jerr.column, jerr.position, jerr.text);
		return -1;
	}
	if (!json_is_object(root)) {
		w2j_error(err, errlen, NULL, "record is a JSON %s, not an object",
		          json_is_array(root) ? "array" : "scalar");
		goto fail;
	}

	/* lsn and xid first, so that later messages can name them; both
	 * are read before either is reported, so each names the other. */
	r = w2j_get_lsn(root, "lsn", &rec->lsn);
	c.have_lsn = r > 0;
	v = json_object_get(root, "xid");
	xid_bad = v != NULL && !json_is_null(v) &&
	          w2j_get_whole(v, 0, UINT32_MAX, &xid) != 0;
	if (v != NULL && !json_is_null(v) && !xid_bad)
		rec->xid = xid;
	if (r < 0) {
		w2j_error(err, errlen, &c, "\"lsn\" is not an LSN (X/X)");
		goto fail;
	}
	if (xid_bad) {
		w2j_error(err, errlen, &c, "\"xid\" is not a transaction id");
		goto fail;
	}

	v = json_object_get(root, "action");
	action = json_string_value(v);
	if (action == NULL || json_string_length(v) != 1) {
		w2j_error(err, errlen, &c,
		          v == NULL ? "record has no \"action\""
		                    : "\"action\" is not a one-letter string");
		goto fail;
	}

	switch (action[0]) {
	case 'B':
	case 'C':
		rec->kind = action[0] == 'B' ? W2J_BEGIN : W2J_COMMIT;
		r = w2j_get_lsn(root, "nextlsn", &rec->nextlsn);
		if (r < 0 || (r == 0 && rec->kind == W2J_COMMIT)) {
			/* The commit end is what the relay confirms: without it
			 * there is nothing safe to confirm, ever. */
			w2j_error(err, errlen, &c,
			          r < 0 ? "%c record: \"nextlsn\" is not an LSN (X/X)"
			                : "%c record without \"nextlsn\" (include-lsn=1 "
			                  "missing?)",
			          action[0]);
			goto fail;
		}
		if (w2j_get_timestamp(root, &rec->commit_ts_us) != 0) {
			w2j_error(err, errlen, &c, "%c record: bad \"timestamp\"",
			          action[0]);
			goto fail;
		}
		/* Nothing borrowed: drop the tree now, the cheap path. */
		json_decref(root);
		return 0;
	case 'I':
		c.schema = json_string_value(json_object_get(root, "schema"));
		c.table = json_string_value(json_object_get(root, "table"));
		if (c.table == NULL) {
			w2j_error(err, errlen, &c, "I record without \"table\"");
			goto fail;
		}
		/* No "schema" means include-schemas=0: then the table name
		 * alone cannot tell public.outbox from other.outbox, so such a
		 * stream is refused rather than guessed at. */
		if (c.schema == NULL) {
			w2j_error(err, errlen, &c,
			          "I record without \"schema\" (include-schemas=0?)");
			goto fail;
		}
		if (strcmp(c.schema, spec->schema) != 0 ||
		    (!w2j_any_table(spec) && strcmp(c.table, spec->table) != 0)) {
			rec->kind = W2J_SKIP;
			json_decref(root);
			return 0;
		}
		rec->kind = W2J_EVENT;
		if (w2j_get_timestamp(root, &rec->commit_ts_us) != 0) {
			w2j_error(err, errlen, &c, "bad \"timestamp\"");
			goto fail;
		}
		if (w2j_event(rec, root, spec, &c, err, errlen) != 0)
			goto fail;
		rec->root_ = root;
		return 0;
	case 'M':
		/* Logical decoding messages: the relay's heartbeats and
		 * outbox_emit()'s events (w2j_decode_emit() reads those). The
		 * strings stay in the tree, which the record now owns. */
		v = json_object_get(root, "prefix");
		if (!json_is_string(v)) {
			w2j_error(err, errlen, &c, "M record without \"prefix\"");
			goto fail;
		}
		rec->msg_prefix.ptr = json_string_value(v);
		rec->msg_prefix.len = json_string_length(v);
		v = json_object_get(root, "content");
		if (!json_is_string(v)) {
			w2j_error(err, errlen, &c, "M record without \"content\"");
			goto fail;
		}
		rec->msg_content.ptr = json_string_value(v);
		rec->msg_content.len = json_string_length(v);
		rec->transactional = json_is_true(json_object_get(root, "transactional"));
		rec->kind = W2J_MESSAGE;
		rec->root_ = root;
		return 0;
	default:
		/* U, D, T and whatever later versions add. */
		rec->kind = W2J_SKIP;
		json_decref(root);
		return 0;
	}

fail:
	json_decref(root);
	memset(rec, 0, sizeof(*rec));
	rec->xid = -1;
	return -1;
}

void w2j_record_clear(struct w2j_record *rec)
{
	uintptr_t root = (uintptr_t)rec->root_;

	if (root & W2J_ROOT_BUF)
		free((void *)(root & ~W2J_ROOT_BUF));
	else if (root != 0)
		json_decref((json_t *)rec->root_);
	memset(rec, 0, sizeof(*rec));
	rec->xid = -1;
}

void w2j_record_adopt(struct w2j_record *rec, void *buf)
{
	assert(rec->root_ == NULL && ((uintptr_t)buf & W2J_ROOT_BUF) == 0);
	rec->root_ = (void *)((uintptr_t)buf | W2J_ROOT_BUF);
}

/* ------------------------------------------------------ outbox_emit() */

static bool w2j_ws(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

/* The end of the JSON value at p, in text jansson has already accepted:
 * the ',' or '}' that follows it in its object (trailing white space
 * not yet stripped). */
static const char *w2j_value_end(const char *p, const char *end)
{
	int depth = 0;

	for (; p < end; p++) {
		switch (*p) {
		case '"':
			for (p++; p < end && *p != '"'; p++)
				if (*p == '\\')
					p++;
			break;
		case '{':
		case '[':
			depth++;
			break;
		case '}':
		case ']':
			if (depth == 0)
				return p;
			depth--;
			break;
		case ',':
			if (depth == 0)
				return p;
			break;
		}
	}
	return p;
}

/* Finds the text of the top-level member name of a JSON object that
 * jansson has already accepted (without duplicate keys; or, with a number
 * beyond a double, jc_check() and jansson its stand-in copy, which has the
 * same structure byte for byte), so the syntax can be trusted. jansson would print a value back with its own spacing
 * and every number as a double (19.90 as 19.9, long integers rounded);
 * the member's own text is what PostgreSQL printed for the jsonb, byte
 * for byte. Returns false when there is no such member. */
static bool w2j_member_text(const char *s, size_t len, const char *name,
                            struct w2j_str *out)
{
	const char *p = s, *end = s + len;
	size_t nlen = strlen(name);

	while (p < end && w2j_ws(*p))
		p++;
	if (p >= end || *p++ != '{')
		return false;
	for (;;) {
		const char *k, *v, *ve;
		size_t klen;
		bool match;

		while (p < end && w2j_ws(*p))
			p++;
		if (p >= end || *p != '"')
			return false; /* the '}' of an empty object */
		k = ++p;
		while (p < end && *p != '"')
			p += *p == '\\' ? 2 : 1;
		klen = (size_t)(p - k);
		p++;
		while (p < end && (w2j_ws(*p) || *p == ':'))
			p++;
		v = p;
		p = ve = w2j_value_end(p, end);
		while (ve > v && w2j_ws(ve[-1]))
			ve--;
		if (memchr(k, '\\', klen) == NULL) {
			match = klen == nlen && memcmp(k, name, nlen) == 0;
		} else {
			/* An escaped key ("pay\u006coad"): jansson reads it. */
			json_t *kj = json_loadb(k - 1, klen + 2, JSON_DECODE_ANY, NULL);
			match = json_is_string(kj) && json_string_length(kj) == nlen &&
			        memcmp(json_string_value(kj), name, nlen) == 0;
			json_decref(kj);
		}
		if (match) {
			out->ptr = v;
			out->len = (size_t)(ve - v);
			return true;
		}
		if (p >= end || *p++ != ',')
			return false;
	}
}

int w2j_decode_emit(const char *content, size_t len, struct w2j_record *rec,
                    char *err, size_t errlen)
{
	/* In enum w2j_col order; the default outbox column names. */
	static const char *const names[W2J_NCOLS] = {
		"id", "aggregate_id", "event_type", "aggregate_type", "payload"
	};
	struct w2j_ctx c = { .rec = rec, .have_lsn = rec->lsn != 0 };
	struct w2j_str val[W2J_NCOLS];
	struct w2j_record ev;
	struct w2j_str *dst[W2J_NCOLS] = { &ev.id, &ev.key, &ev.type, &ev.route,
		                               &ev.payload };
	const size_t flags = JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL |
	                     JSON_DECODE_ANY;
	struct jc_error jc = { 0, NULL };
	json_error_t jerr;
	json_t *root;
	size_t need = 0;
	char *buf, *o;
	int k;

	memset(val, 0, sizeof(val));
	/* INT_AS_REAL: a long integer in the payload is valid JSON; the
	 * payload's value is never taken from the tree anyway, so a number
	 * beyond a double may stand in for it too (w2j_load_wide()). */
	root = json_loadb(content, len, flags, &jerr);
	if (root == NULL && json_error_code(&jerr) == json_error_numeric_overflow) {
		bool int_as_real = true; /* already, from flags */
		root = w2j_load_wide(content, len, flags, &int_as_real, &jerr, &jc);
	}
	if (root == NULL) {
		if (jc.reason != NULL)
			w2j_error(err, errlen, &c, "outbox message content is not "
			          "JSON: %s at byte %zu", jc.reason, jc.offset);
		else
			w2j_error(err, errlen, &c, "outbox message content is not "
			          "JSON: %s at byte %d", jerr.text, jerr.position);
		return -1;
	}
	if (!json_is_object(root)) {
		w2j_error(err, errlen, &c, "outbox message content is a JSON %s, "
		          "not an object", json_is_array(root) ? "array" : "scalar");
		goto fail;
	}
	for (k = 0; k < W2J_COL_PAYLOAD; k++) {
		json_t *v = json_object_get(root, names[k]);
		if (k == W2J_COL_TYPE && (v == NULL || json_is_null(v)))
			continue; /* no event_type header */
		if (!json_is_string(v)) {
			w2j_error(err, errlen, &c, v == NULL
			          ? "outbox message: member \"%s\" is missing"
			          : "outbox message: member \"%s\" is not a string",
			          names[k]);
			goto fail;
		}
		val[k].ptr = json_string_value(v);
		val[k].len = json_string_length(v);
		need += val[k].len + 1;
		if (k == W2J_COL_ID)
			c.event_id = val[k].ptr; /* later errors can name it */
	}
	if (json_object_get(root, "payload") == NULL ||
	    !w2j_member_text(content, len, "payload", &val[W2J_COL_PAYLOAD])) {
		w2j_error(err, errlen, &c,
		          "outbox message: member \"payload\" is missing");
		goto fail;
	}
	need += val[W2J_COL_PAYLOAD].len + 1;

	/* One block for every string, as the I scanner does; then the
	 * message (which content may live in) is released. */
	buf = malloc(need);
	if (buf == NULL) {
		w2j_error(err, errlen, &c, "outbox message: out of memory");
		goto fail;
	}
	memset(&ev, 0, sizeof(ev));
	ev.kind = W2J_EVENT;
	ev.lsn = rec->lsn;
	ev.nextlsn = rec->nextlsn;
	ev.xid = rec->xid;
	ev.commit_ts_us = rec->commit_ts_us;
	o = buf;
	for (k = 0; k < W2J_NCOLS; k++) {
		if (val[k].ptr == NULL)
			continue;
		memcpy(o, val[k].ptr, val[k].len);
		o[val[k].len] = '\0';
		dst[k]->ptr = o;
		dst[k]->len = val[k].len;
		o += val[k].len + 1;
	}
	ev.root_ = (void *)((uintptr_t)buf | W2J_ROOT_BUF);
	json_decref(root);
	w2j_record_clear(rec);
	*rec = ev;
	return 0;

fail:
	json_decref(root);
	return -1;
}

/* ------------------------------------------------------------ timestamps */

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar
 * (Howard Hinnant's days_from_civil). Used instead of timegm() so the
 * result never depends on the process time zone or its database. */
static int64_t w2j_days_from_civil(int64_t y, unsigned m, unsigned d)
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

static bool w2j_leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* Reads exactly n digits at *p into *out and advances *p. */
static bool w2j_digits(const char **p, int n, int *out)
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

int w2j_parse_timestamp(const char *s, int64_t *out_us)
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
	if (!w2j_digits(&p, 4, &y) || *p++ != '-' || !w2j_digits(&p, 2, &mo) ||
	    *p++ != '-' || !w2j_digits(&p, 2, &d) || *p++ != ' ' ||
	    !w2j_digits(&p, 2, &h) || *p++ != ':' || !w2j_digits(&p, 2, &mi) ||
	    *p++ != ':' || !w2j_digits(&p, 2, &sec))
		return -1;
	if (mo < 1 || mo > 12 || d < 1 ||
	    d > mdays[mo - 1] + (mo == 2 && w2j_leap(y)) || h > 23 || mi > 59 ||
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
	if (!w2j_digits(&p, 2, &oh))
		return -1;
	if (*p == ':') {
		p++;
		if (!w2j_digits(&p, 2, &om))
			return -1;
		if (*p == ':') {
			p++;
			if (!w2j_digits(&p, 2, &os))
				return -1;
		}
	}
	/* PostgreSQL limits UTC offsets to 15:59:59. */
	if (*p != '\0' || oh > 15 || om > 59 || os > 59)
		return -1;

	t = w2j_days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 +
	    h * 3600 + mi * 60 + sec;
	t -= sign * (oh * 3600 + om * 60 + os);
	*out_us = t * 1000000 + frac;
	return 0;
}

/* ------------------------------------------------------------ add-tables */

int w2j_add_tables_value(const char *schema, const char *table, char *out,
                         size_t outlen)
{
	const char *parts[2] = { schema, table };
	size_t n = 0;

	for (int i = 0; i < 2; i++) {
		if (i == 1) {
			if (n + 1 >= outlen)
				return -1;
			out[n++] = '.';
		}
		for (const char *p = parts[i]; *p != '\0'; p++) {
			/* wal2json splits the list at commas and whitespace and
			 * the name at the first period; '*' alone means "all";
			 * backslash escapes any character, itself included. The
			 * double quote needs no escape, but one is harmless and
			 * keeps the rule simple to state. */
			bool esc = strchr(" \t\n\r\f\v'\",.*\\", *p) != NULL;
			if (n + (esc ? 2 : 1) >= outlen)
				return -1;
			if (esc)
				out[n++] = '\\';
			out[n++] = *p;
		}
	}
	out[n] = '\0';
	return (int)n;
}
