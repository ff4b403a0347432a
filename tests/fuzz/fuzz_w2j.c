/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_w2j.c -- libFuzzer harness: the wal2json scanners against jansson.
 *
 * Every input is decoded three ways, w2j_decode(), jansson alone and the
 * scanners alone, which must agree exactly: same return code, same record
 * byte for byte, same error text; the scanners may only step aside. The
 * first byte picks the spec, the rest is the line. When its top bit is
 * set, the line is also read as outbox_emit() content (a payload that
 * comes out must be bytes of the input) and as a document for
 * jc_check(), which must accept what jansson accepts once the numbers
 * beyond a double are tamed for jansson (see check_json_check.c).
 *
 * Built by `make fuzz` (tests/fuzz/README.md); the seeds come from
 * the golden fixtures, one line each behind a spec byte.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "decode/emit.h"
#include "decode/json_check.h"
#include "decode/w2j.h"
#include "../unit/fixtures.h"

int w2j_decode_fast(const char *line, size_t len,
                    const struct record_spec *spec, struct record *rec);
int w2j_decode_slow(const char *line, size_t len,
                    const struct record_spec *spec, struct record *rec,
                    char *err, size_t errlen);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The first byte picks one; the order is the kept inputs' (regress/). */
static const struct record_spec *const fuzz_specs[] = {
	&outbox_spec, &text_spec,   &bigint_spec,
	&odd_spec,    &orders_spec, &shared_spec,
};

static void fuzz_fail(const char *what, const char *line, size_t len)
{
	fprintf(stderr, "w2j paths disagree: %s: %.*s\n", what, (int)len, line);
	abort();
}

static void fuzz_same_str(const struct rec_str *a, const struct rec_str *b,
                          const char *line, size_t len)
{
	if ((a->ptr == NULL) != (b->ptr == NULL) || a->len != b->len)
		fuzz_fail("string presence or length", line, len);
	if (b->ptr != NULL &&
	    (memcmp(a->ptr, b->ptr, b->len) != 0 || a->ptr[a->len] != '\0'))
		fuzz_fail("string bytes", line, len);
}

static void fuzz_same(const struct record *a, const struct record *b,
                      const char *line, size_t len)
{
	if (a->kind != b->kind || a->lsn != b->lsn || a->nextlsn != b->nextlsn ||
	    a->xid != b->xid || a->commit_ts_us != b->commit_ts_us)
		fuzz_fail("record fields", line, len);
	fuzz_same_str(&a->id, &b->id, line, len);
	fuzz_same_str(&a->key, &b->key, line, len);
	fuzz_same_str(&a->type, &b->type, line, len);
	fuzz_same_str(&a->route, &b->route, line, len);
	fuzz_same_str(&a->payload, &b->payload, line, len);
}

/* The emit decoder: no crash, and a payload that is input text. */
static void fuzz_emit(const char *line, size_t len)
{
	struct record rec;
	char err[512];

	memset(&rec, 0, sizeof(rec));
	rec.kind = REC_MESSAGE;
	rec.xid = -1;
	if (emit_decode(line, len, &rec, err, sizeof(err)) != 0)
		return;
	if (rec.payload.ptr == NULL || rec.id.ptr == NULL ||
	    rec.payload.ptr[rec.payload.len] != '\0' ||
	    memmem(line, len, rec.payload.ptr, rec.payload.len) == NULL)
		fuzz_fail("emit payload is not text of the content", line, len);
	record_clear(&rec);
}

struct fuzz_tamed {
	const char *orig;
	char *copy;
};

static void fuzz_tame(const char *tok, size_t len, void *arg)
{
	struct fuzz_tamed *t = arg;

	if (!jc_beyond_double(tok, len))
		return;
	memset(t->copy + (tok - t->orig), ' ', len);
	t->copy[tok - t->orig] = '0';
}

/* jc_check() against jansson, less their two known differences: a raw
 * NUL byte and \u0000 in a member name. */
static void fuzz_jc(const char *line, size_t len)
{
	struct fuzz_tamed t = { line, NULL };
	struct jc_error jc;
	json_error_t jerr;
	json_t *root;
	int rc;

	if (memchr(line, '\0', len) != NULL)
		return;
	t.copy = malloc(len ? len : 1);
	if (t.copy == NULL)
		return;
	memcpy(t.copy, line, len);
	rc = jc_check(line, len, fuzz_tame, &t, &jc);
	root = json_loadb(t.copy, len,
	                  JSON_DECODE_ANY | JSON_ALLOW_NUL |
	                          JSON_DECODE_INT_AS_REAL,
	                  &jerr);
	if (!(root == NULL &&
	      json_error_code(&jerr) == json_error_null_byte_in_key)) {
		if ((rc == 0) != (root != NULL))
			fuzz_fail("jc_check and jansson disagree", line, len);
		if (rc != 0 && jc.offset > (size_t)jerr.position)
			fuzz_fail("jc_check stops after jansson", line, len);
	}
	json_decref(root);
	free(t.copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct record_spec *spec;
	struct record a, b, f;
	char ea[512] = "", eb[512] = "";
	const char *line;
	size_t len;
	int ra, rb, rf;

	if (size == 0)
		return 0;
	spec = fuzz_specs[data[0] % (sizeof(fuzz_specs) / sizeof(fuzz_specs[0]))];
	line = (const char *)data + 1;
	len = size - 1;

	ra = w2j_decode(line, len, spec, &a, ea, sizeof(ea));
	rb = w2j_decode_slow(line, len, spec, &b, eb, sizeof(eb));
	rf = w2j_decode_fast(line, len, spec, &f);
	if (ra != rb || strcmp(ea, eb) != 0)
		fuzz_fail("return code or message", line, len);
	if (ra == 0)
		fuzz_same(&a, &b, line, len);
	if (rf == 0) {
		if (rb != 0)
			fuzz_fail("scanner took a line jansson refuses", line, len);
		fuzz_same(&f, &b, line, len);
		record_clear(&f);
	} else if (rf != 1 || f.root_ != NULL) {
		fuzz_fail("scanner stepped aside badly", line, len);
	}
	if (ra == 0)
		record_clear(&a);
	if (rb == 0)
		record_clear(&b);
	if (data[0] & 0x80) {
		fuzz_emit(line, len);
		fuzz_jc(line, len);
	}
	return 0;
}
