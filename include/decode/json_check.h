/* SPDX-License-Identifier: Apache-2.0 */
/* json_check.h -- a strict RFC 8259 validator that builds nothing.
 *
 * Pure: bytes in, yes or no out, with the byte offset and a short reason
 * when no. It allocates nothing; nesting is tracked in a fixed stack of
 * JC_MAX_DEPTH levels on the C stack. Unlike jansson it has no limit on
 * numbers: 1e400 and a 400-digit integer are valid JSON. */
#ifndef RELAY_JSON_CHECK_H
#define RELAY_JSON_CHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/common.h"

/* Deepest nesting accepted, as jansson's JSON_PARSER_MAX_DEPTH counts it
 * (every value is a level, the top one is level 1): 2047 containers
 * around a value, or 2048 when the innermost is empty. Both refuse the
 * same documents; RFC 8259 section 9 allows such a limit. */
#define JC_MAX_DEPTH 2048

struct jc_error {
	size_t offset;      /* first byte that does not fit; len at the end */
	const char *reason; /* static text, e.g. "invalid number" */
};

/* Called for each number of the document, in order, with the token's
 * text (borrowed from the input, not NUL-terminated). */
typedef void (*jc_number_fn)(const char *tok, size_t len, void *arg);

/* Checks that s[0..len) is one JSON text (any value, with white space
 * around it) as RFC 8259 defines it, with the same choices as jansson
 * where the RFC leaves one open: strings must be valid UTF-8 (no
 * overlong forms, no surrogates, nothing beyond U+10FFFF), a \u escape of
 * a surrogate must be a high-low pair, \u0000 is allowed, duplicate
 * names are allowed, no byte order mark. A NUL byte ends nothing: it is
 * refused like any other stray byte. on_number may be NULL; it is called
 * for numbers before an error too. Returns 0, or -1 with err filled (err
 * may be NULL). */
int jc_check(const char *s, size_t len, jc_number_fn on_number, void *arg,
             struct jc_error *err) RELAY_MUSTCHECK;

/* Is the number token tok (as jc_check() hands it over: valid JSON
 * number syntax) beyond the range of a double, i.e. would strtod() give
 * HUGE_VAL and ERANGE? Decided exactly on the digits, without strtod()
 * and so without the locale: a magnitude of at least 2^1024 - 2^970
 * (DBL_MAX plus half a unit in the last place) rounds to infinity. */
bool jc_beyond_double(const char *tok, size_t len);

/* Checks that s[0..len) is UTF-8 as jc_check() wants it in strings (no
 * overlong forms, no surrogates, nothing beyond U+10FFFF, no sequence cut
 * short; NUL and other control bytes are plain ASCII here). Returns len
 * when it is, else the offset of the first byte that is not. For text
 * that reaches the relay outside JSON (pgoutput column values). */
size_t jc_utf8_check(const char *s, size_t len);

#endif
