/* SPDX-License-Identifier: Apache-2.0 */
/* stream_spec.c -- the wal2json options as data, rendered two ways
 * (stream_spec.h). */
#include <stdbool.h>
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

void ss_init(struct stream_spec *ss, const struct relay_config *cfg)
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
	if (strcmp(cfg->slot_plugin, "pgoutput") == 0)
		ss_use_pgoutput(ss, cfg->slot_publication);
}

void ss_use_pgoutput(struct stream_spec *ss, const char *publication)
{
	/* publication_names is an identifier list inside the literal: one
	 * name, double-quoted so that it is taken exactly as written. */
	size_t cap = strlen(publication) + 3;
	char *names = xmalloc(cap);

	snprintf(names, cap, "\"%s\"", publication);
	ss_free(ss);
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

void ss_free(struct stream_spec *ss)
{
	for (size_t i = 0; i < ss->nopt; i++)
		free(ss->opt[i].value);
	ss->nopt = 0;
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
