/* SPDX-License-Identifier: Apache-2.0 */
/* from_debezium.h -- outbox-relay --from-debezium FILE: a Kafka Connect
 * connector configuration (Debezium's PostgreSQL connector with the
 * Outbox Event Router) turned into relay configuration.
 *
 * The input is JSON, as POSTed to Connect ({"name": ..., "config":
 * {...}}) or a flat object, or a .properties file. What each setting
 * becomes is a table of rows in from_debezium.c; every line written is
 * applied to a scratch configuration first, so the output loads as it
 * is, and a setting this build refuses is listed instead. */
#ifndef RELAY_FROM_DEBEZIUM_H
#define RELAY_FROM_DEBEZIUM_H

#include <stddef.h>
#include <stdio.h>

#include "lib/common.h"

/* Converts len bytes of connector configuration (name stands for the
 * file in messages). Writes the relay configuration (key = value lines,
 * each under a comment naming the setting it came from, and at the end
 * the settings that do not map, as comments) to out, and the settings
 * that do not map, one a line with why, to notes. Returns 0 (also when
 * some settings do not map), or RELAY_EXIT_CONFIG with err filled when
 * the text does not parse or is not a Debezium PostgreSQL connector with
 * the outbox transform; nothing is written to out then. A password is
 * never written anywhere. */
int dbz_convert(const char *text, size_t len, const char *name, FILE *out,
                FILE *notes, char *err, size_t errlen) RELAY_MUSTCHECK;

#endif
