/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_repl.c -- libFuzzer harness: CopyData framing (repl_parse_frame).
 *
 * The input is a stream of frames, each behind a two-byte big-endian
 * length, as libpq would hand them to repl_read() one PQgetCopyData()
 * at a time. Every frame goes through repl_parse_frame(), which must
 * agree with the layout written out again below from the protocol
 * documentation (XLogData: 'w', dataStart, walEnd, sendTime, data;
 * primary keepalive: 'k', walEnd, sendTime, replyRequested): same
 * verdict, same fields, data pointing into the frame and never past it,
 * an error message for every refusal. The data of an accepted 'w' frame
 * then goes to w2j_decode() and to pgo_decode(), as the loop's
 * handle_msg() does with it for slot.plugin wal2json or pgoutput, so the
 * decoders also see records cut at arbitrary frame boundaries. A pgoutput
 * message is binary: it goes in with its length and no terminator. The
 * pgoutput state (relation cache, open transaction) lasts for the whole
 * input, as it lasts for a session, so a Relation in one frame describes
 * the Inserts of later ones.
 *
 * The whole input is also read as a timeline history file
 * (check_history()).
 *
 * The frame is copied into a buffer of exactly its size first, so that
 * AddressSanitizer catches a read one byte past a short frame. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/pgo.h"
#include "pg/pgutil.h"
#include "pg/repl.h"
#include "decode/w2j.h"
#include "../unit/fixtures.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_fail(const char *what, size_t len)
{
	fprintf(stderr, "repl_parse_frame: %s (frame of %zu bytes)\n", what, len);
	abort();
}

/* The reference reading: one field at a time, offsets as in the
 * protocol documentation. */
static uint64_t ref_u64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v * 256 + p[i];
	return v;
}

static void check_frame(const char *frame, size_t len)
{
	const unsigned char *u = (const unsigned char *)frame;
	struct repl_msg msg;
	char err[256];
	int rc, want;

	memset(&msg, 0x5a, sizeof(msg));
	err[0] = '\0';
	rc = repl_parse_frame(frame, len, &msg, err, sizeof(err));
	if (len >= 25 && u[0] == 'w')
		want = 1;
	else if (len >= 18 && u[0] == 'k')
		want = 1;
	else
		want = -1;
	if (rc != want)
		fuzz_fail("verdict differs from the reference", len);
	if (rc < 0) {
		if (err[0] == '\0' || memchr(err, '\0', sizeof(err)) == NULL)
			fuzz_fail("refusal without a message", len);
		return;
	}
	if (msg.type != frame[0])
		fuzz_fail("type", len);
	if (msg.type == 'w') {
		if (msg.wal_start != ref_u64(u + 1) || msg.wal_end != ref_u64(u + 9))
			fuzz_fail("XLogData positions", len);
		if (msg.data != frame + 25 || msg.len != len - 25)
			fuzz_fail("XLogData payload bounds", len);
		if (msg.reply_requested)
			fuzz_fail("XLogData with replyRequested", len);
	} else {
		if (msg.wal_end != ref_u64(u + 1) || msg.wal_start != 0)
			fuzz_fail("keepalive positions", len);
		if (msg.reply_requested != (u[17] != 0))
			fuzz_fail("keepalive replyRequested", len);
		if (msg.data != NULL || msg.len != 0)
			fuzz_fail("keepalive with a payload", len);
	}
}

/* What handle_msg() does with an accepted XLogData frame's payload,
 * under either plugin. */
static void decode_payload(struct pgo_state *pgo, const char *frame,
                           size_t len)
{
	struct repl_msg msg;
	struct record rec;
	char err[512];

	if (repl_parse_frame(frame, len, &msg, err, sizeof(err)) != 1 ||
	    msg.type != 'w')
		return;
	if (w2j_decode(msg.data, msg.len, &outbox_spec, &rec, err, sizeof(err)) == 0)
		record_clear(&rec);
	else if (err[0] == '\0')
		fuzz_fail("w2j_decode refused a payload without a message", len);
	err[0] = '\0';
	if (pgo_decode(pgo, msg.data, msg.len, msg.wal_start, &rec, err,
	               sizeof(err)) == 0)
		record_clear(&rec);
	else if (err[0] == '\0')
		fuzz_fail("pgo_decode refused a payload without a message", len);
}

/* The whole input as a timeline history file (TIMELINE_HISTORY's text,
 * pgutil.c), in a buffer of exactly its size: what it keeps must be at
 * most max lines, timelines ascending, switch points never going back. */
static void check_history(const uint8_t *data, size_t size)
{
	struct tli_switch h[4];
	char err[256], *copy = malloc(size ? size : 1);
	int n = -1;

	if (copy == NULL)
		return;
	memcpy(copy, data, size);
	if (pgu_parse_timeline_history(copy, size, h, 4, &n, err,
	                               sizeof(err)) < 0) {
		if (n != 0 || err[0] == '\0')
			fuzz_fail("history refused without n = 0 and a message", size);
	} else {
		if (n < 0 || n > 4)
			fuzz_fail("history kept more lines than room", size);
		for (int i = 1; i < n; i++)
			if (h[i].tli <= h[i - 1].tli ||
			    h[i].switch_lsn < h[i - 1].switch_lsn)
				fuzz_fail("history not ascending", size);
	}
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pgo_state pgo;
	size_t at = 0;

	check_history(data, size);
	pgo_init(&pgo, &outbox_spec);
	while (at + 2 <= size) {
		size_t len = (size_t)data[at] << 8 | data[at + 1];
		char *frame;

		at += 2;
		if (len > size - at)
			len = size - at;
		/* Exactly len bytes: a read past the frame is a heap overflow
		 * (ASan's malloc(0) is a zero-byte block too). */
		frame = malloc(len);
		if (frame == NULL && len > 0)
			break;
		if (len > 0)
			memcpy(frame, data + at, len);
		check_frame(frame, len);
		decode_payload(&pgo, frame, len);
		free(frame);
		at += len;
	}
	pgo_free(&pgo);
	return 0;
}
