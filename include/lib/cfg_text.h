/* SPDX-License-Identifier: Apache-2.0 */
/* cfg_text.h -- what the configuration's text may hold: characters
 * that look like a blank or like nothing (named, never printed raw),
 * and how near an unknown name is to a known one (for "did you mean").
 * Pure; config.c calls it for every source (file, environment, --set). */
#ifndef RELAY_CFG_TEXT_H
#define RELAY_CFG_TEXT_H

#include <stddef.h>

#include "lib/common.h"

/* A key is printable ASCII. Returns 0, or -1 with err naming the first
 * character that is not and where ("a non-breaking space (U+00A0) after
 * \"slot.name\""), prefixed with origin. */
int cfg_text_check_key(const char *key, const char *origin, char *err,
                       size_t errlen) RELAY_MUSTCHECK;

/* A value holds no control character but tab and line breaks, and
 * neither starts nor ends with a look-alike blank or a byte that is not
 * UTF-8. Returns 0, or -1 with err naming the character and where, never
 * the value (it may be a secret). */
int cfg_text_check_value(const char *key, const char *value,
                         const char *origin, char *err,
                         size_t errlen) RELAY_MUSTCHECK;

/* Optimal string alignment distance (insertions, deletions,
 * substitutions, swaps of neighbours), ignoring case; SIZE_MAX for names
 * longer than 64. */
size_t cfg_text_distance(const char *a, const char *b);

#endif
