/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_relay.c -- libFuzzer harness: the relay loop's core through the
 * Kafka seam, with the unit tests' fake producer (tests/unit/
 * fake_kafka.c) standing in for librdkafka.
 *
 * What fuzz_lsn.c could not do before the seam existed: drive the loop
 * itself (take_frame() -> handle_msg() -> handle_event() -> the
 * producer; serve_kafka() -> on_dr(); end_turn() -> restart();
 * begin_stop(), drained()) rather than the tracker alone. PostgreSQL is
 * a model: a WAL of committed transactions (xid, commit end, rows) that
 * each session streams again from the slot's position, frame by frame,
 * as read_stream() would hand them over. The fuzz input is a stream of
 * operations (low four bits of a byte, most followed by one argument
 * byte): read the next frame (new transactions are committed on
 * demand), deliver or queue a report for a record of the live producer
 * in any order, ok or with a transient or permanent error, fill the
 * queue, reject a record, fail the producer, break the PostgreSQL side,
 * send a status update, a keepalive, stop, drain, end the turn, and
 * connect again.
 *
 * Checked after every operation:
 *  - every state change is in allowed[] (relay_goto()'s observer);
 *  - the confirm target never passes a transaction with an event that
 *    was never acked (ok, in one session), and never goes back within a
 *    session;
 *  - the in-flight window is what the producer holds: events not yet
 *    reported, zero once it is freed; a report reopens a full queue;
 *  - a fatal producer error ends a live session, and a stopping relay
 *    exits only with nothing in flight or past its deadline;
 *  - FAIL_STOPPED exits 65, and a record refused for good when sent
 *    alone (the isolated replay of a refused batch) fail-stops the
 *    relay, whether its report is served live or by the teardown;
 *  - a session rebuilt for a refused batch replays its transactions
 *    one at a time;
 *  - the same WAL is never called rewound on a reconnect.
 *
 * The relay's log is muted while an input runs (set FUZZ_RELAY_LOG=1
 * to see it); a violation prints the operation and aborts, and a
 * sanitizer's report still reaches stderr. */
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "lib/config.h"
#include "lib/log.h"
#include "relay/relay_int.h"
#include "../unit/fake_kafka.h"

#define MAX_TXNS 64
#define MAX_FRAMES 1024
#define SLOT_START UINT64_C(0x100)

/* One committed transaction of the model server's WAL. */
struct wtxn {
	int xid;
	uint64_t base, end;     /* B at base, commit end */
	unsigned rows;
	bool acked;             /* every row acked ok in one session */
	unsigned ok[8];         /* rows acked ok, per session (mod 8) */
};

static struct {
	struct relay_config cfg;
	struct fake_kafka fk;
	struct relay *r;
	struct wtxn wal[MAX_TXNS];
	size_t nwal;
	uint64_t slot;          /* the slot's confirmed position */
	unsigned session;       /* sessions opened so far */
	bool in_session;
	size_t cur, pos;        /* stream cursor: wal[cur], frame pos (0 B,
	                         * 1..rows rows, rows + 1 C) */
	size_t held_txn;        /* the transaction of the frame held back */
	uint64_t sent;          /* what this session streamed: the slot, then
	                         * each commit end sent (a logical
	                         * walsender's keepalive carries this, its
	                         * sentPtr, not the end of the WAL) */
	unsigned msg_txn[FAKE_MAX];     /* fake record -> wal index */
	unsigned msg_session[FAKE_MAX]; /* ... and its session */
	bool msg_alone[FAKE_MAX];       /* ... sent in the isolated replay */
	bool live[FAKE_MAX];            /* unreported with a live token,
	                                 * before the current operation */
	uint64_t last_target;
	char *frames[MAX_FRAMES];       /* owned: every frame's text */
	size_t nframes;
	size_t op;
	bool done;
} w;

static int saved_stderr = -1;  /* the real stderr while muted */
static int devnull = -1;       /* what stderr is while an input runs */

/* The sanitizers' report goes to the real stderr while the relay's log
 * is muted; absent (NULL) in a build without them. */
void __sanitizer_set_report_fd(void *fd) __attribute__((weak));

static void fail(const char *fmt, ...)
{
	va_list ap;

	if (devnull >= 0 && saved_stderr >= 0)
		dup2(saved_stderr, 2);
	fprintf(stderr, "fuzz_relay: operation %zu: ", w.op);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

static void on_goto(void *ctx, enum relay_state from, enum relay_state to)
{
	(void)ctx;
	if (!relay_transition_allowed(from, to))
		fail("transition %s -> %s is not in allowed[]",
		     relay_state_name(from), relay_state_name(to));
}

static uint64_t wal_end(void)
{
	return w.nwal > 0 ? w.wal[w.nwal - 1].end : SLOT_START;
}

static const char *lsn_text(uint64_t lsn, char *buf)
{
	sprintf(buf, "%X/%X", (unsigned)(lsn >> 32), (unsigned)lsn);
	return buf;
}

/* The frame at the cursor, as wal2json writes it (the same text on
 * every replay, so a resume's check sees the same commit). */
static bool frame_text(const struct wtxn *t, size_t pos, uint64_t *at,
                       char **out)
{
	char a[24], b[24];
	int n;

	if (pos == 0) {
		*at = t->base;
		n = asprintf(out, "{\"action\":\"B\",\"xid\":%d,\"timestamp\":"
		             "\"2026-11-29 21:35:50.117+00\",\"lsn\":\"%s\","
		             "\"nextlsn\":\"%s\"}", t->xid, lsn_text(*at, a),
		             lsn_text(t->end, b));
	} else if (pos <= t->rows) {
		*at = t->base + 0x10 * pos;
		n = asprintf(out, "{\"action\":\"I\",\"xid\":%d,\"timestamp\":"
		             "\"2026-11-29 21:35:50.117+00\",\"lsn\":\"%s\","
		             "\"schema\":\"public\",\"table\":\"outbox\",\"columns\":"
		             "[{\"name\":\"id\",\"type\":\"uuid\",\"value\":"
		             "\"a507c379-75ec-4340-9a3c-%06x%06zx\"},{\"name\":"
		             "\"aggregate_type\",\"type\":\"text\",\"value\":"
		             "\"Order\"},{\"name\":\"aggregate_id\",\"type\":\"text\","
		             "\"value\":\"o-%zu\"},{\"name\":\"event_type\",\"type\":"
		             "\"text\",\"value\":\"Placed\"},{\"name\":\"payload\","
		             "\"type\":\"jsonb\",\"value\":\"{}\"}]}", t->xid,
		             lsn_text(*at, a), (unsigned)t->xid, pos, pos);
	} else {
		*at = t->end - 0x8;
		n = asprintf(out, "{\"action\":\"C\",\"xid\":%d,\"timestamp\":"
		             "\"2026-11-29 21:35:50.117+00\",\"lsn\":\"%s\","
		             "\"nextlsn\":\"%s\"}", t->xid, lsn_text(*at, a),
		             lsn_text(t->end, b));
	}
	return n >= 0;
}

/* The loop reads only while streaming with room in the window. */
static bool can_read(void)
{
	return w.in_session && w.r->st.state == ST_STREAMING &&
	       window_open(w.r);
}

/* One frame through the loop, as read_stream() hands it over: the one
 * held back first, else the next of the stream (a new transaction of
 * `rows` rows committed when the WAL has no more). */
static void read_frame(unsigned rows)
{
	struct repl_msg m = { .type = 'w' };
	const struct wtxn *t;
	size_t before = w.fk.n;
	char *text;

	if (!can_read())
		return;
	if (w.r->have_pending) {
		m = w.r->pending;
		w.r->have_pending = false;
		t = &w.wal[w.held_txn];
	} else {
		if (w.cur == w.nwal) {
			struct wtxn *n;
			if (w.nwal == MAX_TXNS || w.nframes == MAX_FRAMES)
				return;
			n = &w.wal[w.nwal];
			memset(n, 0, sizeof(*n));
			n->xid = 500 + (int)w.nwal;
			n->base = 0x1000 * (uint64_t)(w.nwal + 1);
			n->end = n->base + 0x800;
			n->rows = rows;
			w.nwal++;
		}
		if (w.nframes == MAX_FRAMES)
			return;
		t = &w.wal[w.cur];
		if (!frame_text(t, w.pos, &m.wal_start, &text))
			fail("out of memory");
		w.frames[w.nframes++] = text;
		m.data = text;
		m.len = strlen(text);
		m.wal_end = wal_end();
		if (++w.pos > t->rows + 1) {
			w.cur++;
			w.pos = 0;
			w.sent = t->end;
		}
	}
	w.held_txn = (size_t)(t - w.wal);
	(void)take_frame(w.r, &m);
	for (size_t i = before; i < w.fk.n; i++) {
		w.msg_txn[i] = (unsigned)(t - w.wal);
		w.msg_session[i] = w.session;
		w.msg_alone[i] = w.r->iso.to != 0 && t->end >= w.r->iso.from &&
		                 t->end <= w.r->iso.to;
	}
}

/* The k-th record of the live producer without a report. */
static bool pick(unsigned k, size_t *idx)
{
	size_t n = fake_unreported(&w.fk), seen = 0;

	if (n == 0)
		return false;
	k %= (unsigned)n;
	for (size_t i = 0; i < w.fk.n; i++) {
		const struct fake_msg *m = &w.fk.msgs[i];
		if (m->producer != w.fk.live || m->queued || m->reported)
			continue;
		if (seen++ == k) {
			*idx = i;
			return true;
		}
	}
	return false;
}

static void session_connect(void)
{
	enum lsn_resume res;
	enum relay_state s = w.r->st.state;

	if (s != ST_CONNECTING && s != ST_BACKOFF && s != ST_STANDBY)
		return;
	if (!kafka_open(w.r))
		return;
	res = session_open(w.r, &(struct lsn_server){
		.system_id = "7000000000000000001",
		.timeline = 1,
		.wal_end = wal_end(),
		.slot_lsn = w.slot,
	});
	if (res == LSN_RESUME_REWOUND)
		fail("the same WAL called rewound: %s",
		     lsn_rewound_reason(&w.r->lt));
	w.session++;
	w.in_session = true;
	w.last_target = confirm_target(w.r);
	/* The stream starts again at the first commit past the slot. */
	for (w.cur = 0; w.cur < w.nwal && w.wal[w.cur].end <= w.slot; w.cur++)
		;
	w.pos = 0;
	w.sent = w.slot;
}

/* A status update: what send_status() sends, the slot keeps. */
static void status(void)
{
	uint64_t flush;

	if (!w.in_session || session_ending(w.r))
		return;
	flush = confirm_target(w.r);
	lsn_mark_confirmed(&w.r->lt, flush);
	w.slot = flush;
}

/* Ends the turn; a session that ended is restarted. */
static void turn_end(void)
{
	bool ending = session_ending(w.r);

	if (!end_turn(w.r)) {
		w.done = true;
		return;
	}
	if (ending)
		w.in_session = false;
}

/* Before an operation: the records a report could still name. */
static void note_live(void)
{
	for (size_t i = 0; i < w.fk.n; i++)
		w.live[i] = !w.fk.msgs[i].reported &&
		            lsn_find(&w.r->lt, w.fk.msgs[i].token) != NULL;
}

/* After it: a record sent alone in the isolated replay and refused for
 * good by a report of this session (live, or served by the teardown)
 * is the poison event: the relay stops with 65, unless it was stopping
 * already. */
static void check_poison(bool stopping_before)
{
	for (size_t i = 0; i < w.fk.n; i++) {
		const struct fake_msg *m = &w.fk.msgs[i];
		if (!w.live[i] || !m->reported || m->ok || !w.msg_alone[i] ||
		    pub_err_classify(m->err) != PUB_ERR_PERMANENT ||
		    stopping_before)
			continue;
		if (!relay_stopping(w.r) || w.r->st.exit_code != RELAY_EXIT_DATAERR)
			fail("record %zu, sent alone, refused for good: the relay is "
			     "%s (exit %d), not fail-stopped", i,
			     relay_state_name(w.r->st.state), w.r->st.exit_code);
	}
}

/* After a session rebuilt for a refused batch: its transactions are
 * replayed one at a time. */
static void check_isolation(bool permanent, uint64_t first, uint64_t last)
{
	if (!permanent || relay_stopping(w.r) || w.r->st.state != ST_BACKOFF)
		return;
	if (w.r->iso.to == 0 || w.r->iso.from > first || w.r->iso.to < last)
		fail("a refused batch (commits %llX to %llX) is not replayed one "
		     "at a time (isolated %llX to %llX)", (unsigned long long)first,
		     (unsigned long long)last, (unsigned long long)w.r->iso.from,
		     (unsigned long long)w.r->iso.to);
}

static void check(void)
{
	uint64_t target, bound = w.slot;

	/* Which transactions were acked whole, in one session. */
	for (size_t i = 0; i < w.nwal; i++)
		memset(w.wal[i].ok, 0, sizeof(w.wal[i].ok));
	for (size_t i = 0; i < w.fk.n; i++)
		if (w.fk.msgs[i].reported && w.fk.msgs[i].ok)
			w.wal[w.msg_txn[i]].ok[w.msg_session[i] % 8]++;
	for (size_t i = 0; i < w.nwal; i++) {
		struct wtxn *t = &w.wal[i];
		for (size_t s = 0; s < 8; s++)
			if (t->ok[s] >= t->rows)
				t->acked = true;
	}
	for (size_t i = 0; i < w.nwal; i++) {
		if (w.wal[i].end <= w.slot)
			continue;
		if (!w.wal[i].acked)
			break;
		bound = w.wal[i].end;
	}
	/* All acked: a keepalive may take the watermark to the WAL end. */
	if (w.nwal == 0 || bound == w.wal[w.nwal - 1].end)
		bound = wal_end() > bound ? wal_end() : bound;
	target = confirm_target(w.r);
	if (target > bound)
		fail("confirm target %llX past %llX: an event not acked would be "
		     "confirmed", (unsigned long long)target,
		     (unsigned long long)bound);
	if (w.in_session && !session_ending(w.r)) {
		if (target < w.last_target)
			fail("confirm target went back from %llX to %llX",
			     (unsigned long long)w.last_target,
			     (unsigned long long)target);
		w.last_target = target;
	}
	if (w.r->pub == NULL && w.r->win.events != 0)
		fail("%llu events in flight without a producer",
		     (unsigned long long)w.r->win.events);
	if (w.r->pub != NULL &&
	    w.r->win.events != (uint64_t)w.fk.port.depth(w.r->pub))
		fail("window %llu, the producer holds %d",
		     (unsigned long long)w.r->win.events,
		     w.fk.port.depth(w.r->pub));
	if (w.r->st.state == ST_FAIL_STOPPED &&
	    w.r->st.exit_code != RELAY_EXIT_DATAERR)
		fail("fail-stopped with exit %d", w.r->st.exit_code);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	log_set_level(LOG_LVL_ERROR);
	if (getenv("FUZZ_RELAY_LOG") == NULL) {
		saved_stderr = dup(2);
		devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (__sanitizer_set_report_fd != NULL && saved_stderr >= 0)
			__sanitizer_set_report_fd((void *)(intptr_t)saved_stderr);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];

	memset(&w, 0, sizeof(w));
	w.slot = SLOT_START;
	if (devnull >= 0 && saved_stderr >= 0)
		dup2(devnull, 2);
	cfg_init(&w.cfg);
	/* A small window and few replays, so the input reaches both. */
	if (cfg_set(&w.cfg, "inflight.max.events", "6", CFG_SRC_FLAG, "fuzz",
	            err, sizeof(err)) < 0 ||
	    cfg_set(&w.cfg, "kafka.failure.max.replays", "3", CFG_SRC_FLAG,
	            "fuzz", err, sizeof(err)) < 0)
		fail("configuration: %s", err);
	fake_kafka_init(&w.fk);
	w.r = relay_new(&w.cfg, &w.fk.port);
	w.r->st.on_goto = on_goto;
	session_connect();

	for (size_t i = 0; i < size && !w.done; i++, w.op++) {
		unsigned arg = i + 1 < size ? data[i + 1] : 0;
		bool stopping = relay_stopping(w.r);
		bool perm = w.r->fail.permanent && w.r->st.state == ST_REBUILDING;
		uint64_t first = w.r->fail.first_end, last = w.r->fail.last_end;
		uint64_t window = w.r->win.events;
		size_t idx;

		note_live();

		switch (data[i] & 0x0F) {
		case 0x0: case 0x1: case 0x2: /* read a frame */
			read_frame(arg % 4);
			i++;
			break;
		case 0x3: /* a report, served now */
			if (pick(arg >> 2, &idx)) {
				fake_report(&w.fk, idx, (arg & 3) != 0,
				            RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT);
				serve_kafka(w.r, false);
			}
			i++;
			break;
		case 0x4: /* a failed report, queued: served at the next poll
		           * or by the teardown */
			if (pick(arg >> 1, &idx))
				fake_report(&w.fk, idx, false, (arg & 1)
				            ? RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE
				            : RD_KAFKA_RESP_ERR__MSG_TIMED_OUT);
			i++;
			break;
		case 0x5: /* the loop's Kafka step */
			serve_kafka(w.r, false);
			break;
		case 0x6: /* the queue holds this many */
			w.fk.full_at = (int)(arg % 4);
			i++;
			break;
		case 0x7: /* the next record rejected, or the producer dead */
			w.fk.next_send = (arg & 1) ? PUB_REJECTED : PUB_FATAL;
			i++;
			break;
		case 0x8: { /* a fatal producer error: the session ends */
			bool live = w.r->pub != NULL && !session_ending(w.r) &&
			            !relay_stopping(w.r);
			w.fk.fatal = true;
			w.fk.fatal_err = RD_KAFKA_RESP_ERR__FENCED;
			serve_kafka(w.r, false);
			if (live && !session_ending(w.r) && !relay_stopping(w.r))
				fail("a fatal producer error left the relay %s",
				     relay_state_name(w.r->st.state));
			break;
		}
		case 0x9: /* the PostgreSQL side breaks */
			if (w.in_session)
				session_end(w.r, false, "fuzz: stream failed");
			break;
		case 0xA: /* a status update */
			status();
			break;
		case 0xB: /* a keepalive at what was sent */
			if (can_read())
				(void)take_frame(w.r, &(struct repl_msg){
					.type = 'k', .wal_end = w.sent });
			break;
		case 0xC: /* a signal */
			if (!relay_stopping(w.r))
				begin_stop(w.r, RELAY_EXIT_OK);
			break;
		case 0xD: /* the end of a turn */
			turn_end();
			check_isolation(perm, first, last);
			break;
		case 0xE: /* connect again, if due */
			session_connect();
			break;
		case 0xF: { /* a stopping relay that drained exits: nothing
		             * in flight, or the deadline passed */
			int64_t now = now_mono_us();
			if (!relay_stopping(w.r) || !drained(w.r, now))
				break;
			if (w.r->pub != NULL && lsn_inflight(&w.r->lt) > 0 &&
			    now < w.r->st.drain_deadline_us)
				fail("drained with %llu events in flight",
				     (unsigned long long)lsn_inflight(&w.r->lt));
			w.done = true;
			break;
		}
		}
		check_poison(stopping);
		/* A report makes room: the queue is not full any more. */
		if (w.r->win.events < window && w.r->win.queue_full)
			fail("a report was served and the queue is still full");
		check();
	}

	kafka_close(w.r); /* finish(): what is left is purged */
	w.in_session = false;
	check();
	relay_free(w.r);
	cfg_free(&w.cfg);
	for (size_t i = 0; i < w.nframes; i++)
		free(w.frames[i]);
	if (devnull >= 0 && saved_stderr >= 0)
		dup2(saved_stderr, 2);
	return 0;
}
