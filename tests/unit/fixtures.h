/* SPDX-License-Identifier: Apache-2.0 */
/* fixtures.h -- the outbox tables the decoder tests decode for: one
 * struct record_spec per table whose WAL tests/fixtures/ holds
 * (schema.sql, and record_pgoutput.sh's outbox_domain), the partitioned
 * outbox of t215 and t410 (outbox_part.*), and a few made up to stress
 * names.
 *
 * One copy, so that a test of wal2json, of pgoutput, of routing and of
 * the slot's SQL all mean the same table by the same name. Included by
 * the unit tests, the fuzz harnesses and decode-bench; static const: a
 * file takes what it uses, and the compiler warns of no unused one (they
 * are declared in a header). */
#ifndef RELAY_TEST_FIXTURES_H
#define RELAY_TEST_FIXTURES_H

#include "decode/record.h"

/* The default outbox: public.outbox with Debezium's column names. */
static const struct record_spec outbox_spec = {
	.schema = "public", .table = "outbox", .col_id = "id",
	.col_key = "aggregate_id", .col_type = "event_type",
	.col_route = "aggregate_type", .col_payload = "payload",
};

/* Prisma's spelling: a quoted, mixed-case table and camelCase columns. */
static const struct record_spec prisma_spec = {
	.schema = "public", .table = "Outbox", .col_id = "id",
	.col_key = "aggregateId", .col_type = "eventType",
	.col_route = "aggregateType", .col_payload = "payload",
};

/* Names that need quoting or escaping everywhere: quotes, spaces, a
 * comma and periods (wal2json's add-tables separators). */
static const struct record_spec odd_spec = {
	.schema = "public", .table = "we\"ird tbl,v.2", .col_id = "ID",
	.col_key = "agg\"id", .col_type = "event.type",
	.col_route = "Agg Type", .col_payload = "pay load",
};

/* bigint id and key: numbers in wal2json's text, not strings. */
static const struct record_spec bigint_spec = {
	.schema = "public", .table = "outbox_bigint", .col_id = "id",
	.col_key = "aggregate_id", .col_type = "event_type",
	.col_route = "aggregate_type", .col_payload = "payload",
};

/* The payload as text: checked for JSON by the decoder. */
static const struct record_spec text_spec = {
	.schema = "public", .table = "outbox_text", .col_id = "id",
	.col_key = "aggregate_id", .col_type = "event_type",
	.col_route = "aggregate_type", .col_payload = "payload",
};

/* Columns of domain types (OIDs of their own in pgoutput). */
static const struct record_spec domain_spec = {
	.schema = "public", .table = "outbox_domain", .col_id = "id",
	.col_key = "aggregate_id", .col_type = "event_type",
	.col_route = "aggregate_type", .col_payload = "payload",
};

/* orders is no outbox: its numeric "amount" as payload must be refused. */
static const struct record_spec orders_spec = {
	.schema = "public", .table = "orders", .col_id = "id",
	.col_key = "customer", .col_type = "customer",
	.col_route = "customer", .col_payload = "amount",
};

/* One column in two roles: the scanner must fill both slots. */
static const struct record_spec shared_spec = {
	.schema = "public", .table = "outbox", .col_id = "id",
	.col_key = "aggregate_id", .col_type = "event_type",
	.col_route = "aggregate_id", .col_payload = "payload",
};

/* Names that only match after unescaping, and unicode. */
static const struct record_spec unicode_spec = {
	.schema = "sch\xc3\xa9ma", .table = "t\xf0\x9f\x98\x80/\"x\"",
	.col_id = "\xc3\xbc", .col_key = "k\ty", .col_type = "t\\y",
	.col_route = "r/o", .col_payload = "p\xe2\x82\xac",
};

/* outbox.table = public.*: every table of the schema is the outbox. */
static const struct record_spec star_spec = {
	.schema = "public", .table = "*", .col_id = "id",
	.col_key = "aggregate_id", .col_type = "event_type",
	.col_route = "aggregate_type", .col_payload = "payload",
};

/* A partitioned outbox whose partitions live in a schema of their own
 * (outbox_part.*): wal2json names the partition, never the parent. */
static const struct record_spec part_spec = {
	.schema = "outbox_part", .table = "*", .col_id = "id",
	.col_key = "aggregate_id", .col_type = "event_type",
	.col_route = "aggregate_type", .col_payload = "payload",
};

/* A table named "a*": the asterisk is a name, not the wildcard. */
static const struct record_spec star_table_spec = {
	.schema = "public", .table = "a*", .col_id = "id",
	.col_key = "k", .col_type = "t", .col_route = "r",
	.col_payload = "p",
};

/* The wildcard in a schema whose name needs escaping. */
static const struct record_spec odd_schema_spec = {
	.schema = "my schema", .table = "*", .col_id = "id",
	.col_key = "k", .col_type = "t", .col_route = "r",
	.col_payload = "p",
};

#endif
