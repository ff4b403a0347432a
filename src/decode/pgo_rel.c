/* SPDX-License-Identifier: Apache-2.0 */
/* pgo_rel.c -- pgoutput's relation cache: Relation messages in, the
 * columns of a change (TupleData) read against them; and the error text
 * of every pgoutput failure (pgo_error()).
 *
 * Apart from pgo.c because it is state, not a message: pgoutput
 * describes a table once per session and then names it by OID, so the
 * cache outlives each call and has its own rules (open addressing on the
 * OID, a Relation again replaces the entry, reset with every session).
 * pgo.c reads the messages and never the cache's layout but through
 * these functions. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/common.h"
#include "decode/pgo.h"
#include "pgo_int.h"

/* ------------------------------------------------------------- errors */

/* Appends to buf (cap bytes, used so far) and returns the new length,
 * never more than cap - 1. */
static size_t RELAY_PRINTF(4, 5)
pgo_put(char *buf, size_t cap, size_t used, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (used + 1 >= cap)
		return used;
	va_start(ap, fmt);
	n = vsnprintf(buf + used, cap - used, fmt, ap);
	va_end(ap);
	if (n < 0)
		return used;
	return used + (size_t)n < cap ? used + (size_t)n : cap - 1;
}

/* Writes "pgoutput <Kind>[ on schema.table]: <text> (event id ..., LSN
 * X/X, xid N)" into the context's buffer, with what is known. Returns
 * -1, so that callers can return it. */
int RELAY_PRINTF(2, 3)
pgo_error(const struct pgo_ctx *c, const char *fmt, ...)
{
	char tail[160];
	size_t used, t = 0;
	va_list ap;
	int n;

	if (c->err == NULL || c->errlen == 0)
		return -1;
	used = pgo_put(c->err, c->errlen, 0, "pgoutput %s", c->kind);
	if (c->rel != NULL)
		used = pgo_put(c->err, c->errlen, used, " on %s.%s",
		               c->rel->nspname, c->rel->relname);
	used = pgo_put(c->err, c->errlen, used, ": ");
	va_start(ap, fmt);
	n = vsnprintf(c->err + used, c->errlen - used, fmt, ap);
	va_end(ap);
	if (n > 0)
		used = used + (size_t)n < c->errlen ? used + (size_t)n
		                                    : c->errlen - 1;
	/* The id is row data, so it is cut short. */
	if (c->event_id != NULL)
		t = pgo_put(tail, sizeof(tail), t, ", event id %.*s",
		            (int)(c->event_id_len < 64 ? c->event_id_len : 64),
		            (const char *)c->event_id);
	t = pgo_put(tail, sizeof(tail), t, ", LSN " LSN_FMT, LSN_ARGS(c->lsn));
	if (c->xid >= 0)
		pgo_put(tail, sizeof(tail), t, ", xid %lld", (long long)c->xid);
	pgo_put(c->err, c->errlen, used, " (%s)", tail + 2);
	return -1;
}

/* ------------------------------------------------------ relation cache */

static size_t pgo_slot(uint32_t relid, size_t cap)
{
	uint32_t h = relid;

	/* OIDs are dense and sequential: mix them before masking. */
	h ^= h >> 16;
	h *= UINT32_C(0x45d9f3b);
	h ^= h >> 16;
	return (size_t)h & (cap - 1);
}

static struct pgo_rel *pgo_rel_get(const struct pgo_state *st, uint32_t relid)
{
	size_t i;

	if (st->cap == 0)
		return NULL;
	for (i = pgo_slot(relid, st->cap); st->rels[i] != NULL;
	     i = (i + 1) & (st->cap - 1))
		if (st->rels[i]->relid == relid)
			return st->rels[i];
	return NULL;
}

/* Stores rel (taking ownership), replacing and freeing an entry of the
 * same OID: pgoutput sends a Relation again when the table changed. */
static void pgo_rel_put(struct pgo_state *st, struct pgo_rel *rel)
{
	size_t i;

	if ((st->nrels + 1) * 2 > st->cap) {
		/* Keep at most half the slots full, so probes stay short. */
		size_t ncap = st->cap ? st->cap * 2 : 16;
		struct pgo_rel **nrels = xcalloc(ncap, sizeof(*nrels));

		for (i = 0; i < st->cap; i++) {
			size_t j;
			if (st->rels[i] == NULL)
				continue;
			for (j = pgo_slot(st->rels[i]->relid, ncap); nrels[j] != NULL;
			     j = (j + 1) & (ncap - 1))
				;
			nrels[j] = st->rels[i];
		}
		free(st->rels);
		st->rels = nrels;
		st->cap = ncap;
	}
	for (i = pgo_slot(rel->relid, st->cap); st->rels[i] != NULL;
	     i = (i + 1) & (st->cap - 1)) {
		if (st->rels[i]->relid == rel->relid) {
			free(st->rels[i]);
			st->rels[i] = rel;
			return;
		}
	}
	st->rels[i] = rel;
	st->nrels++;
}

void pgo_init(struct pgo_state *st, const struct record_spec *spec)
{
	memset(st, 0, sizeof(*st));
	st->spec = spec;
	st->xid = -1;
}

void pgo_free(struct pgo_state *st)
{
	for (size_t i = 0; i < st->cap; i++)
		free(st->rels[i]);
	free(st->rels);
	st->rels = NULL;
	st->cap = 0;
	st->nrels = 0;
	st->in_txn = false;
	st->xid = -1;
	st->commit_ts_us = 0;
	st->final_lsn = 0;
}

void pgo_reset(struct pgo_state *st)
{
	pgo_free(st);
}

/* ------------------------------------------------- Relation, TupleData */

/* Relation: Int32 OID, String namespace ("" for pg_catalog), String
 * name, Int8 replica identity, Int16 column count, then per column Int8
 * flags (1: part of the key), String name, Int32 type OID, Int32 typmod.
 * Read twice: once to check and measure, once to copy into one block. */
int pgo_relation(struct pgo_state *st, struct pgo_rd *r, struct pgo_ctx *c)
{
	const char *want[REC_NCOLS] = { st->spec->col_id, st->spec->col_key,
		                             st->spec->col_type, st->spec->col_route,
		                             st->spec->col_payload };
	const char *nsp, *name, *att;
	size_t nsplen, namelen, attlen, names = 0;
	const unsigned char *cols;
	struct pgo_rel *rel;
	uint32_t relid, typid, typmod;
	uint16_t natts;
	uint8_t replident, flags;
	char *o;

	if (rd_u32(r, "the relation OID", &relid) != 0 ||
	    rd_str(r, "the namespace", &nsp, &nsplen) != 0 ||
	    rd_str(r, "the relation name", &name, &namelen) != 0 ||
	    rd_u8(r, "the replica identity", &replident) != 0 ||
	    rd_u16(r, "the column count", &natts) != 0)
		return -1;
	cols = r->p;
	for (unsigned i = 0; i < natts; i++) {
		if (rd_u8(r, "a column's flags", &flags) != 0 ||
		    rd_str(r, "a column's name", &att, &attlen) != 0 ||
		    rd_u32(r, "a column's type OID", &typid) != 0 ||
		    rd_u32(r, "a column's typmod", &typmod) != 0)
			return -1;
		names += attlen + 1;
	}
	if (rd_end(r) != 0)
		return -1;
	if (nsplen == 0) {
		nsp = "pg_catalog";
		nsplen = strlen(nsp);
	}

	rel = xmalloc(sizeof(*rel) + natts * sizeof(rel->atts[0]) + nsplen + 1 +
	              namelen + 1 + names);
	o = (char *)&rel->atts[natts];
	memcpy(o, nsp, nsplen + 1);
	rel->nspname = o;
	o += nsplen + 1;
	memcpy(o, name, namelen + 1);
	rel->relname = o;
	o += namelen + 1;
	rel->relid = relid;
	rel->replident = (char)replident;
	rel->natts = natts;
	rel->ours = strcmp(rel->nspname, st->spec->schema) == 0 &&
	            (strcmp(st->spec->table, "*") == 0 ||
	             strcmp(rel->relname, st->spec->table) == 0);
	for (int k = 0; k < REC_NROLES; k++)
		rel->col[k] = -1;
	/* The checked columns again, without checks. */
	r->p = cols;
	for (unsigned i = 0; i < natts; i++) {
		struct pgo_att *a = &rel->atts[i];
		size_t n;

		r->p++; /* flags: the key does not matter to an insert */
		n = strlen((const char *)r->p);
		memcpy(o, r->p, n + 1);
		a->name = o;
		o += n + 1;
		r->p += n + 1;
		a->typid = (uint32_t)be_uint(r->p, 4);
		r->p += 8; /* and the typmod, which w2j.c never looks at */
		a->roles = 0;
		/* Exact names, case included; the first column of a name
		 * wins and one column may serve two roles, as in w2j.c. */
		for (int k = 0; k < REC_NROLES; k++) {
			const char *w = k < REC_NCOLS ? want[k]
			                : (size_t)(k - REC_NCOLS) < st->spec->nextra
			                    ? st->spec->col_extra[k - REC_NCOLS]
			                    : NULL;
			if (w != NULL && rel->col[k] < 0 && strcmp(a->name, w) == 0) {
				rel->col[k] = (int)i;
				a->roles |= (uint16_t)(1u << k);
			}
		}
	}
	pgo_rel_put(st, rel);
	return 0;
}

/* The relation of an Int32 OID that a change names. */
int pgo_find_rel(const struct pgo_state *st, struct pgo_rd *r,
                 struct pgo_ctx *c, const struct pgo_rel **out)
{
	uint32_t relid;

	if (rd_u32(r, "the relation OID", &relid) != 0)
		return -1;
	*out = pgo_rel_get(st, relid);
	if (*out == NULL) {
		pgo_error(c, "relation OID %" PRIu32 " was never described by a "
		          "Relation message in this session (was the decoder reset "
		          "when the session began?)", relid);
		return -1;
	}
	c->rel = *out;
	return 0;
}

/* TupleData: Int16 column count (the relation's), then per column a kind
 * byte: 'n' NULL, 'u' unchanged TOAST value (no data), 't' Int32 length
 * and that many bytes of text, 'b' the same in binary. vals, when not
 * NULL, receives the values of the columns that roles read. */
int pgo_tuple(struct pgo_rd *r, const struct pgo_rel *rel, const char *which,
              struct pgo_val *vals)
{
	uint16_t natts;

	if (rd_u16(r, "the column count", &natts) != 0)
		return -1;
	if (natts != rel->natts)
		return pgo_error(r->c, "the %s tuple has %u columns, the relation "
		                 "%u", which, natts, rel->natts);
	for (unsigned i = 0; i < natts; i++) {
		const struct pgo_att *a = &rel->atts[i];
		struct pgo_val v = { 0, NULL, 0 };
		uint8_t kind;

		if (rd_u8(r, "a column's kind", &kind) != 0)
			return -1;
		switch (kind) {
		case 'n':
		case 'u':
			break;
		case 't':
			if (rd_len(r, "a column's length", &v.len) != 0)
				return -1;
			v.p = r->p;
			r->p += v.len;
			break;
		case 'b':
			/* Only with the binary option, which the relay never
			 * sets: binary is each type's send format, not the
			 * text that Kafka consumers get from wal2json. */
			return pgo_error(r->c, "column \"%s\" is in binary format "
			                 "('b'), and the relay reads text only (start "
			                 "replication without the binary option)",
			                 a->name);
		default:
			return pgo_error(r->c, "column \"%s\" has unknown kind 0x%02x",
			                 a->name, kind);
		}
		v.kind = (char)kind;
		if (vals != NULL)
			for (unsigned m = a->roles; m != 0; m &= m - 1)
				vals[__builtin_ctz(m)] = v;
	}
	return 0;
}
