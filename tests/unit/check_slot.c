/* SPDX-License-Identifier: Apache-2.0 */
/* check_slot.c -- the slot and outbox-table rules of slot.h, as a
 * table: one slot row per line, what the relay, --check and each
 * runbook action must answer, and the words an operator reads. */
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "pg/slot.h"
#include "fixtures.h"

/* Row fields, the allow flags of the action, the verdict, a substring of
 * the full sentence. */
static const struct rule {
	bool exists, logical;
	const char *plugin;
	bool same_db;
	enum wal_status wal;
	bool confirmed_known, active;
	unsigned allow;
	enum slot_refusal want;
	const char *text;
} rules[] = {
	/* the relay, --advance-slot, --skip-transaction, --drain (allow 0) */
	{ true, true, "wal2json", true, WAL_STATUS_RESERVED, true, false, 0,
	  SLOT_USABLE, "" },
	{ false, false, "", false, WAL_STATUS_UNKNOWN, false, false, 0,
	  SLOT_MISSING, "replication slot \"s\" does not exist; the relay never "
	  "creates one implicitly: create it with outbox-relay --create-slot" },
	{ true, true, "test_decoding", true, WAL_STATUS_RESERVED, true, false, 0,
	  SLOT_FOREIGN, "uses plugin \"test_decoding\" (logical); the relay needs "
	  "a logical slot of the plugin slot.plugin names" },
	{ true, false, "", true, WAL_STATUS_RESERVED, true, false, 0,
	  SLOT_FOREIGN, "uses plugin \"\" (physical)" },
	{ true, true, "wal2json", false, WAL_STATUS_RESERVED, true, false, 0,
	  SLOT_OTHER_DB, "belongs to database \"other\", not the one in "
	  "pg.conninfo" },
	{ true, true, "wal2json", true, WAL_STATUS_LOST, false, false, 0,
	  SLOT_LOST, "\"s\" is invalidated (wal_status=lost): the WAL it needed "
	  "is gone and events may be missing; the relay will not recreate it" },
	/* invalidated without "lost" (confirmed_flush_lsn NULL) */
	{ true, true, "wal2json", true, WAL_STATUS_UNKNOWN, false, false, 0,
	  SLOT_LOST, "(wal_status=unknown)" },
	{ true, true, "wal2json", true, WAL_STATUS_RESERVED, true, true, 0,
	  SLOT_ACTIVE, "is active for PID 4242; stop the relay" },
	/* the order: a foreign slot is foreign before it is lost or active */
	{ true, true, "pgoutput", true, WAL_STATUS_LOST, false, true, 0,
	  SLOT_FOREIGN, "pgoutput" },
	{ true, true, "wal2json", false, WAL_STATUS_LOST, false, true, 0,
	  SLOT_OTHER_DB, "other" },
	{ true, true, "wal2json", true, WAL_STATUS_LOST, false, true, 0,
	  SLOT_LOST, "invalidated" },
	/* --dry-run, --accept-slot, --check's standby (reads) */
	{ true, true, "wal2json", true, WAL_STATUS_EXTENDED, true, true,
	  SLOT_ALLOW_ACTIVE, SLOT_USABLE, "" },
	{ true, true, "wal2json", true, WAL_STATUS_LOST, false, true,
	  SLOT_ALLOW_ACTIVE, SLOT_LOST, "invalidated" },
	/* --drop-slot: a lost slot may go, an active one may not */
	{ true, true, "wal2json", true, WAL_STATUS_LOST, false, false,
	  SLOT_ALLOW_LOST, SLOT_USABLE, "" },
	{ true, true, "wal2json", true, WAL_STATUS_UNRESERVED, true, true,
	  SLOT_ALLOW_LOST, SLOT_ACTIVE, "PID 4242" },
	{ false, false, "", false, WAL_STATUS_UNKNOWN, false, false,
	  SLOT_ALLOW_LOST | SLOT_ALLOW_ACTIVE, SLOT_MISSING, "does not exist" },
};

START_TEST(test_refusal_rules)
{
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
		const struct rule *r = &rules[i];
		struct slot_row row = {
			.exists = r->exists, .logical = r->logical, .same_db = r->same_db,
			.wal_status = r->wal, .confirmed_known = r->confirmed_known,
			.active = r->active, .active_pid = 4242,
		};
		enum slot_refusal got;
		char text[1400], what[700];

		snprintf(row.plugin, sizeof(row.plugin), "%s", r->plugin);
		snprintf(row.database, sizeof(row.database), "other");
		got = slot_judge(&row, "wal2json", r->allow);
		ck_assert_msg(got == r->want, "rule %zu: got %d want %d", i, got,
		              r->want);
		if (got == SLOT_USABLE)
			continue;
		slot_refusal_text(got, &row, "s", true, text, sizeof(text));
		ck_assert_msg(strstr(text, r->text) != NULL, "rule %zu: \"%s\" not in "
		              "\"%s\"", i, r->text, text);
		/* --check's item: the finding starts with the quoted name, the
		 * fix is the sentence's tail. */
		slot_refusal_what(got, &row, "s", what, sizeof(what));
		ck_assert_msg(strncmp(what, "\"s\" ", 4) == 0, "rule %zu: %s", i, what);
		ck_assert_ptr_nonnull(strstr(text, what));
		ck_assert_ptr_nonnull(strstr(text, slot_refusal_fix(got)));
		/* The relay's standby message has no fix. */
		slot_refusal_text(got, &row, "s", false, text, sizeof(text));
		ck_assert_ptr_null(strstr(text, "; "));
	}
}
END_TEST

START_TEST(test_relkinds)
{
	static const struct {
		char relkind;
		int rc;
		const char *what, *fix;
	} cases[] = {
		{ 'r', 0, "", "" },
		{ 'p', -1, "public.t is a partitioned table", "outbox.table = <schema>.*" },
		{ 'v', -1, "public.t is a view", "the table the application inserts" },
		{ 'm', -1, "public.t is a materialized view", "inserts into" },
		{ 'f', -1, "public.t is a foreign table", "the server that holds" },
		{ 'S', -1, "not an ordinary table (relkind 'S')", "inserts into" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char what[512] = "", fix[512] = "";
		ck_assert_int_eq(slot_relkind_refusal(cases[i].relkind, "public", "t",
		                                      what, sizeof(what), fix,
		                                      sizeof(fix)), cases[i].rc);
		ck_assert_msg(strstr(what, cases[i].what) != NULL, "%s", what);
		ck_assert_msg(strstr(fix, cases[i].fix) != NULL, "%s", fix);
	}
}
END_TEST

/* The relay's start message for each table verdict. */
START_TEST(test_table_text)
{
	struct slot_table t = { .verdict = TABLE_MISSING };
	char out[2048];

	snprintf(t.what, sizeof(t.what), "public.x does not exist");
	snprintf(t.fix, sizeof(t.fix), "create it");
	slot_table_text(&t, out, sizeof(out));
	ck_assert_str_eq(out, "outbox.table: public.x does not exist; create it");
	t.verdict = TABLE_NO_COLUMN;
	snprintf(t.what, sizeof(t.what), "table.field.event.key: column \"k\" "
	         "does not exist in public.x");
	slot_table_text(&t, out, sizeof(out));
	ck_assert_str_eq(out, "table.field.event.key: column \"k\" does not exist "
	                      "in public.x; create it");
}
END_TEST

/* Top-level columns of a SELECT list (up to " FROM (SELECT 1)" or the
 * first top-level " FROM "). */
static int select_columns(const char *sql)
{
	int commas = 0, depth = 0;

	for (const char *p = sql; *p != '\0'; p++) {
		if (depth == 0 && strncmp(p, " FROM ", 6) == 0 && p != sql)
			break;
		depth += *p == '(' ? 1 : *p == ')' ? -1 : 0;
		commas += *p == ',' && depth == 0;
	}
	return commas + 1;
}

/* One column table drives the sample's SQL: 28 figures, in one row, on
 * every version; a column the version lacks is a stand-in. */
START_TEST(test_sample_sql)
{
	static const struct {
		int version;
		const char *has, *lacks;
	} v[] = {
		{ 150000, "THEN 'wal_removed'", "s.conflicting" },
		{ 160000, "s.conflicting", "s.failover" },
		{ 170000, "s.failover", "idle_replication_slot_timeout" },
		{ 180000, "idle_replication_slot_timeout", "THEN 'wal_removed'" },
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		char *sql = slot_sample_sql(v[i].version);
		ck_assert_int_eq(strncmp(sql, "SELECT ", 7), 0);
		ck_assert_int_eq(select_columns(sql), 28);
		ck_assert_ptr_nonnull(strstr(sql, "pg_stat_replication_slots"));
		ck_assert_msg(strstr(sql, v[i].has) != NULL, "%d: no %s",
		              v[i].version, v[i].has);
		ck_assert_msg(strstr(sql, v[i].lacks) == NULL, "%d: %s",
		              v[i].version, v[i].lacks);
		free(sql);
	}
}
END_TEST

/* slot_read's select list: 18 columns on every version. */
START_TEST(test_read_sql)
{
	static const struct {
		int version;
		const char *has, *lacks;
	} v[] = {
		{ 150000, "THEN 'wal_removed'", "s.conflicting" },
		{ 160000, "s.conflicting", "s.inactive_since" },
		{ 170000, "s.invalidation_reason", "THEN 'wal_removed'" },
		{ 180000, "s.synced", "NULL::boolean" },
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		char *sql = slot_read_sql(v[i].version, "'s'");
		ck_assert_int_eq(select_columns(sql), 18);
		ck_assert_msg(strstr(sql, v[i].has) != NULL, "%d: no %s",
		              v[i].version, v[i].has);
		ck_assert_msg(strstr(sql, v[i].lacks) == NULL, "%d: %s",
		              v[i].version, v[i].lacks);
		ck_assert_ptr_nonnull(strstr(sql, "ON s.slot_name = 's'"));
		free(sql);
	}
}
END_TEST

/* The standby's read: 9 columns on every version, one row whether the
 * copy exists or not, the slot name a parameter. */
START_TEST(test_standby_sql)
{
	static const struct {
		int version;
		const char *has, *lacks;
	} v[] = {
		{ 150000, "THEN 'wal_removed'", "s.synced" },
		{ 160000, "NULL::boolean", "s.failover" },
		{ 170000, "s.synced", "NULL::boolean" },
		{ 180000, "s.invalidation_reason", "THEN 'wal_removed'" },
	};

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		char *sql = slot_standby_sql(v[i].version);
		ck_assert_int_eq(select_columns(sql), 9);
		ck_assert_msg(strstr(sql, v[i].has) != NULL, "%d: no %s",
		              v[i].version, v[i].has);
		ck_assert_msg(strstr(sql, v[i].lacks) == NULL, "%d: %s",
		              v[i].version, v[i].lacks);
		ck_assert_ptr_nonnull(strstr(sql, "pg_last_wal_replay_lsn()"));
		ck_assert_ptr_nonnull(strstr(sql, "pg_last_wal_receive_lsn()"));
		ck_assert_ptr_nonnull(strstr(sql, "LEFT JOIN pg_catalog."
		                                  "pg_replication_slots s ON "
		                                  "s.slot_name = $1"));
		free(sql);
	}
}
END_TEST

/* 18's idle_timeout (and any other reason) is a lost slot, named; 15's
 * wal_removed keeps the wal_status wording. */
START_TEST(test_invalidation_reason)
{
	struct slot_row row = {
		.exists = true, .logical = true, .same_db = true,
		.wal_status = WAL_STATUS_RESERVED, .confirmed_known = true,
	};
	char text[1400];

	snprintf(row.plugin, sizeof(row.plugin), "wal2json");
	ck_assert_int_eq(slot_judge(&row, "wal2json", 0), SLOT_USABLE);
	snprintf(row.invalidation_reason, sizeof(row.invalidation_reason),
	         "idle_timeout");
	ck_assert_int_eq(slot_judge(&row, "wal2json", 0), SLOT_LOST);
	ck_assert_int_eq(slot_judge(&row, "wal2json", SLOT_ALLOW_ACTIVE),
	                 SLOT_LOST);
	ck_assert_int_eq(slot_judge(&row, "wal2json", SLOT_ALLOW_LOST),
	                 SLOT_USABLE);
	slot_refusal_text(SLOT_LOST, &row, "s", true, text, sizeof(text));
	ck_assert_msg(strstr(text, "replication slot \"s\" is invalidated "
	                           "(invalidation_reason=idle_timeout)") != NULL,
	              "%s", text);
	ck_assert_msg(strstr(text, "(runbook: slot lost)") != NULL, "%s", text);

	/* 17's wal_removed with wal_status lost: as on 15. */
	row.wal_status = WAL_STATUS_LOST;
	snprintf(row.invalidation_reason, sizeof(row.invalidation_reason),
	         "wal_removed");
	slot_refusal_text(SLOT_LOST, &row, "s", true, text, sizeof(text));
	ck_assert_msg(strstr(text, "(wal_status=lost): the WAL it needed") != NULL,
	              "%s", text);

	/* 16's conflicting, with no reason column. */
	row.wal_status = WAL_STATUS_RESERVED;
	row.invalidation_reason[0] = '\0';
	row.conflicting = SLOT_FLAG_TRUE;
	ck_assert_int_eq(slot_judge(&row, "wal2json", 0), SLOT_LOST);
	slot_refusal_text(SLOT_LOST, &row, "s", false, text, sizeof(text));
	ck_assert_msg(strstr(text, "(invalidation_reason=conflicting)") != NULL,
	              "%s", text);
	row.conflicting = SLOT_FLAG_FALSE;
	ck_assert_int_eq(slot_judge(&row, "wal2json", 0), SLOT_USABLE);
}
END_TEST

/* slot.failover: auto follows the server, on before 17 is an error. */
START_TEST(test_failover_wanted)
{
	static const struct {
		const char *setting;
		int version;
		int rc;
		bool want;
	} v[] = {
		{ "auto", 150018, 0, false }, { "auto", 160014, 0, false },
		{ "auto", 170010, 0, true },  { "auto", 180004, 0, true },
		{ "on", 150018, -1, false },  { "on", 160014, -1, false },
		{ "on", 170000, 0, true },    { "off", 150018, 0, false },
		{ "off", 180004, 0, false },
	};
	char err[512];

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		bool want = !v[i].want;
		err[0] = '\0';
		ck_assert_int_eq(slot_failover_wanted(v[i].setting, v[i].version,
		                                      &want, err, sizeof(err)),
		                 v[i].rc);
		ck_assert_msg(want == v[i].want, "%s on %d", v[i].setting,
		              v[i].version);
		ck_assert_int_eq(err[0] != '\0', v[i].rc < 0);
	}
	ck_assert_int_eq(slot_failover_wanted("on", 160014, &(bool){ false }, err,
	                                      sizeof(err)), -1);
	ck_assert_msg(strstr(err, "PostgreSQL 16.14 has no failover slots") != NULL,
	              "%s", err);
	ck_assert_msg(strstr(err, "section \"failover\"") != NULL, "%s", err);
}
END_TEST

START_TEST(test_create_sql)
{
	char sql[256];

	slot_create_sql("outbox_relay", "pgoutput", true, sql, sizeof(sql));
	ck_assert_str_eq(sql, "CREATE_REPLICATION_SLOT \"outbox_relay\" LOGICAL "
	                      "pgoutput (SNAPSHOT 'nothing', FAILOVER true)");
	slot_create_sql("outbox_relay", "wal2json", false, sql, sizeof(sql));
	ck_assert_str_eq(sql, "CREATE_REPLICATION_SLOT \"outbox_relay\" LOGICAL "
	                      "wal2json NOEXPORT_SNAPSHOT");
}
END_TEST

/* synchronized_standby_slots against the physical slots: who is left
 * out (ghosts), who is no slot (the walsender waits), who is idle. */
START_TEST(test_standby_compare)
{
	static const struct {
		const char *setting, *physical, *active;
		const char *missing, *unknown, *idle;
	} v[] = {
		{ "", "", "", "", "", "" },
		{ "", "sb1,sb2", "sb1", "sb1", "", "" },
		{ "sb1", "sb1,sb2", "sb1,sb2", "sb2", "", "" },
		{ "sb1, sb2", "sb1,sb2", "sb1,sb2", "", "", "" },
		{ " SB1 ,\"sb2\"", "sb1,sb2", "sb1,sb2", "", "", "" },
		{ "\"SB1\"", "sb1", "sb1", "sb1", "SB1", "" },
		{ "sb1,nosuch", "sb1", "sb1", "", "nosuch", "" },
		{ "sb1,sb2", "sb1,sb2", "sb2", "", "", "sb1" },
		{ "sb1,,sb2", "sb1,sb2", "sb1,sb2", "", "", "" },
	};
	char missing[128], unknown[128], idle[128];

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		slot_standby_compare(v[i].setting, v[i].physical, v[i].active,
		                     missing, sizeof(missing), unknown,
		                     sizeof(unknown), idle, sizeof(idle));
		ck_assert_msg(strcmp(missing, v[i].missing) == 0, "%zu: missing %s",
		              i, missing);
		ck_assert_msg(strcmp(unknown, v[i].unknown) == 0, "%zu: unknown %s",
		              i, unknown);
		ck_assert_msg(strcmp(idle, v[i].idle) == 0, "%zu: idle %s", i, idle);
	}
	slot_standby_compare("", "a,b,c", "a,b,c", missing, sizeof(missing),
	                     unknown, sizeof(unknown), idle, sizeof(idle));
	ck_assert_str_eq(missing, "a, b, c");
}
END_TEST

START_TEST(test_wal_status_names)
{
	static const char *const names[] = { "reserved", "extended", "unreserved",
		                                 "lost" };

	for (size_t i = 0; i < 4; i++)
		ck_assert_str_eq(wal_status_name(wal_status_parse(names[i])), names[i]);
	ck_assert_int_eq(wal_status_parse(""), WAL_STATUS_UNKNOWN);
	ck_assert_int_eq(wal_status_parse("something new"), WAL_STATUS_UNKNOWN);
	ck_assert_str_eq(wal_status_name(WAL_STATUS_UNKNOWN), "");
}
END_TEST

/* The publication rules, in their order: each case breaks one rule and
 * every later one, so the verdict is the first rule broken. */
START_TEST(test_pub_judge)
{
	struct slot_pub good = {
		.exists = true, .pubinsert = true, .covered = true,
	};
	struct slot_pub p;

	ck_assert_int_eq(slot_pub_judge(&good), PUB_OK);
	p = good;
	snprintf(p.cut_table, sizeof(p.cut_table), "public.outbox");
	snprintf(p.cut_column, sizeof(p.cut_column), "event_type");
	ck_assert_int_eq(slot_pub_judge(&p), PUB_COLUMN_LIST);
	snprintf(p.filtered, sizeof(p.filtered), "public.outbox");
	ck_assert_int_eq(slot_pub_judge(&p), PUB_ROW_FILTER);
	p.covered = false;
	ck_assert_int_eq(slot_pub_judge(&p), PUB_NOT_COVERED);
	p.pubinsert = false;
	ck_assert_int_eq(slot_pub_judge(&p), PUB_NO_INSERT);
	p.exists = false;
	ck_assert_int_eq(slot_pub_judge(&p), PUB_MISSING);
	/* FOR ALL TABLES covers the outbox like any other table. */
	p = good;
	p.all_tables = true;
	ck_assert_int_eq(slot_pub_judge(&p), PUB_OK);
}
END_TEST

/* Every name quoted: a reserved word, upper case or a quote in a name
 * stays one identifier in the SQL a DBA is asked to run. */
START_TEST(test_pub_create_sql)
{
	struct record_spec odd = outbox_spec, schema = outbox_spec;
	char sql[800];

	slot_pub_create_sql("outbox_pub", &outbox_spec, sql, sizeof(sql));
	ck_assert_str_eq(sql, "CREATE PUBLICATION \"outbox_pub\" FOR TABLE "
	                      "\"public\".\"outbox\" WITH (publish = 'insert');");
	odd.schema = "App";
	odd.table = "user\"s";
	slot_pub_create_sql("user", &odd, sql, sizeof(sql));
	ck_assert_str_eq(sql, "CREATE PUBLICATION \"user\" FOR TABLE "
	                      "\"App\".\"user\"\"s\" WITH (publish = 'insert');");
	schema.schema = "outbox_parts";
	schema.table = "*";
	slot_pub_create_sql("p", &schema, sql, sizeof(sql));
	ck_assert_str_eq(sql, "CREATE PUBLICATION \"p\" FOR TABLES IN SCHEMA "
	                      "\"outbox_parts\" WITH (publish = 'insert');");
	/* Cut short, it still ends in a closing quote and a NUL. */
	slot_pub_create_sql("outbox_pub", &outbox_spec, sql, 20);
	ck_assert_uint_eq(strlen(sql), 19);
}
END_TEST

/* Each verdict names what is wrong and gives SQL that repairs it. */
START_TEST(test_pub_text)
{
	static const struct {
		enum slot_pub_verdict v;
		const char *what, *fix;
	} cases[] = {
		{ PUB_OK, "\"rp\" publishes the inserts into public.outbox", "" },
		{ PUB_MISSING, "\"rp\" does not exist",
		  "CREATE PUBLICATION \"rp\" FOR TABLE \"public\".\"outbox\"" },
		{ PUB_NO_INSERT, "\"rp\" does not publish inserts (publish = 'update')",
		  "ALTER PUBLICATION \"rp\" SET (publish = 'update, insert');" },
		{ PUB_NOT_COVERED, "\"rp\" does not publish public.outbox",
		  "ALTER PUBLICATION \"rp\" ADD TABLE \"public\".\"outbox\";" },
		{ PUB_ROW_FILTER, "\"rp\" has a row filter on public.outbox",
		  "BEGIN; ALTER PUBLICATION \"rp\" DROP TABLE public.outbox; "
		  "ALTER PUBLICATION \"rp\" ADD TABLE public.outbox; COMMIT;" },
		{ PUB_COLUMN_LIST, "\"rp\" leaves out column \"event_type\" of "
		  "public.outbox", "ADD TABLE public.outbox; COMMIT;" },
	};
	struct slot_pub p = { .exists = true, .covered = true };
	struct record_spec schema = outbox_spec;
	char what[1024], fix[1400];

	snprintf(p.publish, sizeof(p.publish), "update");
	snprintf(p.filtered, sizeof(p.filtered), "public.outbox");
	snprintf(p.cut_table, sizeof(p.cut_table), "public.outbox");
	snprintf(p.cut_column, sizeof(p.cut_column), "event_type");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		slot_pub_text(cases[i].v, &p, "rp", &outbox_spec, what,
		              sizeof(what), fix, sizeof(fix));
		ck_assert_msg(strstr(what, cases[i].what) != NULL, "%s", what);
		ck_assert_msg(strstr(fix, cases[i].fix) != NULL, "%s", fix);
		ck_assert_msg((fix[0] == '\0') == (cases[i].v == PUB_OK), "%s", fix);
	}
	/* schema.*: the schema itself must be in the publication. */
	schema.table = "*";
	slot_pub_text(PUB_NOT_COVERED, &p, "rp", &schema, what, sizeof(what), fix,
	              sizeof(fix));
	ck_assert_msg(strstr(what, "does not publish schema public") != NULL,
	              "%s", what);
	ck_assert_msg(strstr(fix, "ADD TABLES IN SCHEMA \"public\";") != NULL,
	              "%s", fix);
	/* FOR TABLES IN SCHEMA is a superuser's to create, not an owner's. */
	slot_pub_text(PUB_MISSING, &p, "rp", &schema, what, sizeof(what), fix,
	              sizeof(fix));
	ck_assert_msg(strstr(fix, "as a superuser: CREATE PUBLICATION \"rp\" FOR "
	                          "TABLES IN SCHEMA \"public\"") != NULL, "%s", fix);
	slot_pub_text(PUB_MISSING, &p, "rp", &outbox_spec, what, sizeof(what),
	              fix, sizeof(fix));
	ck_assert_msg(strstr(fix, "as the owner of public.outbox or a superuser: ")
	              != NULL, "%s", fix);
}
END_TEST

Suite *slot_suite(void)
{
	Suite *s = suite_create("slot");
	TCase *tc = tcase_create("rules");

	tcase_add_test(tc, test_refusal_rules);
	tcase_add_test(tc, test_relkinds);
	tcase_add_test(tc, test_table_text);
	tcase_add_test(tc, test_sample_sql);
	tcase_add_test(tc, test_read_sql);
	tcase_add_test(tc, test_standby_sql);
	tcase_add_test(tc, test_invalidation_reason);
	tcase_add_test(tc, test_failover_wanted);
	tcase_add_test(tc, test_create_sql);
	tcase_add_test(tc, test_standby_compare);
	tcase_add_test(tc, test_wal_status_names);
	tcase_add_test(tc, test_pub_judge);
	tcase_add_test(tc, test_pub_create_sql);
	tcase_add_test(tc, test_pub_text);
	suite_add_tcase(s, tc);
	return s;
}
