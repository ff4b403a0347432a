/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_config.c -- libFuzzer harness: the configuration sources.
 *
 * The input is up to three parts split at NUL bytes: file text for
 * cfg_load_text() (what cfg_load_file() reads), then --set arguments for
 * cfg_set_flag(), then environment entries for cfg_load_env(), one a
 * line each. The first byte is options: bit 0 puts "OUTBOX_RELAY_" in
 * front of every environment line (so mutations need not find the
 * prefix), bit 1 skips the file part, bit 2 stops at the first failing
 * source as main.c does (else every source is applied, failures and
 * all). cfg_validate() runs once the sources are in, and the result is
 * printed as --print-config would.
 *
 * Checked, besides memory safety and leaks:
 *  - every failure leaves a NUL-terminated message;
 *  - the secrets set before the input (pg.conninfo with a password,
 *    kafka.sasl.password) never show in any message or in the printed
 *    configuration, unless the input itself spells them out;
 *  - the printed configuration redacts pg.conninfo whatever the input
 *    set it to. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/config.h"
#include "kafka/kafka_conf.h"
#include "lib/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define SECRET_PG "Zq7secretPG"
#define SECRET_KAFKA "Zq7secretKafka"
#define MAX_LINES 64

static bool input_has_secret;

static void fuzz_fail(const char *what, const char *text)
{
	fprintf(stderr, "config: %s: %s\n", what, text);
	abort();
}

static void check_message(int rc, const char *err)
{
	if (rc == 0)
		return;
	if (memchr(err, '\0', 512) == NULL)
		fuzz_fail("message not terminated", "");
	if (err[0] == '\0')
		fuzz_fail("failure without a message", "");
	if (!input_has_secret &&
	    (strstr(err, SECRET_PG) != NULL || strstr(err, SECRET_KAFKA) != NULL))
		fuzz_fail("a secret in a message", err);
}

/* Splits [p, end) at newlines into NUL-terminated copies; returns the
 * count (at most MAX_LINES). */
static size_t split_lines(const char *p, const char *end, char **out,
                          const char *prefix)
{
	size_t n = 0, plen = prefix ? strlen(prefix) : 0;

	while (p < end && n < MAX_LINES) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char *s = malloc(plen + len + 1);

		if (s == NULL)
			break;
		if (plen > 0)
			memcpy(s, prefix, plen);
		memcpy(s + plen, p, len);
		s[plen + len] = '\0';
		out[n++] = s;
		p += len + (nl != NULL);
	}
	return n;
}

static void check_print(const struct relay_config *cfg)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (f == NULL)
		return;
	cfg_print(cfg, f);
	fclose(f);
	if (!input_has_secret &&
	    (strstr(buf, SECRET_PG) != NULL || strstr(buf, SECRET_KAFKA) != NULL))
		fuzz_fail("a secret in the printed configuration", buf);
	if (strstr(buf, "pg.conninfo = <redacted>") == NULL)
		fuzz_fail("pg.conninfo not redacted", buf);
	free(buf);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	/* cfg_validate() and librdkafka may log: keep the fuzzer's output
	 * readable. */
	log_set_level(LOG_LVL_ERROR);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data + 1, *end = (const char *)data + size;
	const char *part[3][2] = { { end, end }, { end, end }, { end, end } };
	char *flags[MAX_LINES], *env[MAX_LINES + 1];
	size_t nflags, nenv;
	struct relay_config cfg;
	char err[512];
	unsigned opt;
	bool stop;
	int rc = 0;

	if (size == 0)
		return 0;
	opt = data[0];
	stop = opt & 4;
	for (int i = 0; i < 3 && p <= end; i++) {
		const char *nul = i < 2 ? memchr(p, '\0', (size_t)(end - p)) : NULL;
		part[i][0] = p;
		part[i][1] = nul ? nul : end;
		p = nul ? nul + 1 : end + 1;
	}
	input_has_secret = memmem(data, size, "Zq7", 3) != NULL;

	cfg_init(&cfg);
	memset(err, 0, sizeof(err));
	if (cfg_set(&cfg, "pg.conninfo", "host=db user=relay password="
	            SECRET_PG, CFG_SRC_DEFAULT, "fuzz", err, sizeof(err)) != 0 ||
	    cfg_set(&cfg, "kafka.sasl.password", SECRET_KAFKA, CFG_SRC_DEFAULT,
	            "fuzz", err, sizeof(err)) != 0)
		fuzz_fail("presets refused", err);

	if (!(opt & 2)) {
		rc = cfg_load_text(&cfg, part[0][0],
		                   (size_t)(part[0][1] - part[0][0]), "fuzz.conf",
		                   err, sizeof(err));
		check_message(rc, err);
	}
	nflags = split_lines(part[1][0], part[1][1], flags, NULL);
	for (size_t i = 0; i < nflags && !(stop && rc != 0); i++) {
		rc = cfg_set_flag(&cfg, flags[i], err, sizeof(err));
		check_message(rc, err);
	}
	nenv = split_lines(part[2][0], part[2][1], env,
	                   (opt & 1) ? "OUTBOX_RELAY_" : NULL);
	env[nenv] = NULL;
	if (!(stop && rc != 0)) {
		rc = cfg_load_env(&cfg, env, err, sizeof(err));
		check_message(rc, err);
	}
	if (!(stop && rc != 0)) {
		rc = kc_validate_config(&cfg, err, sizeof(err));
		check_message(rc, err);
	}
	check_print(&cfg);

	for (size_t i = 0; i < nflags; i++)
		free(flags[i]);
	for (size_t i = 0; i < nenv; i++)
		free(env[i]);
	cfg_free(&cfg);
	return 0;
}
