/* SPDX-License-Identifier: Apache-2.0 */
/* wire.c -- Kafka Connect's converters, byte for byte (wire.h).
 *
 * What the bytes are was read from Kafka's JsonConverter (asJsonSchema:
 * "type", then "optional", then "name" and "version"; a struct field's
 * "field" last; the envelope {"schema":...,"payload":...}) and Jackson's
 * default string escapes, and is checked against records real Debezium
 * wrote (tests/fixtures/debezium/). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/wire.h"

static void wire_grow(struct wire_buf *b, size_t more)
{
	size_t cap = b->cap ? b->cap : 256;

	if (b->len + more + 1 <= b->cap)
		return;
	while (cap < b->len + more + 1)
		cap *= 2;
	b->p = xrealloc(b->p, cap);
	b->cap = cap;
}

void wire_put(struct wire_buf *b, const char *s, size_t len)
{
	wire_grow(b, len);
	memcpy(b->p + b->len, s, len);
	b->len += len;
	b->p[b->len] = '\0';
}

void wire_puts(struct wire_buf *b, const char *s)
{
	wire_put(b, s, strlen(s));
}

static const struct {
	const char *name;
	enum wire_format f;
} wire_formats[] = {
	{ "string", WIRE_STRING },
	{ "json", WIRE_JSON },
	{ "json-schema", WIRE_JSON_SCHEMA },
};

int wire_format_parse(const char *s, enum wire_format *out)
{
	for (size_t i = 0; i < sizeof(wire_formats) / sizeof(wire_formats[0]);
	     i++) {
		if (strcmp(s, wire_formats[i].name) == 0) {
			*out = wire_formats[i].f;
			return 0;
		}
	}
	return -1;
}

const char *wire_format_name(enum wire_format f)
{
	for (size_t i = 0; i < sizeof(wire_formats) / sizeof(wire_formats[0]);
	     i++)
		if (wire_formats[i].f == f)
			return wire_formats[i].name;
	return "?";
}

/* PostgreSQL type names (typname, and the SQL spellings wal2json and
 * format_type() print) to the Connect schema Debezium maps them to. */
static const struct {
	const char *pg;
	enum wire_type t;
} wire_types[] = {
	{ "json", WIRE_T_JSON },
	{ "jsonb", WIRE_T_JSON },
	{ "uuid", WIRE_T_UUID },
	{ "int2", WIRE_T_INT16 },
	{ "smallint", WIRE_T_INT16 },
	{ "int4", WIRE_T_INT32 },
	{ "integer", WIRE_T_INT32 },
	{ "int8", WIRE_T_INT64 },
	{ "bigint", WIRE_T_INT64 },
};

enum wire_type wire_type_of(const char *pg_type, size_t len)
{
	const char *paren = memchr(pg_type, '(', len);

	if (paren != NULL)
		len = (size_t)(paren - pg_type);
	for (size_t i = 0; i < sizeof(wire_types) / sizeof(wire_types[0]); i++)
		if (strlen(wire_types[i].pg) == len &&
		    memcmp(wire_types[i].pg, pg_type, len) == 0)
			return wire_types[i].t;
	return WIRE_T_STRING;
}

void wire_json_string(struct wire_buf *b, const char *s, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t run = 0;

	wire_grow(b, len + 2);
	b->p[b->len++] = '"';
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];
		char esc = 0;

		if (ch >= 0xf0 && i + 3 < len) {
			/* A character beyond the BMP: Java holds it as two
			 * UTF-16 surrogates, and Jackson escapes each. */
			uint32_t u = (uint32_t)(ch & 0x07) << 18 |
			             (uint32_t)(s[i + 1] & 0x3f) << 12 |
			             (uint32_t)(s[i + 2] & 0x3f) << 6 |
			             (uint32_t)(s[i + 3] & 0x3f);
			unsigned hi = 0xd800 + ((u - 0x10000) >> 10);
			unsigned lo = 0xdc00 + ((u - 0x10000) & 0x3ff);
			char e[12] = { '\\', 'u', hex[hi >> 12], hex[hi >> 8 & 15],
				           hex[hi >> 4 & 15], hex[hi & 15], '\\', 'u',
				           hex[lo >> 12], hex[lo >> 8 & 15], hex[lo >> 4 & 15],
				           hex[lo & 15] };
			wire_put(b, s + run, i - run);
			wire_put(b, e, sizeof(e));
			i += 3;
			run = i + 1;
			continue;
		}
		if (ch >= 0x20 && ch != '"' && ch != '\\')
			continue;
		/* The plain bytes before this one, then its escape. */
		wire_put(b, s + run, i - run);
		run = i + 1;
		switch (ch) {
		case '"': esc = '"'; break;
		case '\\': esc = '\\'; break;
		case '\b': esc = 'b'; break;
		case '\t': esc = 't'; break;
		case '\n': esc = 'n'; break;
		case '\f': esc = 'f'; break;
		case '\r': esc = 'r'; break;
		default: break;
		}
		if (esc != 0) {
			char e[2] = { '\\', esc };
			wire_put(b, e, 2);
		} else {
			char u[6] = { '\\', 'u', '0', '0', hex[ch >> 4], hex[ch & 15] };
			wire_put(b, u, 6);
		}
	}
	wire_put(b, s + run, len - run);
	wire_put(b, "\"", 1);
}

void wire_schema(struct wire_buf *b, const struct wire_col *c,
                 const char *field)
{
	static const char *const types[] = {
		[WIRE_T_STRING] = "string", [WIRE_T_JSON] = "string",
		[WIRE_T_UUID] = "string",   [WIRE_T_INT16] = "int16",
		[WIRE_T_INT32] = "int32",   [WIRE_T_INT64] = "int64",
	};

	wire_puts(b, "{\"type\":\"");
	wire_puts(b, types[c->type]);
	wire_puts(b, c->optional ? "\",\"optional\":true" : "\",\"optional\":false");
	if (c->type == WIRE_T_JSON)
		wire_puts(b, ",\"name\":\"io.debezium.data.Json\",\"version\":1");
	else if (c->type == WIRE_T_UUID)
		wire_puts(b, ",\"name\":\"io.debezium.data.Uuid\",\"version\":1");
	if (field != NULL) {
		wire_puts(b, ",\"field\":");
		wire_json_string(b, field, strlen(field));
	}
	wire_puts(b, "}");
}

static bool wire_is_int(enum wire_type t)
{
	return t == WIRE_T_INT16 || t == WIRE_T_INT32 || t == WIRE_T_INT64;
}

/* The value alone, as JsonConverter writes it without the envelope. */
static int wire_value(struct wire_buf *b, const struct wire_col *c,
                      const char *text, size_t len, char *err, size_t errlen)
{
	if (text == NULL) {
		if (!c->optional) {
			errbuf_set(err, errlen, "NULL in a column the schema says is "
			           "NOT NULL");
			return -1;
		}
		wire_puts(b, "null");
		return 0;
	}
	if (wire_is_int(c->type)) {
		/* PostgreSQL prints an integer as [-]digits, which is also the
		 * JSON Jackson writes for it. */
		size_t i = len > 0 && text[0] == '-' ? 1 : 0;
		if (i == len || strspn(text + i, "0123456789") != len - i ||
		    len > 20) {
			errbuf_set(err, errlen, "\"%.*s\" is not an integer",
			           (int)(len < 64 ? len : 64), text);
			return -1;
		}
		wire_put(b, text, len);
		return 0;
	}
	wire_json_string(b, text, len);
	return 0;
}

int wire_encode(struct wire_buf *b, enum wire_format f,
                const struct wire_col *c, const char *text, size_t len,
                char *err, size_t errlen)
{
	switch (f) {
	case WIRE_STRING:
		return 0;
	case WIRE_JSON:
		return wire_value(b, c, text, len, err, errlen);
	case WIRE_JSON_SCHEMA:
		wire_puts(b, "{\"schema\":");
		wire_schema(b, c, NULL);
		wire_puts(b, ",\"payload\":");
		if (wire_value(b, c, text, len, err, errlen) < 0)
			return -1;
		wire_puts(b, "}");
		return 0;
	}
	return 0;
}
