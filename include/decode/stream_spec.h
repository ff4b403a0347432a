/* SPDX-License-Identifier: Apache-2.0 */
/* stream_spec.h -- what the relay asks its output plugin for, in one place.
 *
 * The relay's START_REPLICATION and the runbook's peeks
 * (pg_logical_slot_peek_changes) must decode the same records, or the
 * runbook shows, counts and skips something other than what the relay
 * publishes. So the wal2json options are built once, from the
 * configuration, as a list of name/value pairs, and rendered into either
 * form here. The logical message prefixes the relay reads (its own
 * heartbeats, outbox_emit() events) are decided here and nowhere else. */
#ifndef RELAY_STREAM_SPEC_H
#define RELAY_STREAM_SPEC_H

#include <stddef.h>

#include "lib/config.h"
#include "decode/record.h"
#include "decode/route.h"
#include "decode/wire.h"

#define SS_MAX_OPTIONS 8

/* One wal2json option; both strings owned by the spec. */
struct ss_option {
	const char *name;
	char *value;
};

/* Where table.fields.additional.placement puts a column. */
enum ss_place {
	SS_PLACE_HEADER,     /* a header named alias, the column's text */
	SS_PLACE_ENVELOPE,   /* a member of the value (value.format = json) */
	SS_PLACE_PARTITION,  /* the record's partition (integer column) */
};

/* table.op.invalid.behavior: an UPDATE of an outbox row. */
enum ss_op_behavior {
	SS_OP_WARN = 0,      /* log at WARN, count, go on */
	SS_OP_ERROR,         /* log at ERROR, count, go on */
	SS_OP_FATAL,         /* poison: the relay fail-stops */
};

/* The options of Debezium's Outbox Event Router that shape a record
 * (docs/configuration.md). Strings owned here. */
struct ss_envelope {
	bool active;                    /* any option below is not at its
	                                 * default: envelope_apply() runs */
	struct route_regex rx;          /* route.topic.regex, compiled */
	enum wire_format key_format;
	enum wire_format value_format;
	bool tombstone_on_empty;        /* route.tombstone.on.empty.payload */
	enum ss_op_behavior op_invalid;
	struct {
		char *alias;                /* header or member name */
		enum ss_place place;
		int slot;                   /* its column in spec.col_extra */
	} add[REC_MAX_EXTRA];
	size_t nadd;
	int ts_slot;                    /* table.field.event.timestamp; -1 */
	int trace_slot;                 /* tracing.span.context.field; -1 */
	bool trace_dropped;             /* ss_drop_absent_trace() took it off */
	bool cloudevents;
	char *ce_source;                /* cloudevents.source, resolved */
	bool key_optional;              /* json-schema: the key column may be
	                                 * NULL (no NOT NULL) */
	bool payload_optional;          /* the same for the payload column */
	char *cols[REC_MAX_EXTRA];      /* the extra column names */
};

/* The slot's output plugin (slot.plugin). */
enum ss_plugin {
	SS_PLUGIN_WAL2JSON = 0,
	SS_PLUGIN_PGOUTPUT,
};

struct stream_spec {
	enum ss_plugin plugin;
	const char *publication;      /* pgoutput only; borrowed */
	struct record_spec spec;      /* table and columns, borrowed from cfg */
	const char *heartbeat_prefix; /* non-transactional heartbeats; borrowed */
	const char *emit_prefix;      /* transactional outbox_emit() events;
	                               * "" off; borrowed */
	const char *topic_template;   /* route.topic.replacement; borrowed */
	struct ss_envelope env;       /* record shape; defaults from
	                               * ss_init_parts(), the options from
	                               * ss_init() */
	struct ss_option opt[SS_MAX_OPTIONS];
	size_t nopt;
};

/* What a logical decoding message is to the relay. */
enum ss_message {
	SS_MSG_OTHER = 0,   /* not ours: stepped over */
	SS_MSG_HEARTBEAT,   /* the watchdog's heartbeat (never published) */
	SS_MSG_EMIT,        /* an outbox_emit() event */
};

/* Fills ss from cfg (borrowed for the spec's lifetime). Release with
 * ss_free(). cfg must have passed ss_check_config(). */
void ss_init(struct stream_spec *ss, const struct relay_config *cfg);

/* The record-shape options of cfg, checked together (a placement's
 * syntax, the regex, the formats an envelope needs). Returns 0, or -1
 * with the reason in err (exit 78). */
int ss_check_config(const struct relay_config *cfg, char *err,
                    size_t errlen) RELAY_MUSTCHECK;

/* The outbox table, read at a session start, lacks the trace context
 * column (bit i of present: it has spec.col_extra[i]): the decoders stop
 * looking for it, so that Debezium's default column name costs nothing
 * where it does not exist. A column added later is seen from the next
 * session on. */
void ss_drop_absent_trace(struct stream_spec *ss, unsigned present);
/* Before a session starts: look for the trace column again. */
void ss_restore_trace(struct stream_spec *ss);

/* Adds an extra column to read (record.h), or finds it; returns its
 * slot, -1 when REC_MAX_EXTRA are in use. */
int ss_extra_column(struct stream_spec *ss, const char *column);

/* The same from its parts (tests, tools): the table and columns, the
 * message prefixes ("" none) and the topic template, all borrowed. */
void ss_init_parts(struct stream_spec *ss, const struct record_spec *spec,
                   const char *heartbeat_prefix, const char *emit_prefix,
                   const char *topic_template);
void ss_free(struct stream_spec *ss);

/* Turns a spec made by ss_init_parts() into a pgoutput one: the options
 * become proto_version 1, publication_names (publication, borrowed,
 * [a-z0-9_] by config.c) and messages on. The publication, not an
 * option, selects the table; every message prefix comes, and
 * ss_message_kind() keeps the same rules. Never binary, streaming or
 * two_phase: pgo.c refuses what they produce. */
void ss_use_pgoutput(struct stream_spec *ss, const char *publication);

/* "wal2json" or "pgoutput": the plugin a slot must have. */
const char *ss_plugin_name(const struct stream_spec *ss);

/* The SQL peek function for the runbook: pg_logical_slot_peek_changes
 * for wal2json (text), pg_logical_slot_peek_binary_changes for pgoutput
 * (bytea: one pgoutput message a row). */
const char *ss_peek_function(const struct stream_spec *ss);

/* A message's meaning, by its prefix and whether it is transactional:
 * heartbeats are written outside transactions, outbox_emit() events
 * inside them (sql/emit.sql). */
enum ss_message ss_message_kind(const struct stream_spec *ss,
                                bool transactional, const char *prefix);

/* START_REPLICATION SLOT "slot" LOGICAL 0/0 (options): always from the
 * slot's own position. slot is [a-z0-9_] (config.c) and needs no
 * escaping. Returns a malloc'd string (caller frees). */
char *ss_start_command(const struct stream_spec *ss, const char *slot);

/* The same options as a PostgreSQL text[] literal ({"name","value",...})
 * for the VARIADIC argument of pg_logical_slot_peek_changes(). Returns a
 * malloc'd string (caller frees). */
char *ss_peek_options(const struct stream_spec *ss);

#endif
