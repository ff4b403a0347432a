/* SPDX-License-Identifier: Apache-2.0 */
/* stream_spec.c -- the wal2json options as data, rendered two ways
 * (stream_spec.h). */
#include <stdbool.h>
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/stream_spec.h"
#include "decode/w2j.h"

/* A growing string; the out-of-memory case is fatal (xrealloc). */
struct sbuf {
	char *p;
	size_t len, cap;
};

static void sb_putc(struct sbuf *b, char c)
{
	if (b->len + 2 > b->cap) {
		b->cap = b->cap ? b->cap * 2 : 256;
		b->p = xrealloc(b->p, b->cap);
	}
	b->p[b->len++] = c;
	b->p[b->len] = '\0';
}

static void sb_puts(struct sbuf *b, const char *s)
{
	for (; *s != '\0'; s++)
		sb_putc(b, *s);
}

static void add(struct stream_spec *ss, const char *name, char *value)
{
	/* The table below never holds more than SS_MAX_OPTIONS rows. */
	ss->opt[ss->nopt].name = name;
	ss->opt[ss->nopt].value = value;
	ss->nopt++;
}

/* wal2json's add-tables value: "schema.table" with wal2json's escapes,
 * or for outbox.table = schema.* its own wildcard, unescaped, so that
 * partitions created later are read too. */
static char *tables_value(const struct record_spec *w)
{
	bool all = strcmp(w->table, "*") == 0;
	/* Each character may need a backslash; the '*' and the NUL. */
	size_t cap = 2 * (strlen(w->schema) + strlen(w->table)) + 4;
	char *v = xmalloc(cap);
	int n = w2j_add_tables_value(w->schema, all ? "" : w->table, v, cap - 1);

	if (n < 0)
		abort(); /* cap is enough by construction */
	if (all) {
		v[n] = '*';
		v[n + 1] = '\0';
	}
	return v;
}

static int ss_init_checked(struct stream_spec *ss,
                           const struct relay_config *cfg, char *err,
                           size_t errlen);
static void ss_free_options(struct stream_spec *ss);

int ss_extra_column(struct stream_spec *ss, const char *column)
{
	struct ss_envelope *e = &ss->env;

	for (size_t i = 0; i < ss->spec.nextra; i++)
		if (strcmp(ss->spec.col_extra[i], column) == 0)
			return (int)i;
	if (ss->spec.nextra >= REC_MAX_EXTRA)
		return -1;
	e->cols[ss->spec.nextra] = xstrdup(column);
	ss->spec.col_extra[ss->spec.nextra] = e->cols[ss->spec.nextra];
	return (int)ss->spec.nextra++;
}

static const struct {
	const char *word;
	enum ss_place place;
} ss_places[] = {
	{ "header", SS_PLACE_HEADER },
	{ "envelope", SS_PLACE_ENVELOPE },
	{ "partition", SS_PLACE_PARTITION },
};

/* table.fields.additional.placement: col:placement[:alias],... as
 * Debezium splits it (at commas, then colons, each part trimmed). */
static int ss_placements(struct stream_spec *ss, const char *list, char *err,
                         size_t errlen)
{
	struct ss_envelope *e = &ss->env;
	char *copy = xstrdup(list), *save = NULL, *item;
	int rc = -1;

	for (item = strtok_r(copy, ",", &save); item != NULL;
	     item = strtok_r(NULL, ",", &save)) {
		char *part[4] = { NULL }, *p2 = NULL, *tok;
		size_t n = 0, k;
		int slot;

		for (tok = strtok_r(item, ":", &p2); tok != NULL && n < 4;
		     tok = strtok_r(NULL, ":", &p2)) {
			while (*tok == ' ' || *tok == '\t')
				tok++;
			for (size_t l = strlen(tok);
			     l > 0 && (tok[l - 1] == ' ' || tok[l - 1] == '\t'); l--)
				tok[l - 1] = '\0';
			part[n++] = tok;
		}
		if (n < 2 || n > 3 || part[0][0] == '\0' ||
		    (n == 3 && part[2][0] == '\0')) {
			errbuf_set(err, errlen, "table.fields.additional.placement: "
			           "\"%s\" is not column:header|envelope|partition"
			           "[:alias]", item);
			goto out;
		}
		for (k = 0; k < sizeof(ss_places) / sizeof(ss_places[0]); k++)
			if (strcasecmp(part[1], ss_places[k].word) == 0)
				break;
		if (k == sizeof(ss_places) / sizeof(ss_places[0])) {
			errbuf_set(err, errlen, "table.fields.additional.placement: "
			           "\"%s\" is not one of header, envelope, partition",
			           part[1]);
			goto out;
		}
		slot = ss_extra_column(ss, part[0]);
		if (slot < 0 || e->nadd >= REC_MAX_EXTRA) {
			errbuf_set(err, errlen, "table.fields.additional.placement: "
			           "more than %d columns", REC_MAX_EXTRA);
			goto out;
		}
		e->add[e->nadd].alias = xstrdup(n == 3 ? part[2] : part[0]);
		e->add[e->nadd].place = ss_places[k].place;
		e->add[e->nadd].slot = slot;
		e->nadd++;
	}
	rc = 0;
out:
	free(copy);
	return rc;
}

/* Java's replacement string: "$" starts a group reference, and the
 * only group the relay knows is ${routedByValue}; a backslash quotes
 * the next character. Anything else Java would refuse or read another
 * way. */
static int ss_check_replacement(const char *tmpl, char *err, size_t errlen)
{
	static const char ph[] = "${routedByValue}";

	for (const char *p = tmpl; *p != '\0'; p++) {
		if (*p == '$' && strncmp(p, ph, sizeof(ph) - 1) == 0) {
			p += sizeof(ph) - 2;
			continue;
		}
		if (*p == '$' || *p == '\\') {
			errbuf_set(err, errlen, "route.topic.replacement: \"%s\": only "
			           "${routedByValue} is a group reference here, and a "
			           "topic name has no '$' or '\\'", tmpl);
			return -1;
		}
	}
	return 0;
}

/* The options of the Outbox Event Router (ss_envelope) from cfg. */
static int ss_envelope_init(struct stream_spec *ss,
                            const struct relay_config *cfg, char *err,
                            size_t errlen)
{
	struct ss_envelope *e = &ss->env;
	static const char *const ops[] = { "warn", "error", "fatal" };
	bool envelope = false;

	if (wire_format_parse(cfg->key_format, &e->key_format) < 0 ||
	    wire_format_parse(cfg->value_format, &e->value_format) < 0) {
		errbuf_set(err, errlen, "key.format and value.format are string, "
		           "json or json-schema");
		return -1;
	}
	for (int i = 0; i < 3; i++)
		if (strcmp(cfg->op_invalid_behavior, ops[i]) == 0)
			e->op_invalid = (enum ss_op_behavior)i;
	e->tombstone_on_empty = cfg->route_tombstone_on_empty_payload;
	if (route_regex_compile(&e->rx, cfg->route_topic_regex, err, errlen) < 0)
		return -1;
	if (ss_check_replacement(cfg->route_topic_replacement, err, errlen) < 0)
		return -1;
	if (cfg->field_timestamp[0] != '\0')
		e->ts_slot = ss_extra_column(ss, cfg->field_timestamp);
	if (ss_placements(ss, cfg->fields_additional_placement, err, errlen) < 0)
		return -1;
	/* Last: Debezium's default names a column most outbox tables lack,
	 * and ss_drop_absent_trace() takes it back off then. */
	if (cfg->tracing_span_context_field[0] != '\0' &&
	    (e->trace_slot = ss_extra_column(ss,
	                                     cfg->tracing_span_context_field)) < 0) {
		errbuf_set(err, errlen, "too many extra columns (at most %d)",
		           REC_MAX_EXTRA);
		return -1;
	}
	if (e->nadd > 0 && cfg->outbox_emit_prefix[0] != '\0') {
		errbuf_set(err, errlen, "table.fields.additional.placement reads "
		           "columns of the outbox row, which outbox_emit() events "
		           "(outbox.emit.prefix) do not have: set one of the two");
		return -1;
	}
	for (size_t i = 0; i < e->nadd; i++)
		envelope = envelope || e->add[i].place == SS_PLACE_ENVELOPE;
	/* Debezium's value then is a Connect struct {payload, alias...}.
	 * StringConverter writes Struct.toString() (Java's debugging text,
	 * "Struct{payload=...}"), and JsonConverter with schemas names the
	 * struct after the connector's topic.prefix, which the relay does
	 * not have: only the plain JSON object is a format to keep. */
	if (envelope && e->value_format != WIRE_JSON) {
		errbuf_set(err, errlen, "table.fields.additional.placement puts a "
		           "column in the envelope, which needs value.format = json "
		           "(with %s Debezium writes %s)", cfg->value_format,
		           e->value_format == WIRE_STRING
		               ? "Java's Struct.toString() text, which no consumer "
		                 "can parse reliably"
		               : "a schema named after the connector's topic.prefix, "
		                 "which the relay has no setting for");
		return -1;
	}
	e->cloudevents = cfg->cloudevents_enabled;
	if (cfg->cloudevents_source[0] != '\0') {
		e->ce_source = xstrdup(cfg->cloudevents_source);
	} else {
		size_t n = strlen(cfg->slot_name) + sizeof("/outbox-relay/");
		e->ce_source = xmalloc(n);
		snprintf(e->ce_source, n, "/outbox-relay/%s", cfg->slot_name);
	}
	if (e->ts_slot < 0 && cfg->field_timestamp[0] != '\0') {
		errbuf_set(err, errlen, "too many extra columns (at most %d)",
		           REC_MAX_EXTRA);
		return -1;
	}
	/* Updates of the outbox are seen to be judged
	 * (table.op.invalid.behavior): wal2json is asked for them. Deletes
	 * are not: the outbox pattern deletes what it inserted, and
	 * Debezium drops a delete without a word too. pgoutput sends what
	 * the publication publishes (--create-slot: inserts only). */
	for (size_t i = 0; i < ss->nopt; i++)
		if (strcmp(ss->opt[i].name, "actions") == 0) {
			free(ss->opt[i].value);
			ss->opt[i].value = xstrdup("insert,update");
		}
	/* The trace column is Debezium's default and mostly absent: a row
	 * without it costs no call (event.c). */
	e->active = e->key_format != WIRE_STRING ||
	            e->value_format != WIRE_STRING || e->tombstone_on_empty ||
	            e->ts_slot >= 0 || e->nadd > 0 || e->cloudevents;
	ss->spec.payload_nullable = e->tombstone_on_empty;
	ss->spec.want_types = e->key_format == WIRE_JSON_SCHEMA ||
	                      e->value_format == WIRE_JSON_SCHEMA ||
	                      e->key_format == WIRE_JSON ||
	                      e->value_format == WIRE_JSON;
	return 0;
}

void ss_drop_absent_trace(struct stream_spec *ss, unsigned present)
{
	struct ss_envelope *e = &ss->env;
	int last = (int)ss->spec.nextra - 1;

	if (e->trace_slot < 0 || e->trace_slot != last ||
	    (present & (1u << last)) || e->ts_slot == last)
		return;
	for (size_t i = 0; i < e->nadd; i++)
		if (e->add[i].slot == last)
			return;
	/* The name stays (cols[last]): ss_restore_trace() looks again at
	 * the next session start. */
	ss->spec.nextra--;
	e->trace_slot = -1;
	e->trace_dropped = true;
}

void ss_restore_trace(struct stream_spec *ss)
{
	struct ss_envelope *e = &ss->env;

	if (!e->trace_dropped)
		return;
	e->trace_slot = (int)ss->spec.nextra++;
	e->trace_dropped = false;
}

int ss_check_config(const struct relay_config *cfg, char *err, size_t errlen)
{
	struct stream_spec ss;
	int rc;

	rc = ss_init_checked(&ss, cfg, err, errlen);
	ss_free(&ss);
	return rc;
}

void ss_init(struct stream_spec *ss, const struct relay_config *cfg)
{
	char err[512];

	/* The configuration passed ss_check_config() at start. */
	if (ss_init_checked(ss, cfg, err, sizeof(err)) < 0)
		abort();
}

static int ss_init_checked(struct stream_spec *ss,
                           const struct relay_config *cfg, char *err,
                           size_t errlen)
{
	const struct record_spec spec = {
		.schema = cfg->outbox_schema,
		.table = cfg->outbox_table,
		.col_id = cfg->field_id,
		.col_key = cfg->field_key,
		.col_type = cfg->field_type,
		.col_route = cfg->route_by_field,
		.col_payload = cfg->field_payload,
	};

	ss_init_parts(ss, &spec, cfg->heartbeat_prefix, cfg->outbox_emit_prefix,
	              cfg->route_topic_replacement);
	if (ss_envelope_init(ss, cfg, err, errlen) < 0)
		return -1;
	if (strcmp(cfg->slot_plugin, "pgoutput") == 0)
		ss_use_pgoutput(ss, cfg->slot_publication);
	return 0;
}

void ss_use_pgoutput(struct stream_spec *ss, const char *publication)
{
	/* publication_names is an identifier list inside the literal: one
	 * name, double-quoted so that it is taken exactly as written. */
	size_t cap = strlen(publication) + 3;
	char *names = xmalloc(cap);

	snprintf(names, cap, "\"%s\"", publication);
	ss_free_options(ss);
	ss->plugin = SS_PLUGIN_PGOUTPUT;
	ss->publication = publication;
	add(ss, "proto_version", xstrdup("1"));
	add(ss, "publication_names", names);
	add(ss, "messages", xstrdup("true"));
}

const char *ss_plugin_name(const struct stream_spec *ss)
{
	return ss->plugin == SS_PLUGIN_PGOUTPUT ? "pgoutput" : "wal2json";
}

const char *ss_peek_function(const struct stream_spec *ss)
{
	return ss->plugin == SS_PLUGIN_PGOUTPUT
	           ? "pg_logical_slot_peek_binary_changes"
	           : "pg_logical_slot_peek_changes";
}

void ss_init_parts(struct stream_spec *ss, const struct record_spec *spec,
                   const char *heartbeat_prefix, const char *emit_prefix,
                   const char *topic_template)
{
	/* The fixed part: one record per change with its LSN, the xid and
	 * commit time on every record, B/C around each transaction, and
	 * only inserts (an outbox is append-only). */
	static const char *const fixed[][2] = {
		{ "format-version", "2" },
		{ "include-lsn", "1" },
		{ "include-xids", "1" },
		{ "include-transaction", "1" },
		{ "include-timestamp", "1" },
		{ "actions", "insert" },
	};
	struct sbuf prefixes = { 0 };

	memset(ss, 0, sizeof(*ss));
	ss->spec = *spec;
	ss->env.rx.identity = true;
	ss->env.ts_slot = ss->env.trace_slot = -1;
	/* Debezium's outbox DDL: the key NOT NULL, the payload nullable. */
	ss->env.payload_optional = true;
	ss->heartbeat_prefix = heartbeat_prefix;
	ss->emit_prefix = emit_prefix;
	ss->topic_template = topic_template;
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		add(ss, fixed[i][0], xstrdup(fixed[i][1]));
	add(ss, "add-tables", tables_value(&ss->spec));
	/* wal2json drops every message whose prefix is not listed, and the
	 * slot then moves past it: an outbox_emit() event whose prefix is
	 * missing here is lost. (cfg_validate() refuses prefixes with the
	 * characters wal2json splits the list at.) */
	sb_puts(&prefixes, ss->heartbeat_prefix);
	if (ss->emit_prefix[0] != '\0') {
		if (prefixes.len > 0)
			sb_putc(&prefixes, ',');
		sb_puts(&prefixes, ss->emit_prefix);
	}
	if (prefixes.len > 0)
		add(ss, "add-msg-prefixes", prefixes.p);
	else
		free(prefixes.p);
}

static void ss_free_options(struct stream_spec *ss)
{
	for (size_t i = 0; i < ss->nopt; i++)
		free(ss->opt[i].value);
	ss->nopt = 0;
}

void ss_free(struct stream_spec *ss)
{
	struct ss_envelope *e = &ss->env;

	ss_free_options(ss);
	route_regex_free(&e->rx);
	for (size_t i = 0; i < e->nadd; i++)
		free(e->add[i].alias);
	for (size_t i = 0; i < REC_MAX_EXTRA; i++)
		free(e->cols[i]);
	free(e->ce_source);
	memset(e, 0, sizeof(*e));
	e->rx.identity = true;
	e->ts_slot = e->trace_slot = -1;
	ss->spec.nextra = 0;
}

enum ss_message ss_message_kind(const struct stream_spec *ss,
                                bool transactional, const char *prefix)
{
	if (!transactional && strcmp(prefix, ss->heartbeat_prefix) == 0)
		return SS_MSG_HEARTBEAT;
	if (transactional && ss->emit_prefix[0] != '\0' &&
	    strcmp(prefix, ss->emit_prefix) == 0)
		return SS_MSG_EMIT;
	return SS_MSG_OTHER;
}

char *ss_start_command(const struct stream_spec *ss, const char *slot)
{
	struct sbuf b = { 0 };

	sb_puts(&b, "START_REPLICATION SLOT \"");
	sb_puts(&b, slot);
	sb_puts(&b, "\" LOGICAL 0/0 (");
	for (size_t i = 0; i < ss->nopt; i++) {
		/* "name" 'value', a quote in the value doubled. */
		if (i > 0)
			sb_puts(&b, ", ");
		sb_putc(&b, '"');
		sb_puts(&b, ss->opt[i].name);
		sb_puts(&b, "\" '");
		for (const char *v = ss->opt[i].value; *v != '\0'; v++) {
			if (*v == '\'')
				sb_putc(&b, '\'');
			sb_putc(&b, *v);
		}
		sb_putc(&b, '\'');
	}
	sb_putc(&b, ')');
	return b.p;
}

/* One element of an array literal: double-quoted, with backslash before
 * a double quote or a backslash. */
static void array_elem(struct sbuf *b, const char *s)
{
	sb_putc(b, '"');
	for (; *s != '\0'; s++) {
		if (*s == '"' || *s == '\\')
			sb_putc(b, '\\');
		sb_putc(b, *s);
	}
	sb_putc(b, '"');
}

char *ss_peek_options(const struct stream_spec *ss)
{
	struct sbuf b = { 0 };

	sb_putc(&b, '{');
	for (size_t i = 0; i < ss->nopt; i++) {
		if (i > 0)
			sb_putc(&b, ',');
		array_elem(&b, ss->opt[i].name);
		sb_putc(&b, ',');
		array_elem(&b, ss->opt[i].value);
	}
	sb_putc(&b, '}');
	return b.p;
}
