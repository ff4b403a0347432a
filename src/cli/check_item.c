/* SPDX-License-Identifier: Apache-2.0 */
/* check_item.c -- one item of --check, as a line or a JSON object: apart
 * from act_check.c so that its PostgreSQL half and act_check_kafka.c
 * both print through it without calling into each other. */
#include <stdarg.h>
#include <stdio.h>

#include "check_int.h"

static const char *const check_names[] = { "ok", "warn", "fail" };

void check_item(struct cli_checks *c, const char *name, enum check_status st,
                int fail_code, const char *fix, const char *fmt, ...)
{
	char detail[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	c->n[st]++;
	if (st == CHECK_FAIL && c->exit_code != RELAY_EXIT_CONFIG)
		c->exit_code = fail_code;
	if (c->json) {
		json_t *j = json_object();
		json_object_set_new(j, "check", json_string(name));
		json_object_set_new(j, "status", json_string(check_names[st]));
		json_object_set_new(j, "detail", cli_jstr(detail));
		json_object_set_new(j, "fix", st != CHECK_OK && fix ? cli_jstr(fix)
		                                                    : json_null());
		json_array_append_new(c->items, j);
		return;
	}
	printf("%-5s %s: %s\n", check_names[st], name, detail);
	if (st != CHECK_OK && fix != NULL)
		printf("      fix: %s\n", fix);
	fflush(stdout);
}
