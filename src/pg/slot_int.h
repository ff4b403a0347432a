/* SPDX-License-Identifier: Apache-2.0 */
/* slot_int.h -- what slot.c, slot_sample.c and slot_pub.c share, and
 * nobody else. Not under include/: other modules ask slot.h's questions,
 * they do not build its SQL. */
#ifndef RELAY_SLOT_INT_H
#define RELAY_SLOT_INT_H

#include <stddef.h>

#include <libpq-fe.h>

#include "pg/pgutil.h"
#include "pg/slot.h"
#include "decode/record.h"

/* A boolean column that a version may lack (selected as NULL there). */
static inline enum slot_flag slot_flag_of(const PGresult *res, int col)
{
	if (PQgetisnull(res, 0, col))
		return SLOT_FLAG_ABSENT;
	return pgu_bool(res, 0, col) ? SLOT_FLAG_TRUE : SLOT_FLAG_FALSE;
}

/* s literal-escaped, so that a replication connection (simple protocol
 * only) can run it; PQfreemem() it. NULL with st and err filled
 * (slot.c). */
char *slot_literal(PGconn *conn, const char *s, struct pgu_status *st,
                   char *err, size_t errlen);

/* The configured columns of spec in one order (rec_col's), so that a
 * query and its messages walk them alike (slot.c). */
void slot_spec_cols(const struct record_spec *spec,
                    const char *cols[REC_NCOLS]);

#endif
