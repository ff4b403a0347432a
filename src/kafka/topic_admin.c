/* SPDX-License-Identifier: Apache-2.0 */
/* topic_admin.c -- CreateTopics through librdkafka's admin API
 * (topic_admin.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka/topic_admin.h"
#include "lib/common.h"
#include "lib/log.h"

/* Refusals that can pass: no controller yet, a broker restarting, our
 * own timeout. Any other error of a topic's result is final. */
static const rd_kafka_resp_err_t transient[] = {
	RD_KAFKA_RESP_ERR__TIMED_OUT,
	RD_KAFKA_RESP_ERR__TRANSPORT,
	RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN,
	RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT,
	RD_KAFKA_RESP_ERR_NOT_CONTROLLER,
	RD_KAFKA_RESP_ERR_BROKER_NOT_AVAILABLE,
	RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE,
	RD_KAFKA_RESP_ERR_NETWORK_EXCEPTION,
};

static bool is_transient(rd_kafka_resp_err_t e)
{
	for (size_t i = 0; i < sizeof(transient) / sizeof(transient[0]); i++)
		if (transient[i] == e)
			return true;
	return false;
}

enum ta_result ta_create(rd_kafka_t *rk, const struct ta_topic *t,
                         int timeout_ms, char *err, size_t errlen)
{
	char kerr[512];
	rd_kafka_NewTopic_t *nt;
	rd_kafka_AdminOptions_t *opt = NULL;
	rd_kafka_queue_t *q = NULL;
	rd_kafka_event_t *ev = NULL;
	const rd_kafka_topic_result_t **res;
	rd_kafka_resp_err_t e;
	size_t nres = 0;
	enum ta_result rc = TA_FAILED;

	nt = rd_kafka_NewTopic_new(t->name, t->partitions, t->replication_factor,
	                           kerr, sizeof(kerr));
	if (nt == NULL) {
		errbuf_set(err, errlen, "topic %s: %s", t->name, kerr);
		return TA_REFUSED;
	}
	for (size_t i = 0; i < t->nconfigs; i++) {
		if (rd_kafka_NewTopic_set_config(nt, t->configs[i].name,
		                                 t->configs[i].value) !=
		    RD_KAFKA_RESP_ERR_NO_ERROR) {
			errbuf_set(err, errlen, "topic %s: cannot set its config %s",
			           t->name, t->configs[i].name);
			rc = TA_REFUSED;
			goto out;
		}
	}
	/* The broker's wait for the controller and librdkafka's for the
	 * broker, both within ours. */
	opt = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
	if (opt != NULL) {
		(void)rd_kafka_AdminOptions_set_operation_timeout(opt, timeout_ms,
		                                                  kerr, sizeof(kerr));
		(void)rd_kafka_AdminOptions_set_request_timeout(opt, timeout_ms, kerr,
		                                                sizeof(kerr));
	}
	q = rd_kafka_queue_new(rk);
	rd_kafka_CreateTopics(rk, &nt, 1, opt, q);
	ev = rd_kafka_queue_poll(q, timeout_ms + 1000);
	if (ev == NULL) {
		errbuf_set(err, errlen, "creating topic %s: no answer within %d ms",
		           t->name, timeout_ms);
		goto out;
	}
	e = rd_kafka_event_error(ev);
	if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
		errbuf_set(err, errlen, "creating topic %s: %s", t->name,
		           rd_kafka_event_error_string(ev));
		rc = is_transient(e) ? TA_FAILED : TA_REFUSED;
		goto out;
	}
	res = rd_kafka_CreateTopics_result_topics(
		rd_kafka_event_CreateTopics_result(ev), &nres);
	e = nres == 1 ? rd_kafka_topic_result_error(res[0])
	              : RD_KAFKA_RESP_ERR__FAIL;
	if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
		rc = TA_CREATED;
	} else if (e == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
		rc = TA_EXISTED;
	} else {
		errbuf_set(err, errlen, "creating topic %s: %s (%s)", t->name,
		           nres == 1 ? rd_kafka_topic_result_error_string(res[0])
		                     : "no result",
		           rd_kafka_err2name(e));
		rc = is_transient(e) ? TA_FAILED : TA_REFUSED;
	}
out:
	if (ev != NULL)
		rd_kafka_event_destroy(ev);
	if (q != NULL)
		rd_kafka_queue_destroy(q);
	if (opt != NULL)
		rd_kafka_AdminOptions_destroy(opt);
	rd_kafka_NewTopic_destroy(nt);
	return rc;
}

bool ta_enabled(const struct relay_config *cfg)
{
	return cfg->topic_creation_partitions != 0;
}

/* The topics created or found by this process (ta_ensure()). */
static char **seen;
static size_t nseen;

enum ta_result ta_ensure(rd_kafka_t *rk, const struct relay_config *cfg,
                         const char *topic, int timeout_ms, char *err,
                         size_t errlen)
{
	struct ta_config *tc;
	struct ta_topic t;
	enum ta_result rc;

	if (!ta_enabled(cfg))
		return TA_EXISTED;
	for (size_t i = 0; i < nseen; i++)
		if (strcmp(seen[i], topic) == 0)
			return TA_EXISTED;
	tc = xcalloc(cfg->topic_configs_len + 1, sizeof(*tc));
	for (size_t i = 0; i < cfg->topic_configs_len; i++)
		tc[i] = (struct ta_config){ cfg->topic_configs[i].name,
			                        cfg->topic_configs[i].value };
	t = (struct ta_topic){ topic, (int)cfg->topic_creation_partitions,
		                   (int)cfg->topic_creation_replication_factor, tc,
		                   cfg->topic_configs_len };
	rc = ta_create(rk, &t, timeout_ms, err, errlen);
	free(tc);
	if (rc == TA_CREATED)
		log_info("kafka: created topic %s (topic.creation.default: %lld "
		         "partitions, replication factor %lld, %zu configs)", topic,
		         (long long)cfg->topic_creation_partitions,
		         (long long)cfg->topic_creation_replication_factor,
		         cfg->topic_configs_len);
	if (rc == TA_CREATED || rc == TA_EXISTED) {
		seen = xrealloc(seen, (nseen + 1) * sizeof(*seen));
		seen[nseen++] = xstrdup(topic);
	}
	return rc;
}
