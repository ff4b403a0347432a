/* SPDX-License-Identifier: Apache-2.0 */
/* kafka_conf.c -- the librdkafka settings table and redaction
 * (kafka_conf.h). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/stream_spec.h"
#include "kafka/kafka_conf.h"

#define C(x) (1u << (x))
#define PRODUCERS (C(KC_RELAY) | C(KC_RUNBOOK) | C(KC_LEDGER_PRODUCER))

/* Who gets what. A default yields to kafka.*; a forced setting does not.
 * The relay's producer keeps order and never drops a message: with
 * idempotence a batch the broker refuses for good would otherwise let
 * librdkafka renumber and deliver the partition's later batches, so a
 * replay could put an older event after a newer one (gapless makes it
 * a fatal error instead), and a message timeout would leave a gap. The
 * runbook's producer bounds its waits instead (its caller forces
 * message.timeout.ms). A ledger record must be on every in-sync replica
 * before the slot moves, whatever the events' own settings are. */
struct kc_row {
	const char *name;
	const char *value;
	unsigned clients;
	bool forced;
};

/* librdkafka's warnings that say nothing a user can act on, logged at
 * info. Matched narrowly: the facility, and the text librdkafka writes
 * for that one property ("Configuration property NAME is experimental"),
 * so that the same warning about any other property stays a warning. */
struct kc_quiet {
	const char *fac;
	const char *property;
	const char *says;       /* the text after the property's name */
};

static const struct kc_quiet kc_quiet_rows[] = {
	/* A default of the table below, set by the relay on purpose:
	 * librdkafka 2.0.2 words it "Configuration property
	 * enable.gapless.guarantee is experimental: When set to ..." */
	{ "CONFWARN", "enable.gapless.guarantee", " is experimental" },
};

enum log_level kc_log_level(int level, const char *fac, const char *buf)
{
	const size_t n = sizeof(kc_quiet_rows) / sizeof(kc_quiet_rows[0]);
	char want[160];

	if (level == 4) {
		for (size_t i = 0; i < n; i++) {
			const struct kc_quiet *q = &kc_quiet_rows[i];
			if (strcmp(fac, q->fac) != 0)
				continue;
			snprintf(want, sizeof(want), "Configuration property %s%s",
			         q->property, q->says);
			if (strstr(buf, want) != NULL)
				return LOG_LVL_INFO;
		}
	}
	return level <= 3 ? LOG_LVL_ERROR
	       : level == 4 ? LOG_LVL_WARN
	       : level <= 6 ? LOG_LVL_INFO
	                    : LOG_LVL_DEBUG;
}

static const struct kc_row table[] = {
	{ "enable.idempotence", "true", C(KC_RELAY) | C(KC_RUNBOOK), false },
	{ "acks", "all", C(KC_RELAY) | C(KC_RUNBOOK), false },
	/* The ledger's records of a slot go where the relay's own do: one
	 * partition per key even on a ledger topic of several partitions. */
	{ "partitioner", "murmur2_random",
	  C(KC_RELAY) | C(KC_RUNBOOK) | C(KC_LEDGER_PRODUCER), false },
	{ "message.timeout.ms", "0", C(KC_RELAY), false },
	/* librdkafka's 5 ms costs the broker a produce request per partition
	 * every 5 ms at steady load (one partition per request), and its
	 * broker thread spins in poll(..., 0) through the last millisecond
	 * of every linger window (librdkafka before 2.4 rounds the wait down
	 * to whole milliseconds): at 5,000 events/s that spin was 3/4 of the
	 * relay's CPU. 20 ms: 2.6x fewer requests and half the relay's CPU
	 * per event, for about 15 ms more p50 (docs/benchmarks.md). */
	{ "linger.ms", "20", C(KC_RELAY), false },
	{ "enable.gapless.guarantee", "true", C(KC_RELAY), false },
	/* One produce request at a time per broker, for every producer and
	 * on every librdkafka. With more, a partition that refuses a new
	 * producer's first batch (NOT_LEADER_OR_FOLLOWER: a topic the broker
	 * is still creating, a leader election) can take its second: the
	 * broker accepts any first sequence from a producer it has no state
	 * for, and librdkafka then reports the first batch delivered
	 * although it never was. Seen on 2.0.2 in 2 of 17 make bench drains
	 * into a new broker (4 and 1 events of a fresh auto-created topic
	 * acked and missing; the mechanism of confluentinc/confluent-kafka-go
	 * issue 921), and on 2.12.1, which had five since it passed t265 and
	 * t266, in CI's make check-rdkafka (t265: 19,999 of 20,000 events in
	 * new topics, the slot confirmed past all). A new producer (every
	 * session start) is exposed until each partition has taken a batch.
	 * The drain is bound by the walsender, not by this: 45,268 against
	 * 43,861 events/s with 5 (docs/benchmarks.md). */
	{ "max.in.flight.requests.per.connection", "1",
	  C(KC_RELAY) | C(KC_RUNBOOK) | C(KC_LEDGER_PRODUCER), false },
	/* The figures of /metrics' kafka_* gauges (round trip, queue, the
	 * requests in flight, batch sizes): a JSON of a few kB per broker
	 * and partition, parsed on the loop's thread, every 5 s. */
	{ "statistics.interval.ms", "5000", C(KC_RELAY), false },
	{ "client.id", "outbox-relay", C(KC_RELAY), false },
	{ "client.id", "outbox-relay-cli", C(KC_RUNBOOK), false },
	{ "acks", "all", C(KC_LEDGER_PRODUCER), true },
	{ "enable.idempotence", "true", C(KC_LEDGER_PRODUCER), true },
	{ "enable.partition.eof", "true", C(KC_LEDGER_CONSUMER), true },
	{ "enable.auto.commit", "false", C(KC_LEDGER_CONSUMER), true },
	/* --reconcile counts what a consumer of exactly-once sees, and the
	 * ledger is what Kafka kept: never an aborted copy, whatever kafka.*
	 * says. A ledger read read_uncommitted would hand exactly-once an
	 * aborted transaction's record, and it would skip commits that are
	 * not in Kafka. */
	{ "isolation.level", "read_committed",
	  C(KC_WINDOW_CONSUMER) | C(KC_LEDGER_CONSUMER), true },
	{ "enable.partition.eof", "true", C(KC_WINDOW_CONSUMER), true },
	{ "enable.auto.commit", "false", C(KC_WINDOW_CONSUMER), true },
	{ "client.id", "outbox-relay-reconcile", C(KC_WINDOW_CONSUMER), true },
	{ "client.id", "outbox-relay-ledger",
	  C(KC_LEDGER_PRODUCER) | C(KC_LEDGER_CONSUMER), true },
};

#ifdef OUTBOX_RELAY_TEST_HOOKS
static int version_for_tests;

void kc_set_version_for_tests(int v)
{
	version_for_tests = v;
}
#endif

static int set(rd_kafka_conf_t *kc, const char *name, const char *value,
               bool quiet, char *err, size_t errlen)
{
	char kerr[512];

	if (rd_kafka_conf_set(kc, name, value, kerr, sizeof(kerr)) ==
	    RD_KAFKA_CONF_OK)
		return 0;
	/* A consumer property on a producer build, say: nothing to stop for. */
	if (quiet)
		return 0;
	/* librdkafka quotes the value; a secret's stays out. */
	errbuf_set(err, errlen, "kafka.%s: %s", name,
	           cfg_kafka_is_secret(name) ? "invalid value (not shown: secret)"
	                                     : kerr);
	return -1;
}

int kc_runtime_version(void)
{
#ifdef OUTBOX_RELAY_TEST_HOOKS
	if (version_for_tests != 0)
		return version_for_tests;
#endif
	return rd_kafka_version() >> 8; /* 0xMMmmrr: the pre-release byte off */
}

/* Whether row i is for client who. librdkafka refuses gapless without
 * idempotence, which only producer.allow.unsafe=true can turn off. */
static bool applies(const struct relay_config *cfg, size_t i,
                    enum kc_client who)
{
	const char *idem = cfg_kafka_get(cfg, "enable.idempotence");

	if (!(table[i].clients & C(who)))
		return false;
	return strcmp(table[i].name, "enable.gapless.guarantee") != 0 ||
	       idem == NULL || strcmp(idem, "true") == 0;
}

rd_kafka_conf_t *kc_conf_new(const struct relay_config *cfg,
                             enum kc_client who, const struct kc_extra *extra,
                             size_t n, char *err, size_t errlen)
{
	rd_kafka_conf_t *kc = rd_kafka_conf_new();
	bool consumer = who == KC_LEDGER_CONSUMER || who == KC_WINDOW_CONSUMER;

	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (!table[i].forced && cfg_kafka_get(cfg, table[i].name) == NULL &&
		    applies(cfg, i, who) &&
		    set(kc, table[i].name, table[i].value, false, err, errlen) < 0)
			goto fail;
	for (size_t i = 0; i < n; i++)
		if (!extra[i].forced && cfg_kafka_get(cfg, extra[i].name) == NULL &&
		    set(kc, extra[i].name, extra[i].value, false, err, errlen) < 0)
			goto fail;
	for (size_t i = 0; i < cfg->kafka_len; i++) {
		/* Only the relay's own producer is transactional (exactly-
		 * once): the ledger's, the runbook's and the consumers are
		 * not, whatever kafka.transactional.id says. */
		if (who != KC_RELAY &&
		    strcmp(cfg->kafka[i].name, "transactional.id") == 0)
			continue;
		if (set(kc, cfg->kafka[i].name, cfg->kafka[i].value, false, err,
		        errlen) < 0)
			goto fail;
	}
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].forced && applies(cfg, i, who) &&
		    set(kc, table[i].name, table[i].value, consumer, err, errlen) < 0)
			goto fail;
	for (size_t i = 0; i < n; i++)
		if (extra[i].forced &&
		    set(kc, extra[i].name, extra[i].value, false, err, errlen) < 0)
			goto fail;
	return kc;
fail:
	rd_kafka_conf_destroy(kc);
	return NULL;
}

int kc_check_properties(const struct relay_config *cfg, char *err,
                        size_t errlen)
{
	static const char *const source_names[] = { "default", "file", "env",
		                                        "flag" };
	rd_kafka_conf_t *kc = rd_kafka_conf_new();
	char kerr[512];
	int rc = 0;

	for (size_t i = 0; i < cfg->kafka_len && rc == 0; i++) {
		if (rd_kafka_conf_set(kc, cfg->kafka[i].name, cfg->kafka[i].value,
		                      kerr, sizeof(kerr)) == RD_KAFKA_CONF_OK)
			continue;
		errbuf_set(err, errlen, "kafka.%s (from %s): %s", cfg->kafka[i].name,
		           source_names[cfg->kafka[i].source],
		           cfg_kafka_is_secret(cfg->kafka[i].name)
		               ? "invalid value (not shown: secret)" : kerr);
		rc = -1;
	}
	rd_kafka_conf_destroy(kc);
	return rc;
}

struct kc_secrets {
	char **kv;              /* name, value, name, value, ... */
	size_t n;
};

struct kc_secrets *kc_secrets_new(const struct relay_config *cfg)
{
	struct kc_secrets *s = xcalloc(1, sizeof(*s));

	for (size_t i = 0; i < cfg->kafka_len; i++) {
		if (!cfg_kafka_is_secret(cfg->kafka[i].name))
			continue;
		s->kv = xrealloc(s->kv, (s->n + 2) * sizeof(char *));
		s->kv[s->n++] = xstrdup(cfg->kafka[i].name);
		s->kv[s->n++] = xstrdup(cfg->kafka[i].value);
	}
	return s;
}

/* librdkafka's own texts can quote a property's value (the tail of a
 * malformed sasl.oauthbearer.config, say): anything after the name of a
 * secret property is cut, and any secret value is masked. */
void kc_redact(const struct kc_secrets *s, const char *in, char *out,
               size_t outlen)
{
	snprintf(out, outlen, "%s", in);
	for (size_t i = 0; s != NULL && i < s->n; i += 2) {
		char *at = strstr(out, s->kv[i]);
		if (at != NULL) {
			size_t keep = (size_t)(at - out) + strlen(s->kv[i]);
			snprintf(out + keep, outlen - keep, " <redacted>");
		}
		if (s->kv[i + 1][0] == '\0')
			continue;
		while ((at = strstr(out, s->kv[i + 1])) != NULL)
			memset(at, '*', strlen(s->kv[i + 1]));
	}
}

void kc_secrets_free(struct kc_secrets *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->n; i++) {
		/* Wipe our copies: a later core or heap dump must not show them. */
		explicit_bzero(s->kv[i], strlen(s->kv[i]));
		free(s->kv[i]);
	}
	free(s->kv);
	free(s);
}

int kc_validate_config(struct relay_config *cfg, char *err, size_t errlen)
{
	if (cfg_validate(cfg, err, errlen) < 0 ||
	    ss_check_config(cfg, err, errlen) < 0)
		return -1;
	return kc_check_properties(cfg, err, errlen);
}

static void version_str(int v, char *buf, size_t len)
{
	snprintf(buf, len, "%d.%d.%d", (v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff);
}

void kc_print_defaults(const struct relay_config *cfg, FILE *out)
{
	int v = kc_runtime_version();
	char have[16], built[16];

	version_str(v, have, sizeof(have));
	version_str(RD_KAFKA_VERSION >> 8, built, sizeof(built));
	fprintf(out, "# the relay's producer on librdkafka %s (the library it "
	             "runs with; built with %s): defaults kafka.* leaves in "
	             "force\n",
	        have, built);
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		if (table[i].forced || cfg_kafka_get(cfg, table[i].name) != NULL ||
		    !applies(cfg, i, KC_RELAY))
			continue;
		fprintf(out, "kafka.%s = %s # default\n", table[i].name,
		        table[i].value);
	}
}
