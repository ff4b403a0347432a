/* SPDX-License-Identifier: Apache-2.0 */
/* cfg_text.c -- the characters a configuration may not hold, named, and
 * the distance between names (cfg_text.h). */
#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "lib/cfg_text.h"

/* Characters that look like a blank, or like nothing at all, without
 * being ASCII white space: pasted from a web page, a chat or a word
 * processor, they make a key unknown or a value wrong while the line
 * looks right, and a message that printed them raw would look right too.
 * Named instead. */
static const struct odd_char {
	unsigned cp;
	const char *name;
} odd_chars[] = {
	{ 0x0085, "a next-line character" },
	{ 0x00A0, "a non-breaking space" },
	{ 0x1680, "an Ogham space mark" },
	{ 0x2000, "an en quad" },
	{ 0x2001, "an em quad" },
	{ 0x2002, "an en space" },
	{ 0x2003, "an em space" },
	{ 0x2004, "a three-per-em space" },
	{ 0x2005, "a four-per-em space" },
	{ 0x2006, "a six-per-em space" },
	{ 0x2007, "a figure space" },
	{ 0x2008, "a punctuation space" },
	{ 0x2009, "a thin space" },
	{ 0x200A, "a hair space" },
	{ 0x200B, "a zero-width space" },
	{ 0x200C, "a zero-width non-joiner" },
	{ 0x200D, "a zero-width joiner" },
	{ 0x2028, "a line separator" },
	{ 0x2029, "a paragraph separator" },
	{ 0x202F, "a narrow no-break space" },
	{ 0x205F, "a medium mathematical space" },
	{ 0x2060, "a word joiner" },
	{ 0x3000, "an ideographic space" },
	{ 0xFEFF, "a byte order mark" },
};

/* Names the character at s (n > 0 bytes left) into out, e.g. "a
 * non-breaking space (U+00A0)"; returns its length in bytes (1 for a
 * byte that is not UTF-8). *odd is false for a plain non-ASCII character
 * (a letter), which a value may hold anywhere. */
static size_t char_describe(const unsigned char *s, size_t n, char *out,
                            size_t outlen, bool *odd)
{
	unsigned cp = 0;
	size_t len = utf8_decode(s, n, &cp);

	*odd = true;
	if (len == 0) {
		snprintf(out, outlen, "a byte 0x%02X that is not UTF-8", s[0]);
		return 1;
	}
	for (size_t i = 0; i < sizeof(odd_chars) / sizeof(odd_chars[0]); i++) {
		if (odd_chars[i].cp == cp) {
			snprintf(out, outlen, "%s (U+%04X)", odd_chars[i].name, cp);
			return len;
		}
	}
	if (cp < 0x20 || (cp >= 0x7F && cp < 0xA0)) {
		snprintf(out, outlen, "a control character (U+%04X)", cp);
		return len;
	}
	*odd = false;
	snprintf(out, outlen, "a non-ASCII character (U+%04X)", cp);
	return len;
}

static bool key_char_ok(unsigned char c)
{
	return c >= 0x20 && c < 0x7F;
}

/* Every key is printable ASCII. Names the first character that is not,
 * with the key's text before it (or after it, at the start): "a
 * non-breaking space (U+00A0) after \"slot.name\"". */
int cfg_text_check_key(const char *key, const char *origin, char *err,
                       size_t errlen)
{
	const unsigned char *k = (const unsigned char *)key;
	size_t n = strlen(key), i = 0, j, m = 0;
	char what[80];
	bool odd;

	while (i < n && key_char_ok(k[i]))
		i++;
	if (i == n)
		return 0;
	j = i + char_describe(k + i, n - i, what, sizeof(what), &odd);
	if (i > 0) {
		errbuf_set(err, errlen, "%s: %s after \"%.*s\"", origin, what,
		           (int)i, key);
		return -1;
	}
	while (j + m < n && key_char_ok(k[j + m]))
		m++;
	if (m > 0)
		errbuf_set(err, errlen, "%s: %s before \"%.*s\"", origin, what,
		           (int)m, key + j);
	else
		errbuf_set(err, errlen, "%s: %s in a key", origin, what);
	return -1;
}

/* A value holds no control character but tab and line breaks, and
 * neither starts nor ends with one of odd_chars (or a byte that is not
 * UTF-8). The message names the character and where, never the value,
 * which may be a secret. */
int cfg_text_check_value(const char *key, const char *value,
                         const char *origin, char *err, size_t errlen)
{
	const unsigned char *v = (const unsigned char *)value;
	size_t n = strlen(value), i = 0, len;
	char what[80];
	bool odd;

	while (i < n) {
		if (v[i] >= 0x20 && v[i] < 0x7F) {
			i++;
			continue;
		}
		if (v[i] == '\t' || v[i] == '\n' || v[i] == '\r') {
			i++;
			continue;
		}
		len = char_describe(v + i, n - i, what, sizeof(what), &odd);
		if (v[i] < 0x80) { /* a C0 control or DEL */
			errbuf_set(err, errlen, "%s: %s: %s in the value", origin, key,
			           what);
			return -1;
		}
		if (odd && (i == 0 || i + len == n)) {
			errbuf_set(err, errlen, "%s: %s: %s at the %s of the value",
			           origin, key, what, i == 0 ? "start" : "end");
			return -1;
		}
		i += len;
	}
	return 0;
}

/* Optimal string alignment distance (insertions, deletions,
 * substitutions, swaps of neighbours), ignoring case; names longer than
 * 64 are never near. */
size_t cfg_text_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	size_t d[65][65];

	if (la > 64 || lb > 64)
		return SIZE_MAX;
	for (size_t i = 0; i <= la; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		for (size_t j = 1; j <= lb; j++) {
			int ca = tolower((unsigned char)a[i - 1]);
			int cb = tolower((unsigned char)b[j - 1]);
			size_t best = d[i - 1][j - 1] + (ca != cb);
			if (d[i - 1][j] + 1 < best)
				best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
			    tolower((unsigned char)a[i - 2]) == cb &&
			    d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	}
	return d[la][lb];
}
