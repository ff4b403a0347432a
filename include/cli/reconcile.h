/* SPDX-License-Identifier: Apache-2.0 */
/* reconcile.h -- the pure parts of --reconcile (src/cli/reconcile.c):
 * the event types of the configuration, the tally of a topic's records
 * in a window (distinct by the "id" header), the comparison with what
 * the database counted, and the Prometheus text of a run. The action
 * itself (PostgreSQL, Kafka, output) is src/cli/act_reconcile.c; the
 * consumer is kafka/window.h. See docs/reconcile.md. */
#ifndef RELAY_RECONCILE_H
#define RELAY_RECONCILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/common.h"
#include "lib/config.h"
#include "kafka/window.h"

#define RC_NAME_MAX 64
#define RC_SHOW 10                  /* missing keys named per type */
#define RC_KEY_LEN 80               /* a named key, cut there */

/* One reconcile.<name>.* group; the strings point into the cfg. */
struct rc_type {
	char name[RC_NAME_MAX + 1];
	const char *sql;                /* $1 since, $2 until (timestamptz) */
	const char *topic;
	const char *type;               /* NULL: every record of the topic */
	const char *type_header;        /* the header holding it */
};

/* The types of cfg, in the order their first key was set. Returns the
 * number (>= 1) with *out malloc'd, or -1 with err filled: none
 * configured, or one without .sql or .topic. */
int rc_types(const struct relay_config *cfg, struct rc_type **out, char *err,
             size_t errlen) RELAY_MUSTCHECK;

/* A set of byte strings, each with a count. */
struct rc_set;
struct rc_set *rc_set_new(void);
void rc_set_free(struct rc_set *s);
/* Adds p (count 1) or, when present, adds 1 to its count. Returns true
 * when it was new. */
bool rc_set_add(struct rc_set *s, const char *p, size_t len);
/* Its count, 0 when absent. */
uint64_t rc_set_get(const struct rc_set *s, const char *p, size_t len);
size_t rc_set_size(const struct rc_set *s);
/* Each entry in no particular order; fn returns nothing. */
void rc_set_each(const struct rc_set *s,
                 void (*fn)(void *ctx, const char *p, size_t len, uint64_t n),
                 void *ctx);

/* What the database said: a count, or keys (one a row). */
struct rc_db {
	bool by_keys;
	uint64_t count;                 /* !by_keys */
	struct rc_set *keys;            /* by_keys: rows per key */
	const char **order;             /* by_keys: keys in row order, nkeys */
	size_t *order_len;
	size_t norder;
};

void rc_db_init(struct rc_db *d, bool by_keys);
void rc_db_add_key(struct rc_db *d, const char *p, size_t len);
void rc_db_free(struct rc_db *d);

/* The records of a topic in the window [since_ms, end_ms) with the type
 * wanted (type NULL: every record). */
struct rc_tally {
	int64_t since_ms, end_ms;
	const char *type;
	const char *key_format;         /* key.format: string, json, json-schema */
	struct rc_set *ids;             /* distinct "id" header values */
	struct rc_set *keys;            /* per key: its distinct events */
	uint64_t records;               /* in the window, of the type */
	uint64_t duplicates;            /* of those, an id seen before */
	uint64_t without_id;            /* of those, no "id" header: each
	                                 * counted as an event of its own */
	uint64_t outside;               /* read, but outside the window */
	uint64_t other_type;            /* read, in the window, another type */
};

void rc_tally_init(struct rc_tally *t, int64_t since_ms, int64_t end_ms,
                   const char *type, const char *key_format);
void rc_tally_offer(struct rc_tally *t, const struct kw_record *r);
void rc_tally_free(struct rc_tally *t);
/* Distinct events: distinct ids plus the records without one. */
uint64_t rc_tally_events(const struct rc_tally *t);

/* A record key as the database's key text: key.format string is the key
 * itself; json, a JSON string's value (other JSON as its text);
 * json-schema, the same of the envelope's "payload". Into out (cut). */
void rc_key_text(const char *key_format, const char *key, size_t len,
                 char *out, size_t outlen);

/* The comparison of one type. */
struct rc_result {
	uint64_t database;              /* the count, or the distinct keys */
	uint64_t kafka_events;          /* distinct events */
	uint64_t duplicates;            /* records of an event seen before */
	uint64_t missing;               /* in the database, not in Kafka */
	uint64_t surplus;               /* in Kafka, not in the database */
	char named[RC_SHOW][RC_KEY_LEN]; /* missing keys (by_keys), row order */
	size_t nnamed;
};

/* Keys: a database key is missing when no event of the window has it;
 * an event is surplus when its key is none of the database's. A count:
 * the difference either way (the edges of the window net out). */
void rc_compare(const struct rc_db *d, const struct rc_tally *t,
                struct rc_result *r);

/* The Prometheus text (textfile collector) of a run at now_s: per type
 * (names[i], res[i]; n of them) the missing, database, Kafka, duplicate
 * and surplus gauges,
 * then the run's time and success. Returns a malloc'd string. */
char *rc_metrics_text(const char *const *names, const struct rc_result *res,
                      size_t n, double now_s, bool success);

#endif
