/* SPDX-License-Identifier: Apache-2.0 */
/* decode_bench.c -- the relay's two decoders on the same recorded WAL, for
 * counting instructions per event under callgrind (tests/bench/decode_cost.sh).
 *
 *   decode-bench pgo FILE.pgo [ROUNDS]      pgo_decode() on each message
 *   decode-bench w2j FILE.jsonl [ROUNDS]    w2j_decode() (fast scanner, then
 *                                           jansson when it declines)
 *   decode-bench w2j-slow FILE.jsonl [ROUNDS]  w2j_decode_slow(): jansson
 *                                           on every line
 *   decode-bench w2j-ev FILE.jsonl [ROUNDS]  ev_next(): the decoder and the
 *                                           per-record policy (topic,
 *                                           headers, the record's shape),
 *                                           as the relay reads a record
 *
 * FILE.pgo holds "LSN XID HEX" lines (pg_logical_slot_peek_binary_changes(),
 * as in tests/fixtures/pgoutput/); FILE.jsonl one wal2json record a line.
 * The files are read into memory first; only bench_run() decodes, so
 * `valgrind --tool=callgrind --toggle-collect=bench_run` counts the
 * decoding and nothing else. Each round decodes every record once and
 * clears it, as the relay does; a pgoutput round is one session (a fresh
 * state: the file starts with the Relation message). Prints the counts;
 * exits 1 when a record fails to decode. Not a test: figures only.
 *
 * The decoders look for what the relay's default configuration asks
 * (ss_init() of the built-in defaults: the five columns and the extra
 * ones the defaults read, less the trace context column, which a session
 * drops when the table lacks it, as the bench's does); DECODE_BENCH_SPEC=
 * init keeps it (the runbook's peeks), =fixture takes the five columns of
 * tests/unit/fixtures.h. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/common.h"
#include "lib/config.h"
#include "decode/event.h"
#include "decode/pgo.h"
#include "decode/stream_spec.h"
#include "decode/w2j.h"
#include "../unit/fixtures.h"

int w2j_decode_slow(const char *line, size_t len,
                    const struct record_spec *spec, struct record *rec,
                    char *err, size_t errlen);

enum bench_mode { BENCH_PGO, BENCH_W2J, BENCH_W2J_SLOW, BENCH_W2J_EV };

struct bench_rec {
	uint64_t lsn;          /* pgo: the frame's dataStart */
	unsigned char *data;   /* the message or the line, len bytes */
	size_t len;
};

struct bench_input {
	struct bench_rec *r;
	size_t n;
};

static int bench_hex(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	return -1;
}

/* Reads FILE into in; pgo lines are turned from hex into bytes. */
static int bench_load(const char *path, enum bench_mode mode,
                      struct bench_input *in)
{
	char *line = NULL;
	size_t cap = 0, alloc = 0;
	ssize_t got;
	FILE *fp = fopen(path, "r");

	if (fp == NULL) {
		perror(path);
		return -1;
	}
	while ((got = getline(&line, &cap, fp)) > 0) {
		struct bench_rec *r;

		if (line[got - 1] == '\n')
			line[--got] = '\0';
		if (got == 0 || line[0] == '#')
			continue;
		if (in->n == alloc) {
			alloc = alloc ? alloc * 2 : 1024;
			in->r = realloc(in->r, alloc * sizeof(*in->r));
			if (in->r == NULL)
				abort();
		}
		r = &in->r[in->n];
		if (mode == BENCH_PGO) {
			char *sp1 = strchr(line, ' ');
			char *hex = sp1 ? strchr(sp1 + 1, ' ') : NULL;
			size_t hl;

			if (hex == NULL ||
			    lsn_parse(line, (size_t)(sp1 - line), &r->lsn) != 0) {
				fprintf(stderr, "%s: bad line %zu\n", path, in->n + 1);
				goto fail;
			}
			hex++;
			hl = strlen(hex);
			if (hl == 0 || hl % 2 != 0) {
				fprintf(stderr, "%s: odd hex on line %zu\n", path,
				        in->n + 1);
				goto fail;
			}
			r->len = hl / 2;
			r->data = malloc(r->len);
			if (r->data == NULL)
				abort();
			for (size_t i = 0; i < r->len; i++) {
				int hi = bench_hex(hex[2 * i]);
				int lo = bench_hex(hex[2 * i + 1]);

				if (hi < 0 || lo < 0) {
					fprintf(stderr, "%s: bad hex on line %zu\n", path,
					        in->n + 1);
					free(r->data);
					goto fail;
				}
				r->data[i] = (unsigned char)(hi << 4 | lo);
			}
		} else {
			r->lsn = 0;
			r->len = (size_t)got;
			r->data = malloc(r->len + 1);
			if (r->data == NULL)
				abort();
			memcpy(r->data, line, r->len + 1);
		}
		in->n++;
	}
	free(line);
	fclose(fp);
	return 0;
fail:
	free(line);
	fclose(fp);
	return -1;
}

struct bench_counts {
	size_t records;
	size_t events;
};

/* The measured part: ROUNDS passes over in. Not inlined, so that
 * callgrind's --toggle-collect can name it. */
static const struct record_spec *spec = &outbox_spec;
static struct stream_spec ss;

__attribute__((noinline)) static int
bench_run(enum bench_mode mode, const struct bench_input *in, long rounds,
          struct bench_counts *out)
{
	char err[512];
	struct ev_txn txn;

	for (long k = 0; k < rounds; k++) {
		struct pgo_state st;

		if (mode == BENCH_PGO)
			pgo_init(&st, spec);
		ev_txn_reset(&txn);
		for (size_t i = 0; i < in->n; i++) {
			const struct bench_rec *r = &in->r[i];
			struct record rec;
			int rc;

			if (mode == BENCH_W2J_EV) {
				struct ev_record er;
				ev_next(&ss, (const char *)r->data, r->len, &txn, &er);
				rc = er.kind == EV_POISON ? -1 : 0;
				if (rc != 0)
					snprintf(err, sizeof(err), "%.400s", er.reason);
				out->records++;
				out->events += er.kind == EV_EVENT;
				ev_record_clear(&er);
				if (rc != 0)
					return -1;
				continue;
			}
			if (mode == BENCH_PGO)
				rc = pgo_decode(&st, r->data, r->len, r->lsn, &rec, err,
				                sizeof(err));
			else if (mode == BENCH_W2J)
				rc = w2j_decode((const char *)r->data, r->len,
				                spec, &rec, err, sizeof(err));
			else
				rc = w2j_decode_slow((const char *)r->data, r->len,
				                     spec, &rec, err, sizeof(err));
			if (rc != 0) {
				fprintf(stderr, "record %zu: %s\n", i + 1, err);
				if (mode == BENCH_PGO)
					pgo_free(&st);
				return -1;
			}
			out->records++;
			out->events += rec.kind == REC_EVENT;
			record_clear(&rec);
		}
		if (mode == BENCH_PGO)
			pgo_free(&st);
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct relay_config cfg;
	struct bench_input in = { 0 };
	struct bench_counts c = { 0, 0 };
	enum bench_mode mode;
	long rounds = 1;
	int rc;

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: %s pgo|w2j|w2j-slow|w2j-ev FILE [ROUNDS]\n",
		        argv[0]);
		return 2;
	}
	if (strcmp(argv[1], "pgo") == 0)
		mode = BENCH_PGO;
	else if (strcmp(argv[1], "w2j") == 0)
		mode = BENCH_W2J;
	else if (strcmp(argv[1], "w2j-slow") == 0)
		mode = BENCH_W2J_SLOW;
	else if (strcmp(argv[1], "w2j-ev") == 0)
		mode = BENCH_W2J_EV;
	else {
		fprintf(stderr, "%s: unknown mode %s\n", argv[0], argv[1]);
		return 2;
	}
	if (argc == 4 && (rounds = strtol(argv[3], NULL, 10)) < 1) {
		fprintf(stderr, "%s: ROUNDS must be at least 1\n", argv[0]);
		return 2;
	}
	if (bench_load(argv[2], mode, &in) != 0)
		return 2;
	{
		const char *which = getenv("DECODE_BENCH_SPEC");
		if (which == NULL || strcmp(which, "fixture") != 0) {
			cfg_init(&cfg);
			ss_init(&ss, &cfg);
			/* The relay's session start: the bench's table has no
			 * trace context column (DECODE_BENCH_SPEC=init keeps
			 * looking for it, as the runbook's peeks do). */
			if (which == NULL || strcmp(which, "init") != 0)
				ss_drop_absent_trace(&ss, 0);
			spec = &ss.spec;
		}
	}
	rc = bench_run(mode, &in, rounds, &c);
	printf("mode=%s records=%zu events=%zu rounds=%ld\n", argv[1],
	       c.records, c.events, rounds);
	for (size_t i = 0; i < in.n; i++)
		free(in.r[i].data);
	free(in.r);
	return rc == 0 ? 0 : 1;
}
