/* SPDX-License-Identifier: Apache-2.0 */
/* act_check_kafka.c -- the Kafka items of --check: librdkafka accepts
 * kafka.*, the brokers answer, the topics route.topic.replacement names
 * exist (or the broker creates them) and acks=all can be met. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_int.h"

#define CHECK_MAX_TOPICS 50

struct topic_info {
	const char *name;
	int partitions;
	int replicas;
	char min_isr[16];
};

struct broker_facts {
	char auto_create[16];       /* "" when unknown */
	char num_partitions[16];
	char min_isr[16];
	char error[256];
};

static bool topic_matches(const char *tmpl, const char *topic)
{
	const char *ph = strstr(tmpl, "${routedByValue}");
	size_t plen, slen, tlen = strlen(topic);
	const char *suffix;

	if (ph == NULL)
		return strcmp(tmpl, topic) == 0;
	plen = (size_t)(ph - tmpl);
	suffix = ph + strlen("${routedByValue}");
	slen = strlen(suffix);
	return tlen > plen + slen && strncmp(topic, tmpl, plen) == 0 &&
	       strcmp(topic + tlen - slen, suffix) == 0;
}

static void describe_entry(const rd_kafka_ConfigEntry_t *e, char *auto_create,
                           char *num_partitions, char *min_isr)
{
	const char *n = rd_kafka_ConfigEntry_name(e);
	const char *v = rd_kafka_ConfigEntry_value(e);

	if (v == NULL)
		return;
	if (auto_create && strcmp(n, "auto.create.topics.enable") == 0)
		snprintf(auto_create, 16, "%s", v);
	else if (num_partitions && strcmp(n, "num.partitions") == 0)
		snprintf(num_partitions, 16, "%s", v);
	else if (strcmp(n, "min.insync.replicas") == 0)
		snprintf(min_isr, 16, "%s", v);
}

/* DescribeConfigs for one broker and the topics (librdkafka admin API).
 * What cannot be read stays "" and bf->error says why. */
static void kafka_describe(rd_kafka_t *rk, int32_t broker,
                           struct topic_info *t, size_t nt, int64_t timeout_ms,
                           struct broker_facts *bf)
{
	rd_kafka_ConfigResource_t *res[1 + CHECK_MAX_TOPICS];
	rd_kafka_AdminOptions_t *ao;
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_event_t *ev;
	const rd_kafka_ConfigResource_t **rs;
	char id[16], e[256];
	size_t n = 0, cnt = 0;

	snprintf(id, sizeof(id), "%d", (int)broker);
	res[n++] = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_BROKER, id);
	for (size_t i = 0; i < nt; i++)
		res[n++] = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC,
		                                       t[i].name);
	ao = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS);
	(void)rd_kafka_AdminOptions_set_request_timeout(ao, (int)timeout_ms, e,
	                                                sizeof(e));
	rd_kafka_DescribeConfigs(rk, res, n, ao, q);
	ev = rd_kafka_queue_poll(q, (int)timeout_ms + 1000);
	if (ev == NULL) {
		snprintf(bf->error, sizeof(bf->error), "DescribeConfigs timed out");
		goto out;
	}
	if (rd_kafka_event_error(ev) != RD_KAFKA_RESP_ERR_NO_ERROR) {
		snprintf(bf->error, sizeof(bf->error), "DescribeConfigs: %s",
		         rd_kafka_event_error_string(ev));
		goto out;
	}
	rs = rd_kafka_DescribeConfigs_result_resources(
		rd_kafka_event_DescribeConfigs_result(ev), &cnt);
	for (size_t i = 0; i < cnt; i++) {
		const rd_kafka_ConfigEntry_t **ents;
		const char *name = rd_kafka_ConfigResource_name(rs[i]);
		bool is_broker = rd_kafka_ConfigResource_type(rs[i]) ==
		                 RD_KAFKA_RESOURCE_BROKER;
		struct topic_info *ti = NULL;
		size_t ne = 0;
		if (rd_kafka_ConfigResource_error(rs[i]) != RD_KAFKA_RESP_ERR_NO_ERROR) {
			snprintf(bf->error, sizeof(bf->error), "DescribeConfigs %s: %s",
			         name, rd_kafka_ConfigResource_error_string(rs[i]));
			continue;
		}
		for (size_t j = 0; !is_broker && j < nt; j++)
			if (strcmp(t[j].name, name) == 0)
				ti = &t[j];
		if (!is_broker && ti == NULL)
			continue;
		ents = rd_kafka_ConfigResource_configs(rs[i], &ne);
		for (size_t j = 0; j < ne; j++)
			describe_entry(ents[j], is_broker ? bf->auto_create : NULL,
			               is_broker ? bf->num_partitions : NULL,
			               is_broker ? bf->min_isr : ti->min_isr);
	}
out:
	if (ev != NULL)
		rd_kafka_event_destroy(ev);
	rd_kafka_ConfigResource_destroy_array(res, n);
	rd_kafka_AdminOptions_destroy(ao);
	rd_kafka_queue_destroy(q);
}

static void check_topics(struct cli_checks *c, const struct relay_config *cfg,
                         const struct topic_info *t, size_t nt, size_t total,
                         const struct broker_facts *bf)
{
	char list[2048] = "", pattern[300], fix[600];
	const char *ph = strstr(cfg->route_topic_replacement, "${routedByValue}");
	bool client_off, weak = false, broken = false;
	size_t n = 0;
	const char *v;

	if (ph != NULL)
		snprintf(pattern, sizeof(pattern), "%.*s*%s",
		         (int)(ph - cfg->route_topic_replacement),
		         cfg->route_topic_replacement, ph + strlen("${routedByValue}"));
	else
		snprintf(pattern, sizeof(pattern), "%s", cfg->route_topic_replacement);
	v = cfg_kafka_get(cfg, "allow.auto.create.topics");
	client_off = v != NULL && strcmp(v, "false") == 0;
	for (size_t i = 0; i < nt && n < sizeof(list); i++)
		n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s (%d partitions, "
		                      "replication factor %d)", i ? ", " : "",
		                      t[i].name, t[i].partitions, t[i].replicas);
	snprintf(fix, sizeof(fix), "create each topic first (kafka-topics.sh "
	         "--create --topic <%s> --partitions N --replication-factor 3 "
	         "--config min.insync.replicas=2) or set auto.create.topics.enable"
	         "=true on the brokers", pattern);
	if (nt == 0 && strcmp(bf->auto_create, "true") == 0 && !client_off)
		check_item(c, "kafka_topics", CHECK_OK, 0, NULL, "no topic matches %s "
		           "yet; the broker creates each on first use "
		           "(auto.create.topics.enable=true, num.partitions=%s)",
		           pattern, bf->num_partitions[0] ? bf->num_partitions : "?");
	else if (nt == 0 && strcmp(bf->auto_create, "false") == 0)
		check_item(c, "kafka_topics", CHECK_FAIL, RELAY_EXIT_UNAVAILABLE, fix,
		           "no topic matches %s and auto.create.topics.enable=false: "
		           "the first event would wait forever", pattern);
	else if (nt == 0)
		check_item(c, "kafka_topics", CHECK_WARN, 0, fix, "no topic matches "
		           "%s and whether the broker creates topics is unknown (%s)",
		           pattern, client_off ? "kafka.allow.auto.create.topics=false"
		                               : bf->error);
	else
		check_item(c, "kafka_topics", strcmp(bf->auto_create, "true") == 0
		                                      ? CHECK_OK : CHECK_WARN,
		           0, fix, "%zu topic%s match%s %s: %s%s; "
		           "auto.create.topics.enable=%s", total, total == 1 ? "" : "s",
		           total == 1 ? "es" : "", pattern, list,
		           total > nt ? ", ..." : "",
		           bf->auto_create[0] ? bf->auto_create : "unknown");

	/* acks=all needs min.insync.replicas replicas in sync. */
	n = 0;
	list[0] = '\0';
	for (size_t i = 0; i < nt && n < sizeof(list); i++) {
		int isr = t[i].min_isr[0] ? atoi(t[i].min_isr) : 0;
		weak = weak || (isr > 0 && isr < 2);
		broken = broken || isr > t[i].replicas;
		n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s=%s", i ? ", " : "",
		                      t[i].name, t[i].min_isr[0] ? t[i].min_isr : "unknown");
	}
	if (nt == 0)
		snprintf(list, sizeof(list), "broker default %s",
		         bf->min_isr[0] ? bf->min_isr : "unknown");
	if (broken)
		check_item(c, "kafka_min_insync_replicas", CHECK_FAIL,
		           RELAY_EXIT_UNAVAILABLE, "lower min.insync.replicas to at most "
		           "the replication factor", "%s: above the replication "
		           "factor, every produce with acks=all fails", list);
	else
		check_item(c, "kafka_min_insync_replicas",
		           weak || (nt == 0 && atoi(bf->min_isr) < 2) ||
		                   (nt > 0 && bf->error[0])
		               ? CHECK_WARN : CHECK_OK, 0,
		           "with replication factor 3 set min.insync.replicas=2 "
		           "(kafka-configs.sh --alter --entity-type topics "
		           "--entity-name <topic> --add-config min.insync.replicas=2)",
		           "%s%s%s%s", list, weak || (nt == 0 && atoi(bf->min_isr) < 2)
		                               ? " (1: an acknowledged event survives "
		                                 "only while that one broker does)" : "",
		           bf->error[0] ? "; " : "", bf->error);
}

/* delivery.guarantee = exactly-once: the brokers' transaction
 * coordinator answers an init, for a transactional.id of its own (under
 * the relay's prefix, so the same ACL covers it; never the slot's, which
 * would fence a running relay). A single broker whose
 * transaction.state.log.replication.factor is the default 3, or a
 * principal without WRITE on the transactional id, fails here rather
 * than at the relay's first session. */
static void check_transactions(struct cli_checks *c,
                               const struct relay_config *cfg,
                               int64_t timeout_ms)
{
	static const char fix[] = "on the brokers: transaction.state.log."
		"replication.factor no larger than the cluster and transaction."
		"state.log.min.isr met; for the relay's principal: WRITE and "
		"DESCRIBE on the transactional ids prefixed outbox-relay:";
	char id[128], err[512], kerr[512];
	const struct kc_extra txn[] = { { "transactional.id", id, true } };
	rd_kafka_conf_t *kc;
	rd_kafka_error_t *e;
	rd_kafka_t *rk;
	int64_t t0;

	if (strcmp(cfg->delivery_guarantee, "exactly-once") != 0)
		return;
	snprintf(id, sizeof(id), "outbox-relay:check/%s/%ld", cfg->slot_name,
	         (long)getpid());
	kc = kc_conf_new(cfg, KC_RUNBOOK, txn, 1, err, sizeof(err));
	if (kc == NULL) {
		check_item(c, "kafka_transactions", CHECK_FAIL, RELAY_EXIT_CONFIG,
		           NULL, "%s", err);
		return;
	}
	if ((rk = rd_kafka_new(RD_KAFKA_PRODUCER, kc, kerr, sizeof(kerr))) ==
	    NULL) {
		rd_kafka_conf_destroy(kc);
		check_item(c, "kafka_transactions", CHECK_FAIL, RELAY_EXIT_CONFIG,
		           NULL, "a transactional producer cannot be made: %s",
		           kerr);
		return;
	}
	t0 = now_mono_us();
	e = rd_kafka_init_transactions(rk, (int)timeout_ms);
	if (e != NULL) {
		check_item(c, "kafka_transactions", CHECK_FAIL,
		           RELAY_EXIT_UNAVAILABLE, fix, "delivery.guarantee = "
		           "exactly-once, and the brokers do not initialise a "
		           "transactional producer within %lld ms: %s (%s)",
		           (long long)timeout_ms, rd_kafka_error_string(e),
		           rd_kafka_error_name(e));
		rd_kafka_error_destroy(e);
	} else {
		check_item(c, "kafka_transactions", CHECK_OK, 0, NULL,
		           "exactly-once: the transaction coordinator initialised a "
		           "producer in %lld ms", (long long)((now_mono_us() - t0) /
		                                           1000));
	}
	rd_kafka_destroy(rk);
}

void check_kafka(struct cli_checks *c, const struct relay_config *cfg,
                 int64_t timeout_ms)
{
	struct cli_kafka k;
	struct broker_facts bf = { 0 };
	struct topic_info t[CHECK_MAX_TOPICS];
	const struct rd_kafka_metadata *md = NULL;
	char err[1400], brokers[1024] = "";
	rd_kafka_resp_err_t e;
	rd_kafka_t *rk;
	size_t nt = 0, total = 0, n = 0;

	/* kc_validate_config() only reads; its signature predates const. */
	if (kc_validate_config((struct relay_config *)cfg, err, sizeof(err)) < 0) {
		check_item(c, "kafka_config", CHECK_FAIL, RELAY_EXIT_CONFIG,
		           "fix the kafka.* (or other) setting named", "%s", err);
		return;
	}
	check_item(c, "kafka_config", CHECK_OK, 0, NULL, "accepted by librdkafka %s",
	           rd_kafka_version_str());
	if (cli_kafka_open(&k, cfg, timeout_ms, err, sizeof(err)) < 0) {
		check_item(c, "kafka_reachable", CHECK_FAIL, RELAY_EXIT_CONFIG, NULL,
		           "%s", err);
		return;
	}
	rk = k.rk;
	e = rd_kafka_metadata(rk, 1, NULL, &md, (int)timeout_ms);
	if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
		rd_kafka_poll(rk, 0);
		check_item(c, "kafka_reachable", CHECK_FAIL, RELAY_EXIT_UNAVAILABLE,
		           "check kafka.bootstrap.servers, the network and the "
		           "security settings", "no metadata within %lld ms: %s%s%s",
		           (long long)timeout_ms, rd_kafka_err2str(e),
		           k.last_error[0] ? "; " : "", k.last_error);
		goto out;
	}
	for (int i = 0; i < md->broker_cnt && n < sizeof(brokers); i++)
		n += (size_t)snprintf(brokers + n, sizeof(brokers) - n, "%s%d %s:%d",
		                      i ? ", " : "", (int)md->brokers[i].id,
		                      md->brokers[i].host, md->brokers[i].port);
	check_item(c, "kafka_reachable", CHECK_OK, 0, NULL, "%d broker%s: %s",
	           md->broker_cnt, md->broker_cnt == 1 ? "" : "s", brokers);
	for (int i = 0; i < md->topic_cnt; i++) {
		if (!topic_matches(cfg->route_topic_replacement, md->topics[i].topic))
			continue;
		total++;
		if (nt == CHECK_MAX_TOPICS)
			continue;
		t[nt].name = md->topics[i].topic;
		t[nt].partitions = md->topics[i].partition_cnt;
		t[nt].replicas = md->topics[i].partition_cnt > 0
		                         ? md->topics[i].partitions[0].replica_cnt : 0;
		t[nt].min_isr[0] = '\0';
		nt++;
	}
	if (md->broker_cnt > 0)
		kafka_describe(rk, md->brokers[0].id, t, nt, timeout_ms, &bf);
	else
		snprintf(bf.error, sizeof(bf.error), "no broker in the metadata");
	check_topics(c, cfg, t, nt, total, &bf);
	check_transactions(c, cfg, timeout_ms);
out:
	if (md != NULL)
		rd_kafka_metadata_destroy(md);
	cli_kafka_close(&k);
}

