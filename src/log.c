/* SPDX-License-Identifier: Apache-2.0 */
/* log.c -- leveled logging to stderr, one line per call.
 *
 * Lines are "2026-11-29T20:09:17.537Z LEVEL message". Each line is
 * written with a single write() so lines from librdkafka's threads do not
 * interleave. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

enum log_level log_current_level = LOG_LVL_INFO;

static const char *const level_names[] = { "ERROR", "WARN", "INFO", "DEBUG" };

int log_level_parse(const char *s, enum log_level *out)
{
	static const char *const names[] = { "error", "warn", "info", "debug" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcmp(s, names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	return -1;
}

void log_set_level(enum log_level lvl)
{
	log_current_level = lvl;
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	char line[2048];
	struct timeval tv;
	struct tm tm;
	size_t n;
	va_list ap;

	if (lvl > log_current_level)
		return;
	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	n = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
	n += (size_t)snprintf(line + n, sizeof(line) - n, ".%03dZ %-5s ",
	                      (int)(tv.tv_usec / 1000), level_names[lvl]);
	va_start(ap, fmt);
	int m = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	va_end(ap);
	if (m < 0)
		m = 0;
	n += (size_t)m;
	if (n > sizeof(line) - 2)
		n = sizeof(line) - 2; /* truncated: still end the line */
	/* Control characters from server messages would break line-based
	 * log collection; flatten them. */
	for (size_t i = 0; i < n; i++)
		if (line[i] == '\n' || line[i] == '\r')
			line[i] = ' ';
	line[n++] = '\n';
	ssize_t w = write(STDERR_FILENO, line, n);
	(void)w;
}
