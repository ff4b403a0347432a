/* SPDX-License-Identifier: Apache-2.0 */
/* config.h -- the relay's configuration: one key table, four sources.
 *
 * Precedence, lowest first: built-in defaults, the --config file,
 * OUTBOX_RELAY_<KEY> environment variables, --set key=value flags.
 * Keys under "kafka." go to librdkafka unchanged (prefix stripped). */
#ifndef RELAY_CONFIG_H
#define RELAY_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/common.h"

enum cfg_source { CFG_SRC_DEFAULT = 0, CFG_SRC_FILE, CFG_SRC_ENV, CFG_SRC_FLAG };

/* One librdkafka property; name without the "kafka." prefix. */
struct cfg_kv {
	char *name;
	char *value;
	enum cfg_source source;
};

struct relay_config {
	char *pg_conninfo;          /* secret: may hold a password */
	char *pg_password_file;     /* "" off; see cfg_apply_password_file */
	char *slot_name;
	char *slot_plugin;          /* "wal2json" or "pgoutput" */
	char *slot_publication;     /* pgoutput's publication_names */
	char *slot_failover;        /* "auto", "on" or "off" (slot.h
	                             * slot_failover_wanted) */
	char *slot_standby_conninfo; /* secret: a standby whose copy of the
	                             * slot the watchdog reads; "" off */
	char *outbox_schema;        /* from outbox.table, unquoted, exact case */
	char *outbox_table;
	char *field_id;
	char *field_key;
	char *field_type;
	char *field_payload;
	char *route_by_field;
	char *route_topic_replacement;
	char *route_topic_regex;    /* Java regex on the route.by.field value */
	char *field_timestamp;      /* "" : record timestamp = produce time */
	char *fields_additional_placement; /* col:header|envelope|partition[:alias],... */
	bool route_tombstone_on_empty_payload;
	char *op_invalid_behavior;  /* warn, error or fatal */
	char *json_payload_null_behavior; /* ignore (optional_bytes refused) */
	char *tracing_span_context_field;
	bool tracing_with_context_field_only;
	char *tracing_operation_name;
	char *key_format;           /* string, json or json-schema */
	char *value_format;
	bool cloudevents_enabled;
	char *cloudevents_source;   /* "": /outbox-relay/<slot.name> */
	char *outbox_emit_prefix;   /* outbox_emit() messages; "" off */
	char *slot_ledger_topic;    /* ledger.h; "" off */

	int64_t status_interval_ms;
	int64_t status_min_interval_ms;
	int64_t inflight_max_events;
	int64_t inflight_max_bytes;
	int64_t pg_permanent_error_retries;
	int64_t pg_receive_timeout_ms;
	int64_t pg_read_coalesce_us;
	int64_t kafka_contact_timeout_ms;
	int64_t reconnect_backoff_ms;
	int64_t reconnect_backoff_max_ms;
	int64_t standby_retry_ms;
	int64_t shutdown_timeout_ms;
	int64_t stats_interval_ms;
	int64_t kafka_failure_max_replays;
	char *delivery_guarantee;   /* "at-least-once" or "exactly-once" */
	int64_t delivery_txn_max_events;
	int64_t delivery_txn_interval_ms;
	char *poison_policy;        /* "fail", "dlq" or "skip" */
	char *poison_dlq_topic;     /* "" unless poison_policy is dlq */
	int64_t poison_retries;
	int64_t poison_retry_backoff_ms;
	int64_t poison_retry_backoff_max_ms;
	bool producer_allow_unsafe;
	char *log_level;
	char *log_format;           /* "text" or "json" */

	/* Slot health (watchdog, endpoint, heartbeats, alerts). */
	char *http_listen;          /* "" turns the endpoint off */
	int64_t http_livez_timeout_ms;
	int64_t watchdog_interval_ms;
	int64_t watchdog_window_ms;
	int64_t watchdog_wal_budget_bytes;
	int64_t watchdog_retained_warn_bytes;
	int64_t watchdog_retained_critical_bytes;
	int64_t watchdog_lag_warn_bytes;
	int64_t watchdog_lag_critical_bytes;
	int64_t watchdog_outbox_lag_warn_ms;
	int64_t watchdog_outbox_lag_critical_ms;
	int64_t watchdog_eta_warn_ms;
	int64_t watchdog_eta_critical_ms;
	int64_t heartbeat_interval_ms;  /* 0: off */
	char *heartbeat_prefix;
	char *heartbeat_action_query;
	char *alert_webhook_url;    /* secret: may carry a token */

	struct cfg_kv *kafka;       /* librdkafka properties, in order set */
	size_t kafka_len;

	/* Topic creation (kafka/topic_admin.h), Kafka Connect's names. */
	int64_t topic_creation_partitions;  /* 0 off; -1 the broker's default */
	int64_t topic_creation_replication_factor; /* -1 the broker's */
	struct cfg_kv *topic_configs; /* topic.creation.default.<config>,
	                               * name without the prefix */
	size_t topic_configs_len;

	/* --reconcile (cli/reconcile.h): reconcile.<name>.<field> as
	 * "<name>.<field>" = value, in order set. */
	struct cfg_kv *reconcile;
	size_t reconcile_len;
	int64_t reconcile_grace_ms;

	/* Where each table key got its value, and the alias it was set
	 * under (NULL: its own name); indexed like the key table. */
	enum cfg_source *sources;
	const char **via;
};

/* Fills cfg with the built-in defaults. Release with cfg_free(). */
void cfg_init(struct relay_config *cfg);

/* Reads a key = value file. On error writes "path:line: message" into
 * err and returns -1; cfg keeps the keys applied before the bad line. */
int cfg_load_file(struct relay_config *cfg, const char *path, char *err,
                  size_t errlen) RELAY_MUSTCHECK;

/* The same from memory: len bytes of file text (NUL bytes allowed: a
 * line holding one is refused); name stands for the path in messages.
 * cfg_load_file() reads the file and calls this. */
int cfg_load_text(struct relay_config *cfg, const char *text, size_t len,
                  const char *name, char *err, size_t errlen) RELAY_MUSTCHECK;

/* Applies OUTBOX_RELAY_* variables from envp (NULL-terminated). */
int cfg_load_env(struct relay_config *cfg, char *const *envp, char *err,
                 size_t errlen) RELAY_MUSTCHECK;

/* Applies one "key=value" from --set. */
int cfg_set_flag(struct relay_config *cfg, const char *kv, char *err,
                 size_t errlen) RELAY_MUSTCHECK;

/* Sets one key from a source; origin names the place for messages
 * ("relay.conf:12", "OUTBOX_RELAY_SLOT_NAME", "--set"). */
int cfg_set(struct relay_config *cfg, const char *key, const char *value,
            enum cfg_source src, const char *origin, char *err,
            size_t errlen) RELAY_MUSTCHECK;

/* The rules that join keys, once every source is applied: errors.tolerance
 * = all is poison.policy = dlq when poison.dlq.topic is set, else skip.
 * Idempotent; cfg_validate() runs it, --print-config too. */
void cfg_finish(struct relay_config *cfg);

/* Cross-key checks once every source is applied: required keys and the
 * producer safety rules. The kafka.* properties are librdkafka's to judge:
 * kc_validate_config() (kafka/kafka_conf.h) runs both. */
int cfg_validate(struct relay_config *cfg, char *err,
                 size_t errlen) RELAY_MUSTCHECK;

/* pg.conninfo must parse, and a postgresql:// URI must not have an
 * unencoded '@' past its user info (a password's '@' or '/' not
 * percent-encoded: libpq would echo the password's tail as a host name).
 * Returns 0, or -1 with a message that never quotes the string. Part of
 * cfg_validate(). */
int cfg_check_conninfo(const struct relay_config *cfg, char *err,
                       size_t errlen) RELAY_MUSTCHECK;

/* pg.password.file: reads the file's first line and adds it to
 * pg.conninfo as password=, rewriting the string (or URI) as keyword =
 * value pairs; the old string is wiped. No-op when either key is empty.
 * Returns -1 with a message (never the password) when the file cannot be
 * read or is empty, pg.conninfo does not pass cfg_check_conninfo(), or it
 * has a password of its own. Runs once every source is applied. */
int cfg_apply_password_file(struct relay_config *cfg, char *err,
                            size_t errlen) RELAY_MUSTCHECK;

/* Splits "host:port" or "[v6]:port". host may be NULL (only checks).
 * Returns 0, or -1 when malformed. */
int cfg_listen_parse(const char *listen, char *host, size_t hostlen,
                     int *port) RELAY_MUSTCHECK;

/* Looks up a kafka.* property by librdkafka name; NULL when unset. */
const char *cfg_kafka_get(const struct relay_config *cfg, const char *name);

/* True when a librdkafka property name holds a secret. */
bool cfg_kafka_is_secret(const char *name);

/* Prints the effective configuration, secrets redacted. */
void cfg_print(const struct relay_config *cfg, FILE *out);

/* Every key with its help text and default, one a line: the key part of
 * --help (the table's help column). */
void cfg_help(FILE *out);

/* True when name is a key of the table or an alias of one. */
bool cfg_key_known(const char *name);

/* The key table's names, for the check that each is documented. */
size_t cfg_key_count(void);
const char *cfg_key_name(size_t i);

void cfg_free(struct relay_config *cfg);

#endif
