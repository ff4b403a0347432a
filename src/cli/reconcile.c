/* SPDX-License-Identifier: Apache-2.0 */
/* reconcile.c -- the pure parts of --reconcile (cli/reconcile.h): no
 * connection, no clock; the unit tests drive them. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/reconcile.h"

/* ------------------------------------------------------------ types */

static struct rc_type *type_of(struct rc_type **ts, int *n, const char *name,
                               size_t len)
{
	for (int i = 0; i < *n; i++)
		if (strlen((*ts)[i].name) == len &&
		    memcmp((*ts)[i].name, name, len) == 0)
			return &(*ts)[i];
	*ts = xrealloc(*ts, (size_t)(*n + 1) * sizeof(**ts));
	memset(&(*ts)[*n], 0, sizeof(**ts));
	snprintf((*ts)[*n].name, sizeof((*ts)[*n].name), "%.*s", (int)len, name);
	(*ts)[*n].type_header = "event_type";
	return &(*ts)[(*n)++];
}

int rc_types(const struct relay_config *cfg, struct rc_type **out, char *err,
             size_t errlen)
{
	struct rc_type *ts = NULL;
	int n = 0;

	/* config.c accepted only "<name>.<field>" of the four fields. */
	for (size_t i = 0; i < cfg->reconcile_len; i++) {
		const char *k = cfg->reconcile[i].name, *v = cfg->reconcile[i].value;
		const char *dot = strchr(k, '.');
		struct rc_type *t;
		if (dot == NULL || dot - k > RC_NAME_MAX)
			continue;
		t = type_of(&ts, &n, k, (size_t)(dot - k));
		if (strcmp(dot, ".sql") == 0)
			t->sql = v[0] ? v : NULL;
		else if (strcmp(dot, ".topic") == 0)
			t->topic = v[0] ? v : NULL;
		else if (strcmp(dot, ".type") == 0)
			t->type = v[0] ? v : NULL;
		else if (strcmp(dot, ".type.header") == 0 && v[0])
			t->type_header = v;
	}
	if (n == 0) {
		errbuf_set(err, errlen, "--reconcile: no event type configured "
		           "(reconcile.<name>.sql and reconcile.<name>.topic; "
		           "docs/reconcile.md)");
		return -1;
	}
	for (int i = 0; i < n; i++) {
		if (ts[i].sql == NULL || ts[i].topic == NULL) {
			errbuf_set(err, errlen, "reconcile.%s.%s is not set (each type "
			           "needs .sql and .topic)", ts[i].name,
			           ts[i].sql == NULL ? "sql" : "topic");
			free(ts);
			return -1;
		}
	}
	*out = ts;
	return n;
}

/* ------------------------------------------------------------ sets */

struct rc_entry {
	char *p;                        /* NULL: free slot */
	size_t len;
	uint64_t n;
};

struct rc_set {
	struct rc_entry *e;
	size_t cap;                     /* a power of two */
	size_t used;
};

static uint64_t hash(const char *p, size_t len)
{
	uint64_t h = UINT64_C(14695981039346656037);

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)p[i];
		h *= UINT64_C(1099511628211);
	}
	return h;
}

struct rc_set *rc_set_new(void)
{
	struct rc_set *s = xcalloc(1, sizeof(*s));

	s->cap = 64;
	s->e = xcalloc(s->cap, sizeof(*s->e));
	return s;
}

void rc_set_free(struct rc_set *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->cap; i++)
		free(s->e[i].p);
	free(s->e);
	free(s);
}

static struct rc_entry *slot_of(struct rc_entry *e, size_t cap, const char *p,
                                size_t len)
{
	size_t i = (size_t)hash(p, len) & (cap - 1);

	while (e[i].p != NULL &&
	       (e[i].len != len || memcmp(e[i].p, p, len) != 0))
		i = (i + 1) & (cap - 1);
	return &e[i];
}

static void grow(struct rc_set *s)
{
	size_t cap = s->cap * 2;
	struct rc_entry *e = xcalloc(cap, sizeof(*e));

	for (size_t i = 0; i < s->cap; i++)
		if (s->e[i].p != NULL)
			*slot_of(e, cap, s->e[i].p, s->e[i].len) = s->e[i];
	free(s->e);
	s->e = e;
	s->cap = cap;
}

bool rc_set_add(struct rc_set *s, const char *p, size_t len)
{
	struct rc_entry *e;

	if ((s->used + 1) * 10 > s->cap * 7)
		grow(s);
	e = slot_of(s->e, s->cap, p, len);
	if (e->p != NULL) {
		e->n++;
		return false;
	}
	e->p = xmalloc(len + 1);
	memcpy(e->p, p, len);
	e->p[len] = '\0';
	e->len = len;
	e->n = 1;
	s->used++;
	return true;
}

uint64_t rc_set_get(const struct rc_set *s, const char *p, size_t len)
{
	const struct rc_entry *e = slot_of(s->e, s->cap, p, len);

	return e->p != NULL ? e->n : 0;
}

size_t rc_set_size(const struct rc_set *s)
{
	return s->used;
}

void rc_set_each(const struct rc_set *s,
                 void (*fn)(void *ctx, const char *p, size_t len, uint64_t n),
                 void *ctx)
{
	for (size_t i = 0; i < s->cap; i++)
		if (s->e[i].p != NULL)
			fn(ctx, s->e[i].p, s->e[i].len, s->e[i].n);
}

/* ------------------------------------------------------------ database */

void rc_db_init(struct rc_db *d, bool by_keys)
{
	memset(d, 0, sizeof(*d));
	d->by_keys = by_keys;
	if (by_keys)
		d->keys = rc_set_new();
}

void rc_db_add_key(struct rc_db *d, const char *p, size_t len)
{
	char *copy;

	if (!rc_set_add(d->keys, p, len))
		return;
	/* The first RC_SHOW missing ones are named in row order: keep it. */
	copy = xmalloc(len + 1);
	memcpy(copy, p, len);
	copy[len] = '\0';
	d->order = xrealloc(d->order, (d->norder + 1) * sizeof(*d->order));
	d->order_len = xrealloc(d->order_len,
	                        (d->norder + 1) * sizeof(*d->order_len));
	d->order[d->norder] = copy;
	d->order_len[d->norder++] = len;
}

void rc_db_free(struct rc_db *d)
{
	for (size_t i = 0; i < d->norder; i++)
		free((void *)d->order[i]);
	free(d->order);
	free(d->order_len);
	rc_set_free(d->keys);
	memset(d, 0, sizeof(*d));
}

/* ------------------------------------------------------------ Kafka */

void rc_tally_init(struct rc_tally *t, int64_t since_ms, int64_t end_ms,
                   const char *type, const char *key_format)
{
	memset(t, 0, sizeof(*t));
	t->since_ms = since_ms;
	t->end_ms = end_ms;
	t->type = type;
	t->key_format = key_format != NULL ? key_format : "string";
	t->ids = rc_set_new();
	t->keys = rc_set_new();
}

void rc_tally_free(struct rc_tally *t)
{
	rc_set_free(t->ids);
	rc_set_free(t->keys);
	memset(t, 0, sizeof(*t));
}

uint64_t rc_tally_events(const struct rc_tally *t)
{
	return rc_set_size(t->ids) + t->without_id;
}

void rc_key_text(const char *key_format, const char *key, size_t len,
                 char *out, size_t outlen)
{
	json_t *j, *v;
	char *dump;

	if (key == NULL) {
		out[0] = '\0';
		return;
	}
	if (strcmp(key_format, "string") == 0 ||
	    (j = json_loadb(key, len, JSON_DECODE_ANY, NULL)) == NULL) {
		snprintf(out, outlen, "%.*s", (int)len, key);
		return;
	}
	v = j;
	if (strcmp(key_format, "json-schema") == 0 && json_is_object(j) &&
	    json_object_get(j, "payload") != NULL)
		v = json_object_get(j, "payload");
	if (json_is_string(v)) {
		snprintf(out, outlen, "%.*s", (int)json_string_length(v),
		         json_string_value(v));
	} else if ((dump = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY)) !=
	           NULL) {
		snprintf(out, outlen, "%s", dump);
		free(dump);
	} else {
		snprintf(out, outlen, "%.*s", (int)len, key);
	}
	json_decref(j);
}

void rc_tally_offer(struct rc_tally *t, const struct kw_record *r)
{
	char key[1024];
	bool fresh;

	if (r->ts_ms < t->since_ms || r->ts_ms >= t->end_ms) {
		t->outside++;
		return;
	}
	if (t->type != NULL &&
	    (r->type == NULL || strlen(t->type) != r->type_len ||
	     memcmp(t->type, r->type, r->type_len) != 0)) {
		t->other_type++;
		return;
	}
	t->records++;
	if (r->id != NULL) {
		fresh = rc_set_add(t->ids, r->id, r->id_len);
	} else {
		t->without_id++;
		fresh = true;
	}
	if (!fresh) {
		t->duplicates++;
		return;
	}
	rc_key_text(t->key_format, r->key, r->key_len, key, sizeof(key));
	rc_set_add(t->keys, key, strlen(key));
}

/* ------------------------------------------------------------ compare */

struct surplus_ctx {
	const struct rc_set *db;
	uint64_t n;
};

static void count_surplus(void *ctx, const char *p, size_t len, uint64_t n)
{
	struct surplus_ctx *c = ctx;

	if (rc_set_get(c->db, p, len) == 0)
		c->n += n;
}

void rc_compare(const struct rc_db *d, const struct rc_tally *t,
                struct rc_result *r)
{
	memset(r, 0, sizeof(*r));
	r->kafka_events = rc_tally_events(t);
	r->duplicates = t->duplicates;
	if (!d->by_keys) {
		r->database = d->count;
		r->missing = d->count > r->kafka_events ? d->count - r->kafka_events
		                                        : 0;
		r->surplus = r->kafka_events > d->count ? r->kafka_events - d->count
		                                        : 0;
		return;
	}
	r->database = rc_set_size(d->keys);
	for (size_t i = 0; i < d->norder; i++) {
		if (rc_set_get(t->keys, d->order[i], d->order_len[i]) != 0)
			continue;
		if (r->nnamed < RC_SHOW)
			snprintf(r->named[r->nnamed++], sizeof(r->named[0]), "%.*s",
			         (int)d->order_len[i], d->order[i]);
		r->missing++;
	}
	{
		struct surplus_ctx c = { d->keys, 0 };
		rc_set_each(t->keys, count_surplus, &c);
		r->surplus = c.n;
	}
}

/* ------------------------------------------------------------ metrics */

struct buf {
	char *p;
	size_t len, cap;
};

static void bprintf(struct buf *b, const char *fmt, ...) RELAY_PRINTF(2, 3);

static void bprintf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < b->cap - b->len) {
			b->len += (size_t)n;
			return;
		}
		b->cap = b->cap * 2 + (n > 0 ? (size_t)n : 0);
		b->p = xrealloc(b->p, b->cap);
	}
}

char *rc_metrics_text(const char *const *names, const struct rc_result *res,
                      size_t n, double now_s, bool success)
{
	static const struct {
		const char *name, *help;
		size_t off;
	} gauges[] = {
		{ "missing_events", "Events the database has and Kafka lacks in the "
		  "window of the last --reconcile run", offsetof(struct rc_result,
		                                                 missing) },
		{ "database_events", "Events the database says there should be (the "
		  "distinct keys or the count of the type's reconcile SQL) in the "
		  "window of the last --reconcile run",
		  offsetof(struct rc_result, database) },
		{ "kafka_events", "Distinct events (by the id header) in Kafka in "
		  "the window of the last --reconcile run",
		  offsetof(struct rc_result, kafka_events) },
		{ "duplicate_records", "Records of an event already counted in the "
		  "last --reconcile run", offsetof(struct rc_result, duplicates) },
		{ "surplus_events", "Events in Kafka the database did not count in "
		  "the last --reconcile run", offsetof(struct rc_result, surplus) },
	};
	struct buf b = { xmalloc(1024), 0, 1024 };

	b.p[0] = '\0';
	for (size_t g = 0; g < sizeof(gauges) / sizeof(gauges[0]) && n > 0;
	     g++) {
		bprintf(&b, "# HELP outbox_relay_reconcile_%s %s.\n"
		        "# TYPE outbox_relay_reconcile_%s gauge\n", gauges[g].name,
		        gauges[g].help, gauges[g].name);
		for (size_t i = 0; i < n; i++)
			bprintf(&b, "outbox_relay_reconcile_%s{type=\"%s\"} %llu\n",
			        gauges[g].name, names[i],
			        (unsigned long long)*(const uint64_t *)(
			            (const char *)&res[i] + gauges[g].off));
	}
	bprintf(&b, "# HELP outbox_relay_reconcile_last_run_timestamp_seconds "
	        "When the last --reconcile run ended.\n"
	        "# TYPE outbox_relay_reconcile_last_run_timestamp_seconds gauge\n"
	        "outbox_relay_reconcile_last_run_timestamp_seconds %.3f\n"
	        "# HELP outbox_relay_reconcile_last_run_success 1 when the last "
	        "--reconcile run counted every type (whatever it found), 0 when "
	        "it could not.\n"
	        "# TYPE outbox_relay_reconcile_last_run_success gauge\n"
	        "outbox_relay_reconcile_last_run_success %d\n", now_s,
	        success ? 1 : 0);
	return b.p;
}
