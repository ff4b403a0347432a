/* SPDX-License-Identifier: Apache-2.0 */
/* act_slot.c -- the slot's life cycle: --create-slot, --drop-slot,
 * --advance-slot and --accept-slot.
 *
 * Each acts on its own flag only, and the ones that lose events need
 * --yes; each first says what it loses, counted by the relay's rules
 * (cli_peek.c), and records a move in the slot ledger before it is
 * made. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_int.h"

#define DROP_PEEK_ROWS 100000       /* rows --drop-slot peeks at most */

/* The outbox events of a peek: what a drop or an advance makes
 * unpublishable. */
struct tally {
	struct cli_ids ids;         /* ids.total: the events */
	uint64_t txns;              /* transactions with events */
	uint64_t txn_events;        /* in the current transaction */
};

static int tally_row(void *ctx, const struct cli_row *row)
{
	struct tally *t = ctx;
	const struct ev_record *er = row->er;

	switch (er->kind) {
	case EV_EVENT:
		cli_ids_add(&t->ids, er->event_id);
		t->txn_events++;
		break;
	case EV_POISON:
		/* An event the relay would stop at is lost all the same. */
		if (er->is_event) {
			cli_ids_add(&t->ids, er->event_id);
			t->txn_events++;
		}
		break;
	case EV_COMMIT:
		if (t->txn_events > 0)
			t->txns++;
		t->txn_events = 0;
		break;
	default:
		break;
	}
	return 0;
}

/* ------------------------------------------------------------ create */

/* What --create-slot does about the publication (pgoutput only). */
struct create_pub {
	bool pgoutput;
	const char *name;           /* slot.publication */
	bool created;               /* by this run */
};

/* The publication must be usable before a pgoutput slot is created or
 * accepted: pgoutput looks it up with the historic snapshot of each
 * change, so it must exist before the slot, and a table it leaves out,
 * a row filter or a column list would drop events on the server with no
 * error anywhere. An existing publication is judged, never altered: it
 * may serve others. Creates a missing one when create is set. Returns 0
 * or an exit code after saying why. */
static int create_publication(PGconn *conn, const struct relay_config *cfg,
                              struct create_pub *cp, bool create)
{
	struct stream_spec ss;
	struct slot_pub p;
	struct pgu_status st;
	enum slot_pub_verdict v;
	char err[1400], what[1024], fix[1400], sql[800];
	bool schema = strcmp(cfg->outbox_table, "*") == 0;
	int rc = RELAY_EXIT_UNAVAILABLE;

	ss_init(&ss, cfg);
	if (slot_pub_read(conn, cp->name, &ss.spec, cli_deadline(), &p, &st, err,
	                  sizeof(err)) < 0) {
		cli_err("publication \"%s\": %s", cp->name, err);
		goto out;
	}
	if (!p.exists && create) {
		if (slot_pub_create(conn, cp->name, &ss.spec, cli_deadline(), &st,
		                    err, sizeof(err)) == 0) {
			cp->created = true;
		} else if (strcmp(st.sqlstate, "42501") == 0) {
			slot_pub_create_sql(cp->name, &ss.spec, sql, sizeof(sql));
			/* FOR TABLE needs the table's owner, FOR TABLES IN
			 * SCHEMA a superuser (PostgreSQL 15). */
			cli_err("publication \"%s\" does not exist and role \"%s\" may "
			        "not create it (%s); nothing was created. As %s%s%s%s, "
			        "run: %s then run --create-slot again", cp->name,
			        PQuser(conn), err, schema ? "a superuser" : "the owner of ",
			        schema ? "" : cfg->outbox_schema, schema ? "" : ".",
			        schema ? "" : cfg->outbox_table, sql);
			rc = RELAY_EXIT_NOPERM;
			goto out;
		} else if (strcmp(st.sqlstate, "42710") != 0) {
			/* 42710: created meanwhile; judged below like any other. */
			cli_err("publication \"%s\": %s; nothing was created",
			        cp->name, err);
			goto out;
		}
		if (slot_pub_read(conn, cp->name, &ss.spec, cli_deadline(), &p, &st,
		                  err, sizeof(err)) < 0) {
			cli_err("publication \"%s\": %s", cp->name, err);
			goto out;
		}
	}
	v = slot_pub_judge(&p);
	if (v == PUB_MISSING && !create) {
		slot_pub_create_sql(cp->name, &ss.spec, sql, sizeof(sql));
		cli_err("slot \"%s\" exists but its publication \"%s\" does not: "
		        "pgoutput cannot decode the changes written before the "
		        "publication exists. Create it (%s), then either advance the "
		        "slot past that point (--advance-slot; the events before it "
		        "are then not published from this slot) or drop the slot and "
		        "run --create-slot again", cfg->slot_name, cp->name, sql);
		goto out;
	}
	if (v != PUB_OK) {
		slot_pub_text(v, &p, cp->name, &ss.spec, what, sizeof(what), fix,
		              sizeof(fix));
		cli_err("publication %s; %s%s", what, fix,
		        create ? "; no slot was created" : "");
		goto out;
	}
	rc = 0;
out:
	ss_free(&ss);
	return rc;
}

static int create_exists(const struct relay_config *cfg,
                         const struct cli_args *a, PGconn *conn,
                         const struct slot_row *s, struct create_pub *cp)
{
	const char *name = cfg->slot_name;
	enum slot_refusal why = slot_judge(s, cfg->slot_plugin, SLOT_ALLOW_ACTIVE);
	char msg[1400];
	bool want;
	int rc;

	if (!a->if_not_exists) {
		cli_err("replication slot \"%s\" already exists (plugin %s, "
		        "confirmed_flush_lsn " LSN_FMT "); --if-not-exists accepts "
		        "an existing %s slot", name, s->plugin,
		        LSN_ARGS(s->confirmed_lsn), cfg->slot_plugin);
		return RELAY_EXIT_UNAVAILABLE;
	}
	if (why != SLOT_USABLE) {
		slot_refusal_text(why, s, name, true, msg, sizeof(msg));
		cli_err("%s", msg);
		return RELAY_EXIT_UNAVAILABLE;
	}
	/* Accepted only with a publication it can decode. Not created now:
	 * the slot is older and could not decode the changes before it. */
	if (cp->pgoutput && (rc = create_publication(conn, cfg, cp, false)) != 0)
		return rc;
	/* Accepted as it is; --check says what a missing FAILOVER means. */
	if (slot_failover_wanted(cfg->slot_failover, s->server_version, &want,
	                         msg, sizeof(msg)) == 0 && want &&
	    s->failover == SLOT_FLAG_FALSE)
		cli_err("note: slot \"%s\" is not a failover slot (slot.failover = "
		        "%s); while no relay streams from it: ALTER_REPLICATION_SLOT "
		        "\"%s\" (FAILOVER true) on a replication connection",
		        name, cfg->slot_failover, name);
	if (a->json) {
		json_t *j = json_object();
		json_object_set_new(j, "slot", cli_jstr(name));
		json_object_set_new(j, "created", json_false());
		json_object_set_new(j, "plugin", cli_jstr(s->plugin));
		json_object_set_new(j, "publication",
		                    cp->pgoutput ? cli_jstr(cp->name) : json_null());
		json_object_set_new(j, "publication_created", json_false());
		json_object_set_new(j, "confirmed_flush_lsn",
		                    cli_jlsn(s->confirmed_lsn));
		json_object_set_new(j, "failover",
		                    s->failover == SLOT_FLAG_ABSENT
		                        ? json_null()
		                        : json_boolean(s->failover == SLOT_FLAG_TRUE));
		cli_json_out(j);
	} else {
		printf("slot \"%s\" already exists (plugin %s%s%s, "
		       "confirmed_flush_lsn " LSN_FMT "): nothing to do\n", name,
		       s->plugin, cp->pgoutput ? ", publication " : "",
		       cp->pgoutput ? cp->name : "", LSN_ARGS(s->confirmed_lsn));
	}
	return RELAY_EXIT_OK;
}

int act_create_slot(const struct relay_config *cfg, const struct cli_args *a)
{
	const char *name = cfg->slot_name;
	struct create_pub cpub = {
		.pgoutput = strcmp(cfg->slot_plugin, "pgoutput") == 0,
		.name = cfg->slot_publication,
	};
	struct pgu_status st;
	struct slot_row s;
	char err[1400], cps[32];
	uint64_t cp = 0;
	bool failover = false;
	PGconn *conn;
	int rc = RELAY_EXIT_UNAVAILABLE;

	conn = cli_connect(cfg, true, 0, err, sizeof(err));
	if (conn == NULL) {
		cli_err("%s", err);
		return RELAY_EXIT_UNAVAILABLE;
	}
	if (slot_read(conn, name, cli_deadline(), &s, &st, err, sizeof(err)) < 0) {
		cli_err("%s", err);
		goto out;
	}
	if (s.exists) {
		rc = create_exists(cfg, a, conn, &s, &cpub);
		goto out;
	}
	/* Decided before anything is created: on before 17 is an error. */
	if (slot_failover_wanted(cfg->slot_failover, PQserverVersion(conn),
	                         &failover, err, sizeof(err)) < 0) {
		cli_err("%s; nothing was created", err);
		rc = RELAY_EXIT_CONFIG;
		goto out;
	}
	/* The publication first: committed before the slot's consistent
	 * point, so every change the slot decodes sees it. */
	if (cpub.pgoutput && (rc = create_publication(conn, cfg, &cpub, true)) != 0)
		goto out;
	rc = RELAY_EXIT_UNAVAILABLE;
	if (cpub.created && !a->json)
		printf("created publication \"%s\" (inserts into %s.%s)\n",
		       cpub.name, cfg->outbox_schema, cfg->outbox_table);
	if (slot_create(conn, name, cfg->slot_plugin, failover, cli_deadline(),
	                &cp, &st, err, sizeof(err)) < 0) {
		if (strcmp(st.sqlstate, "42710") == 0 &&
		    slot_read(conn, name, cli_deadline(), &s, &st, err,
		              sizeof(err)) == 0 && s.exists) {
			rc = create_exists(cfg, a, conn, &s, &cpub); /* created meanwhile */
			goto out;
		}
		cli_err("replication slot \"%s\": %s%s", name, err,
		        cpub.created ? " (the publication created above stays)" : "");
		goto out;
	}
	/* A slot created on purpose: recorded, so the relay takes it even
	 * where the ledger knew an older slot of that name. */
	if (slot_read(conn, name, cli_deadline(), &s, &st, err, sizeof(err)) < 0 ||
	    cli_ledger_record(cfg, s.database, cp, "create-slot") < 0)
		cli_err("slot \"%s\" was created but not recorded in the slot "
		        "ledger: if the relay refuses it, run outbox-relay "
		        "--accept-slot --yes", name);
	snprintf(cps, sizeof(cps), LSN_FMT, LSN_ARGS(cp));
	if (a->json) {
		json_t *j = json_object();
		json_object_set_new(j, "slot", cli_jstr(name));
		json_object_set_new(j, "created", json_true());
		json_object_set_new(j, "plugin", cli_jstr(cfg->slot_plugin));
		json_object_set_new(j, "publication",
		                    cpub.pgoutput ? cli_jstr(cpub.name) : json_null());
		json_object_set_new(j, "publication_created",
		                    json_boolean(cpub.created));
		json_object_set_new(j, "consistent_point", cli_jstr(cps));
		json_object_set_new(j, "failover", json_boolean(failover));
		cli_json_out(j);
	} else {
		printf("created slot \"%s\" (plugin %s%s%s%s), consistent point %s: "
		       "events committed after it will be published\n", name,
		       cfg->slot_plugin, cpub.pgoutput ? ", publication " : "",
		       cpub.pgoutput ? cpub.name : "", failover ? ", failover" : "",
		       cps);
	}
	rc = RELAY_EXIT_OK;
out:
	PQfinish(conn);
	return rc;
}

/* ------------------------------------------------------------ drop */

static void drop_report(const struct cli_args *a, const char *name,
                        const struct slot_row *s, const struct tally *t,
                        bool counted, bool cut, const char *why_unknown)
{
	char rel[32], ids[1024], conf[32];

	fmt_bytes(rel, sizeof(rel), (double)s->retained_bytes);
	cli_ids_text(&t->ids, ids, sizeof(ids));
	if (a->json) {
		json_t *j = json_object();
		json_object_set_new(j, "slot", cli_jstr(name));
		json_object_set_new(j, "dropped", json_true());
		json_object_set_new(j, "restart_lsn", cli_jlsn(s->restart_lsn));
		json_object_set_new(j, "confirmed_flush_lsn",
		                    s->confirmed_known ? cli_jlsn(s->confirmed_lsn)
		                                       : json_null());
		json_object_set_new(j, "released_wal_bytes",
		                    s->retained_bytes >= 0
		                            ? json_integer(s->retained_bytes)
		                            : json_null());
		json_object_set_new(j, "unconfirmed_events",
		                    counted ? json_integer((json_int_t)t->ids.total)
		                            : json_null());
		json_object_set_new(j, "unconfirmed_events_exact",
		                    json_boolean(counted && !cut));
		json_object_set_new(j, "unconfirmed_event_ids", cli_ids_json(&t->ids));
		cli_json_out(j);
		return;
	}
	if (s->confirmed_known)
		snprintf(conf, sizeof(conf), LSN_FMT, LSN_ARGS(s->confirmed_lsn));
	else
		snprintf(conf, sizeof(conf), "unknown (invalidated)");
	printf("slot \"%s\": restart_lsn " LSN_FMT ", confirmed_flush_lsn %s, "
	       "server WAL at " LSN_FMT "\n", name, LSN_ARGS(s->restart_lsn), conf,
	       LSN_ARGS(s->current_lsn));
	if (s->retained_bytes >= 0)
		printf("released WAL: %lld bytes (%s)\n",
		       (long long)s->retained_bytes, rel);
	else
		printf("released WAL: unknown (restart_lsn is gone)\n");
	if (!counted)
		printf("unconfirmed outbox events: unknown (%s)\n", why_unknown);
	else
		printf("unconfirmed outbox events that will never be published from "
		       "this slot: %s%llu in %llu transaction%s%s%s%s\n",
		       cut ? "at least " : "", (unsigned long long)t->ids.total,
		       (unsigned long long)t->txns, cli_pl(t->txns),
		       t->ids.n ? " (ids: " : "", ids, t->ids.n ? ")" : "");
	printf("dropped slot \"%s\"\n", name);
}

int act_drop_slot(const struct relay_config *cfg, const struct cli_args *a)
{
	const char *name = cfg->slot_name;
	struct tally t = { 0 };
	struct cli_peek pk = { 0 };
	struct pgu_status st;
	struct slot_row s;
	char err[1400], why[1400] = "";
	bool counted = false;
	PGconn *conn;
	int rc;

	if (!a->yes) {
		cli_err("refusing to drop slot \"%s\" without --yes: every event it "
		        "has not confirmed is then never published, and a new slot "
		        "starts at the current WAL", name);
		return RELAY_EXIT_USAGE;
	}
	conn = cli_open_slot(cfg, false, 0, SLOT_ALLOW_LOST, &s, &rc);
	if (conn == NULL)
		return rc;
	rc = RELAY_EXIT_UNAVAILABLE;
	if (slot_judge(&s, cfg->slot_plugin, 0) == SLOT_LOST) {
		if (s.invalidation_reason[0] != '\0' &&
		    strcmp(s.invalidation_reason, "wal_removed") != 0)
			snprintf(why, sizeof(why), "the slot is invalidated "
			         "(invalidation_reason=%s): it can no longer be read",
			         s.invalidation_reason);
		else
			snprintf(why, sizeof(why), "the slot is invalidated: its WAL "
			         "is gone");
	} else {
		pk.slot = name;
		pk.upto_nchanges = DROP_PEEK_ROWS;
		pk.on_row = tally_row;
		pk.ctx = &t;
		if (cli_peek_run(conn, cfg, &pk, err, sizeof(err)) == 0) {
			counted = true;
		} else if (pk.busy) {
			cli_err("%s", err);
			goto out;
		} else {
			snprintf(why, sizeof(why), "%s", err);
		}
	}
	if (slot_drop(conn, name, cli_deadline(), &st, err, sizeof(err)) < 0) {
		cli_err("slot \"%s\": %s", name, err);
		goto out;
	}
	drop_report(a, name, &s, &t, counted,
	            counted && pk.rows >= (uint64_t)DROP_PEEK_ROWS, why);
	rc = RELAY_EXIT_OK;
out:
	PQfinish(conn);
	return rc;
}

/* ------------------------------------------------------------ advance */

int act_advance_slot(const struct relay_config *cfg, const struct cli_args *a)
{
	const char *name = cfg->slot_name;
	struct tally t = { 0 };
	struct cli_peek pk = { 0 };
	struct slot_row s;
	char err[1400], ids[1024];
	uint64_t target, moved = 0;
	PGconn *conn;
	int rc;

	if (lsn_parse(a->arg, strlen(a->arg), &target) < 0 || target == 0) {
		cli_err("--advance-slot: \"%s\" is not an LSN (X/X)", a->arg);
		return RELAY_EXIT_USAGE;
	}
	if (!a->yes) {
		cli_err("refusing to advance slot \"%s\" without --yes: every event "
		        "committed before " LSN_FMT " and not yet published is "
		        "skipped for good (--dry-run shows them)", name,
		        LSN_ARGS(target));
		return RELAY_EXIT_USAGE;
	}
	conn = cli_open_slot(cfg, false, 0, 0, &s, &rc);
	if (conn == NULL)
		return rc;
	if (target <= s.confirmed_lsn || target > s.current_lsn) {
		cli_err("refusing to advance slot \"%s\" to " LSN_FMT ": it must be "
		        "past confirmed_flush_lsn " LSN_FMT " (a slot only moves "
		        "forward) and not past the server's WAL at " LSN_FMT, name,
		        LSN_ARGS(target), LSN_ARGS(s.confirmed_lsn),
		        LSN_ARGS(s.current_lsn));
		rc = RELAY_EXIT_DATAERR;
		goto out;
	}
	rc = RELAY_EXIT_UNAVAILABLE;
	pk.slot = name;
	pk.upto_lsn = target;
	pk.on_row = tally_row;
	pk.ctx = &t;
	if (cli_peek_run(conn, cfg, &pk, err, sizeof(err)) < 0) {
		cli_err("%s (nothing was advanced)", err);
		goto out;
	}
	cli_ids_text(&t.ids, ids, sizeof(ids));
	if (!a->json)
		printf("advancing slot \"%s\" from " LSN_FMT " to " LSN_FMT
		       " skips %llu outbox event%s in %llu transaction%s%s%s%s\n",
		       name, LSN_ARGS(s.confirmed_lsn), LSN_ARGS(target),
		       (unsigned long long)t.ids.total, cli_pl(t.ids.total),
		       (unsigned long long)t.txns, cli_pl(t.txns),
		       t.ids.n ? " (ids: " : "", ids, t.ids.n ? ")" : "");
	fflush(stdout);
	rc = cli_advance(cfg, conn, &s, target, t.ids.total, ids, "", &moved);
	if (rc != 0)
		goto out;
	if (a->json) {
		json_t *j = json_object();
		json_object_set_new(j, "slot", cli_jstr(name));
		json_object_set_new(j, "from", cli_jlsn(s.confirmed_lsn));
		json_object_set_new(j, "to", cli_jlsn(moved));
		json_object_set_new(j, "skipped_events",
		                    json_integer((json_int_t)t.ids.total));
		json_object_set_new(j, "skipped_transactions",
		                    json_integer((json_int_t)t.txns));
		json_object_set_new(j, "skipped_event_ids", cli_ids_json(&t.ids));
		cli_json_out(j);
	} else {
		printf("slot \"%s\" advanced to " LSN_FMT "\n", name, LSN_ARGS(moved));
	}
out:
	PQfinish(conn);
	return rc;
}

/* ------------------------------------------------------------ accept */

/* The relay refuses a slot whose position is past what the ledger holds
 * (dropped and created again, advanced by hand). After an operator made
 * sure that was deliberate, this records the slot's position as it is.
 * The same for a slot behind an exactly-once record's commit after the
 * database went back in time: the record would have the next relay skip
 * up to a commit the restored database does not have (it stops, 69);
 * recorded at the slot's position, it publishes from there. */
int act_accept_slot(const struct relay_config *cfg, const struct cli_args *a)
{
	const char *name = cfg->slot_name;
	struct ledger_entry e;
	struct slot_row s;
	char err[1400], key[256];
	PGconn *conn;
	int rc;

	if (cfg->slot_ledger_topic[0] == '\0') {
		cli_err("slot.ledger.topic is empty: there is no ledger to record in");
		return RELAY_EXIT_CONFIG;
	}
	conn = cli_open_slot(cfg, false, 0, SLOT_ALLOW_ACTIVE, &s, &rc);
	if (conn == NULL)
		return rc;
	rc = RELAY_EXIT_UNAVAILABLE;
	if (cli_ledger_key(cfg, s.database, key, sizeof(key), err, sizeof(err)) < 0 ||
	    cli_ledger_read(cfg, key, true, &e, err, sizeof(err)) < 0) {
		cli_err("slot ledger: %s", err);
		goto out;
	}
	if (e.found && s.confirmed_lsn <= e.lsn &&
	    e.commit.end_lsn > s.confirmed_lsn) {
		if (!a->yes) {
			cli_err("refusing to record slot \"%s\" at " LSN_FMT " without "
			        "--yes: the ledger's record (by %s at %s) says Kafka holds "
			        "the transactions up to commit " LSN_FMT " (xid %lld), "
			        "which an exactly-once relay skips; recorded at the "
			        "slot's position, the next relay publishes them instead. "
			        "Do it when the database went back in time (the relay "
			        "stopped with exit 69): on the same database, consumers "
			        "would see those transactions twice", name,
			        LSN_ARGS(s.confirmed_lsn), e.by, e.at,
			        LSN_ARGS(e.commit.end_lsn), (long long)e.commit.xid);
			rc = RELAY_EXIT_USAGE;
			goto out;
		}
	} else if (e.found && s.confirmed_lsn <= e.lsn) {
		printf("slot \"%s\" at " LSN_FMT " is not past the ledger's " LSN_FMT
		       " (by %s at %s): nothing to accept\n", name,
		       LSN_ARGS(s.confirmed_lsn), LSN_ARGS(e.lsn), e.by, e.at);
		rc = RELAY_EXIT_OK;
		goto out;
	}
	if (!a->yes) {
		cli_err("refusing to accept slot \"%s\" at " LSN_FMT " without --yes: "
		        "events committed after " LSN_FMT " and before it may never "
		        "have been published", name, LSN_ARGS(s.confirmed_lsn),
		        LSN_ARGS(e.found ? e.lsn : 0));
		rc = RELAY_EXIT_USAGE;
		goto out;
	}
	if (cli_ledger_record(cfg, s.database, s.confirmed_lsn, "accept-slot") < 0)
		goto out;
	fprintf(stderr, "AUDIT: slot %s accepted at " LSN_FMT " by user %s (the "
	        "ledger had " LSN_FMT "%s%s)\n", name, LSN_ARGS(s.confirmed_lsn),
	        s.user, LSN_ARGS(e.found ? e.lsn : 0), e.found ? ", by " : "",
	        e.found ? e.by : "");
	printf("slot \"%s\" accepted at " LSN_FMT ": the relay streams from it "
	       "again\n", name, LSN_ARGS(s.confirmed_lsn));
	rc = RELAY_EXIT_OK;
out:
	PQfinish(conn);
	return rc;
}
