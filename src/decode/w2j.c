/* SPDX-License-Identifier: Apache-2.0 */
/* w2j.c -- decodes one wal2json format-version 2 record.
 *
 * wal2json writes one JSON object per record: B and C around each
 * transaction, I/U/D/T per change, M per logical message. Only B, C, I
 * on the outbox table and M matter to the relay; everything else is
 * skipped. emit.c reads the content of outbox_emit()'s M.
 * See tests/fixtures/README.md for real examples of every kind.
 *
 * jansson is the reference: w2j_decode_slow() below is the whole
 * decoder. Two strict scanners in front of it (w2j_scan.c) read the
 * exact shapes wal2json prints for B/C and I records without building a
 * tree; on anything they are not sure about they step aside and jansson
 * decides, so both ways give the same record and the same error, byte
 * for byte (tests/unit/check_w2j.c compares them line by line).
 *
 * jansson cannot hold a number beyond a double (1e400), which is valid
 * JSON; jc_check() (json_check.c) decides for those, both for payloads in
 * text columns and for whole records (w2j_load_wide()). */
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "decode/json_check.h"
#include "decode/w2j.h"
#include "w2j_int.h"

/* Writes "<message> (LSN X/X, xid N)" into err, leaving out what the
 * record did not reveal before the failure. */
void RELAY_PRINTF(4, 5)
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
	return record_parse_timestamp(json_string_value(v), out);
}

/* Fills an id/key/type/route slot from a column value: a string is
 * borrowed, an integer is printed into rec->num_[slot]. */
static int w2j_text_value(struct record *rec, int slot,
                          json_t *v, struct rec_str *out, const char *col,
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
 * published are cut from the original text (emit_member_text()). */
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
json_t *w2j_load_wide(const char *s, size_t len, size_t flags,
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

/* Java's String.trim().isEmpty(): no byte above ' '. */
static bool w2j_blank(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] > ' ')
			return false;
	return true;
}

static int w2j_payload(json_t *col, json_t *v, struct rec_str *out,
                       const char *name, bool blank_ok,
                       const struct w2j_ctx *c, char *err, size_t errlen)
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
	/* An empty payload is a tombstone when the option says so
	 * (envelope.c), not text to check. */
	if (blank_ok && w2j_blank(out->ptr, out->len))
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

static enum wire_type w2j_col_type(json_t *col)
{
	json_t *t = json_object_get(col, "type");

	return json_is_string(t) ? wire_type_of(json_string_value(t),
	                                        json_string_length(t))
	                         : WIRE_T_STRING;
}

/* The extra columns of the spec (record.h): text or an integer, NULL
 * kept as NULL, a missing column left unseen. */
static int w2j_extras(struct record *rec, json_t *cols,
                      const struct record_spec *spec, struct w2j_ctx *c,
                      char *err, size_t errlen)
{
	for (size_t x = 0; x < spec->nextra; x++) {
		json_t *col = NULL, *v;
		size_t i;

		json_array_foreach(cols, i, col) {
			const char *name = json_string_value(json_object_get(col,
			                                                     "name"));
			if (name != NULL && strcmp(name, spec->col_extra[x]) == 0)
				break;
		}
		if (i == json_array_size(cols))
			continue;
		rec->extra_seen |= 1u << x;
		v = json_object_get(col, "value");
		if (v == NULL || json_is_null(v))
			continue;
		if (json_is_boolean(v)) {
			rec->extra[x].ptr = json_is_true(v) ? "true" : "false";
			rec->extra[x].len = strlen(rec->extra[x].ptr);
			continue;
		}
		if (json_is_integer(v)) {
			/* Its text, as a string the tree (which the record
			 * owns) keeps. */
			char num[32];
			snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT,
			         json_integer_value(v));
			v = json_string(num);
			if (v == NULL || json_object_set_new(col, "value", v) != 0) {
				w2j_error(err, errlen, c, "out of memory");
				return -1;
			}
		}
		if (!json_is_string(v)) {
			w2j_error(err, errlen, c, "column \"%s\" must be a string, an "
			          "integer or a boolean, not %s", spec->col_extra[x],
			          json_is_real(v) ? "a real number" : "a container");
			return -1;
		}
		rec->extra[x].ptr = json_string_value(v);
		rec->extra[x].len = json_string_length(v);
	}
	return 0;
}

/* The I record of an outbox row: pull the five columns out of "columns". */
static int w2j_event(struct record *rec, json_t *root,
                     const struct record_spec *spec, struct w2j_ctx *c,
                     char *err, size_t errlen)
{
	const char *want[REC_NCOLS] = { spec->col_id, spec->col_key,
		                            spec->col_type, spec->col_route,
		                            spec->col_payload };
	struct rec_str *dst[REC_COL_PAYLOAD] = { &rec->id, &rec->key,
		                                     &rec->type, &rec->route };
	json_t *found[REC_NCOLS] = { NULL };
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
		for (k = 0; k < REC_NCOLS; k++)
			if (found[k] == NULL && strcmp(name, want[k]) == 0)
				found[k] = col;
	}
	for (k = 0; k < REC_NCOLS; k++) {
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
			if (k == REC_COL_TYPE) /* may be NULL: no header then */
				continue;
			if (k == REC_COL_PAYLOAD && spec->payload_nullable)
				continue; /* a tombstone (envelope.c) */
			w2j_error(err, errlen, c, "column \"%s\" is NULL", want[k]);
			return -1;
		}
		if (k == REC_COL_PAYLOAD) {
			if (w2j_payload(found[k], v, &rec->payload, want[k],
			                spec->payload_nullable, c, err,
			                errlen) != 0)
				return -1;
		} else if (w2j_text_value(rec, k, v, dst[k], want[k], c, err,
		                          errlen) != 0) {
			return -1;
		}
		if (k == REC_COL_ID)
			c->event_id = rec->id.ptr; /* later errors can name it */
	}
	rec->key_type = w2j_col_type(found[REC_COL_KEY]);
	rec->payload_type = w2j_col_type(found[REC_COL_PAYLOAD]);
	return w2j_extras(rec, cols, spec, c, err, errlen);
}

/* -------------------------------------------------------------- decode */

int w2j_decode(const char *line, size_t len, const struct record_spec *spec,
               struct record *rec, char *err, size_t errlen)
{
	if (w2j_decode_fast(line, len, spec, rec) == 0)
		return 0;
	return w2j_decode_slow(line, len, spec, rec, err, errlen);
}

/* jansson alone: the reference for every line, and the decoder of all
 * that the scanners leave. */
int w2j_decode_slow(const char *line, size_t len,
                    const struct record_spec *spec, struct record *rec,
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
		rec->kind = action[0] == 'B' ? REC_BEGIN : REC_COMMIT;
		r = w2j_get_lsn(root, "nextlsn", &rec->nextlsn);
		if (r < 0 || (r == 0 && rec->kind == REC_COMMIT)) {
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
			rec->kind = REC_SKIP;
			json_decref(root);
			return 0;
		}
		rec->kind = REC_EVENT;
		if (w2j_get_timestamp(root, &rec->commit_ts_us) != 0) {
			w2j_error(err, errlen, &c, "bad \"timestamp\"");
			goto fail;
		}
		if (w2j_event(rec, root, spec, &c, err, errlen) != 0)
			goto fail;
		rec->root_ = root; /* record_clear() releases the tree */
		return 0;
	case 'M':
		/* Logical decoding messages: the relay's heartbeats and
		 * outbox_emit()'s events (emit_decode() reads those). The
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
		rec->kind = REC_MESSAGE;
		rec->root_ = root;
		return 0;
	case 'U':
		/* An update of the outbox (wal2json sends them when
		 * table.op.invalid.behavior asks): judged in event.c. */
		c.schema = json_string_value(json_object_get(root, "schema"));
		c.table = json_string_value(json_object_get(root, "table"));
		rec->kind = c.schema != NULL && c.table != NULL &&
		            strcmp(c.schema, spec->schema) == 0 &&
		            (w2j_any_table(spec) || strcmp(c.table, spec->table) == 0)
		                ? REC_UPDATE : REC_SKIP;
		json_decref(root);
		return 0;
	default:
		/* D, T and whatever later versions add. */
		rec->kind = REC_SKIP;
		json_decref(root);
		return 0;
	}

fail:
	json_decref(root);
	memset(rec, 0, sizeof(*rec));
	rec->xid = -1;
	return -1;
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
