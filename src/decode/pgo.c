/* SPDX-License-Identifier: Apache-2.0 */
/* pgo.c -- decodes pgoutput messages (PostgreSQL's binary logical
 * replication protocol, proto_version 1, or 2 without streaming) into the
 * records (record.h) w2j.c gives for wal2json.
 *
 * The messages are read here; the relation cache, Relation and TupleData
 * in pgo_rel.c, with the field readers in pgo_int.h.
 *
 * Layouts are PostgreSQL 15's (src/backend/replication/logical/proto.c):
 * a type byte, then fixed fields, big-endian integers, NUL-terminated
 * strings and length-prefixed values. Each field is read with a length
 * check first and every message must end exactly where its last field
 * does, so input cut short or with bytes to spare is refused, never read
 * past. docs/pgoutput.md describes the messages and the choices below.
 *
 * Where the outbox row meets rules of the relay (a NULL key, a payload
 * that is not JSON, a number as id), the rules are w2j.c's, applied to
 * what wal2json would have printed for the same row: the two decoders
 * give the same events for the same WAL (tests/unit/check_pgo.c checks
 * that on recordings of both). */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/common.h"
#include "decode/json_check.h"
#include "decode/pgo.h"
#include "pgo_int.h"

/* Type OIDs fixed in PostgreSQL's pg_type.dat since the beginning. */
enum {
	PGO_BOOLOID = 16,
	PGO_INT8OID = 20,
	PGO_INT2OID = 21,
	PGO_INT4OID = 23,
	PGO_TEXTOID = 25,
	PGO_OIDOID = 26,
	PGO_JSONOID = 114,
	PGO_FLOAT4OID = 700,
	PGO_FLOAT8OID = 701,
	PGO_BPCHAROID = 1042,
	PGO_VARCHAROID = 1043,
	PGO_TIMESTAMPTZOID = 1184,
	PGO_NUMERICOID = 1700,
	PGO_UUIDOID = 2950,
	PGO_JSONBOID = 3802,
};

/* pgoutput's commit time (µs since 2000-01-01) as Unix epoch µs. */
static int pgo_time(const struct pgo_rd *r, uint64_t raw, int64_t *out)
{
	int64_t pg = (int64_t)raw;

	/* PostgreSQL's own limit is 294276 AD, far below this. */
	if (pg > INT64_MAX - PGO_EPOCH_OFFSET_US) {
		pgo_error(r->c, "commit time %" PRId64 " is out of range", pg);
		return -1;
	}
	*out = pg + PGO_EPOCH_OFFSET_US;
	return 0;
}

/* ------------------------------------------------------- type helpers */

/* A name for error messages: the usual built-in types by name, others by
 * OID (their names come in Type messages, which are not kept). */
static const char *pgo_type_name(uint32_t typid, char *buf, size_t len)
{
	static const struct {
		uint32_t oid;
		const char *name;
	} known[] = {
		{ PGO_BOOLOID, "boolean" },   { PGO_INT8OID, "bigint" },
		{ PGO_INT2OID, "smallint" },  { PGO_INT4OID, "integer" },
		{ PGO_TEXTOID, "text" },      { PGO_OIDOID, "oid" },
		{ PGO_JSONOID, "json" },      { PGO_FLOAT4OID, "real" },
		{ PGO_FLOAT8OID, "double precision" },
		{ PGO_BPCHAROID, "character" },
		{ PGO_VARCHAROID, "character varying" },
		{ PGO_TIMESTAMPTZOID, "timestamp with time zone" },
		{ PGO_NUMERICOID, "numeric" }, { PGO_UUIDOID, "uuid" },
		{ PGO_JSONBOID, "jsonb" },
	};

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (known[i].oid == typid)
			return known[i].name;
	snprintf(buf, len, "OID %" PRIu32, typid);
	return buf;
}

/* The types wal2json prints as bare JSON numbers (pg_decode_write_value
 * in wal2json 2.5); a domain over one of them has an OID of its own and
 * is printed as a string, here as there. */
static bool pgo_number_type(uint32_t typid)
{
	switch (typid) {
	case PGO_INT2OID:
	case PGO_INT4OID:
	case PGO_INT8OID:
	case PGO_OIDOID:
	case PGO_FLOAT4OID:
	case PGO_FLOAT8OID:
	case PGO_NUMERICOID:
		return true;
	default:
		return false;
	}
}

/* wal2json writes null for these values of a number type: no JSON
 * number can hold them. */
static bool pgo_not_a_number(const struct pgo_val *v)
{
	return (v->len == 3 && memcmp(v->p, "NaN", 3) == 0) ||
	       (v->len == 8 && memcmp(v->p, "Infinity", 8) == 0) ||
	       (v->len == 9 && memcmp(v->p, "-Infinity", 9) == 0);
}

/* The text of a number type as w2j.c passes it on: only an integer of 64
 * bits (jansson's json_int_t), printed back as jansson prints it ("-0"
 * of a float becomes "0"). Returns the length written to out, or -1 for
 * a real number or one beyond 64 bits, which w2j.c refuses. */
static int pgo_integer_text(const struct pgo_val *v, char out[24])
{
	const unsigned char *p = v->p, *end = v->p + v->len;
	bool neg = false;
	uint64_t mag = 0;

	if (p < end && *p == '-') {
		neg = true;
		p++;
	}
	if (p == end)
		return -1;
	for (; p < end; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		if (mag > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return -1;
		mag = mag * 10 + (uint64_t)(*p - '0');
	}
	if (mag > (uint64_t)INT64_MAX + neg)
		return -1;
	/* -mag in unsigned arithmetic: INT64_MIN has no positive. */
	return snprintf(out, 24, "%" PRId64,
	                neg ? (int64_t)(0 - mag) : (int64_t)mag);
}

/* ---------------------------------------------------------- messages */

/* Begin: Int64 final_lsn, Int64 commit time, Int32 xid. */
static int pgo_begin(struct pgo_state *st, struct pgo_rd *r,
                     struct pgo_ctx *c, struct record *rec)
{
	uint64_t final_lsn, ts;
	uint32_t xid;
	int64_t unix_us;

	if (rd_u64(r, "the final LSN", &final_lsn) != 0 ||
	    rd_u64(r, "the commit time", &ts) != 0 ||
	    rd_u32(r, "the xid", &xid) != 0 || rd_end(r) != 0)
		return -1;
	c->xid = xid;
	/* The subscriber refuses this too ("final_lsn not set"): without it
	 * the transaction cannot be told from any other. */
	if (final_lsn == 0)
		return pgo_error(c, "the final LSN is 0/0");
	if (st->in_txn) {
		c->xid = st->xid;
		return pgo_error(c, "transaction %" PRIu32 " begins while this one "
		                 "is still open (no Commit for it)", xid);
	}
	if (pgo_time(r, ts, &unix_us) != 0)
		return -1;
	rec->kind = REC_BEGIN;
	rec->lsn = final_lsn;
	rec->xid = xid;
	rec->commit_ts_us = unix_us;
	st->in_txn = true;
	st->xid = xid;
	st->commit_ts_us = unix_us;
	st->final_lsn = final_lsn;
	return 0;
}

/* Commit: Int8 flags (0), Int64 commit LSN, Int64 end LSN, Int64 commit
 * time. The end LSN is what the relay confirms. */
static int pgo_commit(struct pgo_state *st, struct pgo_rd *r,
                      struct pgo_ctx *c, struct record *rec)
{
	uint64_t commit_lsn, end_lsn, ts;
	int64_t unix_us;
	uint8_t flags;

	if (rd_u8(r, "the flags", &flags) != 0 ||
	    rd_u64(r, "the commit LSN", &commit_lsn) != 0 ||
	    rd_u64(r, "the end LSN", &end_lsn) != 0 ||
	    rd_u64(r, "the commit time", &ts) != 0 || rd_end(r) != 0)
		return -1;
	/* Unused so far; the subscriber refuses any other value too. */
	if (flags != 0)
		return pgo_error(c, "unknown flags 0x%02x", flags);
	if (!st->in_txn)
		return pgo_error(c, "no transaction is open (Commit without Begin)");
	/* Both are the commit record's LSN (txn->final_lsn): anything else
	 * means messages of two transactions got mixed up. */
	if (commit_lsn != st->final_lsn)
		return pgo_error(c, "commit LSN " LSN_FMT " is not the final LSN "
		                 LSN_FMT " of its Begin", LSN_ARGS(commit_lsn),
		                 LSN_ARGS(st->final_lsn));
	if (end_lsn <= commit_lsn)
		return pgo_error(c, "end LSN " LSN_FMT " is not after the commit "
		                 "LSN " LSN_FMT, LSN_ARGS(end_lsn),
		                 LSN_ARGS(commit_lsn));
	if (pgo_time(r, ts, &unix_us) != 0)
		return -1;
	rec->kind = REC_COMMIT;
	rec->lsn = commit_lsn;
	rec->nextlsn = end_lsn;
	rec->xid = st->xid;
	rec->commit_ts_us = unix_us;
	st->in_txn = false;
	st->xid = -1;
	st->commit_ts_us = 0;
	st->final_lsn = 0;
	return 0;
}

/* Checks an id, key, type or route value as w2j_text_value() checks
 * what wal2json prints: strings pass, an integer passes as its digits,
 * a boolean or a real number does not. *txt, *len: the text to publish
 * (num when it is a number printed back). */
static int pgo_text_value(const struct pgo_ctx *c, const char *col,
                          uint32_t typid, const struct pgo_val *v,
                          char num[24], const char **txt, size_t *len)
{
	char tn[32];
	int n;

	*txt = (const char *)v->p;
	*len = v->len;
	if (typid == PGO_BOOLOID)
		return pgo_error(c, "column \"%s\" must be a string or an integer, "
		                 "not a boolean", col);
	if (!pgo_number_type(typid))
		return 0;
	n = pgo_integer_text(v, num);
	if (n < 0)
		return pgo_error(c, "column \"%s\" must be a string or an integer "
		                 "of 64 bits, not the %s %.*s", col,
		                 pgo_type_name(typid, tn, sizeof(tn)),
		                 (int)(v->len < 64 ? v->len : 64),
		                 (const char *)v->p);
	*txt = num;
	*len = (size_t)n;
	return 0;
}

/* Checks a payload as w2j_payload() does: it must be text that wal2json
 * would print as a JSON string, and JSON unless its type is json or
 * jsonb, which PostgreSQL only stores valid. */
static int pgo_payload(const struct pgo_ctx *c, const char *col,
                       uint32_t typid, const struct pgo_val *v, bool blank_ok)
{
	struct jc_error jc;
	char tn[32];

	if (typid == PGO_BOOLOID || pgo_number_type(typid))
		return pgo_error(c, "column \"%s\" (type %s) is not a string but a "
		                 "JSON %s; store the payload as json, jsonb or text",
		                 col, pgo_type_name(typid, tn, sizeof(tn)),
		                 typid == PGO_BOOLOID ? "boolean" : "number");
	if (typid == PGO_JSONOID || typid == PGO_JSONBOID)
		return 0;
	/* An empty payload is a tombstone when the option says so
	 * (envelope.c), not text to check. */
	if (blank_ok) {
		size_t i = 0;
		while (i < v->len && v->p[i] <= ' ')
			i++;
		if (i == v->len)
			return 0;
	}
	if (jc_check((const char *)v->p, v->len, NULL, NULL, &jc) != 0)
		return pgo_error(c, "column \"%s\" (type %s): payload is not JSON: "
		                 "%s at byte %zu", col,
		                 pgo_type_name(typid, tn, sizeof(tn)), jc.reason,
		                 jc.offset);
	return 0;
}

/* The Connect schema Debezium gives a column of this type. */
static enum wire_type pgo_wire_type(uint32_t typid)
{
	switch (typid) {
	case PGO_JSONOID:
	case PGO_JSONBOID:
		return WIRE_T_JSON;
	case PGO_UUIDOID:
		return WIRE_T_UUID;
	case PGO_INT2OID:
		return WIRE_T_INT16;
	case PGO_INT4OID:
		return WIRE_T_INT32;
	case PGO_INT8OID:
		return WIRE_T_INT64;
	default:
		return WIRE_T_STRING;
	}
}

/* The event of an outbox row: the five values checked, then copied into
 * one block that rec owns. */
static int pgo_event(const struct pgo_state *st, struct pgo_ctx *c,
                     const struct pgo_rel *rel, const struct pgo_val *vals,
                     struct record *rec)
{
	const char *want[REC_NCOLS] = { st->spec->col_id, st->spec->col_key,
		                             st->spec->col_type, st->spec->col_route,
		                             st->spec->col_payload };
	struct rec_str *dst[REC_NCOLS] = { &rec->id, &rec->key, &rec->type,
		                                &rec->route, &rec->payload };
	const char *txt[REC_NROLES] = { NULL };
	size_t len[REC_NROLES] = { 0 };
	char num[REC_NCOLS][24];
	size_t need = 0, bad;
	char *buf, *o;

	for (int k = 0; k < REC_NCOLS; k++) {
		struct pgo_val v;
		uint32_t typid;

		if (rel->col[k] < 0)
			return pgo_error(c, "column \"%s\" is missing (not in the "
			                 "table, or not in the publication's column "
			                 "list)", want[k]);
		v = vals[k];
		typid = rel->atts[rel->col[k]].typid;
		/* An insert carries every value whole; 'u' belongs to updates. */
		if (v.kind == 'u')
			return pgo_error(c, "column \"%s\" came as an unchanged TOAST "
			                 "value ('u'), which an insert never carries",
			                 want[k]);
		if (v.kind == 't' && pgo_number_type(typid) && pgo_not_a_number(&v))
			v.kind = 'n'; /* wal2json prints null for it */
		if (v.kind == 'n') {
			if (k == REC_COL_TYPE) /* may be NULL: no header then */
				continue;
			if (k == REC_COL_PAYLOAD && st->spec->payload_nullable)
				continue; /* a tombstone (envelope.c) */
			return pgo_error(c, "column \"%s\" is NULL", want[k]);
		}
		/* No text value of PostgreSQL holds a NUL; and jansson takes
		 * only UTF-8, so wal2json's line would be refused too. */
		if (memchr(v.p, '\0', v.len) != NULL)
			return pgo_error(c, "column \"%s\" holds a NUL byte", want[k]);
		if ((bad = jc_utf8_check((const char *)v.p, v.len)) != v.len)
			return pgo_error(c, "column \"%s\" is not UTF-8 (byte %zu)",
			                 want[k], bad);
		if (k == REC_COL_PAYLOAD) {
			if (pgo_payload(c, want[k], typid, &v,
			                st->spec->payload_nullable) != 0)
				return -1;
			txt[k] = (const char *)v.p;
			len[k] = v.len;
		} else if (pgo_text_value(c, want[k], typid, &v, num[k], &txt[k],
		                          &len[k]) != 0) {
			return -1;
		}
		if (k == REC_COL_ID) {
			/* later errors can name it */
			c->event_id = (const unsigned char *)txt[k];
			c->event_id_len = len[k];
		}
		need += len[k] + 1;
	}

	/* The extra columns: a missing one stays unseen, NULL stays NULL. */
	for (size_t x = 0; x < st->spec->nextra; x++) {
		int k = REC_NCOLS + (int)x;
		const struct pgo_val *v = &vals[k];

		if (rel->col[k] < 0)
			continue;
		rec->extra_seen |= 1u << x;
		if (v->kind == 'u')
			return pgo_error(c, "column \"%s\" came as an unchanged TOAST "
			                 "value ('u'), which an insert never carries",
			                 st->spec->col_extra[x]);
		if (v->kind != 't')
			continue;
		if (memchr(v->p, '\0', v->len) != NULL ||
		    jc_utf8_check((const char *)v->p, v->len) != v->len)
			return pgo_error(c, "column \"%s\" is not UTF-8 text",
			                 st->spec->col_extra[x]);
		txt[k] = (const char *)v->p;
		len[k] = v->len;
		need += len[k] + 1;
	}
	if (st->spec->want_types) {
		rec->key_type = pgo_wire_type(rel->atts[rel->col[REC_COL_KEY]].typid);
		rec->payload_type =
			pgo_wire_type(rel->atts[rel->col[REC_COL_PAYLOAD]].typid);
	}

	buf = xmalloc(need);
	o = buf;
	for (int k = 0; k < REC_NCOLS + (int)st->spec->nextra; k++) {
		struct rec_str *d = k < REC_NCOLS ? dst[k] : &rec->extra[k - REC_NCOLS];
		if (txt[k] == NULL)
			continue;
		memcpy(o, txt[k], len[k]);
		o[len[k]] = '\0';
		d->ptr = o;
		d->len = len[k];
		o += len[k] + 1;
	}
	rec->kind = REC_EVENT;
	rec->xid = st->xid;
	rec->commit_ts_us = st->commit_ts_us;
	record_adopt(rec, buf);
	return 0;
}

/* Insert: Int32 relation OID, 'N', TupleData. */
static int pgo_insert(const struct pgo_state *st, struct pgo_rd *r,
                      struct pgo_ctx *c, struct record *rec)
{
	struct pgo_val vals[REC_NROLES];
	const struct pgo_rel *rel;
	uint8_t action;

	/* Only the roles the spec has: the rest is never read. */
	memset(vals, 0, (REC_NCOLS + st->spec->nextra) * sizeof(vals[0]));
	if (!st->in_txn)
		return pgo_error(c, "no transaction is open (no Begin before it)");
	if (pgo_find_rel(st, r, c, &rel) != 0 ||
	    rd_u8(r, "the tuple marker", &action) != 0)
		return -1;
	if (action != 'N')
		return pgo_error(c, "expected 'N' (new tuple), found 0x%02x",
		                 action);
	if (pgo_tuple(r, rel, "new", rel->ours ? vals : NULL) != 0 ||
	    rd_end(r) != 0)
		return -1;
	if (!rel->ours) /* checked whole all the same, as w2j.c does */
		return 0;
	return pgo_event(st, c, rel, vals, rec);
}

/* Update: Int32 relation OID, optionally 'K' (old key) or 'O' (old row)
 * and a TupleData, then 'N' and the new TupleData. Not an event: the
 * outbox is insert-only. */
static int pgo_update(const struct pgo_state *st, struct pgo_rd *r,
                      struct pgo_ctx *c)
{
	const struct pgo_rel *rel;
	uint8_t action;

	if (!st->in_txn)
		return pgo_error(c, "no transaction is open (no Begin before it)");
	if (pgo_find_rel(st, r, c, &rel) != 0 ||
	    rd_u8(r, "the tuple marker", &action) != 0)
		return -1;
	if (action == 'K' || action == 'O') {
		if (pgo_tuple(r, rel, action == 'K' ? "old key" : "old", NULL) !=
		        0 ||
		    rd_u8(r, "the new tuple marker", &action) != 0)
			return -1;
	}
	if (action != 'N')
		return pgo_error(c, "expected 'N' (new tuple), found 0x%02x",
		                 action);
	if (pgo_tuple(r, rel, "new", NULL) != 0)
		return -1;
	return rd_end(r);
}

/* Delete: Int32 relation OID, 'K' (old key) or 'O' (old row), TupleData.
 * Not an event. */
static int pgo_delete(const struct pgo_state *st, struct pgo_rd *r,
                      struct pgo_ctx *c)
{
	const struct pgo_rel *rel;
	uint8_t action;

	if (!st->in_txn)
		return pgo_error(c, "no transaction is open (no Begin before it)");
	if (pgo_find_rel(st, r, c, &rel) != 0 ||
	    rd_u8(r, "the tuple marker", &action) != 0)
		return -1;
	if (action != 'K' && action != 'O')
		return pgo_error(c, "expected 'K' or 'O' (old tuple), found 0x%02x",
		                 action);
	if (pgo_tuple(r, rel, action == 'K' ? "old key" : "old", NULL) != 0)
		return -1;
	return rd_end(r);
}

/* Truncate: Int32 relation count, Int8 flags (cascade, restart
 * identity), then that many Int32 relation OIDs. Not an event, and the
 * OIDs need no Relation (pgoutput sends one, but nothing here reads
 * them). */
static int pgo_truncate(const struct pgo_state *st, struct pgo_rd *r,
                        struct pgo_ctx *c)
{
	uint32_t nrels;
	uint8_t flags;

	if (!st->in_txn)
		return pgo_error(c, "no transaction is open (no Begin before it)");
	if (rd_u32(r, "the relation count", &nrels) != 0 ||
	    rd_u8(r, "the flags", &flags) != 0)
		return -1;
	if (nrels > INT32_MAX || (uint64_t)nrels * 4 != rd_left(r))
		return pgo_error(c, "%" PRIu32 " relations need %" PRIu64 " bytes, "
		                 "%zu are left", nrels, (uint64_t)nrels * 4,
		                 rd_left(r));
	r->p = r->end;
	return 0;
}

/* Type: Int32 OID, String namespace, String name (of the base type, for
 * a domain). Sent for columns of user types before their Relation; the
 * relay keys on type OIDs of built-in types only, so it is checked and
 * dropped. */
static int pgo_type(struct pgo_rd *r)
{
	const char *s;
	size_t n;
	uint32_t typid;

	if (rd_u32(r, "the type OID", &typid) != 0 ||
	    rd_str(r, "the namespace", &s, &n) != 0 ||
	    rd_str(r, "the type name", &s, &n) != 0)
		return -1;
	return rd_end(r);
}

/* Origin: Int64 LSN on the origin, String origin name. After the Begin
 * of a transaction replayed from elsewhere; the relay publishes it like
 * any other. */
static int pgo_origin(struct pgo_rd *r)
{
	const char *s;
	uint64_t lsn;
	size_t n;

	if (rd_u64(r, "the origin LSN", &lsn) != 0 ||
	    rd_str(r, "the origin name", &s, &n) != 0)
		return -1;
	return rd_end(r);
}

/* Message: Int8 flags (1: transactional), Int64 LSN, String prefix,
 * Int32 length, the content. Only with messages 'true'; pgoutput sends
 * every prefix (no filter like wal2json's add-msg-prefixes). */
static int pgo_message(const struct pgo_state *st, struct pgo_rd *r,
                       struct pgo_ctx *c, struct record *rec)
{
	const unsigned char *content;
	const char *prefix;
	size_t plen, clen;
	uint64_t lsn;
	uint8_t flags;
	char *buf;

	if (rd_u8(r, "the flags", &flags) != 0 ||
	    rd_u64(r, "the LSN", &lsn) != 0 ||
	    rd_str(r, "the prefix", &prefix, &plen) != 0 ||
	    rd_len(r, "the content length", &clen) != 0)
		return -1;
	content = r->p;
	r->p += clen;
	if (rd_end(r) != 0)
		return -1;
	if (flags & ~1u)
		return pgo_error(c, "unknown flags 0x%02x", flags);
	/* pgoutput sends a Begin before a transactional message; one
	 * outside means messages were lost or mixed up. */
	if ((flags & 1u) && !st->in_txn)
		return pgo_error(c, "a transactional message outside a "
		                 "transaction (no Begin before it)");

	/* Prefix and content, each NUL-terminated, in one block. The
	 * content is bytes: a NUL in it stays, len tells. */
	buf = xmalloc(plen + 1 + clen + 1);
	memcpy(buf, prefix, plen + 1);
	memcpy(buf + plen + 1, content, clen);
	buf[plen + 1 + clen] = '\0';
	rec->kind = REC_MESSAGE;
	rec->lsn = lsn;
	rec->transactional = flags & 1u;
	rec->msg_prefix.ptr = buf;
	rec->msg_prefix.len = plen;
	rec->msg_content.ptr = buf + plen + 1;
	rec->msg_content.len = clen;
	/* The xid as wal2json gives it; no time, as w2j.c reads none from
	 * wal2json's M records (the relay takes it from the Begin). */
	rec->xid = rec->transactional ? st->xid : -1;
	rec->commit_ts_us = 0;
	record_adopt(rec, buf);
	return 0;
}

/* -------------------------------------------------------------- decode */

/* Message types the decoder knows and refuses: their existence means
 * replication was started with options the relay never sends. */
static const char *pgo_refused(unsigned char type, const char **why)
{
	static const char streaming[] = "a streamed transaction (proto_version "
	                                "2 with streaming on); the relay reads "
	                                "whole transactions only: start "
	                                "replication without the streaming "
	                                "option";
	static const char twophase[] = "a prepared transaction (two_phase on); "
	                               "the relay reads committed transactions "
	                               "only: start replication without the "
	                               "two_phase option";

	switch (type) {
	case 'S': *why = streaming; return "Stream Start";
	case 'E': *why = streaming; return "Stream Stop";
	case 'c': *why = streaming; return "Stream Commit";
	case 'A': *why = streaming; return "Stream Abort";
	case 'p': *why = twophase; return "Stream Prepare";
	case 'b': *why = twophase; return "Begin Prepare";
	case 'P': *why = twophase; return "Prepare";
	case 'K': *why = twophase; return "Commit Prepared";
	case 'r': *why = twophase; return "Rollback Prepared";
	default: return NULL;
	}
}

bool pgo_event_id(const struct pgo_state *st, const void *msg, size_t len,
                  char *id, size_t idlen)
{
	const unsigned char *m = msg;
	struct pgo_ctx c = { .kind = "Insert", .xid = -1 }; /* no err: quiet */
	struct pgo_rd r = { m + 1, m + len, &c };
	struct pgo_val vals[REC_NROLES];
	const struct pgo_rel *rel;
	uint8_t action;

	if (len == 0 || m[0] != 'I' || pgo_find_rel(st, &r, &c, &rel) != 0 ||
	    !rel->ours)
		return false;
	snprintf(id, idlen, "?");
	memset(vals, 0, sizeof(vals));
	if (rd_u8(&r, "the tuple marker", &action) != 0 || action != 'N' ||
	    pgo_tuple(&r, rel, "new", vals) != 0)
		return true;
	if (vals[REC_COL_ID].kind == 't')
		snprintf(id, idlen, "%.*s",
		         (int)(vals[REC_COL_ID].len < idlen ? vals[REC_COL_ID].len
		                                        : idlen - 1),
		         (const char *)vals[REC_COL_ID].p);
	return true;
}

bool pgo_event_cols(const struct pgo_state *st, const void *msg, size_t len,
                    struct rec_str cols[REC_NCOLS])
{
	const unsigned char *m = msg;
	struct pgo_ctx c = { .kind = "Insert", .xid = -1 }; /* no err: quiet */
	struct pgo_rd r = { m + 1, m + len, &c };
	struct pgo_val vals[REC_NCOLS];
	const struct pgo_rel *rel;
	uint8_t action;

	memset(cols, 0, REC_NCOLS * sizeof(cols[0]));
	if (len == 0 || m[0] != 'I' || pgo_find_rel(st, &r, &c, &rel) != 0 ||
	    !rel->ours)
		return false;
	memset(vals, 0, sizeof(vals));
	/* A tuple cut short leaves the columns read before it. */
	if (rd_u8(&r, "the tuple marker", &action) == 0 && action == 'N')
		(void)pgo_tuple(&r, rel, "new", vals);
	for (int k = 0; k < REC_NCOLS; k++)
		if (vals[k].kind == 't')
			cols[k] = (struct rec_str){ (const char *)vals[k].p,
			                            vals[k].len };
	return true;
}

int pgo_decode(struct pgo_state *st, const void *msg, size_t len,
               uint64_t wal_start, struct record *rec, char *err,
               size_t errlen)
{
	const unsigned char *m = msg;
	struct pgo_ctx c = { .kind = "message", .lsn = wal_start,
		                 .xid = st->in_txn ? st->xid : -1, .err = err,
		                 .errlen = errlen };
	struct pgo_rd r = { m + (len > 0), m + len, &c };
	const char *refused, *why = NULL;
	int rc;

	memset(rec, 0, sizeof(*rec));
	rec->kind = REC_SKIP;
	rec->lsn = wal_start;
	rec->xid = c.xid;
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	switch (len > 0 ? m[0] : -1) {
	case -1:
		rc = pgo_error(&c, "empty (no message type)");
		break;
	case 'B':
		c.kind = "Begin";
		rc = pgo_begin(st, &r, &c, rec);
		break;
	case 'C':
		c.kind = "Commit";
		rc = pgo_commit(st, &r, &c, rec);
		break;
	case 'R':
		c.kind = "Relation";
		rc = pgo_relation(st, &r, &c);
		break;
	case 'I':
		c.kind = "Insert";
		rc = pgo_insert(st, &r, &c, rec);
		break;
	case 'U':
		c.kind = "Update";
		rc = pgo_update(st, &r, &c);
		/* An update of the outbox: table.op.invalid.behavior. */
		if (rc == 0 && c.rel != NULL && c.rel->ours)
			rec->kind = REC_UPDATE;
		break;
	case 'D':
		c.kind = "Delete";
		rc = pgo_delete(st, &r, &c);
		break;
	case 'T':
		c.kind = "Truncate";
		rc = pgo_truncate(st, &r, &c);
		break;
	case 'Y':
		c.kind = "Type";
		rc = pgo_type(&r);
		break;
	case 'O':
		c.kind = "Origin";
		rc = pgo_origin(&r);
		break;
	case 'M':
		c.kind = "Message";
		rc = pgo_message(st, &r, &c, rec);
		break;
	default:
		refused = pgo_refused(m[0], &why);
		if (refused != NULL) {
			c.kind = refused;
			rc = pgo_error(&c, "%s", why);
		} else {
			rc = pgo_error(&c, "unknown message type 0x%02x", m[0]);
		}
		break;
	}
	if (rc != 0) {
		/* Nothing is adopted before the last check, but be sure. */
		record_clear(rec);
		return -1;
	}
	return 0;
}
