/* SPDX-License-Identifier: Apache-2.0 */
/* check_main.c -- runs every unit suite in one Check runner.
 *
 * Each tests/unit/check_<module>.c exports <module>_suite(). Suites run
 * in fork mode (the Check default, CK_FORK=no turns it off for gdb), so
 * a crash fails one test instead of the whole run. */
#include <stdio.h>
#include <stdlib.h>

#include <check.h>

Suite *w2j_suite(void);
Suite *pgo_suite(void);
Suite *route_suite(void);
Suite *lsn_tracker_suite(void);
Suite *config_suite(void);
Suite *repl_suite(void);
Suite *hist_suite(void);
Suite *health_suite(void);
Suite *http_suite(void);
Suite *alert_suite(void);
Suite *emit_suite(void);
Suite *json_check_suite(void);
Suite *ledger_suite(void);
Suite *log_suite(void);
Suite *notify_suite(void);
Suite *event_suite(void);
Suite *slot_suite(void);
Suite *publisher_suite(void);
Suite *relay_suite(void);
Suite *from_debezium_suite(void);
Suite *envelope_suite(void);
Suite *reconcile_suite(void);

int main(void)
{
	SRunner *sr;
	int failed;

	sr = srunner_create(w2j_suite());
	srunner_add_suite(sr, pgo_suite());
	srunner_add_suite(sr, route_suite());
	srunner_add_suite(sr, lsn_tracker_suite());
	srunner_add_suite(sr, config_suite());
	srunner_add_suite(sr, repl_suite());
	srunner_add_suite(sr, hist_suite());
	srunner_add_suite(sr, health_suite());
	srunner_add_suite(sr, http_suite());
	srunner_add_suite(sr, alert_suite());
	srunner_add_suite(sr, emit_suite());
	srunner_add_suite(sr, json_check_suite());
	srunner_add_suite(sr, ledger_suite());
	srunner_add_suite(sr, log_suite());
	srunner_add_suite(sr, notify_suite());
	srunner_add_suite(sr, event_suite());
	srunner_add_suite(sr, slot_suite());
	srunner_add_suite(sr, publisher_suite());
	srunner_add_suite(sr, relay_suite());
	srunner_add_suite(sr, from_debezium_suite());
	srunner_add_suite(sr, envelope_suite());
	srunner_add_suite(sr, reconcile_suite());

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
