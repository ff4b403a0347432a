/* SPDX-License-Identifier: Apache-2.0 */
/* check_json_check.c -- the RFC 8259 validator: tables, then jansson.
 *
 * Hand-written documents that must pass or fail (with the offset and
 * reason), numbers beyond a double against strtod(), then a differential
 * test: over the fixtures, the strings they hold and random mutations of
 * both, jc_check() must accept exactly what jansson accepts once the
 * numbers beyond a double (which only jansson refuses) stand in for
 * something it can hold. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <jansson.h>

#include "decode/json_check.h"
#include "unit_scale.h"

#ifndef FIXTURE_DIR
#define FIXTURE_DIR "tests/fixtures"
#endif

/* jc_check() on an exact-size copy, so that reading past the end shows
 * under valgrind and ASan. */
static int check_len(const char *s, size_t len, struct jc_error *err)
{
	char *copy = malloc(len ? len : 1);
	int rc;

	ck_assert_ptr_nonnull(copy);
	memcpy(copy, s, len);
	rc = jc_check(copy, len, NULL, NULL, err);
	free(copy);
	return rc;
}

START_TEST(test_valid_documents)
{
	static const char *const good[] = {
		/* every kind of value, at the top level too (RFC 8259 2) */
		"{}", "[]", "0", "-0", "1", "-1", "0.5", "-0.0", "1e5", "1E+5",
		"1e-5", "1.5e-300", "12345678901234567890123456789012345678901234",
		"1e400", "-1E+400", "1.7976931348623159e308", "9e99999999999999999999",
		"1e-99999", "0e99999", "\"\"", "\"a\"", "true", "false", "null",
		/* white space of the four kinds, around and between */
		" \t\r\n{ \"a\" : [ 1 , 2 ] }\n\r\t ", "[ ]", "{ }", " 1 ",
		/* escapes */
		"\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t\"", "\"\\u0041\\u00e9\\uFFFF\"",
		"\"\\u0000\"", "\"\\ud83d\\ude00\"", "\"\\uD800\\uDC00\\uDBFF\\uDFFF\"",
		"\"\\ud7ff\\ue000\"",
		/* UTF-8 of every length; DEL is no control character */
		"\"\xc2\x80\xdf\xbf\"", "\"\xe0\xa0\x80\xef\xbf\xbf\xed\x9f\xbf\"",
		"\"\xee\x80\x80\"", "\"\xf0\x90\x80\x80\xf4\x8f\xbf\xbf\"", "\"\x7f\"",
		/* duplicate names are JSON (RFC 8259 4: SHOULD be unique) */
		"{\"a\":1,\"a\":2}",
		/* nesting and mixed content */
		"[[[]],[{}],{\"a\":{\"b\":[null,true,false,\"x\",-1.5e3]}}]",
		"{\"\":\"\",\"\\u0000\":[]}",
	};

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct jc_error err = { 0, NULL };

		ck_assert_msg(check_len(good[i], strlen(good[i]), &err) == 0,
		              "refused %s: %s at %zu", good[i], err.reason,
		              err.offset);
	}
}
END_TEST

START_TEST(test_invalid_documents)
{
	static const struct {
		const char *doc;
		size_t offset;
		const char *reason;
	} bad[] = {
		{ "", 0, "unexpected end of input" },
		{ "   ", 3, "unexpected end of input" },
		{ "{\"a\":01}", 5, "invalid number" },
		{ "-01", 0, "invalid number" },
		{ "[1,]", 3, "value expected" },
		{ "[,1]", 1, "value expected" },
		{ "{\"a\":1,}", 7, "member name expected" },
		{ "{,}", 1, "member name expected" },
		{ "{1:2}", 1, "member name expected" },
		{ "{\"a\" 1}", 5, "':' expected" },
		{ "{\"a\"", 4, "unexpected end of input" },
		{ "[1 2]", 3, "',' or ']' expected" },
		{ "{\"a\":1 \"b\":2}", 7, "',' or '}' expected" },
		{ "[1}", 2, "',' or ']' expected" },
		{ "{\"a\":1]", 6, "',' or '}' expected" },
		{ "[", 1, "unexpected end of input" },
		{ "[1", 2, "unexpected end of input" },
		{ "{} x", 3, "end of input expected" },
		{ "{}}", 2, "end of input expected" },
		{ "1 2", 2, "end of input expected" },
		{ "1e400 1e400", 6, "end of input expected" },
		{ "\"a\x01\"", 2, "control character in a string" },
		{ "\"a\tb\"", 2, "control character in a string" },
		{ "\"\n\"", 1, "control character in a string" },
		{ "\"abc", 4, "unterminated string" },
		{ "\"abc\\", 5, "unterminated string" },
		{ "\"\\x\"", 1, "invalid escape" },
		{ "\"\\'\"", 1, "invalid escape" },
		{ "\"\\U0041\"", 1, "invalid escape" },
		{ "\"\\u12\"", 1, "invalid \\u escape" },
		{ "\"\\u12G4\"", 1, "invalid \\u escape" },
		{ "\"ab\\ud800\"", 3, "unpaired surrogate" },
		{ "\"\\udc00\"", 1, "unpaired surrogate" },
		{ "\"\\ud800\\u0041\"", 1, "unpaired surrogate" },
		{ "\"\\ud800\\ud800\"", 1, "unpaired surrogate" },
		{ "\"\\ud800\\n\"", 1, "unpaired surrogate" },
		{ "\"\\udc00\\ud800\"", 1, "unpaired surrogate" },
		{ "\"\xff\"", 1, "invalid UTF-8" },
		{ "\"\x80\"", 1, "invalid UTF-8" },
		{ "\"\xc0\x80\"", 1, "invalid UTF-8" },
		{ "\"\xc1\xbf\"", 1, "invalid UTF-8" },
		{ "\"\xe0\x9f\xbf\"", 1, "invalid UTF-8" },
		{ "\"\xed\xa0\x80\"", 1, "invalid UTF-8" },
		{ "\"\xf0\x8f\xbf\xbf\"", 1, "invalid UTF-8" },
		{ "\"\xf4\x90\x80\x80\"", 1, "invalid UTF-8" },
		{ "\"\xf5\x80\x80\x80\"", 1, "invalid UTF-8" },
		{ "\"a\xe2\x82\"", 2, "invalid UTF-8" },
		{ "\"\xe2\x82x\"", 1, "invalid UTF-8" },
		{ "\xef\xbb\xbf{}", 0, "value expected" },
		{ "NaN", 0, "invalid literal" },
		{ "Infinity", 0, "invalid literal" },
		{ "-Infinity", 0, "invalid number" },
		{ "[nan]", 1, "invalid literal" },
		{ "True", 0, "invalid literal" },
		{ "nul", 0, "invalid literal" },
		{ "nulls", 0, "invalid literal" },
		{ "true1", 0, "invalid literal" },
		{ "'a'", 0, "value expected" },
		{ "+1", 0, "value expected" },
		{ ".5", 0, "value expected" },
		{ "-", 0, "invalid number" },
		{ "- 1", 0, "invalid number" },
		{ "1.", 0, "invalid number" },
		{ "1.e5", 0, "invalid number" },
		{ "1e", 0, "invalid number" },
		{ "1e+", 0, "invalid number" },
		{ "[1E-]", 1, "invalid number" },
		{ "1.5.2", 0, "invalid number" },
		{ "0x10", 0, "invalid number" },
		{ "1-2", 0, "invalid number" },
		{ "[1e400.5]", 1, "invalid number" },
		{ "\f1", 0, "value expected" },
		{ "\v1", 0, "value expected" },
		{ "]", 0, "value expected" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct jc_error err = { 99, NULL };
		size_t len = strlen(bad[i].doc);

		ck_assert_msg(check_len(bad[i].doc, len, &err) == -1, "accepted %s",
		              bad[i].doc);
		ck_assert_msg(err.offset == bad[i].offset &&
		                      strstr(err.reason, bad[i].reason) != NULL,
		              "%s: \"%s\" at %zu, want \"%s\" at %zu", bad[i].doc,
		              err.reason, err.offset, bad[i].reason, bad[i].offset);
	}
	/* NULL err is allowed. */
	ck_assert_int_eq(jc_check("[", 1, NULL, NULL, NULL), -1);
}
END_TEST

START_TEST(test_nul_bytes)
{
	static const char in_str[] = "\"a\0b\"";
	static const char after[] = "[1\0]";
	static const char trail[] = "{}\0";
	struct jc_error err;

	/* The length ends the input; a NUL is a byte like any other, where
	 * jansson drops one right after a number or literal. */
	ck_assert_int_eq(check_len(in_str, sizeof(in_str) - 1, &err), -1);
	ck_assert_uint_eq(err.offset, 2);
	ck_assert_int_eq(check_len(after, sizeof(after) - 1, &err), -1);
	ck_assert_uint_eq(err.offset, 2);
	ck_assert_str_eq(err.reason, "',' or ']' expected");
	ck_assert_int_eq(check_len(trail, sizeof(trail) - 1, &err), -1);
	ck_assert_str_eq(err.reason, "end of input expected");
	ck_assert_int_eq(check_len(trail, 2, &err), 0);
}
END_TEST

START_TEST(test_depth_limit)
{
	char *doc = malloc(5 * (JC_MAX_DEPTH + 2) + 8);
	struct jc_error err;
	json_error_t jerr;
	json_t *root;

	ck_assert_ptr_nonnull(doc);
	/* d containers, alternately arrays and objects, around a 0 or with
	 * the innermost one empty: jansson's limit, exactly. */
	for (size_t d = JC_MAX_DEPTH - 2; d <= JC_MAX_DEPTH + 1; d++) {
		for (int empty = 0; empty < 2; empty++) {
			size_t len = 0;
			int rc;

			for (size_t i = 0; i < d; i++) {
				if (i % 2 == 0) {
					doc[len++] = '[';
				} else if (empty && i == d - 1) {
					doc[len++] = '{';
				} else {
					memcpy(doc + len, "{\"\":", 4);
					len += 4;
				}
			}
			if (!empty)
				doc[len++] = '0';
			for (size_t i = d; i-- > 0;)
				doc[len++] = i % 2 == 0 ? ']' : '}';
			rc = check_len(doc, len, &err);
			root = json_loadb(doc, len, JSON_DECODE_ANY, &jerr);
			ck_assert_msg((rc == 0) == (root != NULL),
			              "depth %zu, empty %d: jc %d, jansson %s", d, empty,
			              rc, root ? "accepts" : jerr.text);
			ck_assert_int_eq(rc == 0, d + !empty <= JC_MAX_DEPTH);
			if (rc != 0)
				ck_assert_str_eq(err.reason,
				                 "nested deeper than 2048 levels");
			json_decref(root);
		}
	}
	free(doc);
}
END_TEST

/* The numbers of a document, as the callback sees them. */
struct numbers {
	char text[512];
	size_t n;
};

static void collect(const char *tok, size_t len, void *arg)
{
	struct numbers *nums = arg;
	size_t used = strlen(nums->text);

	snprintf(nums->text + used, sizeof(nums->text) - used, "%s%.*s",
	         used ? "|" : "", (int)len, tok);
	nums->n++;
}

START_TEST(test_number_callback)
{
	struct numbers nums = { "", 0 };
	struct jc_error err;
	static const char doc[] = " [1, -0.5e+3, {\"2\": 1e400, \"s\": \"3 4\"}, "
	                          "[0]]";

	ck_assert_int_eq(jc_check(doc, strlen(doc), collect, &nums, &err), 0);
	ck_assert_str_eq(nums.text, "1|-0.5e+3|1e400|0");
	ck_assert_uint_eq(nums.n, 4);
	/* Numbers before an error are reported; the bad one is not. */
	memset(&nums, 0, sizeof(nums));
	ck_assert_int_eq(jc_check("[7, 8, 09]", 10, collect, &nums, &err), -1);
	ck_assert_str_eq(nums.text, "7|8");
	ck_assert_uint_eq(err.offset, 7);
}
END_TEST

/* ------------------------------------------------ numbers beyond double */

/* strtod()'s verdict (C locale: the tests never call setlocale()). */
static bool strtod_overflows(const char *tok, size_t len)
{
	char *buf = malloc(len + 1);
	double d;
	bool over;

	ck_assert_ptr_nonnull(buf);
	memcpy(buf, tok, len);
	buf[len] = '\0';
	errno = 0;
	d = strtod(buf, NULL);
	over = errno == ERANGE && isinf(d);
	free(buf);
	return over;
}

static uint64_t jc_rand(uint64_t *s)
{
	uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

START_TEST(test_beyond_double_table)
{
	static const struct {
		const char *tok;
		bool beyond;
	} cases[] = {
		{ "0", false }, { "-0", false }, { "0e999999", false },
		{ "0.000e400", false }, { "1e308", false }, { "1e309", true },
		{ "-1e309", true }, { "1e400", true }, { "-1E+400", true },
		{ "2e308", true }, { "1.7976931348623157e308", false },
		{ "1.7976931348623158e308", false }, /* rounds to DBL_MAX */
		{ "1.797693134862315807e308", false },
		{ "1.797693134862315808e308", true },
		{ "1.7976931348623159e308", true },
		{ "0.1797693134862315807937289714053034150799341327100378269361737"
		  "789804449682927647509466490179775872070963302864166928879109465"
		  "555478519404026306574886715058206819089020007083836762738548458"
		  "177115317644757302700698555713669596228429148198608349364752927"
		  "190741684443655107043427115596995080930428801779041744977919e309",
		  false },
		{ "0.1797693134862315807937289714053034150799341327100378269361737"
		  "789804449682927647509466490179775872070963302864166928879109465"
		  "555478519404026306574886715058206819089020007083836762738548458"
		  "177115317644757302700698555713669596228429148198608349364752927"
		  "190741684443655107043427115596995080930428801779041744977920e309",
		  true },
		{ "0.0000000001e318", false }, { "0.0000000001e319", true },
		{ "100e306", false }, { "1000e306", true }, { "1e-400", false },
		{ "9e99999999999999999999999", true },
		{ "9e-99999999999999999999999", false },
		{ "123456789e300", false }, { "223456789e300", true },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len = strlen(cases[i].tok);
		ck_assert_msg(jc_beyond_double(cases[i].tok, len) == cases[i].beyond,
		              "%s", cases[i].tok);
		ck_assert_msg(strtod_overflows(cases[i].tok, len) == cases[i].beyond,
		              "strtod: %s", cases[i].tok);
	}
}
END_TEST

/* Property: agrees with strtod() on random numbers around the limit and
 * anywhere, in every notation JSON has. */
START_TEST(test_beyond_double_against_strtod)
{
	static const char lim[] = "17976931348623158079372897140530341507993413";
	uint64_t seed = 20261201;
	char tok[400];
	size_t beyond = 0;

	for (long iter = 0; iter < unit_rounds(200000); iter++) {
		uint64_t r = jc_rand(&seed);
		size_t n = 0, ndig = 1 + (size_t)(r % 40), point;
		int exp10;

		if (r >> 8 & 1)
			tok[n++] = '-';
		/* Near the limit: its leading digits, one digit moved. */
		if ((r >> 9) % 3 != 0) {
			size_t keep = 1 + (size_t)((r >> 12) % (sizeof(lim) - 2));
			memcpy(tok + n, lim, keep);
			if ((r >> 20) & 1)
				tok[n + keep - 1] = (char)('0' + (r >> 24) % 10);
			if (tok[n] == '0')
				tok[n] = '1';
			ndig = keep;
			n += keep;
		} else {
			tok[n++] = (char)('1' + (r >> 12) % 9);
			for (size_t i = 1; i < ndig; i++)
				tok[n++] = (char)('0' + (jc_rand(&seed) % 10));
		}
		/* A point somewhere, or none; then an exponent that puts the
		 * value close to 10^308. */
		point = (size_t)((r >> 28) % (ndig + 1));
		if (point > 0 && point < ndig && ((r >> 34) & 1)) {
			memmove(tok + n - ndig + point + 1, tok + n - ndig + point,
			        ndig - point);
			tok[n - ndig + point] = '.';
			n++;
		} else {
			point = ndig;
		}
		exp10 = 309 - (int)point + (int)((r >> 36) % 5) - 2;
		if ((r >> 40) % 7 == 0)
			exp10 = (int)((r >> 44) % 700) - 350;
		if (exp10 != 0 || ((r >> 52) & 1))
			n += (size_t)snprintf(tok + n, sizeof(tok) - n, "%s%s%d",
			                      (r >> 53) & 1 ? "e" : "E",
			                      exp10 >= 0 && ((r >> 54) & 1) ? "+" : "",
			                      exp10);
		ck_assert_int_eq(jc_check(tok, n, NULL, NULL, NULL), 0);
		ck_assert_msg(jc_beyond_double(tok, n) == strtod_overflows(tok, n),
		              "%.*s", (int)n, tok);
		beyond += jc_beyond_double(tok, n);
	}
	/* Both answers were common. */
	ck_assert_uint_gt(beyond, unit_rounds(20000));
	ck_assert_uint_lt(beyond, unit_rounds(180000));
}
END_TEST

/* ------------------------------------------------- against jansson */

/* jc_check()'s number callback: each number beyond a double becomes
 * "0" plus spaces in a copy, which jansson can then read. */
struct tamed {
	const char *orig;
	char *copy;
	size_t replaced;
};

static void tame(const char *tok, size_t len, void *arg)
{
	struct tamed *t = arg;

	if (!jc_beyond_double(tok, len))
		return;
	memset(t->copy + (tok - t->orig), ' ', len);
	t->copy[tok - t->orig] = '0';
	t->replaced++;
}

struct diff_stats {
	size_t inputs, valid, replaced, nul_skipped, nul_in_name;
};

/* Same verdict as jansson (the decoder's old payload check, flags and
 * all) on s, with the numbers beyond a double tamed for jansson; when
 * both refuse, jc_check() stops no later than jansson does. Two known
 * differences are counted instead: raw NUL bytes (jansson drops one
 * after a number or literal) and \u0000 in a member name (valid JSON,
 * which jansson cannot store). */
static void agree_with_jansson(const char *s, size_t len,
                               struct diff_stats *st)
{
	struct tamed t = { NULL, NULL, 0 };
	struct jc_error err = { 0, NULL };
	json_error_t jerr;
	json_t *root;
	int rc;

	if (memchr(s, '\0', len) != NULL) {
		/* jansson drops a NUL after a number or literal. */
		st->nul_skipped++;
		return;
	}
	t.copy = malloc(len ? len : 1);
	ck_assert_ptr_nonnull(t.copy);
	memcpy(t.copy, s, len);
	/* The original again, at exact size, for ASan and valgrind. */
	t.orig = malloc(len ? len : 1);
	ck_assert_ptr_nonnull(t.orig);
	memcpy((char *)t.orig, s, len);
	rc = jc_check(t.orig, len, tame, &t, &err);
	root = json_loadb(t.copy, len,
	                  JSON_DECODE_ANY | JSON_ALLOW_NUL |
	                          JSON_DECODE_INT_AS_REAL,
	                  &jerr);
	if (root == NULL &&
	    json_error_code(&jerr) == json_error_null_byte_in_key) {
		st->nul_in_name++;
		goto done;
	}
	ck_assert_msg((rc == 0) == (root != NULL),
	              "jc_check %d (%s at %zu), jansson %s (%s): %.*s", rc,
	              rc ? err.reason : "-", err.offset,
	              root ? "accepts" : "refuses", root ? "-" : jerr.text,
	              (int)len, s);
	if (rc != 0)
		ck_assert_msg(err.offset <= (size_t)jerr.position,
		              "jc_check stops at %zu (%s), jansson at %d (%s): %.*s",
		              err.offset, err.reason, jerr.position, jerr.text,
		              (int)len, s);
	st->inputs++;
	st->valid += rc == 0;
	st->replaced += t.replaced > 0;
done:
	json_decref(root);
	free(t.copy);
	free((char *)t.orig);
}

/* Lines of the fixtures, and every string they hold (payload texts,
 * message contents, timestamps...) as a document of its own. */
struct corpus {
	char **doc;
	size_t *len;
	size_t n, cap;
};

static void corpus_add(struct corpus *c, const char *s, size_t len)
{
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 256;
		c->doc = realloc(c->doc, c->cap * sizeof(*c->doc));
		c->len = realloc(c->len, c->cap * sizeof(*c->len));
		ck_assert(c->doc != NULL && c->len != NULL);
	}
	c->doc[c->n] = malloc(len ? len : 1);
	ck_assert_ptr_nonnull(c->doc[c->n]);
	memcpy(c->doc[c->n], s, len);
	c->len[c->n++] = len;
}

static void corpus_strings(struct corpus *c, json_t *v)
{
	const char *key;
	json_t *m;
	size_t i;

	if (json_is_string(v)) {
		corpus_add(c, json_string_value(v), json_string_length(v));
	} else if (json_is_object(v)) {
		json_object_foreach(v, key, m)
			corpus_strings(c, m);
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, m)
			corpus_strings(c, m);
	}
}

static void corpus_load(struct corpus *c)
{
	static const char *const names[] = { "outbox.jsonl", "all_changes.jsonl",
		                                 "prisma.jsonl", "odd_tables.jsonl" };
	/* Hand-made seeds for what the fixtures lack. */
	static const char *const seeds[] = {
		"{\"a\":1e400,\"b\":[-1E+400,2e308,0.5],\"c\":\"1e400\"}",
		"[\"\\ud83d\\ude00\\u0000\\u00e9\", 123456789012345678901234567890]",
		"  {\"k\" : [true , false , null] }\r\n",
	};
	char path[512], *line = NULL;
	size_t cap = 0;
	ssize_t got;

	memset(c, 0, sizeof(*c));
	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
		FILE *fp;

		snprintf(path, sizeof(path), "%s/%s", FIXTURE_DIR, names[k]);
		fp = fopen(path, "r");
		ck_assert_msg(fp != NULL, "cannot open %s", path);
		while ((got = getline(&line, &cap, fp)) > 0) {
			json_t *root;

			if (line[got - 1] == '\n')
				got--;
			corpus_add(c, line, (size_t)got);
			root = json_loadb(line, (size_t)got, JSON_DECODE_INT_AS_REAL,
			                  NULL);
			ck_assert_ptr_nonnull(root);
			corpus_strings(c, root);
			json_decref(root);
		}
		fclose(fp);
	}
	free(line);
	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++)
		corpus_add(c, seeds[i], strlen(seeds[i]));
}

static void corpus_free(struct corpus *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->doc[i]);
	free(c->doc);
	free(c->len);
	memset(c, 0, sizeof(*c));
}

START_TEST(test_jansson_fixtures)
{
	struct diff_stats st = { 0 };
	struct corpus c;

	corpus_load(&c);
	for (size_t i = 0; i < c.n; i++)
		agree_with_jansson(c.doc[i], c.len[i], &st);
	ck_assert_uint_gt(st.inputs, 1000);
	ck_assert_uint_gt(st.valid, 300);   /* lines and payload texts */
	ck_assert_uint_gt(st.inputs - st.valid, 300); /* names, timestamps */
	ck_assert_uint_ge(st.replaced, 1);
	corpus_free(&c);
}
END_TEST

/* One random edit of buf (length *len, room for cap). */
static void jc_mutate(char *buf, size_t *len, size_t cap, uint64_t *seed)
{
	static const char pick[] = "\"\\{}[]:,0123456789-+.eEutnrfalsNI \t\n\r/"
	                           "\x7f\x80\xbf\xc3\xed\xf0\xf4\xff\x01\x1f";
	static const char *const chunks[] = {
		"1e400", "-1E+400", "2e308", "1e308", "0", "-0.0", "01", "1.",
		"\\u0000", "\\ud800", "\\udc00", "\\ud83d\\ude00", "\"", "\\", "[",
		"]", "{", "}", "{\"a\":", ",", "null", "NaN", "\xef\xbb\xbf",
		"\xc3\xbc", "\xed\xa0\x80", "\xf0\x9f\x98\x80", "\\u00e9", "\"\":",
	};
	uint64_t r = jc_rand(seed);
	size_t at = *len ? (size_t)(jc_rand(seed) % (*len + 1)) : 0;
	char ch = (r >> 8) % 3 ? pick[(r >> 16) % (sizeof(pick) - 1)]
	                       : (char)(r >> 24);

	if (at > *len)
		at = *len;
	switch (r % 8) {
	case 0: /* overwrite */
	case 1:
		if (at < *len)
			buf[at] = ch;
		break;
	case 2: /* insert a byte */
		if (*len < cap) {
			memmove(buf + at + 1, buf + at, *len - at);
			buf[at] = ch;
			(*len)++;
		}
		break;
	case 3: { /* insert a chunk that matters to JSON */
		size_t nk = sizeof(chunks) / sizeof(chunks[0]);
		const char *k = chunks[(r >> 32) % nk];
		size_t n = strlen(k);
		if (*len + n <= cap) {
			memmove(buf + at + n, buf + at, *len - at);
			memcpy(buf + at, k, n);
			*len += n;
		}
		break;
	}
	case 4: { /* delete a run */
		size_t n = 1 + (r >> 32) % 4;
		if (n > *len - at)
			n = *len - at;
		memmove(buf + at, buf + at + n, *len - at - n);
		*len -= n;
		break;
	}
	case 5: { /* copy a run from elsewhere over it */
		size_t from = (size_t)((r >> 32) % (*len ? *len : 1));
		size_t n = 1 + (r >> 20) % 12;
		if (from + n <= *len && at + n <= *len)
			memmove(buf + at, buf + from, n);
		break;
	}
	case 6: { /* a run of digits becomes a number beyond a double */
		static const char *const huge[] = { "1e400", "-1E+400", "2e308",
			                                "9.9e99999", "1.8e308" };
		const char *k = huge[(r >> 32) % 5];
		size_t i = at, j, n = strlen(k);
		while (i < *len && !(buf[i] >= '0' && buf[i] <= '9'))
			i++;
		for (j = i; j < *len && buf[j] >= '0' && buf[j] <= '9'; j++)
			;
		if (i < *len && *len - (j - i) + n <= cap) {
			memmove(buf + i + n, buf + j, *len - j);
			memcpy(buf + i, k, n);
			*len = *len - (j - i) + n;
		}
		break;
	}
	default: /* truncate */
		*len = at;
		break;
	}
}

START_TEST(test_jansson_mutations)
{
	struct diff_stats st = { 0 };
	struct corpus c;
	uint64_t seed = 20261201;
	char buf[4096];

	size_t *good, ngood = 0;

	corpus_load(&c);
	good = malloc(c.n * sizeof(*good));
	ck_assert_ptr_nonnull(good);
	for (size_t i = 0; i < c.n; i++)
		if (c.len[i] <= sizeof(buf) / 2 &&
		    jc_check(c.doc[i], c.len[i], NULL, NULL, NULL) == 0)
			good[ngood++] = i;
	ck_assert_uint_gt(ngood, 300);
	for (long iter = 0; iter < unit_rounds(60000); iter++) {
		uint64_t r = jc_rand(&seed);
		/* Mostly documents that were JSON before, and one edit, so that
		 * many stay JSON. */
		size_t pick = (r >> 16) % 4 ? good[jc_rand(&seed) % ngood]
		                            : (size_t)(jc_rand(&seed) % c.n);
		size_t len = c.len[pick];
		int edits = r % 2 ? 1 : 1 + (int)((r >> 8) % 3);

		if (len > sizeof(buf) / 2)
			continue;
		memcpy(buf, c.doc[pick], len);
		for (int e = 0; e < edits; e++)
			jc_mutate(buf, &len, sizeof(buf), &seed);
		agree_with_jansson(buf, len, &st);
	}
	/* Both verdicts, and tamed numbers, in earnest. */
	ck_assert_uint_gt(st.valid, unit_rounds(10000));
	ck_assert_uint_gt(st.inputs - st.valid, unit_rounds(30000));
	ck_assert_uint_gt(st.replaced, unit_rounds(1000));
	free(good);
	corpus_free(&c);
}
END_TEST

/* jc_utf8_check() steps over ASCII eight bytes at a time: a sequence
 * must be found, and judged, at every offset from a word boundary and in
 * the tail shorter than a word. */
START_TEST(test_utf8_check_offsets)
{
	static const struct {
		const char *seq;
		bool good;
	} seqs[] = {
		{ "\xc3\xa9", true },             /* é */
		{ "\xe2\x82\xac", true },         /* € */
		{ "\xf0\x9f\x98\x80", true },     /* 😀 */
		{ "\xff", false },
		{ "\x80", false },                /* a continuation alone */
		{ "\xc0\x80", false },            /* overlong NUL */
		{ "\xed\xa0\x80", false },        /* a surrogate */
		{ "\xf4\x90\x80\x80", false },    /* beyond U+10FFFF */
	};
	char buf[64];

	for (size_t k = 0; k < sizeof(seqs) / sizeof(seqs[0]); k++) {
		size_t sl = strlen(seqs[k].seq);

		for (size_t off = 0; off <= 20; off++) {
			for (size_t tail = 0; tail <= 12; tail++) {
				size_t len = off + sl + tail;

				memset(buf, 'x', sizeof(buf));
				memcpy(buf + off, seqs[k].seq, sl);
				ck_assert_uint_eq(jc_utf8_check(buf, len),
				                  (seqs[k].good ? len : off));
			}
			/* Cut short at the end of the text. */
			if (sl > 1) {
				memset(buf, 'x', sizeof(buf));
				memcpy(buf + off, seqs[k].seq, sl);
				ck_assert_uint_eq(jc_utf8_check(buf, off + sl - 1), off);
			}
		}
	}
	/* Plain ASCII, controls and NUL included, of every length. */
	for (size_t len = 0; len <= 40; len++) {
		for (size_t i = 0; i < len; i++)
			buf[i] = (char)(i * 7 % 128);
		ck_assert_uint_eq(jc_utf8_check(buf, len), len);
	}
}
END_TEST

Suite *json_check_suite(void)
{
	Suite *s = suite_create("json_check");
	TCase *tables = tcase_create("tables");
	TCase *diff = tcase_create("jansson");

	tcase_add_test(tables, test_valid_documents);
	tcase_add_test(tables, test_invalid_documents);
	tcase_add_test(tables, test_nul_bytes);
	tcase_add_test(tables, test_depth_limit);
	tcase_add_test(tables, test_number_callback);
	tcase_add_test(tables, test_beyond_double_table);
	tcase_add_test(tables, test_beyond_double_against_strtod);
	tcase_add_test(tables, test_utf8_check_offsets);
	suite_add_tcase(s, tables);

	tcase_set_timeout(diff, 60);
	tcase_add_test(diff, test_jansson_fixtures);
	tcase_add_test(diff, test_jansson_mutations);
	suite_add_tcase(s, diff);
	return s;
}
