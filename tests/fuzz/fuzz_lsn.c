/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_lsn.c -- libFuzzer harness: the LSN tracker against a model.
 *
 * Why this and not the loop itself: the issue asks for 'w'/'k' frames
 * through the loop's message handling with a stub publisher. relay.c has
 * no seam for that (handle_msg() is static and the loop owns libpq and
 * librdkafka), and it is being changed elsewhere. Everything the loop
 * decides about what may be confirmed it asks lsn_tracker.h, though, in a
 * fixed pattern: B record -> lsn_begin(), each event -> lsn_event() (and
 * lsn_event_undo() when produce() refuses it), C record -> lsn_commit(),
 * 'k' frame or heartbeat -> lsn_idle(), every 'w' frame ->
 * lsn_received(), delivery report -> lsn_ack(), status update ->
 * lsn_mark_confirmed(), reconnect -> lsn_end_session() + lsn_resume().
 * This harness drives exactly those calls, in every order a stream, a
 * publisher and a server can produce, from an operation stream read out
 * of the fuzz input; the framing itself is fuzz_repl.c's.
 *
 * The world: a server whose WAL is a list of committed transactions
 * (commit end, xid, commit time); sessions stream it from the slot's
 * position, append new transactions, and break. A reconnect may find the
 * slot where the last status update left it, behind it (lost updates, a
 * crash), a database restored to an earlier point with other
 * transactions written after it, or another cluster. Acks come in any
 * order, fail at will, and arrive late from a session already gone.
 *
 * Checked after every operation:
 *  - the confirmable LSN never goes back within a session;
 *  - it never passes a transaction with an event not yet acked, or acked
 *    as failed, nor an open transaction, and after a failed ack it does
 *    not move at all until the session ends;
 *  - it never passes what was received (lt->received_lsn, and every LSN
 *    the stream carried);
 *  - it is exactly the model's watermark (longest committed, fully acked
 *    prefix; a keepalive with nothing in flight; frozen after a failure;
 *    held at the slot while a resume is being verified);
 *  - a transaction skipped after a reconnect (LSN_SKIP) was confirmed in
 *    an earlier session (no event lost), and one confirmed is never
 *    published again (no duplicate);
 *  - the same WAL is never called rewound; a restore that lost what was
 *    confirmed, or another cluster, always is, before anything past the
 *    slot is confirmed;
 *  - live tokens are accepted and stale ones refused; the in-flight,
 *    window and oldest-pending figures match the model.
 *
 * Two streams, as the two plugins send them: wal2json's B names the
 * commit end (lsn_begin()); pgoutput's Begin names only where the commit
 * record starts (final_lsn, lsn_begin_final()), so a resume's check of
 * the commit looked for waits for its C. An input of odd length runs the
 * pgoutput stream, of even length wal2json's, so every mutation can
 * reach both and the kept inputs keep their meaning.
 *
 * A violation aborts with the operation number and what differed. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "relay/lsn_tracker.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_WAL 512        /* transactions in the server's WAL */
#define MAX_TOK 1024       /* outstanding delivery reports */
#define BASE_LSN 0x1000000 /* where the first slot starts */

/* A committed transaction in the server's WAL. */
struct w_txn {
	uint64_t end;
	uint64_t final;        /* where its commit record starts: after the
	                        * previous commit's end, before its own */
	int64_t xid;
	int64_t ts;
	bool confirmed;        /* the watermark passed it in some session */
	bool skipped;          /* skipped while never confirmed (a restored
	                        * WAL): never to be confirmed unpublished */
};

/* A transaction the tracker was told to publish, this session. */
struct s_txn {
	int wal;               /* index in wal[] */
	int pending;           /* events not yet acked */
	int acked;             /* events acked (ok or not) */
	int events;            /* lsn_event() calls less undos */
	bool committed;
};

struct tok {
	uint64_t token;
	int session;
	int stx;               /* index in stx[] of that session */
};

struct fuzz {
	const uint8_t *in;
	size_t len, at;
	int op;                /* operation number, for messages */

	struct lsn_tracker lt;
	bool pgo;              /* pgoutput's stream (odd input length) */

	/* The server. */
	struct w_txn wal[MAX_WAL];
	int nwal;
	uint64_t wal_pos;      /* its WAL end */
	uint64_t slot;         /* the slot's confirmed_flush_lsn */
	int64_t next_xid;
	int system;            /* identity: 0 the first cluster */
	int timeline;
	int known_system, known_timeline; /* what the tracker accepted */

	/* The session. */
	int session;
	int pos;               /* next wal[] index to stream */
	uint64_t stream_lsn;   /* end of the last record streamed */
	uint64_t max_fed;      /* highest LSN handed to the tracker */
	bool in_txn;
	int cur_wal;           /* the open transaction */
	enum lsn_verdict cur_verdict;
	int cur_stx;           /* its stx[] index when published, else -1 */
	bool cur_verified;     /* it is the commit the resume looked for */
	bool cur_check;        /* pgoutput: skipped at its B, placed at its C */
	uint64_t floor;        /* the watermark stays below this: the end of
	                        * a transaction with a failed ack */
	bool stopped;          /* the relay would have exited */

	/* The model of the tracker. */
	uint64_t wm;
	uint64_t prev_conf;
	bool failed;
	bool verifying;
	struct w_txn verify;   /* the commit looked for */
	struct w_txn last_commit; /* newest commit the watermark moved to */
	uint64_t produced;     /* WAL a server must hold for every event
	                        * produced (lsn_tracker's must_have): the
	                        * newest such commit's end, or its start + 1
	                        * on pgoutput's stream; undone ones count */
	bool have_last_commit;
	struct s_txn stx[MAX_WAL];
	int nstx;

	struct tok toks[MAX_TOK];
	int ntok;
};

static void fail(const struct fuzz *f, const char *fmt, const char *what)
{
	fprintf(stderr, "lsn_tracker: op %d (session %d): ", f->op, f->session);
	fprintf(stderr, fmt, what);
	fprintf(stderr, "\n  confirmable " LSN_FMT " model " LSN_FMT
	        " received " LSN_FMT " failed %d/%d verifying %d\n",
	        LSN_ARGS(lsn_confirmable(&f->lt)), LSN_ARGS(f->wm),
	        LSN_ARGS(f->lt.received_lsn), f->lt.failed, f->failed,
	        f->verifying);
	abort();
}

#define require(f, cond, what)                                               \
	do {                                                                     \
		if (!(cond))                                                         \
			fail((f), "%s", (what));                                         \
	} while (0)

static unsigned next_byte(struct fuzz *f)
{
	return f->at < f->len ? f->in[f->at++] : 0;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static void feed(struct fuzz *f, uint64_t lsn)
{
	f->max_fed = max_u64(f->max_fed, lsn);
}

/* The watermark moves to a commit of the model. */
static void model_move_to(struct fuzz *f, const struct w_txn *t)
{
	if (t->end >= f->wm) {
		f->wm = t->end;
		f->last_commit = *t;
		f->have_last_commit = true;
	}
}

/* Longest prefix of published transactions that are committed and have
 * nothing pending; its length. */
static int done_prefix(const struct fuzz *f)
{
	int i = 0;

	while (i < f->nstx && f->stx[i].committed && f->stx[i].pending == 0)
		i++;
	return i;
}

static void model_advance(struct fuzz *f)
{
	int n = done_prefix(f);

	if (f->failed || f->verifying || n == 0)
		return;
	model_move_to(f, &f->wal[f->stx[n - 1].wal]);
}

/* After every operation: the invariants, then the exact model. */
static void check(struct fuzz *f)
{
	uint64_t conf = lsn_confirmable(&f->lt);
	uint64_t window = 0, inflight = 0;
	int64_t oldest = 0;
	int n = done_prefix(f);

	require(f, conf >= f->prev_conf, "confirmable went back");
	require(f, conf < f->floor, "past a failed ack");
	for (int i = 0; i < f->nwal; i++)
		if (f->wal[i].skipped)
			require(f, conf < f->wal[i].end, "past a transaction skipped "
			        "and never published (its events would be lost)");
	if (f->failed)
		require(f, conf == f->prev_conf, "moved after a failed ack");
	for (int i = 0; i < f->nstx; i++) {
		const struct s_txn *s = &f->stx[i];
		if (!s->committed || s->pending > 0) {
			require(f, conf < f->wal[s->wal].end,
			        "past a transaction with an event not acked, or open");
			break;
		}
	}
	if (f->in_txn)
		require(f, conf < f->wal[f->cur_wal].end, "past the open transaction");
	require(f, conf <= f->lt.received_lsn, "past lt->received_lsn");
	require(f, conf <= f->max_fed, "past every LSN the stream carried");
	require(f, conf == f->wm, "differs from the model");
	require(f, f->lt.failed == f->failed, "failed flag differs");

	/* Figures the loop reads for back-pressure and lag. */
	for (int i = 0; i < f->ntok; i++)
		inflight += f->toks[i].session == f->session;
	require(f, f->lt.inflight == inflight, "inflight differs");
	for (int i = 0; i < f->nstx; i++) {
		const struct s_txn *s = &f->stx[i];
		if (i >= n) {
			window += (uint64_t)s->events;
			if (f->in_txn && i == f->cur_stx)
				window -= (uint64_t)s->acked;
		}
		if (oldest == 0 && s->pending > 0)
			oldest = f->wal[s->wal].ts;
	}
	require(f, lsn_window_events(&f->lt) == window, "window differs");
	require(f, lsn_oldest_pending_ts(&f->lt) == oldest,
	        "oldest pending commit time differs");

	/* What the watermark passed is confirmed for good (the slot may
	 * start there next time). */
	for (int i = 0; i < f->nwal && f->wal[i].end <= conf; i++)
		f->wal[i].confirmed = true;
	f->prev_conf = conf;
}

/* ------------------------------------------------------------ the stream */

/* Whether the server's WAL still holds the commit a resume looks for. */
static bool verify_in_wal(const struct fuzz *f)
{
	for (int i = 0; i < f->nwal; i++)
		if (f->wal[i].end == f->verify.end && f->wal[i].xid == f->verify.xid &&
		    f->wal[i].ts == f->verify.ts)
			return true;
	return false;
}

static void op_begin(struct fuzz *f)
{
	unsigned delta = next_byte(f);
	struct w_txn *t;
	enum lsn_verdict v;
	bool was_verifying = f->verifying;

	if (f->in_txn)
		return;
	if (f->pos == f->nwal) {
		/* New WAL: a transaction committed after everything so far. */
		if (f->nwal == MAX_WAL)
			return;
		t = &f->wal[f->nwal++];
		t->end = f->wal_pos + 2 + delta * 37;
		t->final = f->wal_pos + 1 + delta * 18;
		t->xid = f->next_xid++;
		t->ts = (int64_t)t->end * 3;
		t->confirmed = false;
		t->skipped = false;
		f->wal_pos = t->end;
	}
	t = &f->wal[f->pos];
	f->cur_wal = f->pos++;
	f->cur_stx = -1;
	f->cur_verified = false;
	f->cur_check = false;
	if (f->pgo) {
		feed(f, t->final); /* pgoutput's Begin: final_lsn only */
		v = lsn_begin_final(&f->lt, t->xid, t->ts, t->final);
	} else {
		feed(f, t->end); /* wal2json puts nextlsn on B */
		v = lsn_begin(&f->lt, t->xid, t->ts, t->end);
	}
	f->in_txn = true;
	f->cur_verdict = v;

	if (!was_verifying) {
		require(f, v == LSN_PUBLISH, "not published with nothing to verify");
	} else if (f->pgo) {
		/* Before the end looked for or that commit: which, the C says. */
		if (t->final < f->verify.end) {
			require(f, v == LSN_SKIP, "not skipped before the end looked for");
			f->cur_check = true;
		} else {
			require(f, v == LSN_REWOUND, "a commit starting past the end "
			        "looked for not called rewound");
		}
	} else if (t->end < f->verify.end) {
		require(f, v == LSN_SKIP, "not skipped before the verified commit");
	} else if (t->end == f->verify.end && t->xid == f->verify.xid &&
	           t->ts == f->verify.ts) {
		require(f, v == LSN_SKIP, "the verified commit not skipped");
		f->verifying = false;
		f->cur_verified = true;
	} else {
		require(f, v == LSN_REWOUND, "a changed WAL not called rewound");
	}
	if (v == LSN_SKIP && !t->confirmed) {
		/* Only on a WAL that no longer has the commit looked for (a
		 * restore): the check that follows must then stop the relay
		 * before the watermark passes it. */
		require(f, !verify_in_wal(f), "skipped a transaction never "
		        "confirmed from the same WAL");
		t->skipped = true;
	}
	if (v == LSN_PUBLISH) {
		require(f, !t->confirmed, "published a confirmed transaction again");
		t->skipped = false;
		f->cur_stx = f->nstx++;
		f->stx[f->cur_stx] = (struct s_txn){ .wal = f->cur_wal };
	}
	if (v == LSN_REWOUND) {
		require(f, !verify_in_wal(f), "rewound although the WAL still has "
		        "the commit");
		require(f, f->lt.rewound[0] != '\0', "rewound without a reason");
		f->failed = true;
		f->stopped = true;
	}
}

static void op_event(struct fuzz *f)
{
	unsigned p = next_byte(f);
	uint64_t token;

	if (!f->in_txn || f->cur_verdict != LSN_PUBLISH || f->ntok == MAX_TOK)
		return;
	token = lsn_event(&f->lt, p);
	f->produced = max_u64(f->produced, f->pgo ? f->wal[f->cur_wal].final + 1
	                                          : f->wal[f->cur_wal].end);
	f->stx[f->cur_stx].events++;
	if ((p & 7) == 7) {
		/* produce() refused it at once (queue full, fatal). */
		lsn_event_undo(&f->lt, token, p);
		f->stx[f->cur_stx].events--;
		return;
	}
	f->stx[f->cur_stx].pending++;
	f->toks[f->ntok++] = (struct tok){ token, f->session, f->cur_stx };
}

static void op_commit(struct fuzz *f)
{
	struct w_txn *t = &f->wal[f->cur_wal];

	if (!f->in_txn)
		return;
	if (!f->cur_check) {
		/* B carried the end, or nothing was looked for: the C has
		 * nothing left to check. */
		require(f, lsn_commit(&f->lt, t->end), "a commit with nothing to "
		        "check refused");
	} else if (t->end < f->verify.end) {
		require(f, lsn_commit(&f->lt, t->end), "a commit before the one "
		        "looked for refused");
	} else if (t->end == f->verify.end && t->xid == f->verify.xid &&
	           t->ts == f->verify.ts) {
		require(f, lsn_commit(&f->lt, t->end), "the verified commit refused");
		f->verifying = false;
		f->cur_verified = true;
	} else {
		require(f, !lsn_commit(&f->lt, t->end), "a changed WAL not called "
		        "rewound at the C");
		require(f, !verify_in_wal(f), "rewound although the WAL still has "
		        "the commit");
		require(f, f->lt.rewound[0] != '\0', "rewound without a reason");
		f->in_txn = false;
		f->failed = true;
		f->stopped = true;
		return;
	}
	f->in_txn = false;
	f->stream_lsn = t->end;
	feed(f, t->end);
	if (f->cur_verdict == LSN_PUBLISH) {
		f->stx[f->cur_stx].committed = true;
		model_advance(f);
	} else if (f->cur_verified && !f->failed) {
		/* The verified commit: what was confirmed before is the
		 * watermark again. */
		model_move_to(f, t);
	}
}

static void op_ack(struct fuzz *f, bool ok)
{
	unsigned k = next_byte(f);
	struct tok tk;
	int64_t ts = -1;
	bool live;

	if (f->ntok == 0)
		return;
	k %= (unsigned)f->ntok;
	tk = f->toks[k];
	f->toks[k] = f->toks[--f->ntok];
	live = lsn_ack(&f->lt, tk.token, ok, &ts);
	if (tk.session != f->session) {
		require(f, !live, "a stale token was accepted");
		return;
	}
	require(f, live, "a live token was refused");
	require(f, ts == f->wal[f->stx[tk.stx].wal].ts, "commit time of the ack");
	f->stx[tk.stx].pending--;
	f->stx[tk.stx].acked++;
	if (!ok) {
		f->failed = true;
		if (f->wal[f->stx[tk.stx].wal].end < f->floor)
			f->floor = f->wal[f->stx[tk.stx].wal].end;
	}
	model_advance(f);
}

/* A keepalive: the server's WAL end, at or past the stream, never past
 * a transaction it has yet to send. */
static void op_keepalive(struct fuzz *f)
{
	unsigned delta = next_byte(f);
	uint64_t lo = f->stream_lsn, hi, wal_end;
	bool ok;

	if (f->in_txn)
		hi = f->wal[f->cur_wal].end - 1;
	else if (f->pos < f->nwal)
		hi = f->wal[f->pos].end - 1;
	else
		hi = f->wal_pos + 64;
	wal_end = lo + (uint64_t)delta * (hi - lo + 1) / 256;
	if (wal_end > f->wal_pos)
		f->wal_pos = wal_end; /* WAL of other tables */
	feed(f, wal_end);
	ok = lsn_idle(&f->lt, wal_end);
	if (f->verifying && wal_end >= f->verify.end) {
		require(f, !ok, "passed the verified commit without a rewound");
		f->failed = true;
		f->stopped = true;
		return;
	}
	require(f, ok, "keepalive called the WAL rewound");
	if (!f->failed && !f->verifying && !f->in_txn &&
	    done_prefix(f) == f->nstx)
		f->wm = max_u64(f->wm, wal_end);
}

/* Every 'w' frame's dataStart: inside the current transaction. */
static void op_received(struct fuzz *f)
{
	unsigned delta = next_byte(f);
	uint64_t lo = f->stream_lsn, lsn;

	if (!f->in_txn)
		return;
	lsn = lo + (uint64_t)delta * (f->wal[f->cur_wal].end - lo) / 256;
	feed(f, lsn);
	lsn_received(&f->lt, lsn);
}

/* A standby status update, as the loop sends it. */
static void op_status(struct fuzz *f)
{
	uint64_t flush = lsn_confirmable(&f->lt);

	if (flush < f->lt.confirmed)
		flush = f->lt.confirmed;
	lsn_mark_confirmed(&f->lt, flush);
	f->slot = max_u64(f->slot, flush);
}

/* ------------------------------------------------------------- sessions */

enum reconnect { RC_SAME, RC_LOST_UPDATES, RC_RESTORED, RC_OTHER_CLUSTER };

static void op_reconnect(struct fuzz *f, enum reconnect how)
{
	unsigned p = next_byte(f);
	uint64_t acked = f->wm, slot = f->slot;
	struct lsn_server srv;
	enum lsn_resume r, want;
	char sysid[32];

	if (how == RC_LOST_UPDATES || how == RC_RESTORED) {
		/* An older position: the base or a commit at or below the
		 * slot. */
		int n = 0;
		while (n < f->nwal && f->wal[n].end <= f->slot)
			n++;
		p %= (unsigned)(n + 1);
		slot = p == 0 ? BASE_LSN : f->wal[p - 1].end;
	}
	if (how == RC_RESTORED) {
		/* Restored to a point at or after that slot position: the
		 * transactions after it are gone, and the ones written next
		 * get other xids, maybe at the same LSNs. */
		unsigned q = next_byte(f);
		int keep = 0;
		while (keep < f->nwal && f->wal[keep].end <= slot)
			keep++;
		keep += (int)(q % (unsigned)(f->nwal - keep + 1));
		f->nwal = keep;
		f->wal_pos = keep > 0 ? f->wal[keep - 1].end : BASE_LSN;
		if (slot > f->wal_pos)
			slot = f->wal_pos;
		f->next_xid += 1000000;
	}
	if (how == RC_OTHER_CLUSTER) {
		if (p & 1)
			f->system++;
		else
			f->timeline++;
	}
	f->slot = slot;

	lsn_end_session(&f->lt);
	f->session++;
	snprintf(sysid, sizeof(sysid), "73%d", f->system);
	srv = (struct lsn_server){ sysid, f->timeline, f->wal_pos, slot, NULL, 0 };
	r = lsn_resume(&f->lt, &srv);

	if (f->known_system >= 0 && (f->system != f->known_system ||
	                             f->timeline != f->known_timeline))
		want = LSN_RESUME_REWOUND;
	/* A WAL end before an event produced, acked or not (its ack may
	 * come after the connection dropped: it may be in Kafka). */
	else if (f->known_system >= 0 && f->wal_pos < max_u64(acked, f->produced))
		want = LSN_RESUME_REWOUND;
	else if (f->have_last_commit && f->last_commit.end > slot)
		want = LSN_RESUME_VERIFY;
	else
		want = LSN_RESUME_SLOT;
	require(f, r == want, "lsn_resume's verdict");
	if (how == RC_SAME || how == RC_LOST_UPDATES)
		require(f, r != LSN_RESUME_REWOUND, "the same WAL called rewound");

	/* The new session's model. */
	f->wm = f->prev_conf = slot;
	f->failed = r == LSN_RESUME_REWOUND;
	f->verifying = r == LSN_RESUME_VERIFY;
	f->verify = f->last_commit;
	f->nstx = 0;
	f->in_txn = false;
	f->pos = 0;
	while (f->pos < f->nwal && f->wal[f->pos].end <= slot)
		f->pos++;
	f->stream_lsn = slot;
	f->max_fed = slot;
	f->floor = UINT64_MAX;
	if (r == LSN_RESUME_REWOUND) {
		require(f, f->lt.rewound[0] != '\0', "rewound without a reason");
		f->stopped = true;
		return;
	}
	f->known_system = f->system;
	f->known_timeline = f->timeline;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fuzz f; /* large: not on the stack */

	memset(&f, 0, sizeof(f));
	f.in = data;
	f.len = size;
	f.pgo = (size & 1) != 0;
	f.next_xid = 700;
	f.known_system = -1;
	f.slot = BASE_LSN;
	f.wal_pos = BASE_LSN;
	lsn_init(&f.lt);
	op_reconnect(&f, RC_SAME);
	check(&f);

	while (f.at < f.len && !f.stopped) {
		unsigned op = next_byte(&f);

		f.op++;
		switch (op & 15) {
		case 0: case 1: op_begin(&f); break;
		case 2: case 3: case 4: op_event(&f); break;
		case 5: case 6: op_commit(&f); break;
		case 7: case 8: op_ack(&f, true); break;
		case 9: op_ack(&f, (op & 0x30) != 0); break;
		case 10: op_keepalive(&f); break;
		case 11: op_received(&f); break;
		case 12: op_status(&f); break;
		case 13: op_reconnect(&f, RC_SAME); break;
		case 14: op_reconnect(&f, (op & 0x10) ? RC_LOST_UPDATES
		                                      : RC_RESTORED); break;
		case 15:
			if ((op & 0xf0) == 0xf0)
				op_reconnect(&f, RC_OTHER_CLUSTER);
			else
				op_reconnect(&f, RC_LOST_UPDATES);
			break;
		}
		check(&f);
	}
	lsn_free(&f.lt);
	return 0;
}
