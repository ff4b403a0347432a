/* SPDX-License-Identifier: Apache-2.0 */
/* pgo_int.h -- what pgo.c (the messages) and pgo_rel.c (the relation
 * cache, Relation and TupleData) share, and nobody else: the cached
 * relation, the cursor over one message with its bounds-checked readers,
 * and the error text every failure is written with. Not under include/:
 * the layout of a cached relation is no other module's business.
 *
 * The readers are static inline: they run for every field of every
 * message, and were inlined when pgo.c held them all. */
#ifndef RELAY_PGO_INT_H
#define RELAY_PGO_INT_H

#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lib/common.h"
#include "decode/pgo.h"
#include "decode/record.h"

struct pgo_att {
	const char *name;  /* into the relation's block */
	uint32_t typid;
	uint16_t roles;    /* bit r: the column that role r reads (the five
	                    * of enum rec_col, then the spec's extras) */
};

/* One Relation message, in one block: this header, the attributes, then
 * the names they point to. */
struct pgo_rel {
	uint32_t relid;
	bool ours;             /* the outbox table (or one of "schema.*") */
	char replident;        /* 'd'efault, 'n'othing, 'f'ull, 'i'ndex */
	uint16_t natts;
	int col[REC_NROLES];   /* attribute each role reads, -1 when none */
	const char *nspname;   /* "pg_catalog" when the message says "" */
	const char *relname;
	struct pgo_att atts[];
};

/* One column value of a tuple, borrowed from the message. */
struct pgo_val {
	char kind;                 /* 'n', 'u' or 't'; 0 when not read */
	const unsigned char *p;
	size_t len;
};

/* What is known about the message so far, for error messages. */
struct pgo_ctx {
	const char *kind;          /* "Insert": the message's name */
	const struct pgo_rel *rel; /* once its relation is known */
	const unsigned char *event_id; /* the outbox row's id, once read */
	size_t event_id_len;
	uint64_t lsn;              /* the frame's dataStart */
	int64_t xid;               /* -1 when unknown */
	char *err;
	size_t errlen;
};

/* A cursor over one message; c says what to blame. */
struct pgo_rd {
	const unsigned char *p;
	const unsigned char *end;
	const struct pgo_ctx *c;
};

/* Writes "pgoutput <Kind>[ on schema.table]: <text> (event id ..., LSN
 * X/X, xid N)" into the context's buffer, with what is known (pgo_rel.c).
 * Returns -1, so that callers can return it. */
int pgo_error(const struct pgo_ctx *c, const char *fmt, ...)
	RELAY_PRINTF(2, 3);

/* ------------------------------------------------------------- reading */

static inline size_t rd_left(const struct pgo_rd *r)
{
	return (size_t)(r->end - r->p);
}

/* Always -1, spelled out at each call so that the compiler sees *out
 * is set whenever 0 is returned. */
static inline void rd_short(const struct pgo_rd *r, const char *field, size_t need)
{
	pgo_error(r->c, "cut short in %s (%zu of %zu bytes)", field, rd_left(r),
	          need);
}

/* An n-byte big-endian integer (n <= 8), bounds-checked. */
static inline int rd_uint(struct pgo_rd *r, const char *field, size_t n,
                          uint64_t *out)
{
	if (rd_left(r) < n) {
		rd_short(r, field, n);
		return -1;
	}
	*out = be_uint(r->p, n);
	r->p += n;
	return 0;
}

static inline int rd_u8(struct pgo_rd *r, const char *field, uint8_t *out)
{
	uint64_t v;

	if (rd_uint(r, field, 1, &v) != 0)
		return -1;
	*out = (uint8_t)v;
	return 0;
}

static inline int rd_u16(struct pgo_rd *r, const char *field, uint16_t *out)
{
	uint64_t v;

	if (rd_uint(r, field, 2, &v) != 0)
		return -1;
	*out = (uint16_t)v;
	return 0;
}

static inline int rd_u32(struct pgo_rd *r, const char *field, uint32_t *out)
{
	uint64_t v;

	if (rd_uint(r, field, 4, &v) != 0)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static inline int rd_u64(struct pgo_rd *r, const char *field, uint64_t *out)
{
	return rd_uint(r, field, 8, out);
}

/* An Int32 length (of a value or a message's content): never negative. */
static inline int rd_len(struct pgo_rd *r, const char *field, size_t *out)
{
	uint32_t v;

	if (rd_u32(r, field, &v) != 0)
		return -1;
	if (v > INT32_MAX) {
		pgo_error(r->c, "%s is negative (%" PRId32 ")", field, (int32_t)v);
		return -1;
	}
	if (v > rd_left(r)) {
		pgo_error(r->c, "%s is %" PRIu32 " bytes, only %zu are left", field,
		          v, rd_left(r));
		return -1;
	}
	*out = v;
	return 0;
}

/* A String: bytes up to a NUL, which must be in the message. *out points
 * into the message and is NUL-terminated there. */
static inline int rd_str(struct pgo_rd *r, const char *field, const char **out,
                         size_t *len)
{
	const unsigned char *nul = memchr(r->p, '\0', rd_left(r));

	if (nul == NULL) {
		pgo_error(r->c, "cut short in %s (no NUL ends it)", field);
		return -1;
	}
	*out = (const char *)r->p;
	*len = (size_t)(nul - r->p);
	r->p = nul + 1;
	return 0;
}

/* The message must end here: a byte to spare means the layout is not the
 * one this decoder knows (another protocol version, a bad frame). */
static inline int rd_end(const struct pgo_rd *r)
{
	if (rd_left(r) != 0)
		return pgo_error(r->c, "%zu bytes left over after its last field",
		                 rd_left(r));
	return 0;
}

/* ------------------------------------------------ pgo_rel.c, for pgo.c */

/* Relation: caches the table it describes (replacing an entry of the same
 * OID). 0, or -1 with the error written through c. */
int pgo_relation(struct pgo_state *st, struct pgo_rd *r, struct pgo_ctx *c);

/* The relation of the Int32 OID at r, which must have been described in
 * this session; sets c->rel so that later errors name it. */
int pgo_find_rel(const struct pgo_state *st, struct pgo_rd *r,
                 struct pgo_ctx *c, const struct pgo_rel **out);

/* TupleData of rel; vals, when not NULL, receives the values of the
 * columns that roles (enum rec_col) read. */
int pgo_tuple(struct pgo_rd *r, const struct pgo_rel *rel, const char *which,
              struct pgo_val *vals);

#endif
