/* SPDX-License-Identifier: Apache-2.0 */
/* kafka_conf.h -- every librdkafka client's configuration, from one
 * table.
 *
 * The relay's producer, the slot ledger's producer and consumer and the
 * runbook's dead-letter and admin clients all start from cfg's kafka.*
 * properties. The safe defaults (idempotence, acks=all, the Java
 * partitioner, no message timeout for the relay) are rows of one table
 * here, and so is what each client forces whatever kafka.* says. Texts
 * from librdkafka can quote a property's value: kc_redact() masks the
 * secret ones before anything is printed or logged. */
#ifndef RELAY_KAFKA_CONF_H
#define RELAY_KAFKA_CONF_H

#include <stddef.h>
#include <stdio.h>

#include <librdkafka/rdkafka.h>

#include "lib/config.h"
#include "lib/log.h"

enum kc_client {
	KC_RELAY = 0,           /* the relay's producer (publisher.c) */
	KC_RUNBOOK,             /* --skip-transaction --to-dlq, --check */
	KC_LEDGER_PRODUCER,     /* ledger.c, before a slot moves */
	KC_LEDGER_CONSUMER,     /* ledger.c, reading a slot's record */
	KC_WINDOW_CONSUMER,     /* window.c, --reconcile reading a topic */
};

/* A setting computed by the caller (a queue size, a timeout). */
struct kc_extra {
	const char *name;
	const char *value;
	bool forced;            /* set after kafka.*, which it overrides;
	                         * else only when kafka.* does not set it */
};

/* A new configuration for client who: the table's defaults (each unless
 * kafka.* sets it), every kafka.* property, then what is forced. extra
 * (n of them, may be NULL) come last in their class. Returns NULL with
 * err filled (a secret's value is never quoted). Caller owns the result
 * (rd_kafka_new() takes it over on success). */
rd_kafka_conf_t *kc_conf_new(const struct relay_config *cfg,
                             enum kc_client who, const struct kc_extra *extra,
                             size_t n, char *err, size_t errlen);

/* A librdkafka release as kc_runtime_version() gives it: 0xMMmmrr. */
#define KC_VERSION(major, minor, rev) ((major) << 16 | (minor) << 8 | (rev))

/* The librdkafka the process runs with (rd_kafka_version()), as
 * --print-config names it. Every release takes the same defaults since
 * 2.12.1 keeps one request in flight too (kafka_conf.c). */
int kc_runtime_version(void);

/* --print-config: the runtime librdkafka's version and the relay
 * producer's defaults that kafka.* leaves in force. */
void kc_print_defaults(const struct relay_config *cfg, FILE *out);

#ifdef OUTBOX_RELAY_TEST_HOOKS
/* Test hook: kc_runtime_version() returns v (0: the real one again). */
void kc_set_version_for_tests(int v);
#endif

/* Lets librdkafka judge every kafka.* property (names, values, types)
 * against an empty configuration. Returns 0, or -1 with
 * "kafka.NAME (from SOURCE): why" in err. */
int kc_check_properties(const struct relay_config *cfg, char *err,
                        size_t errlen);

/* What the daemon and the runbook run before they start: cfg_validate()
 * (the relay's own keys and safety rules), then kc_check_properties().
 * Here rather than in config.c so that lib/ never includes kafka/. */
int kc_validate_config(struct relay_config *cfg, char *err, size_t errlen);

/* The relay's level for one of librdkafka's log lines (its syslog level,
 * facility and text): syslog 0-3 error, 4 warn, 5-6 info, 7 debug, except
 * the known-harmless warnings of a table here (each matched by facility
 * and property name), which come at info: a warning that nobody can act
 * on teaches people to skip the real ones. */
enum log_level kc_log_level(int level, const char *fac, const char *buf);

/* The secret properties of cfg (names and values), copied: a text is
 * cut after a secret property's name and each secret value is masked. */
struct kc_secrets;
struct kc_secrets *kc_secrets_new(const struct relay_config *cfg);
void kc_redact(const struct kc_secrets *s, const char *in, char *out,
               size_t outlen);
/* Wipes the copies and frees s. NULL is a no-op. */
void kc_secrets_free(struct kc_secrets *s);

#endif
