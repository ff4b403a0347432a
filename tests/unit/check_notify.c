/* SPDX-License-Identifier: Apache-2.0 */
/* check_notify.c -- the systemd STATUS= text (notify_status_text). */
#include <stdio.h>
#include <string.h>

#include <check.h>

#include "health/notify.h"

#define WALL_US (INT64_C(1795982957) * 1000000 + 537000)

START_TEST(test_status_text)
{
	struct relay_figures f;
	char out[400];

	memset(&f, 0, sizeof(f));
	f.state = RELAY_PHASE_STREAMING;
	f.inflight_events = 3;
	f.confirmed_lsn = 0x16B3F00;
	f.oldest_pending_commit_us = WALL_US - 400000;
	notify_status_text(&f, WALL_US, out, sizeof(out));
	ck_assert_str_eq(out, "streaming: 3 events in flight, outbox lag 0.4 s, "
	                 "confirmed 0/16B3F00");
	f.oldest_pending_commit_us = 0;
	notify_status_text(&f, WALL_US, out, sizeof(out));
	ck_assert_str_eq(out, "streaming: 3 events in flight, outbox lag 0.0 s, "
	                 "confirmed 0/16B3F00");
	f.state = RELAY_PHASE_STANDBY;
	snprintf(f.reason, sizeof(f.reason), "slot active for PID 4242\n(x)");
	notify_status_text(&f, WALL_US, out, sizeof(out));
	ck_assert_str_eq(out, "standby: slot active for PID 4242 (x)");
	f.state = RELAY_PHASE_CONNECTING;
	f.reason[0] = '\0';
	notify_status_text(&f, WALL_US, out, sizeof(out));
	ck_assert_str_eq(out, "connecting");
}
END_TEST

Suite *notify_suite(void)
{
	Suite *s = suite_create("notify");
	TCase *tc = tcase_create("status");

	tcase_add_test(tc, test_status_text);
	suite_add_tcase(s, tc);
	return s;
}
