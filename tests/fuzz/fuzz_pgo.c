/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_pgo.c -- libFuzzer harness: pgo_decode() over message sequences.
 *
 * The input is a spec byte (index into the table below; top bit: also
 * read transactional messages as outbox_emit() content), then frames,
 * each a two-byte big-endian length and that many bytes of one pgoutput
 * message; a length of 0xffff is no frame but pgo_reset() (a new
 * session). The whole sequence goes through two decoder states, which
 * must agree on every return code, error text and record: nothing may
 * depend on memory that was never written. Besides memory safety and no
 * leak, each result must be well formed: a failure has a message that
 * says pgoutput, a cleared record and the state as it was; an event has
 * NUL-terminated UTF-8 strings without a NUL inside and a payload that
 * is bytes of its message; a message's prefix and content are too;
 * Begin and Commit report the LSNs at their offsets in the message.
 *
 * Built by `make fuzz` (tests/fuzz/README.md); the seeds are the
 * recorded pgoutput fixtures (the .pgo files of tests/fixtures/pgoutput)
 * framed so, whole and one transaction at a time.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/emit.h"
#include "decode/json_check.h"
#include "decode/pgo.h"
#include "decode/w2j.h"
#include "../unit/fixtures.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The first byte picks one; the order is the kept inputs' (regress/). */
static const struct record_spec *const fuzz_specs[] = {
	&outbox_spec, &odd_spec,  &bigint_spec, &text_spec,
	&domain_spec, &star_spec, &prisma_spec, &orders_spec,
};

static void fuzz_fail(const char *what, const uint8_t *m, size_t len)
{
	fprintf(stderr, "fuzz_pgo: %s (message of %zu bytes, type 0x%02x)\n",
	        what, len, len ? m[0] : 0);
	abort();
}

static uint64_t fuzz_be64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* A string of an event: NUL-terminated at len, no NUL before, UTF-8. */
static void fuzz_str(const struct rec_str *s, bool may_be_null,
                     const uint8_t *m, size_t len)
{
	if (s->ptr == NULL) {
		if (!may_be_null || s->len != 0)
			fuzz_fail("missing string", m, len);
		return;
	}
	if (strlen(s->ptr) != s->len)
		fuzz_fail("string length or NUL inside", m, len);
	if (jc_utf8_check(s->ptr, s->len) != s->len)
		fuzz_fail("string not UTF-8", m, len);
}

static bool fuzz_inside(const struct rec_str *s, const uint8_t *m,
                        size_t len)
{
	return s->len == 0 || memmem(m, len, s->ptr, s->len) != NULL;
}

static void fuzz_check(const struct record *rec, const uint8_t *m,
                       size_t len)
{
	switch (rec->kind) {
	case REC_BEGIN:
		if (len != 21 || rec->lsn != fuzz_be64(m + 1) || rec->root_ != NULL)
			fuzz_fail("Begin fields", m, len);
		break;
	case REC_COMMIT:
		if (len != 26 || rec->lsn != fuzz_be64(m + 2) ||
		    rec->nextlsn != fuzz_be64(m + 10) || rec->nextlsn <= rec->lsn ||
		    rec->root_ != NULL)
			fuzz_fail("Commit fields", m, len);
		break;
	case REC_EVENT:
		fuzz_str(&rec->id, false, m, len);
		fuzz_str(&rec->key, false, m, len);
		fuzz_str(&rec->type, true, m, len);
		fuzz_str(&rec->route, false, m, len);
		fuzz_str(&rec->payload, false, m, len);
		if (!fuzz_inside(&rec->payload, m, len) || m[0] != 'I' ||
		    rec->root_ == NULL || rec->xid < 0)
			fuzz_fail("event is not of its Insert", m, len);
		break;
	case REC_MESSAGE:
		if (m[0] != 'M' || rec->root_ == NULL ||
		    strlen(rec->msg_prefix.ptr) != rec->msg_prefix.len ||
		    rec->msg_content.ptr[rec->msg_content.len] != '\0' ||
		    !fuzz_inside(&rec->msg_prefix, m, len) ||
		    !fuzz_inside(&rec->msg_content, m, len) ||
		    (rec->transactional != (rec->xid >= 0)))
			fuzz_fail("message fields", m, len);
		break;
	case REC_UPDATE:
		/* Only an Update of the outbox's relation, and nothing decoded
		 * from it (an update is never an event). */
		if (m[0] != 'U' || rec->root_ != NULL)
			fuzz_fail("update of the outbox is not of an Update", m, len);
		break;
	case REC_SKIP:
		if (rec->root_ != NULL || len == 0 ||
		    memchr("RUDTYOI", m[0], 7) == NULL)
			fuzz_fail("skip of an unexpected message", m, len);
		break;
	}
}

static bool fuzz_same_str(const struct rec_str *a, const struct rec_str *b)
{
	return a->len == b->len && (a->ptr == NULL) == (b->ptr == NULL) &&
	       (a->ptr == NULL || memcmp(a->ptr, b->ptr, a->len) == 0);
}

static bool fuzz_same(const struct record *a, const struct record *b)
{
	return a->kind == b->kind && a->lsn == b->lsn &&
	       a->nextlsn == b->nextlsn && a->xid == b->xid &&
	       a->commit_ts_us == b->commit_ts_us &&
	       a->transactional == b->transactional &&
	       fuzz_same_str(&a->id, &b->id) && fuzz_same_str(&a->key, &b->key) &&
	       fuzz_same_str(&a->type, &b->type) &&
	       fuzz_same_str(&a->route, &b->route) &&
	       fuzz_same_str(&a->payload, &b->payload) &&
	       fuzz_same_str(&a->msg_prefix, &b->msg_prefix) &&
	       fuzz_same_str(&a->msg_content, &b->msg_content);
}

/* Decodes m in st and checks the outcome; returns it in rec/err. */
static int fuzz_one(struct pgo_state *st, const uint8_t *m, size_t len,
                    uint64_t lsn, struct record *rec, char *err,
                    size_t errlen)
{
	struct pgo_state before = *st;
	int rc = pgo_decode(st, m, len, lsn, rec, err, errlen);

	if (rc != 0) {
		if (rc != -1 || strncmp(err, "pgoutput ", 9) != 0 ||
		    rec->root_ != NULL || rec->xid != -1)
			fuzz_fail("failure not reported as such", m, len);
		if (st->in_txn != before.in_txn || st->xid != before.xid ||
		    st->final_lsn != before.final_lsn ||
		    st->commit_ts_us != before.commit_ts_us ||
		    st->nrels != before.nrels || st->rels != before.rels)
			fuzz_fail("a failure changed the state", m, len);
		return rc;
	}
	fuzz_check(rec, m, len);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct record_spec *spec;
	struct pgo_state a, b;
	uint64_t lsn = 0x1000000;
	bool emit;
	size_t at = 1;

	if (size == 0)
		return 0;
	spec = fuzz_specs[(data[0] & 0x7f) %
	                  (sizeof(fuzz_specs) / sizeof(fuzz_specs[0]))];
	emit = data[0] & 0x80;
	pgo_init(&a, spec);
	pgo_init(&b, spec);
	while (at + 2 <= size) {
		size_t len = (size_t)data[at] << 8 | data[at + 1];
		struct record ra, rb;
		char ea[512], eb[512];
		uint8_t *m;
		int rca, rcb;

		at += 2;
		if (len == 0xffff) {
			pgo_reset(&a);
			pgo_reset(&b);
			continue;
		}
		if (len > size - at)
			len = size - at;
		/* An exact copy, so that a read past the message shows. */
		m = malloc(len ? len : 1);
		if (m == NULL)
			break;
		memcpy(m, data + at, len);
		at += len;
		lsn += 0x40;
		rca = fuzz_one(&a, m, len, lsn, &ra, ea, sizeof(ea));
		rcb = fuzz_one(&b, m, len, lsn, &rb, eb, sizeof(eb));
		if (rca != rcb || (rca != 0 && strcmp(ea, eb) != 0) ||
		    (rca == 0 && !fuzz_same(&ra, &rb)))
			fuzz_fail("two states disagree", m, len);
		if (rca == 0 && emit && ra.kind == REC_MESSAGE && ra.transactional &&
		    emit_decode(ra.msg_content.ptr, ra.msg_content.len, &ra, ea,
		                    sizeof(ea)) == 0 &&
		    (ra.kind != REC_EVENT || ra.payload.ptr == NULL))
			fuzz_fail("emit content not an event", m, len);
		if (rca == 0) {
			record_clear(&ra);
			record_clear(&rb);
		}
		free(m);
	}
	pgo_free(&a);
	pgo_free(&b);
	return 0;
}
