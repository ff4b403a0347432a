/* SPDX-License-Identifier: Apache-2.0 */
/* fake_kafka.h -- a deterministic producer behind the Kafka seam
 * (relay/kafka_port.h), for the loop's unit tests (check_relay.c) and
 * its fuzz harness (fuzz_relay.c).
 *
 * It records every record produced, in order and across producers, and
 * delivers nothing by itself: the test queues a report for a record of
 * its choice (fake_report(), any order, ok or an error code), and the
 * report is served at the loop's next kp->poll(), or inside kp->close()
 * when the producer is torn down first. close() then purges what is left
 * unreported, as librdkafka does (RD_KAFKA_RESP_ERR__PURGE_QUEUE). The
 * test also decides when the queue is full, when a record is rejected,
 * and when the producer fails fatally. */
#ifndef TESTS_FAKE_KAFKA_H
#define TESTS_FAKE_KAFKA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "relay/kafka_port.h"

#define FAKE_MAX 256 /* records over the fake's life */

struct fake_msg {
	uint64_t token;
	unsigned producer;      /* 1 for the first opened, 2 the next, ... */
	char topic[64];
	char key[64];
	char id[64];            /* the id header, "?" when none */
	char value[512];        /* the value, cut short */
	bool key_null;          /* produced with a NULL key */
	unsigned txn;           /* the Kafka transaction it was produced in
	                         * (fk->txn_begins when sent); 0: none */
	bool committed;         /* ... and that transaction committed */
	size_t nh;              /* its headers, cut short */
	char hname[16][48];
	char hvalue[16][160];
	int32_t partition;      /* from the key: records spread over 3 */
	size_t bytes;           /* key + value */
	bool queued;            /* a report is queued (fake_report()) */
	bool reported;          /* its report was served */
	bool ok;                /* ... and said so */
	int err;                /* ... or failed with this code */
};

struct fake_kafka {
	struct kafka_port port; /* port.ctx is this fake */

	/* What the test sets. */
	int full_at;            /* send says PUB_FULL while this many records
	                         * of the live producer wait for a report;
	                         * 0: never */
	enum pub_send_result next_send; /* the next send's result, once;
	                         * PUB_SENT: a normal send */
	bool fatal;             /* kp->fatal() says so (with fatal_err) */
	int fatal_err;
	bool open_fails;        /* the next open() fails */
	int txn_init_fails;     /* the next this many txn_init() fail */
	bool txn_commit_fails;  /* the next txn_commit() fails, once */

	/* What it saw. */
	struct fake_msg msgs[FAKE_MAX];
	size_t n;
	unsigned opens, closes, polls, nudges;
	unsigned live;          /* the open producer's number; 0: none */
	/* Transactions (a producer opened with a txn_id). */
	char txn_id[256];       /* the last open()'s; "" none */
	unsigned txn_inits, txn_begins, txn_commits, txn_aborts;
	bool txn_open;          /* between begin and commit/abort */
	unsigned txn_violations; /* sends outside a transaction, begins
	                         * inside one, commits with none: the
	                         * relay broke librdkafka's rules */
	pub_dr_fn dr;
	void *opaque;
	/* Queued reports, served in this order. */
	struct {
		size_t idx;
		bool ok;
		int err;
	} due[FAKE_MAX];
	size_t ndue;
};

void fake_kafka_init(struct fake_kafka *fk);

/* Queues the report of record idx (msgs[idx]): ok, or failed with err
 * (an rd_kafka_resp_err_t). Served at the next poll() or close(). */
void fake_report(struct fake_kafka *fk, size_t idx, bool ok, int err);

/* The header name of record m, NULL when it has none. */
const char *fake_header(const struct fake_msg *m, const char *name);

/* Queues an ok report for every record of the live producer without
 * one. */
void fake_report_all(struct fake_kafka *fk);

/* Records of the live producer without a queued or served report. */
size_t fake_unreported(const struct fake_kafka *fk);

#endif
