/* SPDX-License-Identifier: Apache-2.0 */
/* log.c -- leveled logging to stderr, one line per call.
 *
 * Lines are "2026-11-29T20:09:17.537Z LEVEL message" (log.format=text),
 * or one JSON object (log.format=json) with the same time, level and
 * message, plus the fields the message names (see log_render_json()).
 * Each line is written with a single write() so lines from librdkafka's
 * threads do not interleave. Both formats carry the same message text:
 * whatever redaction a caller applied holds for both. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "lib/log.h"

enum log_level log_current_level = LOG_LVL_INFO;
static enum log_format log_current_format = LOG_FMT_TEXT;

static const char *const level_names[] = { "ERROR", "WARN", "INFO", "DEBUG" };
static const char *const level_words[] = { "error", "warn", "info", "debug" };

int log_level_parse(const char *s, enum log_level *out)
{
	for (size_t i = 0; i < sizeof(level_words) / sizeof(level_words[0]); i++) {
		if (strcmp(s, level_words[i]) == 0) {
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

int log_format_parse(const char *s, enum log_format *out)
{
	if (strcmp(s, "text") == 0)
		*out = LOG_FMT_TEXT;
	else if (strcmp(s, "json") == 0)
		*out = LOG_FMT_JSON;
	else
		return -1;
	return 0;
}

void log_set_format(enum log_format fmt)
{
	log_current_format = fmt;
}

enum log_format log_get_format(void)
{
	return log_current_format;
}

/* ---- JSON lines ---- */

/* A bounded output buffer: put() refuses what does not fit, so a long
 * message is cut at a character, never inside an escape. */
struct out {
	char *p;
	size_t len, cap;            /* cap excludes room kept for the end */
};

static bool put(struct out *o, const char *s, size_t n)
{
	if (o->len + n > o->cap)
		return false;
	memcpy(o->p + o->len, s, n);
	o->len += n;
	return true;
}

static bool puts_(struct out *o, const char *s)
{
	return put(o, s, strlen(s));
}

/* s[0..n) as a JSON string body: quotes and backslashes escaped, line
 * breaks flattened to spaces (as in the text format, so the message is
 * the same in both), other control characters as \u00XX, bytes that are
 * not UTF-8 as U+FFFD. Stops at the first character that does not fit. */
static bool put_escaped(struct out *o, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;

	for (size_t i = 0; i < n;) {
		char esc[8];
		size_t k = utf8_decode(s + i, n - i, NULL);

		if (k == 0) {
			if (!puts_(o, "\\ufffd"))
				return false;
			i++;
			continue;
		}
		if (k > 1) {
			if (!put(o, (const char *)s + i, k))
				return false;
			i += k;
			continue;
		}
		if (s[i] == '"' || s[i] == '\\') {
			esc[0] = '\\';
			esc[1] = (char)s[i];
			if (!put(o, esc, 2))
				return false;
		} else if (s[i] == '\n' || s[i] == '\r') {
			if (!put(o, " ", 1))
				return false;
		} else if (s[i] == '\t') {
			if (!puts_(o, "\\t"))
				return false;
		} else if (s[i] < 0x20) {
			snprintf(esc, sizeof(esc), "\\u%04x", s[i]);
			if (!puts_(o, esc))
				return false;
		} else if (!put(o, (const char *)s + i, 1)) {
			return false;
		}
		i++;
	}
	return true;
}

static bool word_start(const char *msg, const char *at)
{
	return at == msg || at[-1] == ' ' || at[-1] == '(' || at[-1] == ',' ||
	       at[-1] == '"' || at[-1] == '[';
}

/* The value after the first "<word> " that starts a word, spanning the
 * characters in accept and ending at the end or at a character in stop
 * (NULL: anything); 0 when absent. */
static size_t find_after(const char *msg, const char *word, const char *accept,
                         const char *stop, const char **val)
{
	size_t wl = strlen(word);

	for (const char *p = strstr(msg, word); p != NULL;
	     p = strstr(p + 1, word)) {
		const char *v = p + wl;
		size_t n = strspn(v, accept);
		if (!word_start(msg, p) || n == 0)
			continue;
		if (stop != NULL && v[n] != '\0' && strchr(stop, v[n]) == NULL)
			continue;
		*val = v;
		return n;
	}
	return 0;
}

#define HEX "0123456789ABCDEFabcdef"
#define DIGITS "0123456789"
#define ENDS " ,;:)]\"'"

/* "LSN 16/B3F00": the hex pair must be whole. */
static size_t find_lsn(const char *msg, const char **val)
{
	for (const char *p = strstr(msg, "LSN "); p != NULL;
	     p = strstr(p + 1, "LSN ")) {
		const char *v = p + 4;
		size_t a = strspn(v, HEX), b;
		if (!word_start(msg, p) || a == 0 || a > 8 || v[a] != '/')
			continue;
		b = strspn(v + a + 1, HEX);
		if (b == 0 || b > 8 || (v[a + 1 + b] != '\0' &&
		                        strchr(ENDS, v[a + 1 + b]) == NULL))
			continue;
		*val = v;
		return a + 1 + b;
	}
	return 0;
}

static bool put_field(struct out *o, const char *name, const char *v,
                      size_t n, bool quoted)
{
	size_t mark = o->len;

	if (puts_(o, ",\"") && puts_(o, name) && puts_(o, "\":") &&
	    (!quoted || put(o, "\"", 1)) && put_escaped(o, v, n) &&
	    (!quoted || put(o, "\"", 1)))
		return true;
	o->len = mark; /* a field whole or not at all */
	return false;
}

size_t log_render_json(enum log_level lvl, int64_t wall_us, const char *msg,
                       char *buf, size_t buflen)
{
	struct out o = { buf, 0, buflen > 3 ? buflen - 3 : 0 };
	char ts[40];
	time_t sec = (time_t)(wall_us / 1000000);
	struct tm tm;
	const char *v;
	size_t n;
	bool open;

	/* Room for the time and level, whatever the message. */
	if (buflen < LOG_JSON_MIN)
		return 0;
	gmtime_r(&sec, &tm);
	n = strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(ts + n, sizeof(ts) - n, ".%03dZ", (int)(wall_us / 1000 % 1000));
	(void)(puts_(&o, "{\"ts\":\"") && puts_(&o, ts) &&
	       puts_(&o, "\",\"level\":\"") && puts_(&o, level_words[lvl]) &&
	       puts_(&o, "\""));
	/* The fields first: a message cut short still has them. */
	if ((n = find_after(msg, "slot \"", "abcdefghijklmnopqrstuvwxyz0123456789_",
	                    "\"", &v)) > 0)
		(void)put_field(&o, "slot", v, n, true);
	if ((n = find_lsn(msg, &v)) > 0)
		(void)put_field(&o, "lsn", v, n, true);
	if ((n = find_after(msg, "xid ", DIGITS, ENDS, &v)) > 0 && n <= 20)
		(void)put_field(&o, "xid", v, n, false);
	if ((n = find_after(msg, "event id ",
	                    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	                    "0123456789._-+/=@", ENDS, &v)) > 0)
		(void)put_field(&o, "event_id", v, n, true);
	if ((n = find_after(msg, "topic ",
	                    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	                    "0123456789._-", ENDS, &v)) > 0 && n <= 249)
		(void)put_field(&o, "topic", v, n, true);
	open = puts_(&o, ",\"msg\":\"");
	if (open)
		(void)put_escaped(&o, msg, strlen(msg));
	/* The end, for which room was kept. */
	o.cap = buflen;
	if (open)
		(void)put(&o, "\"", 1);
	(void)put(&o, "}\n", 2);
	return o.len;
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
	if (log_current_format == LOG_FMT_JSON) {
		char json[12288];
		va_start(ap, fmt);
		vsnprintf(line, sizeof(line), fmt, ap);
		va_end(ap);
		n = log_render_json(lvl, (int64_t)tv.tv_sec * 1000000 + tv.tv_usec,
		                    line, json, sizeof(json));
		ssize_t w = write(STDERR_FILENO, json, n);
		(void)w;
		return;
	}
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
