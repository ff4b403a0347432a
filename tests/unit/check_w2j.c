/* SPDX-License-Identifier: Apache-2.0 */
/* check_w2j.c -- the wal2json decoder against real server output.
 *
 * The golden tests decode every line of the .jsonl files in tests/fixtures
 * (recorded by record.sh there from PostgreSQL 15 + wal2json 2.5) and
 * assert exact bytes for the rows the workload wrote. xids, LSNs and
 * timestamps change when the fixtures are re-recorded, so those are
 * checked by their relations (B/C pairing, order, one fixture against
 * another) and by reading each line a second way, never as constants. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <check.h>
#include <jansson.h>

#include "decode/w2j.h"
#include "unit_scale.h"
#include "fixtures.h"

#ifndef FIXTURE_DIR
#define FIXTURE_DIR "tests/fixtures"
#endif

/* ------------------------------------------------------------- helpers */

/* One decoded line, copied out of the record so it outlives it. */
struct res {
	int rc;
	enum rec_kind kind;
	uint64_t lsn, nextlsn;
	int64_t xid, ts;
	char *id, *key, *type, *route, *payload;
	size_t payload_len;
	char err[512];
	/* The same line read independently with jansson, to check that the
	 * decoder reports what the line says. */
	char action;
	char lsn_text[32];
	long long xid_raw; /* -1 when absent or null */
};

struct fx {
	char **line;
	size_t *len;
	struct res *res;
	size_t n;
};

static char *dup_str(const struct rec_str *s)
{
	char *p;

	if (s->ptr == NULL)
		return NULL;
	/* Strings from jansson may hold no NUL; check that while copying. */
	ck_assert_uint_eq(strlen(s->ptr), s->len);
	p = malloc(s->len + 1);
	ck_assert_ptr_nonnull(p);
	memcpy(p, s->ptr, s->len + 1);
	return p;
}

static void read_independently(struct res *r, const char *line, size_t len)
{
	json_error_t jerr;
	json_t *root = json_loadb(line, len, JSON_DECODE_INT_AS_REAL, &jerr);
	json_t *v;

	r->action = '?';
	r->lsn_text[0] = '\0';
	r->xid_raw = -1;
	ck_assert_msg(root != NULL, "fixture line is not JSON: %s", jerr.text);
	v = json_object_get(root, "action");
	if (json_is_string(v))
		r->action = json_string_value(v)[0];
	v = json_object_get(root, "lsn");
	if (json_is_string(v))
		snprintf(r->lsn_text, sizeof(r->lsn_text), "%s",
		         json_string_value(v));
	v = json_object_get(root, "xid");
	if (json_is_number(v))
		r->xid_raw = (long long)json_number_value(v);
	json_decref(root);
}

static void fx_load(struct fx *f, const char *name)
{
	char path[512];
	FILE *fp;
	char *buf = NULL;
	size_t cap = 0, alloc = 0;
	ssize_t got;

	memset(f, 0, sizeof(*f));
	snprintf(path, sizeof(path), "%s/%s", FIXTURE_DIR, name);
	fp = fopen(path, "r");
	ck_assert_msg(fp != NULL, "cannot open %s (run from the repo root)",
	              path);
	while ((got = getline(&buf, &cap, fp)) > 0) {
		if (buf[got - 1] == '\n')
			buf[--got] = '\0';
		if (f->n == alloc) {
			alloc = alloc ? alloc * 2 : 64;
			f->line = realloc(f->line, alloc * sizeof(*f->line));
			f->len = realloc(f->len, alloc * sizeof(*f->len));
			ck_assert(f->line != NULL && f->len != NULL);
		}
		f->line[f->n] = strdup(buf);
		f->len[f->n] = (size_t)got;
		f->n++;
	}
	free(buf);
	fclose(fp);
	ck_assert_msg(f->n > 0, "%s is empty", path);
}

/* Decodes every line of f with spec into f->res. */
static void fx_decode(struct fx *f, const struct record_spec *spec)
{
	f->res = calloc(f->n, sizeof(*f->res));
	ck_assert_ptr_nonnull(f->res);
	for (size_t i = 0; i < f->n; i++) {
		struct res *r = &f->res[i];
		struct record rec;

		read_independently(r, f->line[i], f->len[i]);
		r->rc = w2j_decode(f->line[i], f->len[i], spec, &rec, r->err,
		                   sizeof(r->err));
		if (r->rc != 0) {
			/* A failed decode leaves nothing to clear. */
			ck_assert_ptr_null(rec.root_);
			ck_assert_msg(r->err[0] != '\0', "line %zu: empty message",
			              i + 1);
			continue;
		}
		r->kind = rec.kind;
		r->lsn = rec.lsn;
		r->nextlsn = rec.nextlsn;
		r->xid = rec.xid;
		r->ts = rec.commit_ts_us;
		if (rec.kind == REC_EVENT) {
			r->id = dup_str(&rec.id);
			r->key = dup_str(&rec.key);
			r->type = dup_str(&rec.type);
			r->route = dup_str(&rec.route);
			r->payload = dup_str(&rec.payload);
			r->payload_len = rec.payload.len;
		} else if (rec.kind == REC_MESSAGE) {
			/* Messages keep their tree for prefix and content. */
			ck_assert_ptr_nonnull(rec.root_);
			ck_assert_ptr_nonnull(rec.msg_prefix.ptr);
			ck_assert_ptr_nonnull(rec.msg_content.ptr);
		} else {
			/* Only events and messages keep the JSON tree. */
			ck_assert_ptr_null(rec.root_);
		}
		record_clear(&rec);
		ck_assert_ptr_null(rec.root_);
	}
}

static void fx_free(struct fx *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->line[i]);
		if (f->res != NULL) {
			free(f->res[i].id);
			free(f->res[i].key);
			free(f->res[i].type);
			free(f->res[i].route);
			free(f->res[i].payload);
		}
	}
	free(f->line);
	free(f->len);
	free(f->res);
	memset(f, 0, sizeof(*f));
}

static const struct res *find_event(const struct fx *f, const char *id)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->res[i].rc == 0 && f->res[i].kind == REC_EVENT &&
		    strcmp(f->res[i].id, id) == 0)
			return &f->res[i];
	ck_abort_msg("no event with id %s", id);
	return NULL;
}

/* The decoder's view must match the line's own lsn and xid. */
static void assert_matches_line(const struct res *r, size_t i)
{
	uint64_t lsn = 0;

	if (r->lsn_text[0] != '\0')
		ck_assert_int_eq(lsn_parse(r->lsn_text, strlen(r->lsn_text), &lsn),
		                 0);
	ck_assert_msg(r->lsn == lsn, "line %zu: lsn %s decoded as " LSN_FMT,
	              i + 1, r->lsn_text, LSN_ARGS(r->lsn));
	ck_assert_msg(r->xid == r->xid_raw, "line %zu: xid %lld decoded as %lld",
	              i + 1, r->xid_raw, (long long)r->xid);
}

/* Error lines must name the line's LSN as X/X and its xid. */
static void assert_error_names_position(const struct res *r)
{
	char want[64];

	ck_assert_int_eq(r->rc, -1);
	snprintf(want, sizeof(want), "LSN %s", r->lsn_text);
	ck_assert_msg(strstr(r->err, want) != NULL, "'%s' lacks '%s'", r->err,
	              want);
	snprintf(want, sizeof(want), "xid %lld", r->xid_raw);
	ck_assert_msg(strstr(r->err, want) != NULL, "'%s' lacks '%s'", r->err,
	              want);
}

struct shape {
	size_t begins, commits, events, skips, errors, lone_skips;
};

/* Walks the stream as the relay would and checks that it is well formed:
 * B and C alternate, each C repeats its B's xid, lsn, nextlsn and
 * timestamp, the records in between carry that xid, commit ends grow,
 * and only non-transactional messages (xid -1) sit outside a pair. */
static struct shape check_pairs(const struct fx *f)
{
	struct shape s = { 0 };
	const struct res *b = NULL;
	uint64_t last_end = 0;

	for (size_t i = 0; i < f->n; i++) {
		const struct res *r = &f->res[i];

		if (r->rc != 0) {
			s.errors++;
			ck_assert_msg(b != NULL, "line %zu: error outside a txn",
			              i + 1);
			ck_assert_int_eq(r->xid_raw, b->xid);
			continue;
		}
		assert_matches_line(r, i);
		switch (r->kind) {
		case REC_BEGIN:
			ck_assert_msg(b == NULL, "line %zu: B inside a txn", i + 1);
			ck_assert_int_eq(r->action, 'B');
			ck_assert_int_ge(r->xid, 0);
			ck_assert_uint_gt(r->nextlsn, r->lsn);
			ck_assert_int_gt(r->ts, 0);
			b = r;
			s.begins++;
			break;
		case REC_COMMIT:
			ck_assert_msg(b != NULL, "line %zu: C without B", i + 1);
			ck_assert_int_eq(r->action, 'C');
			ck_assert_int_eq(r->xid, b->xid);
			ck_assert_uint_eq(r->lsn, b->lsn);
			ck_assert_uint_eq(r->nextlsn, b->nextlsn);
			ck_assert_int_eq(r->ts, b->ts);
			ck_assert_uint_gt(r->nextlsn, last_end);
			last_end = r->nextlsn;
			b = NULL;
			s.commits++;
			break;
		case REC_EVENT:
			ck_assert_msg(b != NULL, "line %zu: event outside a txn",
			              i + 1);
			ck_assert_int_eq(r->action, 'I');
			ck_assert_int_eq(r->xid, b->xid);
			/* A change's own lsn lies before its commit record. */
			ck_assert_uint_lt(r->lsn, b->lsn);
			ck_assert_int_eq(r->ts, b->ts);
			s.events++;
			break;
		case REC_MESSAGE:
			ck_assert_int_eq(r->action, 'M');
			/* fall through: for these counts a message is a skip */
		case REC_UPDATE: /* and so is an update (event.c judges it) */
		case REC_SKIP:
			ck_assert_int_ne(r->action, 'B');
			ck_assert_int_ne(r->action, 'C');
			if (b == NULL) {
				ck_assert_int_eq(r->action, 'M');
				ck_assert_int_eq(r->xid, -1);
				ck_assert_int_eq(r->ts, 0);
				s.lone_skips++;
			} else {
				ck_assert_int_eq(r->xid, b->xid);
			}
			s.skips++;
			break;
		}
	}
	ck_assert_msg(b == NULL, "stream ends inside a transaction");
	return s;
}

/* The outbox ids the workload commits, in commit order. */
static size_t expected_outbox_ids(char ids[][40], size_t cap)
{
	static const char *const fixed[] = { "001", "002", "003", "005", "006",
		                                 "007", "008", "00a", "00c" };
	size_t n = 0;

	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		snprintf(ids[n++], 40, "00000000-0000-4000-8000-000000000%s",
		         fixed[i]);
	for (int i = 1; i <= 25; i++)
		snprintf(ids[n++], 40, "00000000-0000-4000-8000-%012d", 256 + i);
	snprintf(ids[n++], 40, "00000000-0000-4000-8000-0000000000c1");
	ck_assert_uint_le(n, cap);
	return n;
}

static void assert_outbox_events(const struct fx *f)
{
	char ids[64][40];
	size_t n = expected_outbox_ids(ids, 64), k = 0;

	for (size_t i = 0; i < f->n; i++) {
		const struct res *r = &f->res[i];
		if (r->rc != 0 || r->kind != REC_EVENT)
			continue;
		ck_assert_msg(k < n, "unexpected extra event %s", r->id);
		ck_assert_str_eq(r->id, ids[k]);
		k++;
	}
	ck_assert_uint_eq(k, n);
}

/* ------------------------------------------------------ golden: outbox */

START_TEST(test_outbox_stream_shape)
{
	struct fx f;
	struct shape s;

	fx_load(&f, "outbox.jsonl");
	fx_decode(&f, &outbox_spec);
	s = check_pairs(&f);
	/* 18 committed transactions; the two rolled back ones are gone. */
	ck_assert_uint_eq(s.begins, 18);
	ck_assert_uint_eq(s.commits, 18);
	ck_assert_uint_eq(s.events, 35);
	/* Messages only: two transactional "outbox" ones, two heartbeats
	 * ("unrelated-prefix" is filtered by add-msg-prefixes). */
	ck_assert_uint_eq(s.skips, 4);
	ck_assert_uint_eq(s.lone_skips, 2);
	ck_assert_uint_eq(s.errors, 2);
	ck_assert_uint_eq(f.n, 18 * 2 + 35 + 4 + 2);
	/* Rolled back rows (004, 009), the savepoint (00b) and the update,
	 * delete and orders rows never show up; order is commit order. */
	assert_outbox_events(&f);
	fx_free(&f);
}
END_TEST

START_TEST(test_outbox_unicode_and_escapes)
{
	struct fx f;
	const struct res *r;

	fx_load(&f, "outbox.jsonl");
	fx_decode(&f, &outbox_spec);

	/* jsonb re-serialises: keys reordered, ": " spacing, escapes kept as
	 * JSON escapes, UTF-8 passed through as bytes. */
	r = find_event(&f, "00000000-0000-4000-8000-000000000001");
	ck_assert_str_eq(r->route, "Order");
	ck_assert_str_eq(r->key, "o-1");
	ck_assert_str_eq(r->type, "OrderCreated");
	ck_assert_str_eq(r->payload,
	                 "{\"note\": \"line1\\nline2 \\\"q\\\" \xc3\xbc "
	                 "\xf0\x9f\x98\x80\", \"amount\": \"19.90\", "
	                 "\"orderId\": \"o-1\"}");

	r = find_event(&f, "00000000-0000-4000-8000-000000000003");
	ck_assert_str_eq(r->key, "\xc3\xbc-Kunde \xf0\x9f\x98\x80");
	ck_assert_str_eq(r->route, "Customer");
	ck_assert_str_eq(r->type, "CustomerRenamed");
	/* \u0001 stays escaped; \u00e9 and the surrogate pair become UTF-8. */
	ck_assert_str_eq(r->payload,
	                 "{\"ctl\": \"\\u0001\", \"esc\": \"\xc3\xa9\xf0\x9f\x98"
	                 "\x80\", \"tab\": \"a\\tb\", \"name\": \"Zo\xc3\xab\", "
	                 "\"path\": \"C:\\\\temp\\\\new\", \"quote\": \"say "
	                 "\\\"hi\\\"\", \"slash\": \"a/b\"}");
	ck_assert_uint_eq(r->payload_len, strlen(r->payload));

	/* The payload is handed on as text, so digits beyond double or int64
	 * precision survive; jsonb only normalises the notation. */
	r = find_event(&f, "00000000-0000-4000-8000-000000000002");
	ck_assert_str_eq(r->payload,
	                 "{\"big\": 123456789012345678901234567890."
	                 "123456789012345678901234567890, \"exp\": 1500, "
	                 "\"u64\": 18446744073709551616, \"tiny\": "
	                 "0.000000000000000000000000000001, \"zero\": 0.0}");

	/* Scalars and empty containers are JSON too. */
	ck_assert_str_eq(find_event(&f, "00000000-0000-4000-8000-000000000006")
	                         ->payload, "{}");
	ck_assert_str_eq(find_event(&f, "00000000-0000-4000-8000-000000000007")
	                         ->payload, "\"just a string\"");
	ck_assert_str_eq(find_event(&f, "00000000-0000-4000-8000-000000000008")
	                         ->payload, "[]");
	r = find_event(&f, "00000000-0000-4000-8000-000000000281");
	ck_assert_str_eq(r->key, "bulk-25");
	ck_assert_str_eq(r->payload, "{\"seq\": 25}");
	fx_free(&f);
}
END_TEST

START_TEST(test_outbox_null_columns)
{
	struct fx f;
	const struct res *r;
	size_t nerr = 0;

	fx_load(&f, "outbox.jsonl");
	fx_decode(&f, &outbox_spec);

	/* A NULL event type is fine: the event_type header is left out. */
	r = find_event(&f, "00000000-0000-4000-8000-0000000000c1");
	ck_assert_ptr_null(r->type);
	ck_assert_str_eq(r->key, "o-16");
	ck_assert_str_eq(r->payload, "{\"untyped\": true}");

	/* A NULL payload or key is a poison row: it names column, LSN, xid. */
	for (size_t i = 0; i < f.n; i++) {
		const struct res *e = &f.res[i];
		if (e->rc == 0)
			continue;
		ck_assert_int_eq(e->action, 'I');
		assert_error_names_position(e);
		ck_assert_msg(strstr(e->err, "public.outbox") != NULL, "%s",
		              e->err);
		/* The id is read first, so the message can name the event. */
		ck_assert_msg(strstr(e->err, "(event id 00000000-0000-4000-8000-") !=
		                      NULL, "%s", e->err);
		if (nerr == 0)
			ck_assert_msg(strstr(e->err, "column \"payload\" is NULL") !=
			                      NULL, "%s", e->err);
		else
			ck_assert_msg(strstr(e->err,
			                     "column \"aggregate_id\" is NULL") != NULL,
			              "%s", e->err);
		nerr++;
	}
	ck_assert_uint_eq(nerr, 2);
	/* They are the last two rows, each in its own transaction. */
	ck_assert_int_eq(f.res[f.n - 2].rc, -1);
	ck_assert_int_eq(f.res[f.n - 5].rc, -1);
	ck_assert_int_ne(f.res[f.n - 2].xid_raw, f.res[f.n - 5].xid_raw);
	fx_free(&f);
}
END_TEST

/* ------------------------------------------------- golden: all changes */

START_TEST(test_all_changes_skips)
{
	struct fx f;
	struct shape s;
	size_t u = 0, d = 0, t = 0, m = 0, other_i = 0, big = 0;

	fx_load(&f, "all_changes.jsonl");
	fx_decode(&f, &outbox_spec);
	s = check_pairs(&f);
	ck_assert_uint_eq(s.begins, 18);
	ck_assert_uint_eq(s.events, 35);
	ck_assert_uint_eq(s.errors, 2);
	assert_outbox_events(&f);
	for (size_t i = 0; i < f.n; i++) {
		const struct res *r = &f.res[i];
		if (r->rc != 0 || (r->kind != REC_SKIP && r->kind != REC_MESSAGE &&
		                   r->kind != REC_UPDATE))
			continue;
		/* Messages are their own kind, and so are the updates of the
		 * outbox; every other action is a skip. */
		ck_assert_int_eq(r->kind == REC_MESSAGE, r->action == 'M');
		ck_assert_int_eq(r->kind == REC_UPDATE, r->action == 'U');
		switch (r->action) {
		case 'U': u++; break;
		case 'D': d++; break;
		case 'T': t++; break;
		case 'M': m++; break;
		case 'I': other_i++; break;
		default: ck_abort_msg("line %zu: skipped '%c'", i + 1, r->action);
		}
		/* wal2json prints numeric as a bare number; one beyond 64 bits
		 * must still be skipped, not stop the relay. */
		if (strstr(f.line[i], "123456789012345678901234567890}") != NULL)
			big++;
	}
	ck_assert_uint_eq(u, 1);
	ck_assert_uint_eq(d, 2); /* the insert-then-delete and the delete */
	ck_assert_uint_eq(t, 1);
	ck_assert_uint_eq(m, 5); /* unrelated-prefix is not filtered here */
	/* orders 3+1, "Outbox" 2, odd 1, bigint 3, text 2 */
	ck_assert_uint_eq(other_i, 12);
	ck_assert_uint_eq(big, 1);
	ck_assert_uint_eq(s.skips, u + d + t + m + other_i);
	fx_free(&f);
}
END_TEST

/* Every fixture was streamed in another session time zone; the same
 * transaction must come out at the same instant in each. */
START_TEST(test_timestamps_agree_across_time_zones)
{
	static const char *const names[] = { "all_changes.jsonl",
		                                 "prisma.jsonl", "odd_tables.jsonl" };
	static const char *const zones[] = { "-03:30", "+05:45", "+00" };
	struct fx ref, f;
	size_t compared = 0;

	fx_load(&ref, "outbox.jsonl");
	fx_decode(&ref, &outbox_spec);
	for (size_t k = 0; k < 3; k++) {
		fx_load(&f, names[k]);
		fx_decode(&f, &outbox_spec);
		/* Proves the fixture really carries that offset. */
		ck_assert_msg(strstr(f.line[0], zones[k]) != NULL, "%s: %s",
		              names[k], f.line[0]);
		for (size_t i = 0; i < f.n; i++) {
			if (f.res[i].rc != 0 || f.res[i].kind != REC_BEGIN)
				continue;
			for (size_t j = 0; j < ref.n; j++) {
				if (ref.res[j].rc == 0 && ref.res[j].kind == REC_BEGIN &&
				    ref.res[j].xid == f.res[i].xid) {
					ck_assert_int_eq(ref.res[j].ts, f.res[i].ts);
					ck_assert_uint_eq(ref.res[j].nextlsn,
					                  f.res[i].nextlsn);
					compared++;
				}
			}
		}
		fx_free(&f);
	}
	ck_assert_uint_eq(compared, 3 * 18);
	fx_free(&ref);
}
END_TEST

START_TEST(test_orders_numeric_payload_refused)
{
	struct fx f;
	size_t n = 0;

	fx_load(&f, "all_changes.jsonl");
	fx_decode(&f, &orders_spec);
	for (size_t i = 0; i < f.n; i++) {
		const struct res *r = &f.res[i];
		if (!(r->action == 'I' && strstr(f.line[i], "\"orders\"")))
			continue;
		assert_error_names_position(r);
		switch (n++) {
		case 0: /* 30-digit amount: even the integer id is now a real */
			ck_assert_msg(strstr(r->err, "column \"id\"") &&
			                      strstr(r->err, "beyond 64 bits"),
			              "%s", r->err);
			break;
		case 1: /* 19.90: a bare number is no payload */
			ck_assert_msg(strstr(r->err, "column \"amount\" (type numeric) "
			                             "is not a string"),
			              "%s", r->err);
			break;
		case 2: /* NaN arrives as null */
			ck_assert_msg(strstr(r->err, "column \"amount\" is NULL"), "%s",
			              r->err);
			break;
		default:
			ck_assert_msg(strstr(r->err, "is not a string"), "%s", r->err);
		}
	}
	ck_assert_uint_eq(n, 4);
	fx_free(&f);
}
END_TEST

/* --------------------------------------------- golden: other table shapes */

START_TEST(test_prisma_case_sensitive)
{
	struct fx f;
	struct shape s;
	const struct res *r;

	fx_load(&f, "prisma.jsonl");
	fx_decode(&f, &prisma_spec);
	s = check_pairs(&f);
	ck_assert_uint_eq(s.events, 2);
	ck_assert_uint_eq(s.errors, 0);
	r = find_event(&f, "clx0000000000000000000001");
	ck_assert_str_eq(r->route, "Invoice");
	ck_assert_str_eq(r->key, "inv-1");
	ck_assert_str_eq(r->type, "InvoiceIssued");
	ck_assert_str_eq(r->payload, "{\"total\": 10}");
	r = find_event(&f, "clx0000000000000000000002");
	ck_assert_str_eq(r->type, "InvoiceSent");
	ck_assert_str_eq(r->payload, "{\"to\": \"a@example.com\"}");
	fx_free(&f);

	/* With every table in the stream, "outbox" must not match "Outbox". */
	fx_load(&f, "all_changes.jsonl");
	fx_decode(&f, &prisma_spec);
	s = check_pairs(&f);
	ck_assert_uint_eq(s.events, 2);
	ck_assert_uint_eq(s.errors, 0);
	fx_free(&f);
}
END_TEST

START_TEST(test_odd_identifiers)
{
	struct fx f;
	struct shape s;
	const struct res *r;

	fx_load(&f, "odd_tables.jsonl");
	fx_decode(&f, &odd_spec);
	s = check_pairs(&f);
	ck_assert_uint_eq(s.events, 1);
	ck_assert_uint_eq(s.errors, 0);
	/* "ID", not the "id" decoy: names match exactly. */
	r = find_event(&f, "00000000-0000-4000-8000-0000000000e1");
	ck_assert_str_eq(r->key, "odd-1");
	ck_assert_str_eq(r->type, "OddHappened");
	ck_assert_str_eq(r->route, "Odd");
	/* json (not jsonb) keeps the text as written. */
	ck_assert_str_eq(r->payload, "{ \"b\" : 1,   \"a\":[1, 2 ] }");
	fx_free(&f);
}
END_TEST

/* record.sh streamed odd_tables.jsonl with the add-tables value below,
 * and the row arrived: so the server accepts what the relay writes. */
START_TEST(test_add_tables_matches_recording)
{
	char out[128], path[512], want[200], line[512];
	FILE *fp;
	bool seen = false;
	int n;

	n = w2j_add_tables_value(odd_spec.schema, odd_spec.table, out,
	                         sizeof(out));
	ck_assert_str_eq(out, "public.we\\\"ird\\ tbl\\,v\\.2");
	ck_assert_int_eq(n, (int)strlen(out));

	snprintf(path, sizeof(path), "%s/record.sh", FIXTURE_DIR);
	fp = fopen(path, "r");
	ck_assert_ptr_nonnull(fp);
	snprintf(want, sizeof(want), "ODD_TABLES='%s,", out);
	while (fgets(line, sizeof(line), fp) != NULL)
		if (strncmp(line, want, strlen(want)) == 0)
			seen = true;
	fclose(fp);
	ck_assert_msg(seen, "record.sh has no line starting with %s", want);
}
END_TEST

START_TEST(test_bigint_keys_as_text)
{
	struct fx f;
	struct shape s;
	const struct res *r;

	fx_load(&f, "odd_tables.jsonl");
	fx_decode(&f, &bigint_spec);
	s = check_pairs(&f);
	ck_assert_uint_eq(s.events, 3);
	/* 2^53 + 1 would lose its last digit through a double. */
	r = find_event(&f, "1");
	ck_assert_str_eq(r->key, "9007199254740993");
	ck_assert_str_eq(r->type, "AccountOpened");
	r = find_event(&f, "2");
	ck_assert_str_eq(r->key, "9223372036854775807");
	r = find_event(&f, "3");
	ck_assert_str_eq(r->key, "-9223372036854775808");
	ck_assert_str_eq(r->payload, "{\"n\": 3}");
	fx_free(&f);
}
END_TEST

START_TEST(test_text_payload_checked)
{
	struct fx f;
	struct shape s;
	const struct res *r = NULL;

	fx_load(&f, "odd_tables.jsonl");
	fx_decode(&f, &text_spec);
	s = check_pairs(&f);
	ck_assert_uint_eq(s.events, 1);
	ck_assert_uint_eq(s.errors, 1);
	/* Valid JSON in a text column goes out byte for byte, spaces too. */
	ck_assert_str_eq(find_event(&f, "00000000-0000-4000-8000-0000000000d1")
	                         ->payload, "  {\"k\": \"v\", \"n\": 1.50}  ");
	for (size_t i = 0; i < f.n; i++)
		if (f.res[i].rc != 0)
			r = &f.res[i];
	ck_assert_ptr_nonnull(r);
	assert_error_names_position(r);
	ck_assert_msg(strstr(r->err, "column \"payload\" (type text): payload "
	                             "is not JSON"),
	              "%s", r->err);
	fx_free(&f);
}
END_TEST

/* ------------------------------------------------------ hand-made input */

/* Decodes s with outbox_spec; returns rc and leaves the message in err. */
static int dec(const char *s, struct record *rec, char *err, size_t n)
{
	return w2j_decode(s, strlen(s), &outbox_spec, rec, err, n);
}

static void expect_error(const char *line, const char *needle)
{
	struct record rec;
	char err[512] = "";

	ck_assert_msg(dec(line, &rec, err, sizeof(err)) == -1,
	              "accepted: %s", line);
	ck_assert_msg(strstr(err, needle) != NULL, "for %s: '%s' lacks '%s'",
	              line, err, needle);
	ck_assert_ptr_null(rec.root_);
	record_clear(&rec); /* harmless after a failure */
}

static void expect_kind(const char *line, enum rec_kind kind)
{
	struct record rec;
	char err[512] = "";

	ck_assert_msg(dec(line, &rec, err, sizeof(err)) == 0, "%s: %s", line,
	              err);
	ck_assert_int_eq(rec.kind, kind);
	record_clear(&rec);
}

#define ROW(cols)                                                          \
	"{\"action\":\"I\",\"xid\":77,\"lsn\":\"0/AB\",\"schema\":\"public\","   \
	"\"table\":\"outbox\",\"columns\":[" cols "]}"
#define COL(n, t, v) "{\"name\":\"" n "\",\"type\":\"" t "\",\"value\":" v "}"
#define GOOD_ID COL("id", "uuid", "\"u-1\"")
#define GOOD_KEY COL("aggregate_id", "text", "\"k-1\"")
#define GOOD_TYPE COL("event_type", "text", "\"T\"")
#define GOOD_ROUTE COL("aggregate_type", "text", "\"R\"")
#define GOOD_PAYLOAD COL("payload", "jsonb", "\"{}\"")

START_TEST(test_malformed_json)
{
	struct fx f;
	struct record rec;
	char err[512];

	/* A real record cut in half. */
	fx_load(&f, "outbox.jsonl");
	ck_assert_int_eq(w2j_decode(f.line[1], f.len[1] / 2, &outbox_spec, &rec,
	                            err, sizeof(err)),
	                 -1);
	ck_assert_msg(strstr(err, "malformed JSON at line 1") != NULL, "%s", err);
	fx_free(&f);

	expect_error("", "malformed JSON");
	expect_error("   ", "malformed JSON");
	expect_error("{\"action\":\"B\",", "malformed JSON");
	expect_error("{\"action\":\"B\",\"nextlsn\":\"0/1\"} x",
	             "end of file expected near 'x'");
	expect_error("{\"action\":\"B\",\"action\":\"C\",\"nextlsn\":\"0/1\"}",
	             "duplicate");
	/* The error length given is respected, truncation included. */
	ck_assert_int_eq(dec("nope", &rec, err, 8), -1);
	ck_assert_uint_eq(strlen(err), 7);
	ck_assert_int_eq(dec("nope", &rec, NULL, 0), -1);
}
END_TEST

START_TEST(test_embedded_nul)
{
	static const char line[] = "{\"action\":\"B\",\"nextlsn\":\"0/1\"}\0junk";
	struct record rec;
	char err[256];

	/* The length, not a NUL, ends the input. */
	ck_assert_int_eq(w2j_decode(line, sizeof(line) - 1, &outbox_spec, &rec,
	                            err, sizeof(err)),
	                 -1);
	ck_assert_int_eq(w2j_decode(line, strlen(line), &outbox_spec, &rec, err,
	                            sizeof(err)),
	                 0);
	ck_assert_int_eq(rec.kind, REC_BEGIN);
	record_clear(&rec);
	expect_error("{\"action\":\"I\",\"schema\":\"pub\\u0000lic\"}",
	             "malformed JSON");
}
END_TEST

START_TEST(test_not_an_object)
{
	expect_error("[1,2]", "JSON array, not an object");
	expect_error("\"B\"", "malformed JSON"); /* jansson wants a container */
	expect_error("[]", "not an object");
}
END_TEST

START_TEST(test_bad_action)
{
	expect_error("{\"xid\":1,\"lsn\":\"0/10\"}",
	             "no \"action\" (LSN 0/10, xid 1)");
	expect_error("{\"action\":1}", "\"action\" is not a one-letter string");
	expect_error("{\"action\":\"\"}", "one-letter");
	expect_error("{\"action\":\"BC\",\"nextlsn\":\"0/1\"}", "one-letter");
	expect_error("{\"action\":null}", "one-letter");
	/* Unknown and known-but-ignored actions are skipped; an update of
	 * the outbox is its own kind (table.op.invalid.behavior), of
	 * another table a skip. */
	expect_kind("{\"action\":\"X\"}", REC_SKIP);
	expect_kind("{\"action\":\"U\",\"xid\":1,\"lsn\":\"0/1\","
	            "\"schema\":\"public\",\"table\":\"outbox\",\"columns\":[]}",
	            REC_UPDATE);
	expect_kind("{\"action\":\"U\",\"xid\":1,\"lsn\":\"0/1\","
	            "\"schema\":\"public\",\"table\":\"orders\",\"columns\":[]}",
	            REC_SKIP);
	expect_kind("{\"action\":\"M\",\"xid\":null,\"timestamp\":null,"
	            "\"lsn\":\"0/1\",\"transactional\":false,\"prefix\":\"p\","
	            "\"content\":\"c\"}",
	            REC_MESSAGE);
}
END_TEST

/* Logical decoding messages carry the relay's heartbeats: prefix and
 * content come back unescaped, and the transactional flag is kept. */
START_TEST(test_message_records)
{
	struct record rec;
	char err[512] = "";

	ck_assert_int_eq(dec("{\"action\":\"M\",\"xid\":null,\"timestamp\":null,"
	                     "\"lsn\":\"0/CCC4E48\",\"transactional\":false,"
	                     "\"prefix\":\"outbox-relay-heartbeat\","
	                     "\"content\":\"17\\u00fc\"}", &rec, err, sizeof(err)), 0);
	ck_assert_int_eq(rec.kind, REC_MESSAGE);
	ck_assert(!rec.transactional);
	ck_assert_uint_eq(rec.lsn, 0xCCC4E48);
	ck_assert_int_eq(rec.xid, -1);
	ck_assert_str_eq(rec.msg_prefix.ptr, "outbox-relay-heartbeat");
	ck_assert_str_eq(rec.msg_content.ptr, "17\xc3\xbc");
	ck_assert_uint_eq(rec.msg_content.len, 4);
	record_clear(&rec);

	ck_assert_int_eq(dec("{\"action\":\"M\",\"xid\":4745,\"lsn\":\"0/1\","
	                     "\"transactional\":true,\"prefix\":\"outbox\","
	                     "\"content\":\"{}\"}", &rec, err, sizeof(err)), 0);
	ck_assert(rec.transactional);
	ck_assert_int_eq(rec.xid, 4745);
	record_clear(&rec);

	expect_error("{\"action\":\"M\",\"lsn\":\"0/1\",\"content\":\"c\"}",
	             "M record without \"prefix\"");
	expect_error("{\"action\":\"M\",\"lsn\":\"0/1\",\"prefix\":\"p\"}",
	             "M record without \"content\"");
}
END_TEST

START_TEST(test_bad_lsn)
{
	struct record rec;
	char err[256];

	expect_error("{\"action\":\"B\",\"xid\":5,\"lsn\":\"0/ZZ\","
	             "\"nextlsn\":\"0/20\"}",
	             "\"lsn\" is not an LSN (X/X) (xid 5)");
	expect_error("{\"action\":\"C\",\"xid\":5,\"lsn\":\"0/10\","
	             "\"nextlsn\":\"1/\"}",
	             "C record: \"nextlsn\" is not an LSN (X/X) (LSN 0/10, xid 5)");
	expect_error("{\"action\":\"C\",\"lsn\":\"0/10\",\"nextlsn\":16}",
	             "\"nextlsn\" is not an LSN");
	expect_error("{\"action\":\"C\",\"lsn\":\"123456789/0\","
	             "\"nextlsn\":\"0/1\"}",
	             "\"lsn\" is not an LSN");
	expect_error("{\"action\":\"B\",\"xid\":-1,\"nextlsn\":\"0/1\"}",
	             "\"xid\" is not a transaction id");
	expect_error("{\"action\":\"B\",\"xid\":\"7\",\"nextlsn\":\"0/1\"}",
	             "\"xid\" is not a transaction id");

	/* Uppercase and lowercase hex, both halves. */
	ck_assert_int_eq(dec("{\"action\":\"C\",\"xid\":4294967295,"
	                     "\"lsn\":\"FFFFFFFF/0\",\"nextlsn\":\"a/bC\"}",
	                     &rec, err, sizeof(err)),
	                 0);
	ck_assert_uint_eq(rec.lsn, UINT64_C(0xFFFFFFFF00000000));
	ck_assert_uint_eq(rec.nextlsn, UINT64_C(0xA000000BC));
	ck_assert_int_eq(rec.xid, 4294967295LL);
	ck_assert_int_eq(rec.commit_ts_us, 0);
	record_clear(&rec);
}
END_TEST

START_TEST(test_begin_commit_fields)
{
	struct record rec;
	char err[256];

	ck_assert_int_eq(dec("{\"action\":\"B\",\"xid\":4743,\"timestamp\":"
	                     "\"2026-11-29 20:09:17.5376+00\",\"lsn\":"
	                     "\"0/CCC4B38\",\"nextlsn\":\"0/CCC4B68\"}",
	                     &rec, err, sizeof(err)),
	                 0);
	ck_assert_int_eq(rec.kind, REC_BEGIN);
	ck_assert_int_eq(rec.xid, 4743);
	ck_assert_uint_eq(rec.lsn, 0xCCC4B38);
	ck_assert_uint_eq(rec.nextlsn, 0xCCC4B68);
	ck_assert_int_eq(rec.commit_ts_us, 1795982957537600LL);
	ck_assert_ptr_null(rec.root_);
	record_clear(&rec);

	/* B may lack nextlsn and timestamp (include-lsn/-timestamp off)... */
	ck_assert_int_eq(dec("{\"action\":\"B\",\"xid\":1}", &rec, err,
	                     sizeof(err)),
	                 0);
	ck_assert_uint_eq(rec.nextlsn, 0);
	ck_assert_uint_eq(rec.lsn, 0);
	ck_assert_int_eq(rec.commit_ts_us, 0);
	record_clear(&rec);
	/* ...C may not lack nextlsn: it is what gets confirmed. */
	expect_error("{\"action\":\"C\",\"xid\":5,\"lsn\":\"0/10\"}",
	             "C record without \"nextlsn\"");
	expect_error("{\"action\":\"C\",\"xid\":5,\"nextlsn\":null}",
	             "C record without \"nextlsn\" (include-lsn=1 missing?) "
	             "(xid 5)");
	expect_error("{\"action\":\"B\",\"timestamp\":\"yesterday\","
	             "\"nextlsn\":\"0/1\"}",
	             "B record: bad \"timestamp\"");
	expect_error("{\"action\":\"C\",\"timestamp\":17,\"nextlsn\":\"0/1\"}",
	             "bad \"timestamp\"");
	expect_kind("{\"action\":\"C\",\"timestamp\":null,\"nextlsn\":\"0/1\"}",
	            REC_COMMIT);
}
END_TEST

START_TEST(test_event_columns)
{
	struct record rec;
	char err[512];

	expect_error(ROW(GOOD_ID "," GOOD_KEY "," GOOD_TYPE "," GOOD_ROUTE),
	             "column \"payload\" is missing in public.outbox (event id "
	             "u-1, LSN 0/AB, xid 77)");
	expect_error(ROW(GOOD_KEY "," GOOD_TYPE "," GOOD_ROUTE "," GOOD_PAYLOAD),
	             "column \"id\" is missing");
	/* The type column may be NULL but must exist. */
	expect_error(ROW(GOOD_ID "," GOOD_KEY "," GOOD_ROUTE "," GOOD_PAYLOAD),
	             "column \"event_type\" is missing");
	expect_error(ROW(COL("id", "uuid", "null") "," GOOD_KEY "," GOOD_TYPE
	                 "," GOOD_ROUTE "," GOOD_PAYLOAD),
	             "column \"id\" is NULL in public.outbox (LSN 0/AB, xid 77)");
	expect_error(ROW(GOOD_ID "," GOOD_KEY "," GOOD_TYPE "," COL(
	                 "aggregate_type", "text", "null") "," GOOD_PAYLOAD),
	             "column \"aggregate_type\" is NULL");
	expect_error(ROW(GOOD_ID "," COL("aggregate_id", "boolean", "true") ","
	                 GOOD_TYPE "," GOOD_ROUTE "," GOOD_PAYLOAD),
	             "column \"aggregate_id\" must be a string or an integer, not "
	             "a boolean");
	expect_error(ROW(GOOD_ID "," COL("aggregate_id", "numeric", "1.5") ","
	                 GOOD_TYPE "," GOOD_ROUTE "," GOOD_PAYLOAD),
	             "not a real number");
	expect_error(ROW(GOOD_ID "," GOOD_KEY "," GOOD_TYPE "," GOOD_ROUTE
	                 ",{\"type\":\"jsonb\",\"value\":\"{}\"}"),
	             "has no \"name\"");
	expect_error(ROW(GOOD_ID "," GOOD_KEY "," GOOD_TYPE "," GOOD_ROUTE
	                 ",{\"name\":\"payload\",\"type\":\"jsonb\"}"),
	             "column \"payload\" has no \"value\"");
	expect_error("{\"action\":\"I\",\"xid\":77,\"schema\":\"public\","
	             "\"table\":\"outbox\"}",
	             "without a \"columns\" array");
	expect_error("{\"action\":\"I\",\"xid\":77,\"table\":\"outbox\","
	             "\"columns\":[]}",
	             "without \"schema\"");
	expect_error("{\"action\":\"I\",\"xid\":77,\"schema\":\"public\"}",
	             "without \"table\"");

	/* Another table, or the same name in another schema: skipped before
	 * its columns are even looked at. */
	expect_kind("{\"action\":\"I\",\"schema\":\"public\",\"table\":\"x\"}",
	            REC_SKIP);
	expect_kind("{\"action\":\"I\",\"schema\":\"audit\",\"table\":\"outbox\","
	            "\"columns\":[]}",
	            REC_SKIP);

	/* One column may serve as key and route; extra keys are ignored. */
	ck_assert_int_eq(dec(ROW(GOOD_ID "," COL("aggregate_id", "int8", "-42")
	                             "," COL("event_type", "int4", "7") ","
	                             COL("aggregate_type", "text", "\"R\"") ","
	                             "{\"name\":\"payload\",\"type\":\"json\","
	                             "\"value\":\"[1]\",\"typeoid\":114}"),
	                     &rec, err, sizeof(err)),
	                 0);
	ck_assert_int_eq(rec.kind, REC_EVENT);
	ck_assert_str_eq(rec.key.ptr, "-42");
	ck_assert_uint_eq(rec.key.len, 3);
	ck_assert_str_eq(rec.type.ptr, "7");
	ck_assert_str_eq(rec.id.ptr, "u-1");
	ck_assert_str_eq(rec.payload.ptr, "[1]");
	ck_assert_uint_eq(rec.lsn, 0xAB);
	ck_assert_int_eq(rec.xid, 77);
	ck_assert_ptr_nonnull(rec.root_);
	record_clear(&rec);
	ck_assert_ptr_null(rec.root_);
	ck_assert_ptr_null(rec.key.ptr);
	record_clear(&rec); /* twice is fine */
}
END_TEST

START_TEST(test_payload_kinds)
{
	struct record rec;
	char err[512];

	/* Non-JSON text, in varchar or text alike. */
	expect_error(ROW(GOOD_ID "," GOOD_KEY "," GOOD_TYPE "," GOOD_ROUTE ","
	                 COL("payload", "character varying(20)", "\"{oops\"")),
	             "column \"payload\" (type character varying(20)): payload is "
	             "not JSON");
	expect_error(ROW(GOOD_ID "," GOOD_KEY "," GOOD_TYPE "," GOOD_ROUTE ","
	                 COL("payload", "text", "\"\"")),
	             "payload is not JSON");
	expect_error(ROW(GOOD_ID "," GOOD_KEY "," GOOD_TYPE "," GOOD_ROUTE ","
	                 COL("payload", "text", "\"{} {}\"")),
	             "payload is not JSON");
	/* A bare number (numeric column) or boolean is not a payload. */
	expect_error(ROW(GOOD_ID "," GOOD_KEY "," GOOD_TYPE "," GOOD_ROUTE ","
	                 COL("payload", "numeric", "12.5")),
	             "column \"payload\" (type numeric) is not a string but a "
	             "JSON number");
	expect_error(ROW(GOOD_ID "," GOOD_KEY "," GOOD_TYPE "," GOOD_ROUTE ","
	                 COL("payload", "boolean", "false")),
	             "JSON boolean");
	expect_error(ROW(GOOD_ID "," GOOD_KEY "," GOOD_TYPE "," GOOD_ROUTE ","
	                 COL("payload", "jsonb", "null")),
	             "column \"payload\" is NULL");

	/* Text holding JSON scalars or long integers is accepted as is. */
	ck_assert_int_eq(dec(ROW(GOOD_ID "," GOOD_KEY "," GOOD_TYPE ","
	                         GOOD_ROUTE "," COL("payload", "text",
	                                            "\"123456789012345678901234\"")),
	                     &rec, err, sizeof(err)),
	                 0);
	ck_assert_str_eq(rec.payload.ptr, "123456789012345678901234");
	record_clear(&rec);
	/* json/jsonb are trusted: PostgreSQL validated them on insert. */
	ck_assert_int_eq(dec(ROW(GOOD_ID "," GOOD_KEY "," GOOD_TYPE ","
	                         GOOD_ROUTE "," COL("payload", "jsonb",
	                                            "\"not checked\"")),
	                     &rec, err, sizeof(err)),
	                 0);
	ck_assert_str_eq(rec.payload.ptr, "not checked");
	record_clear(&rec);
}
END_TEST

/* ---------------------------------------------------------- timestamps */

static int64_t ts(const char *s)
{
	int64_t us = -7;

	ck_assert_msg(record_parse_timestamp(s, &us) == 0, "rejected %s", s);
	return us;
}

START_TEST(test_timestamp_values)
{
	int64_t us;

	ck_assert_int_eq(ts("1970-01-01 00:00:00+00"), 0);
	ck_assert_int_eq(ts("2026-11-29 20:09:17.5376+00"), 1795982957537600LL);
	ck_assert_int_eq(ts("2026-11-29 20:09:17.5376+00:00"), 1795982957537600LL);
	ck_assert_int_eq(ts("2000-02-29 12:00:00.000001-03:30"), 951838200000001LL);
	ck_assert_int_eq(ts("1999-12-31 23:59:59.999999+05:45"), 946664099999999LL);
	ck_assert_int_eq(ts("1883-11-18 12:00:00+00:53:28"), -2717672008000000LL);
	ck_assert_int_eq(ts("1969-12-31 23:59:59.999999+00"), -1);
	ck_assert_int_eq(ts("2026-11-29 16:49:21.239208-03:30"),
	                 ts("2026-11-29 20:19:21.239208+00"));
	/* One to six fraction digits, trailing zeros dropped by PostgreSQL. */
	ck_assert_int_eq(ts("2001-01-01 00:00:00.5+00") % 1000000, 500000);
	ck_assert_int_eq(ts("2001-01-01 00:00:00.05+00") % 1000000, 50000);
	ck_assert_int_eq(ts("2001-01-01 00:00:00.123456+00") % 1000000, 123456);

	us = 42;
	ck_assert_int_eq(record_parse_timestamp("", &us), -1);
	ck_assert_int_eq(record_parse_timestamp("2026-11-29 20:09:17", &us), -1);
	ck_assert_int_eq(record_parse_timestamp("2026-11-29 20:09:17.+00", &us), -1);
	ck_assert_int_eq(record_parse_timestamp("2026-11-29 20:09:17.1234567+00",
	                                        &us), -1);
	ck_assert_int_eq(record_parse_timestamp("2026-11-29T20:09:17+00", &us), -1);
	ck_assert_int_eq(record_parse_timestamp("2026-11-29 20:09:17+00 ", &us), -1);
	ck_assert_int_eq(record_parse_timestamp("2026-11-29 20:09:17+0", &us), -1);
	ck_assert_int_eq(record_parse_timestamp("2026-11-29 20:09:17+00:", &us), -1);
	ck_assert_int_eq(record_parse_timestamp("2026-11-29 20:09:17+16", &us), -1);
	ck_assert_int_eq(record_parse_timestamp("2026-11-29 20:09:17Z", &us), -1);
	ck_assert_int_eq(record_parse_timestamp("2025-02-29 00:00:00+00", &us), -1);
	ck_assert_int_eq(record_parse_timestamp("1900-02-29 00:00:00+00", &us), -1);
	ck_assert_int_eq(record_parse_timestamp("2026-13-01 00:00:00+00", &us), -1);
	ck_assert_int_eq(record_parse_timestamp("2026-04-31 00:00:00+00", &us), -1);
	ck_assert_int_eq(record_parse_timestamp("2026-04-30 24:00:00+00", &us), -1);
	ck_assert_int_eq(record_parse_timestamp("2026-04-30 23:60:00+00", &us), -1);
	ck_assert_int_eq(record_parse_timestamp("infinity", &us), -1);
	ck_assert_int_eq(record_parse_timestamp("2026-11-29 20:09:17+00 BC", &us),
	                 -1);
	ck_assert_int_eq(us, 42); /* untouched on failure */
	ck_assert_int_eq(ts("2024-02-29 23:59:59+00"), 1709251199000000LL);
}
END_TEST

/* Property: agrees with the C library's timegm() (UTC, no zone files)
 * over random dates and offsets from 1901 to 2199. */
START_TEST(test_timestamp_against_timegm)
{
	srand(20261129);
	for (long i = 0; i < unit_rounds(20000); i++) {
		struct tm tm = { 0 };
		char s[64], off[16];
		int oh = rand() % 16, om = rand() % 60, sign = rand() % 2;
		int frac = rand() % 1000000;
		int64_t want;

		tm.tm_year = 1 + rand() % 299;
		tm.tm_mon = rand() % 12;
		tm.tm_mday = 1 + rand() % 28;
		tm.tm_hour = rand() % 24;
		tm.tm_min = rand() % 60;
		tm.tm_sec = rand() % 60;
		want = (int64_t)timegm(&tm);
		if (rand() % 3 == 0)
			snprintf(off, sizeof(off), "%c%02d", sign ? '-' : '+', oh);
		else
			snprintf(off, sizeof(off), "%c%02d:%02d", sign ? '-' : '+', oh,
			         om);
		if (off[3] != ':')
			om = 0;
		snprintf(s, sizeof(s), "%04d-%02d-%02d %02d:%02d:%02d.%06d%s",
		         tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		         tm.tm_min, tm.tm_sec, frac, off);
		want -= (sign ? -1 : 1) * (oh * 3600 + om * 60);
		ck_assert_msg(ts(s) == want * 1000000 + frac, "%s", s);
	}
}
END_TEST

/* ---------------------------------------------------------- add-tables */

START_TEST(test_add_tables_escaping)
{
	char out[64];

	ck_assert_int_eq(w2j_add_tables_value("public", "outbox", out,
	                                      sizeof(out)),
	                 13);
	ck_assert_str_eq(out, "public.outbox");
	/* Case is kept and no quotes are added: wal2json compares exactly. */
	ck_assert_int_eq(w2j_add_tables_value("public", "Outbox", out,
	                                      sizeof(out)),
	                 13);
	ck_assert_str_eq(out, "public.Outbox");
	ck_assert_int_gt(w2j_add_tables_value("my schema", "a'b,c.d*e\\f\tg",
	                                      out, sizeof(out)),
	                 0);
	ck_assert_str_eq(out, "my\\ schema.a\\'b\\,c\\.d\\*e\\\\f\\\tg");
	ck_assert_int_eq(w2j_add_tables_value("*", "*", out, sizeof(out)), 5);
	ck_assert_str_eq(out, "\\*.\\*");
	ck_assert_int_eq(w2j_add_tables_value("s", "\xc3\xbc", out, sizeof(out)),
	                 4);

	/* Exact fit works, one byte less does not. */
	ck_assert_int_eq(w2j_add_tables_value("ab", "c", out, 5), 4);
	ck_assert_str_eq(out, "ab.c");
	ck_assert_int_eq(w2j_add_tables_value("ab", "c", out, 4), -1);
	ck_assert_int_eq(w2j_add_tables_value("a", "b.c", out, 7), 6);
	ck_assert_int_eq(w2j_add_tables_value("a", "b.c", out, 6), -1);
	ck_assert_int_eq(w2j_add_tables_value("a", "b", out, 0), -1);
}
END_TEST

/* B and C lines take a scanner instead of jansson. A leading space is
 * valid JSON the scanner refuses, so decoding every line both ways must
 * give the same record, or the same error. */
static void assert_same_both_ways(const char *line, size_t len)
{
	struct record a, b;
	char ea[512] = "", eb[512] = "";
	char *spaced = malloc(len + 2);
	int ra, rb;

	ck_assert_ptr_nonnull(spaced);
	spaced[0] = ' ';
	memcpy(spaced + 1, line, len);
	spaced[len + 1] = '\0';
	ra = w2j_decode(line, len, &outbox_spec, &a, ea, sizeof(ea));
	rb = w2j_decode(spaced, len + 1, &outbox_spec, &b, eb, sizeof(eb));
	ck_assert_msg(ra == rb, "%s: %d (%s) vs %d (%s)", line, ra, ea, rb, eb);
	if (ra == 0) {
		ck_assert_int_eq(a.kind, b.kind);
		ck_assert_uint_eq(a.lsn, b.lsn);
		ck_assert_uint_eq(a.nextlsn, b.nextlsn);
		ck_assert_int_eq(a.xid, b.xid);
		ck_assert_int_eq(a.commit_ts_us, b.commit_ts_us);
		record_clear(&a);
		record_clear(&b);
	} else if (strncmp(ea, "malformed JSON", 14) != 0) {
		/* Syntax errors differ only in the reported column. */
		ck_assert_str_eq(ea, eb);
	}
	free(spaced);
}

START_TEST(test_fast_path_agrees)
{
	static const char *const names[] = { "outbox.jsonl", "all_changes.jsonl",
		                                 "prisma.jsonl", "odd_tables.jsonl" };
	static const char *const lines[] = {
		"{\"action\":\"B\",\"xid\":0,\"nextlsn\":\"0/0\"}",
		"{\"action\":\"B\"}",
		"{\"action\":\"B\"}\n",
		"{\"action\":\"C\",\"xid\":4294967295,\"lsn\":\"FFFFFFFF/FFFFFFFF\","
		"\"nextlsn\":\"0/1\"}",
		"{\"action\":\"C\",\"xid\":4294967296,\"nextlsn\":\"0/1\"}",
		"{\"action\":\"C\",\"xid\":01,\"nextlsn\":\"0/1\"}",
		"{\"action\":\"C\",\"xid\":-1,\"nextlsn\":\"0/1\"}",
		"{\"action\":\"C\",\"xid\":1.0,\"nextlsn\":\"0/1\"}",
		"{\"action\":\"C\",\"xid\":null,\"timestamp\":null,\"lsn\":null,"
		"\"nextlsn\":\"0/1\"}",
		"{\"action\":\"C\",\"nextlsn\":null}",
		"{\"action\":\"C\",\"nextlsn\":\"0/0\"}",
		"{\"action\":\"C\",\"lsn\":\"0/1\"}",
		"{\"action\":\"C\",\"lsn\":\"0/ZZ\",\"nextlsn\":\"0/1\"}",
		"{\"action\":\"C\",\"nextlsn\":\"0/1\",\"lsn\":\"0/2\",\"timestamp\":"
		"\"2026-01-01 00:00:00+00\",\"xid\":5}",
		"{\"action\":\"B\",\"timestamp\":\"2026-11-29 20:09:17+05:45\"}",
		"{\"action\":\"B\",\"timestamp\":\"bad\"}",
		"{\"action\":\"B\",\"timestamp\":\"2026-11-29 20:09:17\\u002b00\"}",
		"{\"action\":\"B\",\"xid\":1,\"xid\":2}",
		"{\"action\":\"B\",\"lsn\":\"0/1\",\"lsn\":\"0/1\"}",
		"{\"action\":\"B\",\"origin\":3,\"nextlsn\":\"0/1\"}",
		"{\"action\":\"B\",\"lsn\":\"0/1\" }",
		"{\"action\":\"B\",\"lsn\":\"0/1\"}}",
		"{\"action\":\"B\",\"lsn\":\"0/1\",}",
		"{\"action\":\"B\",\"lsn\":nullx}",
		"{\"action\":\"B\",\"xid\":12345678901}",
		"{\"action\":\"C\",\"nextlsn\":\"0/1\"",
	};
	struct fx f;

	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
		fx_load(&f, names[k]);
		for (size_t i = 0; i < f.n; i++)
			assert_same_both_ways(f.line[i], f.len[i]);
		fx_free(&f);
	}
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		assert_same_both_ways(lines[i], strlen(lines[i]));
}
END_TEST

/* ------------------------------------------- I scanner against jansson */

/* Test hooks of src/decode/ (w2j_int.h), deliberately not in w2j.h: the
 * scanners alone (w2j_scan.c; 1 when they leave the line to jansson) and
 * jansson alone (w2j.c). */
int w2j_decode_fast(const char *line, size_t len,
                    const struct record_spec *spec, struct record *rec);
int w2j_decode_slow(const char *line, size_t len,
                    const struct record_spec *spec, struct record *rec,
                    char *err, size_t errlen);

static const struct record_spec *const every_spec[] = {
	&outbox_spec, &prisma_spec, &odd_spec,     &bigint_spec,
	&text_spec,   &orders_spec, &shared_spec, &unicode_spec,
};
#define N_SPECS (sizeof(every_spec) / sizeof(every_spec[0]))

/* How the comparisons went, for the assertions that the scanner really
 * took lines (a scanner that always steps aside would agree too). */
struct agree_stats {
	size_t lines, fast, fast_events, fast_skips, errors;
};

static void assert_same_str(const struct rec_str *a, const struct rec_str *b,
                            const char *what, const char *line, size_t len)
{
	if (b->ptr == NULL) {
		ck_assert_msg(a->ptr == NULL && a->len == 0, "%s not NULL: %.*s",
		              what, (int)len, line);
		return;
	}
	ck_assert_msg(a->ptr != NULL, "%s is NULL: %.*s", what, (int)len, line);
	ck_assert_msg(a->len == b->len && memcmp(a->ptr, b->ptr, b->len) == 0,
	              "%s: '%.*s' (%zu) vs jansson '%.*s' (%zu) in %.*s", what,
	              (int)a->len, a->ptr, a->len, (int)b->len, b->ptr, b->len,
	              (int)len, line);
	ck_assert_msg(a->ptr[a->len] == '\0', "%s: not NUL-terminated", what);
}

static void assert_same_record(const struct record *a,
                               const struct record *b, const char *line,
                               size_t len)
{
	ck_assert_msg(a->kind == b->kind, "kind %d vs %d: %.*s", a->kind,
	              b->kind, (int)len, line);
	ck_assert_uint_eq(a->lsn, b->lsn);
	ck_assert_uint_eq(a->nextlsn, b->nextlsn);
	ck_assert_int_eq(a->xid, b->xid);
	ck_assert_int_eq(a->commit_ts_us, b->commit_ts_us);
	assert_same_str(&a->id, &b->id, "id", line, len);
	assert_same_str(&a->key, &b->key, "key", line, len);
	assert_same_str(&a->type, &b->type, "type", line, len);
	assert_same_str(&a->route, &b->route, "route", line, len);
	assert_same_str(&a->payload, &b->payload, "payload", line, len);
	assert_same_str(&a->msg_prefix, &b->msg_prefix, "msg_prefix", line, len);
	assert_same_str(&a->msg_content, &b->msg_content, "msg_content", line, len);
	ck_assert_int_eq(a->transactional, b->transactional);
	/* Only events and messages own something; the others are done with
	 * right away. */
	ck_assert((a->root_ != NULL) ==
	          (a->kind == REC_EVENT || a->kind == REC_MESSAGE));
}

/* Decodes line with spec three ways, w2j_decode(), jansson alone and the
 * scanners alone, and asserts that they agree: same return code, same
 * record field by field and byte for byte, same error text. */
static void paths_agree(const char *line, size_t len,
                        const struct record_spec *spec, struct agree_stats *st)
{
	struct record a, b, f;
	char ea[512] = "untouched", eb[512] = "untouched";
	int ra, rb, rf;

	ra = w2j_decode(line, len, spec, &a, ea, sizeof(ea));
	rb = w2j_decode_slow(line, len, spec, &b, eb, sizeof(eb));
	rf = w2j_decode_fast(line, len, spec, &f);
	ck_assert_msg(ra == rb, "rc %d (%s) vs jansson %d (%s): %.*s", ra, ea,
	              rb, eb, (int)len, line);
	/* On success neither writes a message. */
	ck_assert_msg(strcmp(ea, eb) == 0, "'%s' vs jansson '%s': %.*s", ea, eb,
	              (int)len, line);
	st->lines++;
	if (ra == 0)
		assert_same_record(&a, &b, line, len);
	else
		st->errors++;
	if (rf == 0) {
		ck_assert_msg(rb == 0, "scanner took a line jansson refuses (%s): "
		              "%.*s", eb, (int)len, line);
		assert_same_record(&f, &b, line, len);
		st->fast++;
		st->fast_events += f.kind == REC_EVENT;
		st->fast_skips += f.kind == REC_SKIP;
	} else {
		ck_assert_int_eq(rf, 1);
		ck_assert_ptr_null(f.root_); /* stepping aside leaves nothing */
		ck_assert_int_eq(f.xid, -1);
	}
	if (ra == 0)
		record_clear(&a);
	if (rb == 0)
		record_clear(&b);
	if (rf == 0)
		record_clear(&f);
}

static void paths_agree_all_specs(const char *line, size_t len,
                                  struct agree_stats *st)
{
	for (size_t k = 0; k < N_SPECS; k++)
		paths_agree(line, len, every_spec[k], st);
}

static bool is_insert(const char *line)
{
	return strncmp(line, "{\"action\":\"I\"", 13) == 0;
}

START_TEST(test_scanner_fixtures)
{
	static const char *const names[] = { "outbox.jsonl", "all_changes.jsonl",
		                                 "prisma.jsonl", "odd_tables.jsonl" };
	struct agree_stats st = { 0 };
	size_t inserts = 0, fell_back = 0;
	struct fx f;

	for (size_t n = 0; n < sizeof(names) / sizeof(names[0]); n++) {
		fx_load(&f, names[n]);
		for (size_t i = 0; i < f.n; i++) {
			for (size_t k = 0; k < N_SPECS; k++) {
				struct agree_stats one = { 0 };

				paths_agree(f.line[i], f.len[i], every_spec[k], &one);
				st.lines += one.lines;
				st.fast += one.fast;
				st.fast_events += one.fast_events;
				st.fast_skips += one.fast_skips;
				st.errors += one.errors;
				if (!is_insert(f.line[i]))
					continue;
				inserts++;
				/* Every insert that decodes takes the scanner, except the
				 * orders row with a numeric beyond 64 bits. */
				if (one.errors == 0 && one.fast == 0) {
					ck_assert_msg(strstr(f.line[i],
					                     "123456789012345678901234567890}"),
					              "scanner stepped aside: %s", f.line[i]);
					fell_back++;
				}
			}
		}
		fx_free(&f);
	}
	/* outbox.jsonl: 35 events under outbox_spec and shared_spec alike;
	 * all_changes.jsonl: the same plus 2 "Outbox", 1 odd, 3 bigint and
	 * 1 text event; prisma.jsonl: 2; odd_tables.jsonl: 1 + 3 + 1. */
	ck_assert_uint_eq(st.fast_events, 35 * 2 + (35 * 2 + 2 + 1 + 3 + 1) + 2 +
	                                          (1 + 3 + 1));
	ck_assert_uint_gt(st.fast_skips, 500);
	ck_assert_uint_eq(fell_back, N_SPECS - 1); /* orders_spec: an error */
	ck_assert_uint_gt(inserts, 100);
}
END_TEST

/* An outbox insert the way wal2json prints it, with the given columns. */
#define IROW_ST(schema, table, cols)                                        \
	"{\"action\":\"I\",\"xid\":77,\"timestamp\":\"2026-11-29 "              \
	"20:09:17.5376+00\",\"lsn\":\"0/AB\",\"schema\":\"" schema "\","        \
	"\"table\":\"" table "\",\"columns\":[" cols "]}"
#define IROW(cols) IROW_ST("public", "outbox", cols)
#define GOOD5 GOOD_ID "," GOOD_ROUTE "," GOOD_KEY "," GOOD_TYPE "," GOOD_PAYLOAD
#define CREATED COL("created_at", "timestamp with time zone",               \
                    "\"2026-11-29 20:09:17.535415+00\"")

/* Values of every kind, as they would stand after "value": -- valid and
 * not, as strings, numbers and literals. */
static const char *const edge_values[] = {
	/* strings, escapes of every kind */
	"\"\"", "\"plain\"", "\"q\\\"q\"", "\"b\\\\s\"", "\"s\\/l\"",
	"\"\\b\\f\\n\\r\\t\"", "\"\\u0041\\u00e9\\u20AC\\uFFFF\\uffFe\"",
	"\"\\ud83d\\ude00\"", "\"x\\uD83D\\uDE00x\"",
	"\"\\ud800\\udc00\\udbff\\udfff\"", "\"\\u007f\\u0080\\u07ff\\u0800\"",
	"\"\\u0001\\u001f\\u0020\"", "\"\\\\u0041\"", "\"\\\\\\\\\"",
	"\"\\\"\\\"\\\"\"", "\"end\\\\\"",
	/* escapes jansson refuses */
	"\"\\u0000\"", "\"a\\u0000b\"", "\"\\ud83d\"", "\"\\ud83dx\"",
	"\"\\ud83d\\u0041\"", "\"\\ud83d\\n\"", "\"\\ud83d\\ud83d\"",
	"\"\\ude00\"", "\"\\ude00\\ud83d\"", "\"\\udc00\"", "\"\\udfff\"",
	"\"\\udbff\"", "\"\\ud83d\\ue000\"", "\"\\ud83d\\udbff\"",
	"\"\\ud83d\\ndc00\"", "\"\\ud83d\\\\udc00\"", "\"\\ud83d\\\"",
	"\"\\u12\"", "\"\\u12G4\"",
	"\"\\x\"", "\"\\'\"", "\"\\a\"", "\"\\U0041\"", "\"\\\"", "\"\\",
	"\"\\u", "\"\\ud83d\\u", "\"abc",
	"\"\\ud7ff\\ue000\"",
	/* raw UTF-8, good and bad */
	"\"\xc3\xbc\"", "\"\xe2\x82\xac\"", "\"\xf0\x9f\x98\x80\"",
	"\"\xf4\x8f\xbf\xbf\"", "\"\xc2\x80\xdf\xbf\xe0\xa0\x80\xef\xbf\xbf\"",
	"\"\x7f\"", "\"\xc0\x80\"", "\"\xc1\xbf\"", "\"\xe0\x80\x80\"",
	"\"\xe0\x9f\xbf\"", "\"\xed\xa0\x80\"", "\"\xed\xbf\xbf\"",
	"\"\xf0\x8f\xbf\xbf\"", "\"\xf4\x90\x80\x80\"", "\"\xf5\x80\x80\x80\"",
	"\"\xf8\x88\x80\x80\x80\"", "\"\x80\"", "\"\xbf\"", "\"\xe2\x82\"",
	"\"\xe2\x82x\"", "\"\xf0\x9f\x98\"", "\"\xff\"", "\"\xfe\"",
	/* controls */
	"\"a\x01b\"", "\"a\tb\"", "\"a\nb\"", "\"\x1f\"", "\"a\rb\"",
	/* payload texts */
	"\"{\\\"a\\\": 1}\"", "\"[1, 2]\"", "\"not json {\"",
	"\"  {\\\"k\\\": \\\"v\\\"}  \"", "\"123456789012345678901234\"",
	"\"1e999\"", "\"\\\"str\\\"\"", "\"{\\\"x\\\":\\\"\\\\u0000\\\"}\"",
	"\"{\\\"a\\\":1} {}\"", "\"\\t[]\\n\"", "\"{\\\"a\\\":\\\"\\\\ud83d\\\"}\"",
	"\"nan\"", "\"-\"", "\"{\\\"e\\\":\\\"\\u00e9\\\"}\"",
	/* numbers */
	"0", "-0", "1", "-1", "42", "9223372036854775807", "9223372036854775808",
	"-9223372036854775808", "-9223372036854775809", "18446744073709551615",
	"18446744073709551616", "123456789012345678901234567890", "1.0", "-1.5",
	"0.0", "-0.0", "1e5", "1E+5", "1e-5", "-1.5e-3", "1e308", "1e309",
	"9e307", "0.5e309", "1.7976931348623157e308", "1.8e308", "1e-400",
	"1e999", "-1e999", "1e0000007", "2E-0007", "123456789e300", "01", "-01",
	"00", "-", "1.", ".5", "1e", "1e+", "+1", "1.e5", "0x10", "1_0", "- 1",
	"1 ", "Infinity", "NaN",
	/* literals and containers */
	"null", "true", "false", "nul", "nullx", "tru", "True", "NULL", "fals",
	"falsey", "{}", "[]", "[1]", "{\"a\":1}", "", " 1",
};

START_TEST(test_scanner_edge_values)
{
	static const char *const types[] = { "jsonb", "text", "json", "int8" };
	struct agree_stats st = { 0 };
	char line[1024];

	for (size_t v = 0; v < sizeof(edge_values) / sizeof(edge_values[0]);
	     v++) {
		const char *val = edge_values[v];

		/* In each of the five roles, under each type. */
		for (int slot = 0; slot < 5; slot++) {
			for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
				static const char *const names[] = { "id", "aggregate_id",
					                                 "event_type",
					                                 "aggregate_type",
					                                 "payload" };
				const char *vals[5] = { "\"u-1\"", "\"k-1\"", "\"T\"",
					                    "\"R\"", "\"{}\"" };
				int n;

				vals[slot] = val;
				n = snprintf(line, sizeof(line),
				             "{\"action\":\"I\",\"xid\":77,\"timestamp\":"
				             "\"2026-11-29 20:09:17.5376+00\",\"lsn\":\"0/AB\","
				             "\"schema\":\"public\",\"table\":\"outbox\","
				             "\"columns\":[");
				for (int c = 0; c < 5; c++)
					n += snprintf(line + n, sizeof(line) - (size_t)n,
					              "{\"name\":\"%s\",\"type\":\"%s\","
					              "\"value\":%s},",
					              names[c],
					              c == slot ? types[t]
					                        : c == 4 ? "jsonb" : "text",
					              vals[c]);
				n += snprintf(line + n, sizeof(line) - (size_t)n,
				              "%s]}", CREATED);
				ck_assert_int_lt(n, (int)sizeof(line));
				paths_agree_all_specs(line, (size_t)n, &st);
			}
		}
		/* In a column nobody asked for, and in a row of another table. */
		snprintf(line, sizeof(line),
		         IROW(GOOD5 ",{\"name\":\"extra\",\"type\":\"x\","
		                    "\"value\":%s}"),
		         val);
		paths_agree_all_specs(line, strlen(line), &st);
		snprintf(line, sizeof(line),
		         IROW_ST("public", "orders",
		                 "{\"name\":\"amount\",\"type\":\"numeric\","
		                 "\"value\":%s}"),
		         val);
		paths_agree_all_specs(line, strlen(line), &st);
		/* As a name, a type, a schema and a table. */
		if (val[0] == '"') {
			snprintf(line, sizeof(line),
			         IROW(GOOD5 ",{\"name\":%s,\"type\":\"x\",\"value\":1}"),
			         val);
			paths_agree_all_specs(line, strlen(line), &st);
			snprintf(line, sizeof(line),
			         IROW(GOOD_ID "," GOOD_ROUTE "," GOOD_KEY "," GOOD_TYPE
			              ",{\"name\":\"payload\",\"type\":%s,\"value\":"
			              "\"{}\"}"),
			         val);
			paths_agree_all_specs(line, strlen(line), &st);
			snprintf(line, sizeof(line),
			         "{\"action\":\"I\",\"xid\":77,\"timestamp\":\"2026-11-29 "
			         "20:09:17+00\",\"lsn\":\"0/AB\",\"schema\":%s,\"table\":"
			         "%s,\"columns\":[" GOOD5 "]}",
			         val, val);
			paths_agree_all_specs(line, strlen(line), &st);
		}
	}
	/* The scanner took many of them, and jansson refused many. */
	ck_assert_uint_gt(st.fast_events, 1000);
	ck_assert_uint_gt(st.fast_skips, 1000);
	ck_assert_uint_gt(st.errors, 1000);
}
END_TEST

/* Lines of other shapes: the scanner must step aside, or agree. */
static const char *const edge_lines[] = {
	IROW(GOOD5),
	IROW(GOOD5 "," CREATED),
	IROW(CREATED "," GOOD_PAYLOAD "," GOOD_TYPE "," GOOD_KEY "," GOOD_ROUTE
	     "," GOOD_ID),
	/* keys in other orders */
	"{\"action\":\"I\",\"timestamp\":\"2026-11-29 20:09:17+00\",\"xid\":77,"
	"\"lsn\":\"0/AB\",\"schema\":\"public\",\"table\":\"outbox\","
	"\"columns\":[" GOOD5 "]}",
	"{\"xid\":77,\"action\":\"I\",\"timestamp\":\"2026-11-29 20:09:17+00\","
	"\"lsn\":\"0/AB\",\"schema\":\"public\",\"table\":\"outbox\","
	"\"columns\":[" GOOD5 "]}",
	"{\"action\":\"I\",\"xid\":77,\"timestamp\":\"2026-11-29 20:09:17+00\","
	"\"lsn\":\"0/AB\",\"table\":\"outbox\",\"schema\":\"public\","
	"\"columns\":[" GOOD5 "]}",
	"{\"action\":\"I\",\"xid\":77,\"timestamp\":\"2026-11-29 20:09:17+00\","
	"\"lsn\":\"0/AB\",\"columns\":[" GOOD5 "],\"schema\":\"public\","
	"\"table\":\"outbox\"}",
	IROW(GOOD_ID "," GOOD_ROUTE "," GOOD_KEY "," GOOD_TYPE
	     ",{\"type\":\"jsonb\",\"name\":\"payload\",\"value\":\"{}\"}"),
	IROW(GOOD_ID "," GOOD_ROUTE "," GOOD_KEY "," GOOD_TYPE
	     ",{\"value\":\"{}\",\"name\":\"payload\",\"type\":\"jsonb\"}"),
	/* extra members: include-pk, include-type-oids, include-not-null */
	"{\"action\":\"I\",\"xid\":77,\"timestamp\":\"2026-11-29 20:09:17+00\","
	"\"lsn\":\"0/AB\",\"schema\":\"public\",\"table\":\"outbox\","
	"\"columns\":[" GOOD5 "],\"pk\":[{\"name\":\"id\",\"type\":\"uuid\"}]}",
	IROW(GOOD_ID "," GOOD_ROUTE "," GOOD_KEY "," GOOD_TYPE
	     ",{\"name\":\"payload\",\"type\":\"jsonb\",\"typeoid\":3802,"
	     "\"value\":\"{}\"}"),
	IROW(GOOD_ID "," GOOD_ROUTE "," GOOD_KEY "," GOOD_TYPE
	     ",{\"name\":\"payload\",\"type\":\"jsonb\",\"value\":\"{}\","
	     "\"optional\":false}"),
	"{\"action\":\"I\",\"origin\":1,\"xid\":77,\"timestamp\":\"2026-11-29 "
	"20:09:17+00\",\"lsn\":\"0/AB\",\"schema\":\"public\",\"table\":"
	"\"outbox\",\"columns\":[" GOOD5 "]}",
	/* members missing or null */
	"{\"action\":\"I\",\"xid\":77,\"lsn\":\"0/AB\",\"schema\":\"public\","
	"\"table\":\"outbox\",\"columns\":[" GOOD5 "]}",
	"{\"action\":\"I\",\"timestamp\":\"2026-11-29 20:09:17+00\",\"lsn\":"
	"\"0/AB\",\"schema\":\"public\",\"table\":\"outbox\",\"columns\":["
	GOOD5 "]}",
	"{\"action\":\"I\",\"xid\":77,\"timestamp\":\"2026-11-29 20:09:17+00\","
	"\"schema\":\"public\",\"table\":\"outbox\",\"columns\":[" GOOD5 "]}",
	"{\"action\":\"I\",\"xid\":null,\"timestamp\":\"2026-11-29 20:09:17+00\","
	"\"lsn\":\"0/AB\",\"schema\":\"public\",\"table\":\"outbox\","
	"\"columns\":[" GOOD5 "]}",
	"{\"action\":\"I\",\"xid\":77,\"timestamp\":null,\"lsn\":\"0/AB\","
	"\"schema\":\"public\",\"table\":\"outbox\",\"columns\":[" GOOD5 "]}",
	"{\"action\":\"I\",\"xid\":77,\"timestamp\":\"2026-11-29 20:09:17+00\","
	"\"lsn\":null,\"schema\":\"public\",\"table\":\"outbox\",\"columns\":["
	GOOD5 "]}",
	"{\"action\":\"I\",\"xid\":77,\"timestamp\":\"2026-11-29 20:09:17+00\","
	"\"lsn\":\"0/AB\",\"table\":\"outbox\",\"columns\":[" GOOD5 "]}",
	"{\"action\":\"I\",\"xid\":77,\"timestamp\":\"2026-11-29 20:09:17+00\","
	"\"lsn\":\"0/AB\",\"schema\":\"public\",\"columns\":[" GOOD5 "]}",
	"{\"action\":\"I\",\"xid\":77,\"timestamp\":\"2026-11-29 20:09:17+00\","
	"\"lsn\":\"0/AB\",\"schema\":\"public\",\"table\":\"outbox\"}",
	"{\"action\":\"I\",\"xid\":77,\"timestamp\":\"2026-11-29 20:09:17+00\","
	"\"lsn\":\"0/AB\",\"schema\":null,\"table\":\"outbox\",\"columns\":[]}",
	"{\"action\":\"I\",\"xid\":77,\"timestamp\":\"2026-11-29 20:09:17+00\","
	"\"lsn\":\"0/AB\",\"schema\":\"public\",\"table\":5,\"columns\":[]}",
	"{\"action\":\"I\",\"xid\":77,\"timestamp\":\"2026-11-29 20:09:17+00\","
	"\"lsn\":\"0/AB\",\"schema\":\"public\",\"table\":\"outbox\","
	"\"columns\":{}}",
	"{\"action\":\"I\",\"xid\":77,\"timestamp\":\"2026-11-29 20:09:17+00\","
	"\"lsn\":\"0/AB\",\"schema\":\"public\",\"table\":\"outbox\","
	"\"columns\":null}",
	/* whitespace, which wal2json never writes but JSON allows */
	" " IROW(GOOD5), IROW(GOOD5) " ", IROW(GOOD5) "\n", IROW(GOOD5) "\r\n",
	IROW(GOOD5) "\n\n", IROW(GOOD5) "\t", "\n" IROW(GOOD5),
	"{ \"action\":\"I\",\"xid\":77,\"timestamp\":\"2026-11-29 20:09:17+00\","
	"\"lsn\":\"0/AB\",\"schema\":\"public\",\"table\":\"outbox\","
	"\"columns\":[" GOOD5 "]}",
	"{\"action\": \"I\", \"xid\": 77, \"timestamp\": \"2026-11-29 20:09:17+00\""
	", \"lsn\": \"0/AB\", \"schema\": \"public\", \"table\": \"outbox\", "
	"\"columns\": [" GOOD5 "]}",
	IROW(GOOD_ID " , " GOOD_ROUTE "," GOOD_KEY "," GOOD_TYPE "," GOOD_PAYLOAD),
	IROW(" " GOOD5), IROW(GOOD5 " "), IROW(" "), IROW("\n"),
	IROW(GOOD_ID "," GOOD_ROUTE "," GOOD_KEY "," GOOD_TYPE
	     ",{\"name\":\"payload\",\"type\":\"jsonb\",\"value\": \"{}\"}"),
	IROW(GOOD_ID "," GOOD_ROUTE "," GOOD_KEY "," GOOD_TYPE
	     ",{\"name\":\"payload\",\"type\":\"jsonb\",\"value\":\"{}\" }"),
	/* duplicates: jansson refuses them; a repeated column name is fine,
	 * its first column wins */
	"{\"action\":\"I\",\"xid\":77,\"xid\":77,\"timestamp\":\"2026-11-29 "
	"20:09:17+00\",\"lsn\":\"0/AB\",\"schema\":\"public\",\"table\":"
	"\"outbox\",\"columns\":[" GOOD5 "]}",
	IROW(GOOD_ID "," GOOD_ROUTE "," GOOD_KEY "," GOOD_TYPE
	     ",{\"name\":\"payload\",\"name\":\"payload\",\"type\":\"jsonb\","
	     "\"value\":\"{}\"}"),
	IROW(GOOD5 "," COL("payload", "jsonb", "\"[2]\"") ","
	     COL("id", "uuid", "\"u-2\"")),
	IROW(GOOD5 "," COL("payload", "jsonb", "null")),
	IROW(COL("payload", "jsonb", "null") "," GOOD5),
	/* names that match only once unescaped, and ones that do not */
	IROW(GOOD_ID "," GOOD_ROUTE "," GOOD_KEY "," GOOD_TYPE ","
	     COL("pay\\u006coad", "jsonb", "\"[\\u0031]\"")),
	IROW(GOOD_ID "," GOOD_ROUTE "," GOOD_KEY "," GOOD_TYPE ","
	     COL("p\\u0061yload", "json\\u0062", "\"not json\"")),
	IROW(GOOD_ID "," GOOD_ROUTE "," GOOD_KEY "," GOOD_TYPE ","
	     COL("payload", "JSONB", "\"not json\"")),
	IROW(GOOD_ID "," GOOD_ROUTE "," GOOD_KEY "," GOOD_TYPE ","
	     COL("payload", "jsonb ", "\"not json\"")),
	IROW(GOOD_ID "," GOOD_ROUTE "," GOOD_KEY "," GOOD_TYPE ","
	     COL("payload", "jso", "\"{}\"")),
	IROW(GOOD_ID "," GOOD_ROUTE "," GOOD_KEY "," GOOD_TYPE ","
	     COL("payload", "", "\"{}\"")),
	IROW(GOOD_ID "," GOOD_ROUTE "," GOOD_KEY "," GOOD_TYPE ","
	     COL("Payload", "jsonb", "\"{}\"")),
	IROW(GOOD_ID "," GOOD_ROUTE "," GOOD_KEY "," GOOD_TYPE ","
	     COL("payload\\u0000", "jsonb", "\"{}\"")),
	IROW(GOOD_ID "," GOOD_ROUTE "," GOOD_KEY "," GOOD_TYPE ","
	     "{\"n\\u0061me\":\"payload\",\"type\":\"jsonb\",\"value\":\"{}\"}"),
	IROW_ST("pub\\u006cic", "out\\u0062ox", GOOD5),
	IROW_ST("public", "out\\/box", GOOD5),
	IROW_ST("public", "Outbox", GOOD5),
	IROW_ST("public", "outbox ", GOOD5),
	IROW_ST("public", "outbo", GOOD5),
	IROW_ST("publi", "outbox", GOOD5),
	IROW_ST("", "", GOOD5),
	IROW_ST("public", "we\\\"ird tbl,v.2",
	        COL("ID", "uuid", "\"u\"") "," COL("agg\\\"id", "text", "\"k\"")
	        "," COL("event.type", "text", "\"t\"") ","
	        COL("Agg Type", "text", "\"r\"") ","
	        COL("pay load", "json", "\"{}\"")),
	IROW_ST("sch\\u00e9ma", "t\\ud83d\\ude00\\/\\\"x\\\"",
	        COL("\\u00fc", "uuid", "\"u\"") "," COL("k\\ty", "text", "\"k\"")
	        "," COL("t\\\\y", "text", "\"t\"") ","
	        COL("r\\/o", "text", "\"r\"") ","
	        COL("p\\u20ac", "jsonb", "\"{}\"")),
	IROW_ST("sch\xc3\xa9ma", "t\xf0\x9f\x98\x80/\\\"x\\\"",
	        COL("\xc3\xbc", "uuid", "\"u\"") "," COL("k\\ty", "text", "\"k\"")
	        "," COL("t\\\\y", "text", "\"t\"") "," COL("r/o", "text", "\"r\"")
	        "," COL("p\xe2\x82\xac", "text", "\"[]\"")),
	/* columns arrays of odd shapes */
	IROW(""), IROW_ST("public", "other", ""), IROW(GOOD5 ","),
	IROW("," GOOD5), IROW(GOOD5 ",,"), IROW(GOOD5 ",1"), IROW(GOOD5 ",null"),
	IROW(GOOD5 ",[]"), IROW(GOOD5 ",{}"), IROW_ST("public", "other", "{}"),
	IROW_ST("public", "other", "1"), IROW_ST("public", "other", "[]"),
	/* the end of the line */
	IROW(GOOD5) "}", IROW(GOOD5) " x", IROW(GOOD5) ",", IROW(GOOD5) "\n{}",
	IROW(GOOD5) "\r", IROW(GOOD5) "\n\r\n",
	"{\"action\":\"I\",\"xid\":77,\"timestamp\":\"2026-11-29 20:09:17+00\","
	"\"lsn\":\"0/AB\",\"schema\":\"public\",\"table\":\"outbox\","
	"\"columns\":[" GOOD5 "]",
	"{\"action\":\"I\",\"xid\":77,\"timestamp\":\"2026-11-29 20:09:17+00\","
	"\"lsn\":\"0/AB\",\"schema\":\"public\",\"table\":\"outbox\","
	"\"columns\":[" GOOD5 "}",
	/* action */
	"{\"action\":\"i\",\"xid\":77,\"timestamp\":\"2026-11-29 20:09:17+00\","
	"\"lsn\":\"0/AB\",\"schema\":\"public\",\"table\":\"outbox\","
	"\"columns\":[" GOOD5 "]}",
	"{\"action\":\"\\u0049\",\"xid\":77,\"timestamp\":\"2026-11-29 "
	"20:09:17+00\",\"lsn\":\"0/AB\",\"schema\":\"public\",\"table\":"
	"\"outbox\",\"columns\":[" GOOD5 "]}",
	"{\"action\":\"II\",\"xid\":77,\"timestamp\":\"2026-11-29 20:09:17+00\","
	"\"lsn\":\"0/AB\",\"schema\":\"public\",\"table\":\"outbox\","
	"\"columns\":[" GOOD5 "]}",
	"{\"action\":\"U\",\"xid\":77,\"timestamp\":\"2026-11-29 20:09:17+00\","
	"\"lsn\":\"0/AB\",\"schema\":\"public\",\"table\":\"outbox\","
	"\"columns\":[" GOOD5 "],\"identity\":[" GOOD_ID "]}",
	"{\"action\":\"I\"}", "{\"action\":\"I\",\"xid\":77}",
	"{\"action\":\"I\",\"xid\":", "{\"action\":\"I", "{\"action\":\"",
};

/* The same line with xid, lsn and timestamp replaced. */
static const char *const edge_heads[][3] = {
	{ "0", "0/0", "2026-11-29 20:09:17+00" },
	{ "4294967295", "FFFFFFFF/FFFFFFFF", "1970-01-01 00:00:00+00" },
	{ "4294967296", "0/1", "2026-11-29 20:09:17+00" },
	{ "01", "0/1", "2026-11-29 20:09:17+00" },
	{ "-1", "0/1", "2026-11-29 20:09:17+00" },
	{ "1.0", "0/1", "2026-11-29 20:09:17+00" },
	{ "7e1", "0/1", "2026-11-29 20:09:17+00" },
	{ "\"77\"", "0/1", "2026-11-29 20:09:17+00" },
	{ "12345678901", "0/1", "2026-11-29 20:09:17+00" },
	{ "77", "1/", "2026-11-29 20:09:17+00" },
	{ "77", "0/ZZ", "2026-11-29 20:09:17+00" },
	{ "77", "0\\/AB", "2026-11-29 20:09:17+00" },
	{ "77", "123456789/0", "2026-11-29 20:09:17+00" },
	{ "77", "", "2026-11-29 20:09:17+00" },
	{ "77", "0/AB", "" },
	{ "77", "0/AB", "bad" },
	{ "77", "0/AB", "2026-11-29 20:09:17\\u002b00" },
	{ "77", "0/AB", "2026-11-29 20:09:17.123456-03:30" },
	{ "77", "0/AB", "2026-11-29 20:09:17.1234567+00" },
	{ "77", "0/AB", "2026-11-29 20:09:17.123456+05:45:00" },
	{ "77", "0/AB", "2026-11-29 20:09:17.123456+05:45:00 and then some "
	                "more text to pass sixty-four bytes" },
	{ "77", "0/AB", "2026-02-30 20:09:17+00" },
};

START_TEST(test_scanner_edge_lines)
{
	static const char body[] = ",\"schema\":\"public\",\"table\":\"outbox\","
	                           "\"columns\":[" GOOD5 "]}";
	static const char other[] = ",\"schema\":\"public\",\"table\":\"orders\","
	                            "\"columns\":[" GOOD5 "]}";
	struct agree_stats st = { 0 };
	char line[1024];

	for (size_t i = 0; i < sizeof(edge_lines) / sizeof(edge_lines[0]); i++)
		paths_agree_all_specs(edge_lines[i], strlen(edge_lines[i]), &st);
	/* The plain shape is the scanner's. */
	ck_assert_uint_gt(st.fast_events, 10);
	for (size_t i = 0; i < sizeof(edge_heads) / sizeof(edge_heads[0]); i++) {
		for (int b = 0; b < 2; b++) {
			int n = snprintf(line, sizeof(line),
			                 "{\"action\":\"I\",\"xid\":%s,\"timestamp\":"
			                 "\"%s\",\"lsn\":\"%s\"%s",
			                 edge_heads[i][0], edge_heads[i][2],
			                 edge_heads[i][1], b ? other : body);
			paths_agree_all_specs(line, (size_t)n, &st);
		}
	}
}
END_TEST

/* What wal2json really sends must take the scanner, or the relay is no
 * faster: stepping aside is always correct, so the differential tests
 * alone would not notice a scanner that refuses too much. */
START_TEST(test_scanner_takes_wal2json_shapes)
{
	static const char *const lines[] = {
		IROW(GOOD5),
		IROW(GOOD5 "," CREATED) "\n",
		IROW(GOOD5) "\r\n",
		/* json/jsonb are trusted without a parse, as on the slow path */
		IROW(GOOD_ID "," GOOD_KEY "," GOOD_TYPE "," GOOD_ROUTE ","
		     COL("payload", "jsonb", "\"not json {\"")),
		IROW(GOOD_ID "," GOOD_KEY "," GOOD_TYPE "," GOOD_ROUTE ","
		     COL("payload", "json", "\"{ \\\"b\\\" : 1 }\"")),
		IROW(GOOD_ID "," GOOD_KEY "," GOOD_TYPE "," GOOD_ROUTE ","
		     COL("payload", "text", "\"  [1, 2.5e3, null]  \"")),
		/* every escape, raw UTF-8 of each length */
		IROW(GOOD_ID "," GOOD_TYPE "," GOOD_ROUTE ","
		     COL("aggregate_id", "text",
		         "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\u20ac\\ud83d\\ude00\"")
		     "," COL("payload", "jsonb",
		             "\"\xc3\xbc\xe2\x82\xac\xf0\x9f\x98\x80\x7f\"")),
		/* integers, a NULL type, columns nobody asked for */
		IROW(COL("id", "int8", "-9223372036854775808") ","
		     COL("aggregate_id", "int8", "9223372036854775807") ","
		     COL("event_type", "text", "null") ","
		     COL("aggregate_type", "int4", "0") ","
		     COL("amount", "numeric", "-12.5e-3") ","
		     COL("flag", "boolean", "true") "," COL("off", "boolean", "false")
		     "," COL("none", "text", "null") "," GOOD_PAYLOAD),
		/* names that match only once unescaped */
		IROW_ST("pub\\u006cic", "out\\u0062ox",
		        GOOD_ID "," GOOD_KEY "," GOOD_TYPE "," GOOD_ROUTE ","
		        COL("pay\\u006coad", "json\\u0062", "\"{\"")),
		/* another table, numbers of every shape */
		IROW_ST("public", "orders",
		        COL("amount", "numeric", "9.99e307") ","
		        COL("b", "numeric", "-0.0") "," COL("c", "int8", "-0") ","
		        COL("d", "numeric", "1e-400")),
		IROW_ST("public", "other", ""),
	};

	/* Unicode names, escaped or not, matched after unescaping. */
	static const char *const unicode[] = {
		IROW_ST("sch\\u00e9ma", "t\\ud83d\\ude00\\/\\\"x\\\"",
		        COL("\\u00fc", "uuid", "\"u\"") ","
		        COL("k\\ty", "text", "\"k\"") "," COL("t\\\\y", "text", "\"t\"")
		        "," COL("r\\/o", "text", "\"r\"") ","
		        COL("p\\u20ac", "jsonb", "\"{}\"")),
		IROW_ST("sch\xc3\xa9ma", "t\xf0\x9f\x98\x80/\\\"x\\\"",
		        COL("\xc3\xbc", "uuid", "\"u\"") "," COL("k\\ty", "text", "\"k\"")
		        "," COL("t\\\\y", "text", "\"t\"") ","
		        COL("r/o", "text", "\"r\"") ","
		        COL("p\xe2\x82\xac", "text", "\"[]\"")),
	};

	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		struct agree_stats st = { 0 };

		paths_agree(lines[i], strlen(lines[i]), &outbox_spec, &st);
		ck_assert_msg(st.fast == 1, "scanner stepped aside: %s", lines[i]);
	}
	for (size_t i = 0; i < sizeof(unicode) / sizeof(unicode[0]); i++) {
		struct agree_stats st = { 0 };

		paths_agree(unicode[i], strlen(unicode[i]), &unicode_spec, &st);
		ck_assert_msg(st.fast_events == 1, "not a fast event: %s",
		              unicode[i]);
	}
}
END_TEST

/* Embedded NULs: the length, not a NUL, ends the line. */
START_TEST(test_scanner_embedded_nul)
{
	static const char good[] = IROW(GOOD5);
	struct agree_stats st = { 0 };
	char line[sizeof(good) + 1];

	for (size_t at = 0; at < sizeof(good) - 1; at++) {
		/* over a byte, and inserted before it */
		memcpy(line, good, sizeof(good));
		line[at] = '\0';
		paths_agree(line, sizeof(good) - 1, &outbox_spec, &st);
		memcpy(line, good, at);
		line[at] = '\0';
		memcpy(line + at + 1, good + at, sizeof(good) - at);
		paths_agree(line, sizeof(good), &outbox_spec, &st);
	}
	/* The scanner takes none. jansson refuses all but two: its lexer
	 * drops a NUL right after a number or literal (it ungets the byte,
	 * then takes it for the end of its look-ahead buffer), so it reads
	 * "xid":7<NUL>, and "xid":77<NUL>, as xid 7 and 77. Both ways still
	 * agree, since the scanner leaves such lines to jansson. */
	ck_assert_uint_eq(st.fast, 0);
	ck_assert_uint_eq(st.errors, st.lines - 2);
	/* The whole line followed by a NUL and junk is refused too. */
	memcpy(line, good, sizeof(good));
	paths_agree(line, sizeof(good), &outbox_spec, &st);
	ck_assert_uint_eq(st.fast, 0);
}
END_TEST

/* Every real outbox insert of the fixtures and a bench-sized one, cut at
 * every byte and with every single byte left out. */
START_TEST(test_scanner_truncated)
{
	static const char *const names[] = { "outbox.jsonl", "odd_tables.jsonl" };
	struct agree_stats st = { 0 };
	struct fx f;
	size_t cut = 0;

	for (size_t n = 0; n < sizeof(names) / sizeof(names[0]); n++) {
		fx_load(&f, names[n]);
		for (size_t i = 0; i < f.n; i++) {
			char *line;

			/* The first three outbox inserts hold every escape kind. */
			if (!is_insert(f.line[i]) || (n == 0 && cut >= 3))
				continue;
			cut++;
			line = malloc(f.len[i]);
			ck_assert_ptr_nonnull(line);
			for (size_t at = 0; at < f.len[i]; at++) {
				const struct record_spec *spec = n == 0 ? &outbox_spec
				                                     : every_spec[at %
				                                                  N_SPECS];
				/* A copy exactly as long, so that reading past the
				 * end shows under valgrind and ASan. */
				memcpy(line, f.line[i], at);
				paths_agree(line, at, spec, &st);
				memcpy(line + at, f.line[i] + at + 1, f.len[i] - at - 1);
				paths_agree(line, f.len[i] - 1, spec, &st);
			}
			free(line);
		}
		fx_free(&f);
	}
	ck_assert_uint_eq(cut, 3 + 6);
	ck_assert_uint_gt(st.errors, 5000);
}
END_TEST

/* Records own their strings: several may be alive at once. */
START_TEST(test_scanner_records_independent)
{
	static const char l1[] = IROW(COL("id", "uuid", "\"a-1\"") ","
	                              COL("aggregate_id", "text", "\"k\\u00e9\"")
	                              "," GOOD_TYPE "," GOOD_ROUTE ","
	                              COL("payload", "jsonb", "\"[1]\""));
	static const char l2[] = IROW(COL("id", "int8", "-7") ","
	                              COL("aggregate_id", "text", "\"k-2\"") ","
	                              COL("event_type", "text", "null") ","
	                              GOOD_ROUTE ","
	                              COL("payload", "text", "\"[\\t2 ]\""));
	struct record a, b, c;
	char err[256];

	ck_assert_int_eq(w2j_decode_fast(l1, strlen(l1), &outbox_spec, &a), 0);
	ck_assert_int_eq(w2j_decode_fast(l2, strlen(l2), &outbox_spec, &b), 0);
	ck_assert_int_eq(w2j_decode(l1, strlen(l1), &shared_spec, &c, err,
	                            sizeof(err)),
	                 0);
	ck_assert_str_eq(a.id.ptr, "a-1");
	ck_assert_str_eq(a.key.ptr, "k\xc3\xa9");
	ck_assert_uint_eq(a.key.len, 3);
	ck_assert_str_eq(a.type.ptr, "T");
	ck_assert_str_eq(a.payload.ptr, "[1]");
	ck_assert_int_eq(a.commit_ts_us, 1795982957537600LL);
	ck_assert_str_eq(b.id.ptr, "-7");
	ck_assert_ptr_null(b.type.ptr);
	ck_assert_uint_eq(b.type.len, 0);
	ck_assert_str_eq(b.payload.ptr, "[\t2 ]");
	ck_assert_str_eq(c.route.ptr, "k\xc3\xa9");
	ck_assert_str_eq(c.key.ptr, "k\xc3\xa9");
	record_clear(&b);
	ck_assert_ptr_null(b.root_);
	ck_assert_str_eq(a.payload.ptr, "[1]");
	record_clear(&a);
	ck_assert_str_eq(c.id.ptr, "a-1");
	record_clear(&c);
	record_clear(&c);
}
END_TEST

/* splitmix64: the same numbers on every platform and libc. */
static uint64_t mut_next(uint64_t *s)
{
	uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* Applies one random edit to buf (length *len, room for cap bytes). */
static void mutate(char *buf, size_t *len, size_t cap, uint64_t *seed)
{
	/* Bytes that change the meaning of JSON, besides random ones. */
	static const char pick[] = "\"\\{}[]:,0123456789-+.eEutnrfabl \t\n/"
	                           "\x7f\x80\xbf\xc3\xed\xf0\xf4\xff\x01";
	uint64_t r = mut_next(seed);
	size_t at = *len ? (size_t)(mut_next(seed) % *len) : 0;
	char ch = (r >> 8) % 3 ? pick[(r >> 16) % (sizeof(pick) - 1)]
	                       : (char)(r >> 24);

	switch (r % 6) {
	case 0: /* overwrite */
	case 1:
		if (*len)
			buf[at] = ch;
		break;
	case 2: /* insert */
		if (*len < cap) {
			memmove(buf + at + 1, buf + at, *len - at);
			buf[at] = ch;
			(*len)++;
		}
		break;
	case 3: /* delete a run of 1 to 4 */
		if (*len) {
			size_t n = 1 + (r >> 32) % 4;
			if (n > *len - at)
				n = *len - at;
			memmove(buf + at, buf + at + n, *len - at - n);
			*len -= n;
		}
		break;
	case 4: { /* copy a run from elsewhere over it: \u escapes, keys */
		size_t from = (size_t)((r >> 32) % (*len ? *len : 1));
		size_t n = 1 + (r >> 20) % 12;
		if (from + n <= *len && at + n <= *len)
			memmove(buf + at, buf + from, n);
		break;
	}
	default: /* truncate */
		*len = at;
		break;
	}
}

START_TEST(test_scanner_mutations)
{
	static const char *const names[] = { "outbox.jsonl", "all_changes.jsonl",
		                                 "odd_tables.jsonl" };
	static const char *const extra[] = {
		IROW(COL("id", "int8", "-9223372036854775808") ","
		     COL("aggregate_id", "text", "\"\\ud83d\\ude00\\u00e9\\n\"") ","
		     COL("event_type", "text", "null") "," GOOD_ROUTE ","
		     COL("payload", "text", "\"{\\\"a\\\":[1.5e3,-0,true]}\"") ","
		     COL("amount", "numeric", "-12.5e-3") ","
		     COL("flag", "boolean", "false")),
	};
	const char **corpus = NULL;
	size_t *clen = NULL, ncorpus = 0;
	struct agree_stats st = { 0 };
	struct fx fxs[3];
	char buf[2048];
	uint64_t seed = 20261129;

	for (size_t n = 0; n < 3; n++) {
		fx_load(&fxs[n], names[n]);
		for (size_t i = 0; i < fxs[n].n; i++) {
			if (!is_insert(fxs[n].line[i]))
				continue;
			corpus = realloc(corpus, (ncorpus + 1) * sizeof(*corpus));
			clen = realloc(clen, (ncorpus + 1) * sizeof(*clen));
			ck_assert(corpus != NULL && clen != NULL);
			corpus[ncorpus] = fxs[n].line[i];
			clen[ncorpus++] = fxs[n].len[i];
		}
	}
	for (size_t i = 0; i < sizeof(extra) / sizeof(extra[0]); i++) {
		corpus = realloc(corpus, (ncorpus + 1) * sizeof(*corpus));
		clen = realloc(clen, (ncorpus + 1) * sizeof(*clen));
		ck_assert(corpus != NULL && clen != NULL);
		corpus[ncorpus] = extra[i];
		clen[ncorpus++] = strlen(extra[i]);
	}

	for (long iter = 0; iter < unit_rounds(50000); iter++) {
		size_t pick = (size_t)(mut_next(&seed) % ncorpus), len;
		uint64_t r = mut_next(&seed);
		/* Mostly one edit: more survive as valid JSON. */
		int edits = r % 2 ? 1 : 1 + (int)(r >> 8) % 4;
		const struct record_spec *spec;
		char *line;

		len = clen[pick];
		ck_assert_uint_le(len, sizeof(buf) / 2);
		memcpy(buf, corpus[pick], len);
		for (int e = 0; e < edits; e++)
			mutate(buf, &len, sizeof(buf), &seed);
		/* Mostly the spec of the line's own table, so that the column
		 * code runs, not just the skip. */
		spec = strstr(corpus[pick], "\"outbox\"") ? &outbox_spec
		       : strstr(corpus[pick], "outbox_bigint") ? &bigint_spec
		       : strstr(corpus[pick], "outbox_text") ? &text_spec
		       : strstr(corpus[pick], "ird tbl") ? &odd_spec
		       : strstr(corpus[pick], "\"Outbox\"") ? &prisma_spec
		                                           : &orders_spec;
		if (mut_next(&seed) % 8 == 0)
			spec = every_spec[mut_next(&seed) % N_SPECS];
		/* An exact copy, so that reading past the end shows under
		 * valgrind and ASan. */
		line = malloc(len ? len : 1);
		ck_assert_ptr_nonnull(line);
		memcpy(line, buf, len);
		paths_agree(line, len, spec, &st);
		free(line);
	}
	/* Both outcomes were exercised in earnest. */
	ck_assert_uint_gt(st.fast_events, unit_rounds(5000));
	ck_assert_uint_gt(st.fast_skips, unit_rounds(500));
	ck_assert_uint_gt(st.errors, unit_rounds(20000));
	free(corpus);
	free(clen);
	for (size_t n = 0; n < 3; n++)
		fx_free(&fxs[n]);
}
END_TEST

/* --------------------------------------------- numbers beyond a double */

/* JSON numbers that strtod() overflows, which jansson refuses: valid in a
 * numeric column (wal2json prints it as a bare number) or in text. The
 * 400-digit integer is built at run time. */
static const char *const huge_numbers[] = {
	"1e400", "-1E+400", "1.7976931348623159e308", "2e308", "9e99999",
	"223456789e300", "-0.0000000001e411",
};

static char huge_int[401];

static const char *huge(size_t i)
{
	if (i < sizeof(huge_numbers) / sizeof(huge_numbers[0]))
		return huge_numbers[i];
	for (size_t k = 0; k < 400; k++)
		huge_int[k] = (char)('1' + k % 9);
	huge_int[400] = '\0';
	return huge_int;
}
#define N_HUGE (sizeof(huge_numbers) / sizeof(huge_numbers[0]) + 1)

/* Decodes line, which must give an event; returns it in rec. */
static void expect_event(const char *line, const struct record_spec *spec,
                         struct record *rec)
{
	char err[512] = "";

	ck_assert_msg(w2j_decode(line, strlen(line), spec, rec, err,
	                         sizeof(err)) == 0,
	              "%s: %s", line, err);
	ck_assert_int_eq(rec->kind, REC_EVENT);
}

START_TEST(test_huge_number_in_other_column)
{
	struct agree_stats st = { 0 };
	struct record rec;
	char line[2048];

	for (size_t i = 0; i < N_HUGE; i++) {
		const char *h = huge(i);

		/* After the outbox columns, and before them. */
		snprintf(line, sizeof(line),
		         IROW(GOOD5 ",{\"name\":\"amount\",\"type\":\"numeric\","
		              "\"value\":%s}," CREATED), h);
		expect_event(line, &outbox_spec, &rec);
		ck_assert_str_eq(rec.id.ptr, "u-1");
		ck_assert_str_eq(rec.key.ptr, "k-1");
		ck_assert_str_eq(rec.payload.ptr, "{}");
		ck_assert_uint_eq(rec.lsn, 0xAB);
		ck_assert_int_eq(rec.xid, 77);
		record_clear(&rec);
		paths_agree_all_specs(line, strlen(line), &st);

		snprintf(line, sizeof(line),
		         IROW("{\"name\":\"amount\",\"type\":\"numeric\","
		              "\"value\":[%s,{\"x\":%s}]}," GOOD5), h, h);
		expect_event(line, &outbox_spec, &rec);
		ck_assert_str_eq(rec.route.ptr, "R");
		record_clear(&rec);
		paths_agree_all_specs(line, strlen(line), &st);

		/* Integer columns stay integers: the huge number does not turn
		 * the row's numbers into doubles. */
		snprintf(line, sizeof(line),
		         IROW(COL("id", "int8", "9007199254740993") ","
		              COL("aggregate_id", "int8", "-5") "," GOOD_TYPE ","
		              GOOD_ROUTE "," GOOD_PAYLOAD ",{\"name\":\"amount\","
		              "\"type\":\"numeric\",\"value\":%s}"), h);
		expect_event(line, &outbox_spec, &rec);
		ck_assert_str_eq(rec.id.ptr, "9007199254740993");
		ck_assert_str_eq(rec.key.ptr, "-5");
		record_clear(&rec);
		paths_agree_all_specs(line, strlen(line), &st);

		/* A row of another table is skipped, not a poison record. */
		snprintf(line, sizeof(line),
		         IROW_ST("public", "orders",
		                 COL("id", "int8", "1") ",{\"name\":\"amount\","
		                 "\"type\":\"numeric\",\"value\":%s}"), h);
		expect_kind(line, REC_SKIP);
		paths_agree_all_specs(line, strlen(line), &st);
		/* B/C and M records too, however unlikely. */
		snprintf(line, sizeof(line),
		         "{\"action\":\"C\",\"xid\":7,\"lsn\":\"0/1\",\"nextlsn\":"
		         "\"0/2\",\"x\":%s}", h);
		expect_kind(line, REC_COMMIT);
		paths_agree_all_specs(line, strlen(line), &st);
	}
	/* Only orders_spec refuses: the orders row is its outbox, and the
	 * huge number its payload. */
	ck_assert_uint_eq(st.errors, N_HUGE);
}
END_TEST

START_TEST(test_huge_number_text_payload)
{
	static const char *const texts[] = {
		"{\\\"a\\\":%s}", "%s", "  [1, %s, \\\"%s\\\"]\\n",
		"{\\\"a\\\": {\\\"b\\\": [%s]}, \\\"c\\\": -0.0}",
	};
	struct agree_stats st = { 0 };
	struct record rec;
	char text[1024], want[1024], line[2048];

	for (size_t i = 0; i < N_HUGE; i++) {
		for (size_t t = 0; t < sizeof(texts) / sizeof(texts[0]); t++) {
			const char *h = huge(i);
			size_t n = 0;

			snprintf(text, sizeof(text), texts[t], h, h);
			/* What the text column holds: the JSON string unescaped. */
			for (const char *s = text; *s != '\0'; s++) {
				if (s[0] == '\\' && s[1] == 'n') {
					want[n++] = '\n';
					s++;
				} else if (s[0] != '\\') {
					want[n++] = *s;
				}
			}
			want[n] = '\0';
			snprintf(line, sizeof(line),
			         IROW(GOOD_ID "," GOOD_KEY "," GOOD_TYPE "," GOOD_ROUTE
			              ",{\"name\":\"payload\",\"type\":\"text\","
			              "\"value\":\"%s\"}"), text);
			expect_event(line, &outbox_spec, &rec);
			ck_assert_str_eq(rec.payload.ptr, want);
			ck_assert_uint_eq(rec.payload.len, n);
			record_clear(&rec);
			paths_agree_all_specs(line, strlen(line), &st);
		}
	}
}
END_TEST

/* The outbox's own columns: a huge number is still no id, key, type,
 * route or payload, and the messages are the usual ones. */
START_TEST(test_huge_number_in_outbox_roles)
{
	struct agree_stats st = { 0 };
	char line[2048];

	for (size_t i = 0; i < N_HUGE; i++) {
		const char *h = huge(i);

		snprintf(line, sizeof(line),
		         IROW(GOOD_ID "," GOOD_KEY "," GOOD_TYPE "," GOOD_ROUTE
		              ",{\"name\":\"payload\",\"type\":\"numeric\","
		              "\"value\":%s}"), h);
		expect_error(line, "column \"payload\" (type numeric) is not a "
		                   "string but a JSON number; store the payload as "
		                   "json, jsonb or text in public.outbox (event id "
		                   "u-1, LSN 0/AB, xid 77)");
		paths_agree_all_specs(line, strlen(line), &st);
		snprintf(line, sizeof(line),
		         IROW(GOOD_ID ",{\"name\":\"aggregate_id\",\"type\":"
		              "\"numeric\",\"value\":%s}," GOOD_TYPE "," GOOD_ROUTE
		              "," GOOD_PAYLOAD), h);
		expect_error(line, "column \"aggregate_id\" must be a string or an "
		                   "integer");
		paths_agree_all_specs(line, strlen(line), &st);
		snprintf(line, sizeof(line),
		         IROW("{\"name\":\"id\",\"type\":\"numeric\",\"value\":%s},"
		              GOOD_KEY "," GOOD_TYPE "," GOOD_ROUTE "," GOOD_PAYLOAD),
		         h);
		expect_error(line, "column \"id\" must be a string or an integer");
		paths_agree_all_specs(line, strlen(line), &st);
		snprintf(line, sizeof(line),
		         "{\"action\":\"B\",\"xid\":%s,\"lsn\":\"0/1\","
		         "\"nextlsn\":\"0/2\"}", h);
		expect_error(line, "\"xid\" is not a transaction id (LSN 0/1)");
		paths_agree_all_specs(line, strlen(line), &st);
	}
}
END_TEST

/* Text payloads that are not JSON, huge numbers or not. */
static const char *const not_json_texts[] = {
	"", " ", "{\\\"a\\\":01}", "[1,]", "[1e400,]", "{\\\"a\\\":1e400,}",
	"\\\"a\\u0001b\\\"", "\\\"\\u0001\\\"", "[1e400, \\\"\\t\\\"]",
	"\\\"\\\\ud800\\\"", "\\\"\\\\udc00\\\"", "\\\"\\\\ud800\\\\u0041\\\"",
	"[1e400, \\\"\\\\ud83d\\\"]", "{} x", "1e400 x", "1e400 1e400",
	"{\\\"a\\\":1e400} {}", "NaN", "Infinity", "-Infinity", "[NaN]",
	"{\\\"a\\\":Infinity}", "+1", ".5e400", "1e400.5", "01e400", "1.e400",
	"1e", "1e+", "-", "0x10", "[1e400", "{\\\"a\\\"", "{\\\"a\\\" 1e400}",
	"{1e400:1}", "[1e400}", "\\\"abc", "'a'", "nul", "truex", "[true false]",
	"\\ufeff{}",
};

START_TEST(test_not_json_still_refused)
{
	struct agree_stats st = { 0 };
	char line[2048];

	for (size_t i = 0; i < sizeof(not_json_texts) / sizeof(not_json_texts[0]);
	     i++) {
		snprintf(line, sizeof(line),
		         IROW(GOOD_ID "," GOOD_KEY "," GOOD_TYPE "," GOOD_ROUTE
		              ",{\"name\":\"payload\",\"type\":\"text\","
		              "\"value\":\"%s\"}"), not_json_texts[i]);
		expect_error(line, "column \"payload\" (type text): payload is not "
		                   "JSON: ");
		expect_error(line, " at byte ");
		paths_agree_all_specs(line, strlen(line), &st);
	}
}
END_TEST

/* A record with a huge number and, after it, something that is not JSON:
 * still malformed, whatever stands in for the number inside. */
START_TEST(test_malformed_after_huge_number)
{
	static const char *const tails[] = {
		"} x", "}}", "},", "", "]", "],", "]]}",
		",{\"name\":\"b\",\"type\":\"numeric\",\"value\":01}]}",
		",{\"name\":\"b\",\"type\":\"numeric\",\"value\":NaN}]}",
		",{\"name\":\"b\",\"type\":\"numeric\",\"value\":-Infinity}]}",
		",{\"name\":\"b\",\"type\":\"text\",\"value\":\"a\x01\"}]}",
		",{\"name\":\"b\",\"type\":\"text\",\"value\":\"a\xff\"}]}",
		",{\"name\":\"b\",\"type\":\"text\",\"value\":\"a\xed\xa0\x80\"}]}",
		",{\"name\":\"b\",\"type\":\"text\",\"value\":\"a\xc0\x80\"}]}",
		",{\"name\":\"b\",\"type\":\"text\",\"value\":\"\\ud800\"}]}",
		",{\"name\":\"b\",\"type\":\"text\",\"value\":\"\\udc00\\ud800\"}]}",
		",{\"name\":\"b\",\"type\":\"text\",\"value\":\"\\u0000\"}]}",
		",{\"name\":\"b\",\"type\":\"text\",\"value\":\"\\x\"}]}",
		",{\"name\":\"b\",\"type\":\"numeric\",\"value\":1e400,}]}",
		",{\"name\":\"b\",\"name\":\"c\",\"type\":\"x\",\"value\":1}]}",
		"]}\n\n}",
	};
	struct agree_stats st = { 0 };
	char line[2048];

	for (size_t i = 0; i < N_HUGE; i++) {
		for (size_t t = 0; t < sizeof(tails) / sizeof(tails[0]); t++) {
			snprintf(line, sizeof(line),
			         "{\"action\":\"I\",\"xid\":77,\"timestamp\":\"2026-11-29 "
			         "20:09:17.5376+00\",\"lsn\":\"0/AB\",\"schema\":"
			         "\"public\",\"table\":\"outbox\",\"columns\":[" GOOD5
			         ",{\"name\":\"amount\",\"type\":\"numeric\",\"value\":"
			         "%s}%s", huge(i), tails[t]);
			if (strcmp(tails[t], "]}\n\n}") == 0)
				expect_error(line, "malformed JSON at line 3");
			else
				expect_error(line, "malformed JSON at line 1, column ");
			paths_agree_all_specs(line, strlen(line), &st);
		}
	}
	ck_assert_uint_eq(st.errors, st.lines);
}
END_TEST

START_TEST(test_record_clear_zeroed)
{
	struct record rec;

	memset(&rec, 0, sizeof(rec));
	record_clear(&rec);
	ck_assert_int_eq(rec.xid, -1);
	ck_assert_ptr_null(rec.root_);
}
END_TEST

Suite *w2j_suite(void)
{
	Suite *s = suite_create("w2j");
	TCase *golden = tcase_create("golden");
	TCase *input = tcase_create("input");
	TCase *scanner = tcase_create("scanner");
	TCase *misc = tcase_create("misc");

	tcase_add_test(golden, test_outbox_stream_shape);
	tcase_add_test(golden, test_outbox_unicode_and_escapes);
	tcase_add_test(golden, test_outbox_null_columns);
	tcase_add_test(golden, test_all_changes_skips);
	tcase_add_test(golden, test_message_records);
	tcase_add_test(golden, test_timestamps_agree_across_time_zones);
	tcase_add_test(golden, test_orders_numeric_payload_refused);
	tcase_add_test(golden, test_prisma_case_sensitive);
	tcase_add_test(golden, test_odd_identifiers);
	tcase_add_test(golden, test_add_tables_matches_recording);
	tcase_add_test(golden, test_bigint_keys_as_text);
	tcase_add_test(golden, test_text_payload_checked);
	suite_add_tcase(s, golden);

	tcase_add_test(input, test_malformed_json);
	tcase_add_test(input, test_embedded_nul);
	tcase_add_test(input, test_not_an_object);
	tcase_add_test(input, test_bad_action);
	tcase_add_test(input, test_bad_lsn);
	tcase_add_test(input, test_begin_commit_fields);
	tcase_add_test(input, test_event_columns);
	tcase_add_test(input, test_payload_kinds);
	tcase_add_test(input, test_fast_path_agrees);
	suite_add_tcase(s, input);

	/* The differential tests take about a second; valgrind, far more. */
	tcase_set_timeout(scanner, 60);
	tcase_add_test(scanner, test_scanner_fixtures);
	tcase_add_test(scanner, test_scanner_edge_values);
	tcase_add_test(scanner, test_scanner_edge_lines);
	tcase_add_test(scanner, test_scanner_takes_wal2json_shapes);
	tcase_add_test(scanner, test_scanner_embedded_nul);
	tcase_add_test(scanner, test_scanner_truncated);
	tcase_add_test(scanner, test_scanner_records_independent);
	tcase_add_test(scanner, test_scanner_mutations);
	suite_add_tcase(s, scanner);

	tcase_add_test(scanner, test_huge_number_in_other_column);
	tcase_add_test(scanner, test_huge_number_text_payload);
	tcase_add_test(scanner, test_huge_number_in_outbox_roles);
	tcase_add_test(scanner, test_not_json_still_refused);
	tcase_add_test(scanner, test_malformed_after_huge_number);

	tcase_add_test(misc, test_timestamp_values);
	tcase_add_test(misc, test_timestamp_against_timegm);
	tcase_add_test(misc, test_add_tables_escaping);
	tcase_add_test(misc, test_record_clear_zeroed);
	suite_add_tcase(s, misc);
	return s;
}
