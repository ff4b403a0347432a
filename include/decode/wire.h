/* SPDX-License-Identifier: Apache-2.0 */
/* wire.h -- the bytes of a record's key and value as Kafka Connect's
 * converters write them behind Debezium's Outbox Event Router.
 *
 * key.format / value.format (config.c): string is what StringConverter
 * writes (the column's text as is: no copy, the relay's default path);
 * json is JsonConverter with schemas.enable=false (the value as JSON: a
 * text column becomes a JSON string, quoted and escaped as Jackson does);
 * json-schema is JsonConverter with schemas.enable=true (an object
 * {"schema":...,"payload":...} whose schema is the Connect schema
 * Debezium's PostgreSQL connector gives the column). Pure: text in,
 * bytes out, into a buffer the caller owns. */
#ifndef RELAY_WIRE_H
#define RELAY_WIRE_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/common.h"

enum wire_format {
	WIRE_STRING = 0,   /* StringConverter: the text itself */
	WIRE_JSON,         /* JsonConverter, schemas.enable=false */
	WIRE_JSON_SCHEMA,  /* JsonConverter, schemas.enable=true */
};

/* The Connect schema Debezium's PostgreSQL connector gives a column of
 * that PostgreSQL type (its default settings). */
enum wire_type {
	WIRE_T_STRING = 0, /* text, varchar, char, and what is not listed */
	WIRE_T_JSON,       /* json, jsonb: string io.debezium.data.Json v1 */
	WIRE_T_UUID,       /* uuid: string io.debezium.data.Uuid v1 */
	WIRE_T_INT16,      /* smallint */
	WIRE_T_INT32,      /* integer */
	WIRE_T_INT64,      /* bigint */
};

/* A column as the schema describes it. */
struct wire_col {
	enum wire_type type;
	bool optional;     /* the column may be NULL (no NOT NULL) */
};

/* A growing byte buffer; free() p when done. */
struct wire_buf {
	char *p;
	size_t len, cap;
};

/* "string", "json", "json-schema": 0, or -1 for anything else. */
int wire_format_parse(const char *s, enum wire_format *out) RELAY_MUSTCHECK;
const char *wire_format_name(enum wire_format f);

/* The schema type of a PostgreSQL type by its name (pg_type.typname or
 * wal2json's "type", with or without a modifier: "character varying(64)"). */
enum wire_type wire_type_of(const char *pg_type, size_t len);

/* Appends to b the bytes the converter writes for one column's text
 * (len bytes; text NULL: SQL NULL) under format f, or nothing more for
 * WIRE_STRING (the caller sends the text itself). Returns 0, or -1 with
 * err when the text does not fit its type (an integer column whose text
 * is not an integer) or NULL where the schema is not optional. */
int wire_encode(struct wire_buf *b, enum wire_format f,
                const struct wire_col *c, const char *text, size_t len,
                char *err, size_t errlen) RELAY_MUSTCHECK;

/* Appends s as a JSON string, escaped as Kafka's JsonConverter (Jackson)
 * writes it: '"', '\\', \b \t \n \f \r, other control bytes as \u00XX,
 * a character beyond the BMP as its two UTF-16 surrogates (\uD83D\uDE00),
 * hex in upper case; the rest, '/' and BMP UTF-8 included, as is. */
void wire_json_string(struct wire_buf *b, const char *s, size_t len);

/* Appends the Connect schema of c as JsonConverter writes it:
 * {"type":...,"optional":...[,"name":...,"version":1]}; field, when not
 * NULL, adds "field":"<field>" at the end (a struct's field). */
void wire_schema(struct wire_buf *b, const struct wire_col *c,
                 const char *field);

void wire_put(struct wire_buf *b, const char *s, size_t len);
void wire_puts(struct wire_buf *b, const char *s);

#endif
