/* SPDX-License-Identifier: Apache-2.0 */
/* check_int.h -- the items of --check (act_check.c, act_check_kafka.c). */
#ifndef RELAY_CHECK_INT_H
#define RELAY_CHECK_INT_H

#include "cli_int.h"

enum check_status { CHECK_OK = 0, CHECK_WARN, CHECK_FAIL };

struct cli_checks {
	bool json;
	json_t *items;
	unsigned n[3];
	int exit_code;              /* 78 for a configuration failure, else 69 */
};

/* One line (or JSON item): status, name, what was found, the fix. A
 * failure of class RELAY_EXIT_CONFIG wins over RELAY_EXIT_UNAVAILABLE. */
void check_item(struct cli_checks *c, const char *name, enum check_status st,
                int fail_code, const char *fix, const char *fmt, ...)
	RELAY_PRINTF(6, 7);

/* The Kafka items: librdkafka's verdict on kafka.*, reachability, the
 * topics and their settings. */
void check_kafka(struct cli_checks *c, const struct relay_config *cfg,
                 int64_t timeout_ms);

#endif
