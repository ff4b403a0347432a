/* SPDX-License-Identifier: Apache-2.0 */
/* ledger.h -- the slot ledger: what moved the slot, recorded in Kafka.
 *
 * PostgreSQL 15 cannot tell a slot that was dropped and created again
 * (it starts at the WAL position of its creation, silently past every
 * event committed in between) from the slot the relay used before: the
 * view has no creation time or identity. So everything that moves a slot
 * forward first records the position it moves it to, in a compacted
 * Kafka topic (slot.ledger.topic), one key per slot: the relay before it
 * confirms, the runbook CLI before it advances, skips or creates. At the
 * start of every session the relay reads the slot's latest record back:
 * a slot whose confirmed_flush_lsn is past it was moved by something that
 * did not record it (recreated, or advanced by hand) and is refused.
 *
 * The record's value is a JSON object: {"slot", "system_id", "database",
 * "lsn" ("X/X"), "by" (who wrote it), "at" (UTC time)}; its key is
 * "<system_id>/<database>/<slot>". An exactly-once relay's record (one
 * in each Kafka transaction, relay/txn.c) also names the newest commit
 * it covers, "commit": {"end" ("X/X"), "xid", "time_us"}, so that the
 * next relay skips what was committed only once it has seen that commit,
 * unchanged, in the server's WAL. */
#ifndef RELAY_LEDGER_H
#define RELAY_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/common.h"
#include "lib/config.h"

/* A commit as the WAL identifies it (lsn_tracker.h's lsn_commit_id). */
struct ledger_commit {
	uint64_t end_lsn;       /* 0: none */
	int64_t xid;
	int64_t commit_ts_us;
};

struct ledger_entry {
	bool found;             /* the slot has a record */
	struct ledger_commit commit; /* the newest commit it covers (an
	                         * exactly-once record); end_lsn 0: none */
	bool no_topic;          /* the topic does not exist (yet) */
	uint64_t lsn;           /* the position recorded */
	char by[64];            /* who recorded it */
	char at[32];            /* when, UTC */
};

/* The record key of a slot. Returns its length, or -1 if out is small. */
int ledger_key(const char *system_id, const char *database, const char *slot,
               char *out, size_t outlen) RELAY_MUSTCHECK;

/* The record value, with the commit c covers when c is not NULL.
 * Returns a malloc'd string (caller frees). */
char *ledger_value(const char *system_id, const char *database,
                   const char *slot, uint64_t lsn, const char *by,
                   const struct ledger_commit *c);

/* Parses a record value into e (found set). Returns 0, or -1 when it is
 * not a ledger record. Pure; exposed for tests. */
int ledger_parse(const char *value, size_t len, struct ledger_entry *e)
	RELAY_MUSTCHECK;

struct ledger;

/* A reader of the ledger: one Kafka consumer built from cfg's kafka.*
 * properties (cfg borrowed for the reader's lifetime), kept for every
 * read of the process: a client per read would set up TLS and SASL each
 * time (and librdkafka 2.0.2 crashed destroying a consumer whose
 * OAUTHBEARER token had failed). Returns NULL with err filled. */
struct ledger *ledger_open(const struct relay_config *cfg, char *err,
                           size_t errlen);
void ledger_close(struct ledger *l);

/* Reads the latest record of key from cfg->slot_ledger_topic within
 * timeout_ms. A missing topic reads as no record (e->no_topic), and is
 * created when create is true (compacted, one partition, the broker's
 * replication factor). Returns 0 (e->found tells), or -1 with err filled
 * when Kafka could not be read. */
int ledger_read(struct ledger *l, const char *key, bool create,
                struct ledger_entry *e, int timeout_ms, char *err,
                size_t errlen) RELAY_MUSTCHECK;

/* Writes one record and waits for Kafka's ack (the runbook CLI, before it
 * moves a slot). Returns 0, or -1 with err filled. */
int ledger_write(const struct relay_config *cfg, const char *key,
                 const char *value, int timeout_ms, char *err,
                 size_t errlen) RELAY_MUSTCHECK;

/* Why a slot is refused, or 0 when it may be used: its position slot_lsn
 * against the ledger entry e. Fills err with the explanation and the
 * runbook step. Pure. */
int ledger_check(const struct ledger_entry *e, const char *slot,
                 uint64_t slot_lsn, char *err, size_t errlen) RELAY_MUSTCHECK;

#endif
