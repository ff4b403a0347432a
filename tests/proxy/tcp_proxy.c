/* SPDX-License-Identifier: Apache-2.0 */
/* tcp_proxy.c -- a loopback TCP proxy whose faults are switched at run time
 * by one-line commands on stdin, for the network fault tests: a half-open
 * peer, resets, connections cut after N bytes, delays, a refused port and a
 * PostgreSQL ErrorResponse injected into a live replication stream. A test
 * tool only: it is never linked into the relay.
 *
 *   build/tcp-proxy [--port PORT] HOST:PORT
 *
 * Listens on 127.0.0.1:PORT (default 0: the kernel picks one) and forwards
 * every connection to HOST:PORT. One thread, one poll() loop, a bounded
 * buffer per direction (a full one stops reading: TCP pushes back).
 * Protocol, all lines end in '\n':
 *
 *   stdout, first line:  port=PORT          the port it listens on
 *   stdin:               one command a line
 *   stdout:              one answer per input line, flushed: "ok" (stats:
 *                        "ok " and figures) or "error: REASON"; a blank
 *                        line or one starting with '#' is answered "ok"
 *
 * It ends (connections closed, exit 0) on "quit", on EOF of stdin and on
 * SIGTERM, SIGINT or SIGHUP. One line per connection event goes to stderr.
 * Exit 1: cannot listen, resolve HOST or write stdout; exit 2: usage.
 *
 * Data modes. SCOPE is "all" (default: the connections open now and those
 * accepted later), "now" (only the open ones) or "new" (only later ones):
 *
 *   pass [SCOPE]              forward at once; with scope all or new it
 *                             also ends "refuse"
 *   delay MS [SCOPE]          forward each chunk MS ms after it arrived,
 *                             both directions, order kept
 *   blackhole [SCOPE]         keep the sockets open and drop all data, both
 *                             ways, including what was buffered; a side's
 *                             close or reset is not passed on, so the other
 *                             side sees a silent, half-open peer. A later
 *                             pass or delay passes on a close that happened
 *                             meanwhile (the partition healed)
 *   close_after BYTES [SCOPE] forward at most BYTES more bytes from the
 *                             server (counted per connection, from now or
 *                             from its accept), then close both sides; the
 *                             cut falls wherever the count ends, mid-message
 *                             as often as not
 *   blackhole_after_ready N [SCOPE]
 *                             forward until the server has sent N more
 *                             PostgreSQL ReadyForQuery messages (counted
 *                             from now or from the accept: 1 is the end of
 *                             the start-up), then blackhole the connection:
 *                             a peer that goes silent between two queries
 *                             (connections whose framing is unknown are
 *                             left alone)
 *
 * Actions on the connections open now:
 *
 *   reset                     RST both sides (SO_LINGER 0, close)
 *   inject_error [stall] [TEXT...]
 *                             on every connection in a PostgreSQL COPY BOTH
 *                             stream (a CopyBothResponse seen, framing
 *                             intact): forward the server's bytes up to the
 *                             end of the message in progress, close the
 *                             server side, send the client an ErrorResponse
 *                             (severity ERROR, SQLSTATE XX000, message TEXT,
 *                             default "tcp-proxy: injected error"), then
 *                             close the client side; with "stall" keep the
 *                             client side open and silent instead. "error:"
 *                             when no connection streams
 *   refuse                    close the listening socket: connects are
 *                             refused (open connections carry on)
 *   accept                    listen again on the same port
 *   stats                     "ok conns=N accepted=N streaming=N resets=N
 *                             cuts=N injected=N refusing=0|1 mode=M
 *                             delay=MS close_after=BYTES
 *                             blackhole_after_ready=N" (the last four: what
 *                             connections accepted from now on get)
 *   quit                      answer "ok", close everything, exit 0
 *
 * What it does not do: TLS or GSS streams are forwarded but never framed,
 * so inject_error skips them; at most PX_CONNS_MAX connections, more are
 * closed at once; IPv4 listener only.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PX_LINE_MAX 1024            /* longest command line, '\n' included */
#define PX_ARGS_MAX 8               /* words parsed before TEXT */
#define PX_ERRLEN 256               /* answer text after "error: " */
#define PX_CONNS_MAX 64             /* open connections */
#define PX_BUF (256 * 1024)         /* bytes waiting, per direction */
#define PX_MARKS 1024               /* chunks waiting, per direction */
#define PX_MSG_MAX 200              /* ErrorResponse message text */
#define PX_POLL_MAX (3 + 2 * PX_CONNS_MAX)

enum px_mode { MODE_PASS, MODE_BLACKHOLE };

static const char *const mode_names[] = { "pass", "blackhole" };

/* Where a mode command applies. */
enum px_scope { SCOPE_ALL, SCOPE_NOW, SCOPE_NEW };

/* A chunk boundary in a half's stream and when the bytes before it may
 * leave: delay keeps arrival order, so a chunk never overtakes another. */
struct mark {
	uint64_t end;                 /* stream offset just past the chunk */
	int64_t due_us;               /* monotonic time it may be written */
};

/* One direction of a connection: bytes read from its source that wait to
 * be written to its destination. */
struct half {
	char buf[PX_BUF];
	size_t start, end;            /* buf[start, end) waits */
	uint64_t in, out;             /* stream offsets read and written */
	struct mark marks[PX_MARKS];  /* ring, oldest first */
	size_t mhead, mlen;
	bool eof;                     /* the source sent FIN, reset or is gone */
	bool shut;                    /* shutdown(SHUT_WR) done on the
	                               * destination, or it takes nothing more */
};

/* What the proxy knows of PostgreSQL's framing in the server's stream:
 * enough to find message boundaries (one type byte, an int32 length that
 * counts itself, the body). Before the first framed message the server
 * may answer an SSLRequest or GSSENCRequest with one byte: 'N' (refused)
 * or 'S'/'G' (accepted: what follows is encrypted). None of these bytes
 * can start the first framed message, which is 'R', 'E' or 'v'. */
struct pgwatch {
	bool framed;                  /* a framed message was seen */
	bool opaque;                  /* encrypted, garbled or bytes dropped */
	bool streaming;               /* CopyBothResponse, no ReadyForQuery
	                               * since */
	unsigned char hdr[5];         /* type and length being read */
	size_t hdr_have;
	uint32_t left;                /* body bytes of the current message */
	uint64_t pos;                 /* server bytes followed so far */
	uint64_t readies;             /* ReadyForQuery messages seen */
	uint64_t ready_target;        /* the count that arms a stall; 0 none */
	uint64_t stall_at;            /* stream offset just past that
	                               * ReadyForQuery; 0 none */
};

enum inj_state {
	INJ_NONE,
	INJ_WAIT,                     /* reading to the end of the message */
	INJ_QUEUED,                   /* ErrorResponse buffered for the client */
	INJ_DONE,
};

struct conn {
	unsigned id;
	int cfd;                      /* the accepted client socket, or -1 */
	int sfd;                      /* the socket to the target, or -1 */
	bool connecting;              /* sfd's non-blocking connect runs */
	enum px_mode mode;
	int delay_ms;
	int64_t budget;               /* server bytes left before the cut;
	                               * -1: no close_after */
	bool discard_client;          /* after an injection: drop what the
	                               * client sends */
	struct half up;               /* client -> server */
	struct half down;             /* server -> client */
	struct pgwatch pg;
	enum inj_state inj;
	bool inj_stall;
	char inj_msg[PX_MSG_MAX + 1];
};

struct proxy {
	int lfd;                      /* listening socket; -1 while refusing */
	int port;
	struct sockaddr_storage target;
	socklen_t target_len;
	int sigfd;
	bool stop;
	bool stdin_open;
	struct conn *conns[PX_CONNS_MAX];
	unsigned next_id;
	/* What connections accepted from now on start with. */
	enum px_mode new_mode;
	int new_delay_ms;
	int64_t new_budget;
	uint64_t new_ready;           /* blackhole_after_ready; 0 off */
	/* Figures for "stats". */
	uint64_t accepted, resets, cuts, injected;
};

/* ---------------------------------------------------------------- helpers */

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* One stderr line, prefixed with the wall clock to the millisecond, so
 * that it can be lined up with the relay's and the server's logs. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void say(const char *fmt, ...)
{
	struct timespec ts;
	struct tm tm;
	char stamp[32];
	va_list ap;

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%H:%M:%S", &tm);
	fprintf(stderr, "tcp-proxy %s.%03ld: ", stamp, ts.tv_nsec / 1000000);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Parses a whole decimal word into [min, max]; 0 or -1. */
static int parse_long(const char *s, long long min, long long max,
		      long long *out)
{
	char *end;
	long long v;

	if (*s == '\0')
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

static void put_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static uint32_t get_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static void set_nodelay(int fd)
{
	int one = 1;

	/* Small frames (status updates, keepalives) must not wait for
	 * Nagle: "delay" would otherwise not be what it says. */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* Closes fd so that the peer gets an RST instead of a FIN. */
static void close_rst(int fd)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	if (fd < 0)
		return;
	(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
}

/* ---------------------------------------------------------------- halves */

static void half_clear(struct half *h)
{
	h->start = h->end = 0;
	h->out = h->in;
	h->mhead = h->mlen = 0;
}

static size_t half_len(const struct half *h)
{
	return h->end - h->start;
}

/* Room for the next read: compacts the buffer when its tail is used up. */
static size_t half_room(struct half *h)
{
	if (h->mlen == PX_MARKS)
		return 0;
	if (h->end == PX_BUF && h->start > 0) {
		memmove(h->buf, h->buf + h->start, h->end - h->start);
		h->end -= h->start;
		h->start = 0;
	}
	return PX_BUF - h->end;
}

/* Records that the bytes up to h->in may leave at due_us. A chunk that is
 * due no later than the last one joins it: it could not leave earlier
 * anyway, and in pass mode the ring then holds one mark. */
static void half_mark(struct half *h, int64_t due_us, int64_t now)
{
	struct mark *last = NULL;

	if (h->mlen > 0)
		last = &h->marks[(h->mhead + h->mlen - 1) % PX_MARKS];
	if (last != NULL &&
	    (due_us <= last->due_us || (due_us <= now && last->due_us <= now))) {
		last->end = h->in;
		return;
	}
	h->marks[(h->mhead + h->mlen) % PX_MARKS] =
		(struct mark){ .end = h->in, .due_us = due_us };
	h->mlen++;
}

/* Bytes that may be written now (their chunks are due). */
static size_t half_due(const struct half *h, int64_t now)
{
	uint64_t end = h->out;
	size_t i;

	for (i = 0; i < h->mlen; i++) {
		const struct mark *m = &h->marks[(h->mhead + i) % PX_MARKS];

		if (m->due_us > now)
			break;
		end = m->end;
	}
	return (size_t)(end - h->out);
}

/* When the first chunk that is not due yet will be; INT64_MAX if none. */
static int64_t half_next_due(const struct half *h, int64_t now)
{
	size_t i;

	for (i = 0; i < h->mlen; i++) {
		const struct mark *m = &h->marks[(h->mhead + i) % PX_MARKS];

		if (m->due_us > now)
			return m->due_us;
	}
	return INT64_MAX;
}

/* Appends bytes the proxy itself writes (the ErrorResponse); -1 when they
 * do not fit yet. */
static int half_put(struct half *h, const void *p, size_t n, int64_t due_us,
		    int64_t now)
{
	if (half_room(h) < n)
		return -1;
	memcpy(h->buf + h->end, p, n);
	h->end += n;
	h->in += n;
	half_mark(h, due_us, now);
	return 0;
}

/* Writes what is due to fd, at most max bytes (SIZE_MAX: no limit).
 * Returns the bytes written, or -1 when the destination is gone. */
static ssize_t half_write(struct half *h, int fd, int64_t now, size_t max)
{
	size_t n = half_due(h, now);
	ssize_t w;

	if (n > max)
		n = max;
	if (n == 0)
		return 0;
	w = send(fd, h->buf + h->start, n, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (w < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR
		       ? 0 : -1;
	h->start += (size_t)w;
	h->out += (uint64_t)w;
	while (h->mlen > 0 && h->marks[h->mhead].end <= h->out) {
		h->mhead = (h->mhead + 1) % PX_MARKS;
		h->mlen--;
	}
	if (h->start == h->end)
		h->start = h->end = 0;
	return w;
}

/* ---------------------------------------------------------------- framing */

/* Follows the server's stream over n bytes. */
static void pg_feed(struct pgwatch *pg, const unsigned char *p, size_t n)
{
	while (n > 0 && !pg->opaque) {
		if (pg->left > 0) {
			size_t k = n < pg->left ? n : pg->left;

			pg->left -= (uint32_t)k;
			pg->pos += k;
			p += k;
			n -= k;
			continue;
		}
		if (pg->hdr_have == 0 && !pg->framed) {
			if (*p == 'N') { /* SSL or GSS encryption refused */
				pg->pos++;
				p++;
				n--;
				continue;
			}
			if (*p == 'S' || *p == 'G') { /* encrypted from here on */
				pg->opaque = true;
				return;
			}
		}
		pg->hdr[pg->hdr_have++] = *p++;
		pg->pos++;
		n--;
		if (pg->hdr_have < sizeof(pg->hdr))
			continue;
		pg->hdr_have = 0;
		pg->framed = true;
		if (get_be32(pg->hdr + 1) < 4) {
			pg->opaque = true; /* not PostgreSQL's protocol */
			return;
		}
		pg->left = get_be32(pg->hdr + 1) - 4;
		if (pg->hdr[0] == 'W')
			pg->streaming = true;  /* CopyBothResponse */
		else if (pg->hdr[0] == 'Z') {
			pg->streaming = false; /* ReadyForQuery: COPY is over */
			pg->readies++;
			if (pg->ready_target != 0 &&
			    pg->readies == pg->ready_target)
				pg->stall_at = pg->pos + pg->left;
		}
	}
}

/* How many more server bytes to read before the stream is at a message
 * boundary (0: it is). Only meaningful while the framing is known. */
static size_t pg_to_boundary(const struct pgwatch *pg)
{
	if (pg->hdr_have > 0)
		return sizeof(pg->hdr) - pg->hdr_have;
	return pg->left;
}

/* An ErrorResponse: 'E', int32 length (itself included), then fields of a
 * type byte and a NUL-terminated string, then a NUL. S is the localized
 * severity, V the one clients may parse (protocol 3.0, PostgreSQL 9.6+),
 * C the SQLSTATE (XX000: internal_error, what an elog(ERROR) without a
 * code reports, as a plugin's decoding error does), M the message. */
static size_t pg_error_frame(const char *msg, unsigned char *out,
			     size_t outlen)
{
	static const struct {
		char type;
		const char *value;
	} fixed[] = {
		{ 'S', "ERROR" },
		{ 'V', "ERROR" },
		{ 'C', "XX000" },
	};
	size_t n = 5, i, len;

	for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		len = strlen(fixed[i].value) + 1;
		if (n + 1 + len > outlen)
			return 0;
		out[n++] = (unsigned char)fixed[i].type;
		memcpy(out + n, fixed[i].value, len);
		n += len;
	}
	len = strlen(msg) + 1;
	if (n + 1 + len + 1 > outlen)
		return 0;
	out[n++] = 'M';
	memcpy(out + n, msg, len);
	n += len;
	out[n++] = '\0'; /* end of the fields */
	out[0] = 'E';
	put_be32(out + 1, (uint32_t)(n - 1));
	return n;
}

/* ---------------------------------------------------------------- connections */

static void conn_free(struct proxy *px, int slot, bool rst, const char *why)
{
	struct conn *c = px->conns[slot];

	say("conn %u: closed (%s): %llu bytes to the server, %llu to the "
	    "client", c->id, why, (unsigned long long)c->up.out,
	    (unsigned long long)c->down.out);
	if (rst) {
		close_rst(c->cfd);
		close_rst(c->sfd);
	} else {
		if (c->cfd >= 0)
			close(c->cfd);
		if (c->sfd >= 0)
			close(c->sfd);
	}
	free(c);
	px->conns[slot] = NULL;
}

/* Sets a connection's mode. Blackholing drops what waits: a partition
 * loses what was in flight, and the framing of the server's stream is
 * then unknown. */
static void conn_set_mode(struct conn *c, enum px_mode mode, int delay_ms)
{
	if (mode == MODE_BLACKHOLE && c->mode != MODE_BLACKHOLE) {
		if (half_len(&c->down) > 0 || c->pg.hdr_have > 0 ||
		    c->pg.left > 0)
			c->pg.opaque = true;
		half_clear(&c->up);
		half_clear(&c->down);
	}
	c->mode = mode;
	c->delay_ms = delay_ms;
}

static void px_accept(struct proxy *px)
{
	struct conn *c;
	int cfd, sfd, slot;

	cfd = accept4(px->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (cfd < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
		    errno != ECONNABORTED)
			say("accept: %s", strerror(errno));
		return;
	}
	for (slot = 0; slot < PX_CONNS_MAX; slot++)
		if (px->conns[slot] == NULL)
			break;
	if (slot == PX_CONNS_MAX) {
		say("accept: %d connections open already; closed the new one",
		    PX_CONNS_MAX);
		close(cfd);
		return;
	}
	sfd = socket(px->target.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
		     SOCK_CLOEXEC, 0);
	if (sfd < 0) {
		say("socket: %s", strerror(errno));
		close(cfd);
		return;
	}
	set_nodelay(cfd);
	set_nodelay(sfd);
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		say("out of memory for a connection");
		close(cfd);
		close(sfd);
		return;
	}
	c->id = ++px->next_id;
	c->cfd = cfd;
	c->sfd = sfd;
	c->mode = px->new_mode;
	c->delay_ms = px->new_delay_ms;
	c->budget = px->new_budget;
	c->pg.ready_target = px->new_ready;
	px->accepted++;
	px->conns[slot] = c;
	if (connect(sfd, (struct sockaddr *)&px->target, px->target_len) < 0) {
		if (errno != EINPROGRESS) {
			say("conn %u: connect to the target: %s", c->id,
			    strerror(errno));
			conn_free(px, slot, false, "target refused");
			return;
		}
		c->connecting = true;
	}
	say("conn %u: accepted (%s%s%s)", c->id, mode_names[c->mode],
	    c->budget >= 0 ? ", close_after armed" : "",
	    c->pg.ready_target != 0 ? ", blackhole_after_ready armed" : "");
}

/* Reads what fd offers into h, at most cap bytes. Returns the bytes read
 * into h (0 also for EOF, which sets h->eof), or -1 on a read error. In
 * blackhole mode (or when discarding) the bytes are read and dropped. */
static ssize_t conn_read(struct conn *c, struct half *h, int fd, size_t cap,
			 bool discard, int64_t now)
{
	char scratch[16384];
	size_t room;
	ssize_t n;

	if (discard) {
		n = recv(fd, scratch, sizeof(scratch), MSG_DONTWAIT);
		if (n > 0 && h == &c->down)
			c->pg.opaque = true; /* the client misses these bytes */
		if (n > 0)
			h->in += (uint64_t)n, h->out += (uint64_t)n;
	} else {
		room = half_room(h);
		if (room > cap)
			room = cap;
		if (room == 0)
			return 0;
		n = recv(fd, h->buf + h->end, room, MSG_DONTWAIT);
		if (n > 0) {
			if (h == &c->down)
				pg_feed(&c->pg, (unsigned char *)h->buf + h->end,
					(size_t)n);
			h->end += (size_t)n;
			h->in += (uint64_t)n;
			half_mark(h, now + (int64_t)c->delay_ms * 1000, now);
		}
	}
	if (n == 0) {
		h->eof = true;
		return 0;
	}
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR
		       ? 0 : -1;
	return discard ? 0 : n;
}

/* How many server bytes the connection may read now. */
static size_t conn_server_cap(const struct conn *c)
{
	size_t cap = SIZE_MAX;

	if (c->inj == INJ_WAIT)
		cap = pg_to_boundary(&c->pg);
	else if (c->inj != INJ_NONE)
		cap = 0;
	return cap;
}

/* Poll interest for each side of a connection. */
static void conn_events(struct conn *c, int64_t now, short *cev, short *sev)
{
	*cev = *sev = 0;
	if (c->mode == MODE_BLACKHOLE) {
		if (c->cfd >= 0 && !c->up.eof)
			*cev |= POLLIN;
		if (c->sfd >= 0 && !c->down.eof)
			*sev |= c->connecting ? POLLOUT : POLLIN;
		return;
	}
	if (c->cfd >= 0 && !c->up.eof &&
	    (c->discard_client || half_room(&c->up) > 0))
		*cev |= POLLIN;
	if (c->cfd >= 0 && half_due(&c->down, now) > 0 && c->budget != 0)
		*cev |= POLLOUT;
	if (c->sfd >= 0 && c->connecting) {
		*sev |= POLLOUT;
		return;
	}
	if (c->sfd >= 0 && !c->down.eof && conn_server_cap(c) > 0 &&
	    half_room(&c->down) > 0)
		*sev |= POLLIN;
	if (c->sfd >= 0 && !c->up.shut && half_due(&c->up, now) > 0)
		*sev |= POLLOUT;
}

/* Moves an injection on: once the server's stream is at a message
 * boundary, the server side goes, the ErrorResponse is queued for the
 * client, and what the client sends from then on is dropped. */
static void conn_inject_step(struct conn *c, int64_t now)
{
	unsigned char frame[PX_MSG_MAX + 64];
	size_t n;

	if (c->inj != INJ_WAIT || c->mode == MODE_BLACKHOLE)
		return;
	if (c->pg.opaque) {
		say("conn %u: injection given up: the server's framing is lost",
		    c->id);
		c->inj = INJ_NONE;
		return;
	}
	if (pg_to_boundary(&c->pg) > 0 && !c->down.eof)
		return;
	n = pg_error_frame(c->inj_msg, frame, sizeof(frame));
	if (n == 0 ||
	    half_put(&c->down, frame, n, now + (int64_t)c->delay_ms * 1000,
		     now) < 0)
		return; /* no room yet: the client reads what waits first */
	if (c->sfd >= 0)
		close(c->sfd);
	c->sfd = -1;
	c->connecting = false;
	c->down.eof = true;     /* nothing more comes from the server */
	c->up.shut = true;      /* nothing more goes to it */
	half_clear(&c->up);
	c->discard_client = true;
	c->inj = INJ_QUEUED;
	say("conn %u: ErrorResponse queued after %llu server bytes; server "
	    "side closed", c->id, (unsigned long long)(c->down.in - n));
}

/* Serves one connection after poll(); returns false once it is freed. */
static bool conn_serve(struct proxy *px, int slot, short crev, short srev,
		       int64_t now)
{
	struct conn *c = px->conns[slot];
	bool black = c->mode == MODE_BLACKHOLE;
	ssize_t w;

	if (c->sfd >= 0 && c->connecting && srev != 0) {
		int err = 0;
		socklen_t len = sizeof(err);

		if (getsockopt(c->sfd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
			err = errno;
		if (err != 0) {
			say("conn %u: connect to the target: %s", c->id,
			    strerror(err));
			conn_free(px, slot, false, "target refused");
			return false;
		}
		c->connecting = false;
		srev = 0;
	}

	/* Reads. A read error in pass mode resets both sides; in blackhole
	 * mode it only ends that side, like an EOF, unseen by the other. */
	if (c->cfd >= 0 && !c->up.eof && (crev & (POLLIN | POLLHUP | POLLERR))) {
		if (conn_read(c, &c->up, c->cfd, SIZE_MAX,
			      black || c->discard_client, now) < 0) {
			if (!black) {
				conn_free(px, slot, true, "client reset");
				return false;
			}
			c->up.eof = true;
		}
	}
	if (c->sfd >= 0 && !c->connecting && !c->down.eof &&
	    (srev & (POLLIN | POLLHUP | POLLERR))) {
		size_t cap = black ? SIZE_MAX : conn_server_cap(c);

		if (cap > 0 && conn_read(c, &c->down, c->sfd, cap, black,
					 now) < 0) {
			if (!black) {
				conn_free(px, slot, true, "server reset");
				return false;
			}
			c->down.eof = true;
		}
	}
	conn_inject_step(c, now);

	if (black) {
		/* Both sides gone: nothing left to keep half-open. */
		if (c->up.eof && c->down.eof) {
			conn_free(px, slot, false, "both sides closed");
			return false;
		}
		return true;
	}

	/* Writes. */
	if (c->sfd >= 0 && !c->connecting && !c->up.shut) {
		if (half_write(&c->up, c->sfd, now, SIZE_MAX) < 0) {
			conn_free(px, slot, true, "server gone");
			return false;
		}
	}
	if (c->cfd >= 0 && c->budget != 0) {
		size_t max = c->budget < 0 ? SIZE_MAX : (size_t)c->budget;

		if (c->pg.stall_at != 0 && c->pg.stall_at - c->down.out < max)
			max = (size_t)(c->pg.stall_at - c->down.out);
		w = half_write(&c->down, c->cfd, now, max);
		if (w < 0) {
			conn_free(px, slot, true, "client gone");
			return false;
		}
		if (c->budget > 0)
			c->budget -= w;
		if (c->budget == 0) {
			px->cuts++;
			conn_free(px, slot, false, "close_after: byte budget "
				  "used up");
			return false;
		}
		if (c->pg.stall_at != 0 && c->down.out == c->pg.stall_at) {
			say("conn %u: blackholed after ReadyForQuery #%llu",
			    c->id, (unsigned long long)c->pg.readies);
			c->pg.stall_at = c->pg.ready_target = 0;
			conn_set_mode(c, MODE_BLACKHOLE, 0);
			return true;
		}
	}

	/* The injection is out: close, or keep the client waiting. */
	if (c->inj == INJ_QUEUED && half_len(&c->down) == 0) {
		c->inj = INJ_DONE;
		px->injected++;
		say("conn %u: ErrorResponse sent%s", c->id,
		    c->inj_stall ? "; the client side stays open, silent"
				 : "; closing the client side");
		if (c->inj_stall) {
			conn_set_mode(c, MODE_BLACKHOLE, 0);
			return true;
		}
	}

	/* A close passes on once what was in flight before it is out. */
	if (c->up.eof && half_len(&c->up) == 0 && !c->up.shut &&
	    !c->connecting) {
		if (c->sfd >= 0)
			(void)shutdown(c->sfd, SHUT_WR);
		c->up.shut = true;
	}
	if (c->down.eof && half_len(&c->down) == 0 && !c->down.shut) {
		if (c->cfd >= 0)
			(void)shutdown(c->cfd, SHUT_WR);
		c->down.shut = true;
	}
	if (c->up.shut && c->down.shut) {
		conn_free(px, slot, false, "both sides done");
		return false;
	}
	return true;
}

/* ---------------------------------------------------------------- listening */

static int px_listen(struct proxy *px, char *errbuf, size_t errlen)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd, one = 1;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons((uint16_t)px->port);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(errbuf, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(fd, 64) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
		snprintf(errbuf, errlen, "listen on 127.0.0.1:%d: %s", px->port,
			 strerror(errno));
		close(fd);
		return -1;
	}
	px->port = ntohs(sa.sin_port);
	px->lfd = fd;
	return 0;
}

/* Resolves HOST:PORT (the last ':' splits; [v6]:port allowed). */
static int px_resolve(struct proxy *px, const char *spec, char *errbuf,
		      size_t errlen)
{
	char host[256];
	const char *colon = strrchr(spec, ':');
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	size_t hlen;
	int rc;

	if (colon == NULL || colon == spec || colon[1] == '\0') {
		snprintf(errbuf, errlen, "target must be HOST:PORT, not '%s'",
			 spec);
		return -1;
	}
	hlen = (size_t)(colon - spec);
	if (spec[0] == '[' && hlen >= 2 && spec[hlen - 1] == ']') {
		spec++;
		hlen -= 2;
	}
	if (hlen >= sizeof(host)) {
		snprintf(errbuf, errlen, "target host too long");
		return -1;
	}
	memcpy(host, spec, hlen);
	host[hlen] = '\0';
	rc = getaddrinfo(host, colon + 1, &hints, &res);
	if (rc != 0 || res == NULL) {
		snprintf(errbuf, errlen, "cannot resolve '%.128s': %s", host,
			 rc != 0 ? gai_strerror(rc) : "no address");
		return -1;
	}
	memcpy(&px->target, res->ai_addr, res->ai_addrlen);
	px->target_len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

/* ---------------------------------------------------------------- commands */

/* Each command gets its words (argv[0] is its name) and the raw rest of
 * the line after them (for TEXT); returns 0, or -1 with the reason in
 * errbuf. A command may write its own answer into okbuf. */
struct cmdctx {
	struct proxy *px;
	int argc;
	char **argv;
	char *okbuf;
	size_t oklen;
	char *errbuf;
	size_t errlen;
};

static int parse_scope(struct cmdctx *x, int at, enum px_scope *scope)
{
	*scope = SCOPE_ALL;
	if (x->argc <= at)
		return 0;
	if (x->argc > at + 1) {
		snprintf(x->errbuf, x->errlen, "one SCOPE at most");
		return -1;
	}
	if (strcmp(x->argv[at], "all") == 0)
		*scope = SCOPE_ALL;
	else if (strcmp(x->argv[at], "now") == 0)
		*scope = SCOPE_NOW;
	else if (strcmp(x->argv[at], "new") == 0)
		*scope = SCOPE_NEW;
	else {
		snprintf(x->errbuf, x->errlen, "SCOPE must be all, now or new, "
			 "not '%s'", x->argv[at]);
		return -1;
	}
	return 0;
}

/* Applies a data mode to the open connections and/or the later ones.
 * budget: -1 leaves close_after off, -2 keeps each one's as it is. */
static void apply_mode(struct proxy *px, enum px_scope scope,
		       enum px_mode mode, int delay_ms, int64_t budget)
{
	int i;

	if (scope != SCOPE_NEW) {
		for (i = 0; i < PX_CONNS_MAX; i++) {
			struct conn *c = px->conns[i];

			if (c == NULL || c->inj == INJ_QUEUED)
				continue;
			if (c->inj == INJ_DONE && c->inj_stall &&
			    mode == MODE_BLACKHOLE)
				continue;
			conn_set_mode(c, mode, delay_ms);
			if (budget != -2)
				c->budget = budget;
			c->pg.ready_target = c->pg.stall_at = 0;
		}
	}
	if (scope != SCOPE_NOW) {
		px->new_mode = mode;
		px->new_delay_ms = delay_ms;
		if (budget != -2)
			px->new_budget = budget;
		px->new_ready = 0;
	}
}

static int cmd_pass(struct cmdctx *x)
{
	enum px_scope scope;
	char err[PX_ERRLEN];

	if (parse_scope(x, 1, &scope) != 0)
		return -1;
	if (scope != SCOPE_NOW && x->px->lfd < 0 &&
	    px_listen(x->px, err, sizeof(err)) != 0) {
		snprintf(x->errbuf, x->errlen, "%s", err);
		return -1;
	}
	apply_mode(x->px, scope, MODE_PASS, 0, -1);
	return 0;
}

static int cmd_delay(struct cmdctx *x)
{
	enum px_scope scope;
	long long ms;

	if (parse_long(x->argv[1], 0, 600000, &ms) != 0) {
		snprintf(x->errbuf, x->errlen, "MS must be 0..600000, not '%s'",
			 x->argv[1]);
		return -1;
	}
	if (parse_scope(x, 2, &scope) != 0)
		return -1;
	apply_mode(x->px, scope, MODE_PASS, (int)ms, -1);
	return 0;
}

static int cmd_blackhole(struct cmdctx *x)
{
	enum px_scope scope;

	if (parse_scope(x, 1, &scope) != 0)
		return -1;
	apply_mode(x->px, scope, MODE_BLACKHOLE, 0, -1);
	return 0;
}

static int cmd_close_after(struct cmdctx *x)
{
	enum px_scope scope;
	long long bytes;
	int i;

	if (parse_long(x->argv[1], 1, INT64_MAX / 2, &bytes) != 0) {
		snprintf(x->errbuf, x->errlen, "BYTES must be a positive "
			 "number, not '%s'", x->argv[1]);
		return -1;
	}
	if (parse_scope(x, 2, &scope) != 0)
		return -1;
	/* The mode stays (a delay keeps delaying); only the budget is set. */
	if (scope != SCOPE_NEW)
		for (i = 0; i < PX_CONNS_MAX; i++)
			if (x->px->conns[i] != NULL)
				x->px->conns[i]->budget = bytes;
	if (scope != SCOPE_NOW)
		x->px->new_budget = bytes;
	return 0;
}

static int cmd_blackhole_after_ready(struct cmdctx *x)
{
	enum px_scope scope;
	long long n;
	int i;

	if (parse_long(x->argv[1], 1, 1000000, &n) != 0) {
		snprintf(x->errbuf, x->errlen, "N must be 1..1000000, not '%s'",
			 x->argv[1]);
		return -1;
	}
	if (parse_scope(x, 2, &scope) != 0)
		return -1;
	if (scope != SCOPE_NEW) {
		for (i = 0; i < PX_CONNS_MAX; i++) {
			struct conn *c = x->px->conns[i];

			if (c == NULL || c->pg.opaque || c->inj != INJ_NONE)
				continue;
			c->pg.ready_target = c->pg.readies + (uint64_t)n;
			c->pg.stall_at = 0;
		}
	}
	if (scope != SCOPE_NOW)
		x->px->new_ready = (uint64_t)n;
	return 0;
}

static int cmd_reset(struct cmdctx *x)
{
	int i, n = 0;

	for (i = 0; i < PX_CONNS_MAX; i++) {
		if (x->px->conns[i] == NULL)
			continue;
		conn_free(x->px, i, true, "reset command");
		n++;
	}
	x->px->resets += (uint64_t)n;
	return 0;
}

static int cmd_inject_error(struct cmdctx *x)
{
	const char *msg = "tcp-proxy: injected error";
	char text[PX_LINE_MAX];
	bool stall = false;
	int first = 1, i, n = 0;

	if (x->argc > 1 && strcmp(x->argv[1], "stall") == 0) {
		stall = true;
		first = 2;
	}
	if (x->argc > first) {
		size_t used = 0;

		text[0] = '\0';
		for (i = first; i < x->argc; i++) {
			int k = snprintf(text + used, sizeof(text) - used, "%s%s",
					 i > first ? " " : "", x->argv[i]);
			if (k < 0 || (size_t)k >= sizeof(text) - used)
				break;
			used += (size_t)k;
		}
		if (used > PX_MSG_MAX) {
			snprintf(x->errbuf, x->errlen, "TEXT longer than %d "
				 "bytes", PX_MSG_MAX);
			return -1;
		}
		msg = text;
	}
	for (i = 0; i < PX_CONNS_MAX; i++) {
		struct conn *c = x->px->conns[i];

		if (c == NULL || c->mode == MODE_BLACKHOLE || c->inj != INJ_NONE ||
		    !c->pg.streaming || c->pg.opaque || c->cfd < 0 || c->sfd < 0)
			continue;
		c->inj = INJ_WAIT;
		c->inj_stall = stall;
		snprintf(c->inj_msg, sizeof(c->inj_msg), "%.*s", PX_MSG_MAX, msg);
		say("conn %u: injection armed (%s)", c->id,
		    stall ? "stall" : "close");
		n++;
	}
	if (n == 0) {
		snprintf(x->errbuf, x->errlen, "no connection is in a COPY BOTH "
			 "stream with its framing known");
		return -1;
	}
	return 0;
}

static int cmd_refuse(struct cmdctx *x)
{
	if (x->px->lfd >= 0) {
		close(x->px->lfd);
		x->px->lfd = -1;
		say("refusing connections");
	}
	return 0;
}

static int cmd_accept(struct cmdctx *x)
{
	if (x->px->lfd < 0) {
		if (px_listen(x->px, x->errbuf, x->errlen) != 0)
			return -1;
		say("accepting connections again");
	}
	return 0;
}

static int cmd_stats(struct cmdctx *x)
{
	struct proxy *px = x->px;
	int i, open = 0, streaming = 0;

	for (i = 0; i < PX_CONNS_MAX; i++) {
		if (px->conns[i] == NULL)
			continue;
		open++;
		if (px->conns[i]->pg.streaming && !px->conns[i]->pg.opaque)
			streaming++;
	}
	snprintf(x->okbuf, x->oklen, "ok conns=%d accepted=%llu streaming=%d "
		 "resets=%llu cuts=%llu injected=%llu refusing=%d mode=%s "
		 "delay=%d close_after=%lld blackhole_after_ready=%llu", open,
		 (unsigned long long)px->accepted, streaming,
		 (unsigned long long)px->resets, (unsigned long long)px->cuts,
		 (unsigned long long)px->injected, px->lfd < 0,
		 mode_names[px->new_mode], px->new_delay_ms,
		 (long long)px->new_budget, (unsigned long long)px->new_ready);
	return 0;
}

static int cmd_quit(struct cmdctx *x)
{
	x->px->stop = true;
	return 0;
}

static const struct {
	const char *name;
	int min_args;                 /* words after the name */
	int max_args;                 /* -1: any (TEXT) */
	const char *usage;
	int (*run)(struct cmdctx *x);
} cmds[] = {
	{ "pass", 0, 1, "pass [all|now|new]", cmd_pass },
	{ "delay", 1, 2, "delay MS [all|now|new]", cmd_delay },
	{ "blackhole", 0, 1, "blackhole [all|now|new]", cmd_blackhole },
	{ "close_after", 1, 2, "close_after BYTES [all|now|new]",
	  cmd_close_after },
	{ "blackhole_after_ready", 1, 2, "blackhole_after_ready N "
	  "[all|now|new]", cmd_blackhole_after_ready },
	{ "reset", 0, 0, "reset", cmd_reset },
	{ "inject_error", 0, -1, "inject_error [stall] [TEXT...]",
	  cmd_inject_error },
	{ "refuse", 0, 0, "refuse", cmd_refuse },
	{ "accept", 0, 0, "accept", cmd_accept },
	{ "stats", 0, 0, "stats", cmd_stats },
	{ "quit", 0, 0, "quit", cmd_quit },
};

/* Runs one command line (no '\n'), modified in place. Returns 0 with the
 * answer in okbuf (default "ok"), or -1 with the reason in errbuf. */
static int run_line(struct proxy *px, char *line, char *okbuf, size_t oklen,
		    char *errbuf, size_t errlen)
{
	char *argv[PX_ARGS_MAX + 64];
	struct cmdctx x = { .px = px, .argv = argv, .okbuf = okbuf,
			    .oklen = oklen, .errbuf = errbuf,
			    .errlen = errlen };
	char *p = line;
	size_t i;

	snprintf(okbuf, oklen, "ok");
	for (;;) {
		size_t len;

		p += strspn(p, " \t\r");
		if (*p == '\0')
			break;
		if (x.argc == (int)(sizeof(argv) / sizeof(argv[0]))) {
			snprintf(errbuf, errlen, "too many words");
			return -1;
		}
		len = strcspn(p, " \t\r");
		argv[x.argc++] = p;
		if (p[len] == '\0')
			break;
		p[len] = '\0';
		p += len + 1;
	}
	if (x.argc == 0 || argv[0][0] == '#')
		return 0;
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		if (strcmp(argv[0], cmds[i].name) != 0)
			continue;
		if (x.argc - 1 < cmds[i].min_args ||
		    (cmds[i].max_args >= 0 && x.argc - 1 > cmds[i].max_args)) {
			snprintf(errbuf, errlen, "usage: %s", cmds[i].usage);
			return -1;
		}
		return cmds[i].run(&x);
	}
	snprintf(errbuf, errlen, "unknown command '%s'", argv[0]);
	return -1;
}

/* Prints the answer and flushes it; -1 when stdout is gone. */
static int answer(int rc, const char *okbuf, const char *errbuf)
{
	if (rc == 0)
		printf("%s\n", okbuf);
	else
		printf("error: %s\n", errbuf);
	return fflush(stdout) == 0 && !ferror(stdout) ? 0 : -1;
}

/* Reads what stdin has and runs every complete line; -1 when stdout is
 * gone. EOF ends the tool, a last line without '\n' still counts. */
static int px_stdin(struct proxy *px, char *buf, size_t *used,
		    bool *discarding)
{
	char okbuf[PX_ERRLEN], errbuf[PX_ERRLEN];
	ssize_t n;
	char *nl;

	n = read(STDIN_FILENO, buf + *used, PX_LINE_MAX - 1 - *used);
	if (n < 0) {
		if (errno == EINTR || errno == EAGAIN)
			return 0;
		say("read stdin: %s", strerror(errno));
		n = 0; /* as good as EOF */
	}
	if (n == 0) {
		px->stdin_open = false;
		px->stop = true;
		if (*used > 0 && !*discarding) {
			buf[*used] = '\0';
			return answer(run_line(px, buf, okbuf, sizeof(okbuf),
					       errbuf, sizeof(errbuf)),
				      okbuf, errbuf);
		}
		return 0;
	}
	*used += (size_t)n;
	buf[*used] = '\0';
	while (!px->stop && (nl = memchr(buf, '\n', *used)) != NULL) {
		size_t len = (size_t)(nl - buf) + 1;

		*nl = '\0';
		if (*discarding) {
			*discarding = false;
		} else if (answer(run_line(px, buf, okbuf, sizeof(okbuf), errbuf,
					   sizeof(errbuf)),
				  okbuf, errbuf) != 0) {
			return -1;
		}
		memmove(buf, buf + len, *used - len);
		*used -= len;
		buf[*used] = '\0';
	}
	if (*used == PX_LINE_MAX - 1) {
		/* Answered once, now; the rest of the line is dropped. */
		if (!*discarding) {
			snprintf(errbuf, sizeof(errbuf), "line longer than %d "
				 "bytes", PX_LINE_MAX - 1);
			if (answer(-1, okbuf, errbuf) != 0)
				return -1;
		}
		*discarding = true;
		*used = 0;
	}
	return 0;
}

/* ---------------------------------------------------------------- main loop */

static int serve(struct proxy *px)
{
	char line[PX_LINE_MAX];
	size_t used = 0;
	bool discarding = false;

	while (!px->stop) {
		struct pollfd pfds[PX_POLL_MAX];
		int cidx[PX_CONNS_MAX], sidx[PX_CONNS_MAX];
		int n = 0, i, timeout = -1, istdin = -1, isig, ilisten = -1;
		int64_t now = now_us(), next = INT64_MAX;

		if (px->stdin_open) {
			istdin = n;
			pfds[n++] = (struct pollfd){ .fd = STDIN_FILENO,
						     .events = POLLIN };
		}
		isig = n;
		pfds[n++] = (struct pollfd){ .fd = px->sigfd, .events = POLLIN };
		if (px->lfd >= 0) {
			ilisten = n;
			pfds[n++] = (struct pollfd){ .fd = px->lfd,
						     .events = POLLIN };
		}
		for (i = 0; i < PX_CONNS_MAX; i++) {
			struct conn *c = px->conns[i];
			short cev, sev;
			int64_t t;

			cidx[i] = sidx[i] = -1;
			if (c == NULL)
				continue;
			conn_events(c, now, &cev, &sev);
			/* fd -1 when nothing is wanted: poll() would report
			 * a hang-up there on every turn. */
			cidx[i] = n;
			pfds[n++] = (struct pollfd){
				.fd = cev != 0 ? c->cfd : -1, .events = cev };
			sidx[i] = n;
			pfds[n++] = (struct pollfd){
				.fd = sev != 0 ? c->sfd : -1, .events = sev };
			t = half_next_due(&c->up, now);
			if (t < next)
				next = t;
			t = half_next_due(&c->down, now);
			if (t < next)
				next = t;
		}
		if (next != INT64_MAX)
			timeout = (int)((next - now + 999) / 1000);
		if (poll(pfds, (nfds_t)n, timeout) < 0) {
			if (errno == EINTR)
				continue;
			say("poll: %s", strerror(errno));
			return 0;
		}
		if (pfds[isig].revents != 0)
			break;
		if (istdin >= 0 && pfds[istdin].revents != 0 &&
		    px_stdin(px, line, &used, &discarding) != 0)
			return -1;
		if (px->stop)
			break;
		now = now_us();
		for (i = 0; i < PX_CONNS_MAX; i++) {
			/* Only connections polled this turn (a command may
			 * have closed some, or accept not added them yet). */
			if (px->conns[i] == NULL || cidx[i] < 0)
				continue;
			(void)conn_serve(px, i, pfds[cidx[i]].revents,
					 pfds[sidx[i]].revents, now);
		}
		if (ilisten >= 0 && px->lfd >= 0 &&
		    (pfds[ilisten].revents & POLLIN))
			px_accept(px);
	}
	return 0;
}

static void usage(FILE *out)
{
	size_t i;

	fprintf(out,
		"Usage: tcp-proxy [--port PORT] HOST:PORT\n"
		"\n"
		"A TCP proxy on 127.0.0.1:PORT (0, the default: any free port) "
		"to HOST:PORT,\n"
		"with faults switched by commands on stdin. Prints \"port=PORT\" "
		"first, then\n"
		"answers each command line with \"ok\" or \"error: REASON\". "
		"quit, EOF or\n"
		"SIGTERM end it.\n"
		"\n"
		"Commands:\n");
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(out, "  %s\n", cmds[i].usage);
}

/* Blocks the stop signals and returns a signalfd that reports them to the
 * loop; -1 on error. */
static int stop_signals_fd(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL) != 0)
		return -1;
	/* A reader that went away is an error on write, not a kill. */
	signal(SIGPIPE, SIG_IGN);
	return signalfd(-1, &set, SFD_CLOEXEC);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct proxy px = { .lfd = -1, .sigfd = -1, .stdin_open = true,
			    .new_mode = MODE_PASS, .new_budget = -1 };
	char err[PX_ERRLEN];
	long long v;
	int c, i, rc = 0;

	for (;;) {
		c = getopt_long(argc, argv, "h", opts, NULL);
		if (c == -1)
			break;
		switch (c) {
		case 'p':
			if (parse_long(optarg, 0, 65535, &v) != 0) {
				fprintf(stderr, "tcp-proxy: --port must be "
					"0..65535, not '%s'\n", optarg);
				return 2;
			}
			px.port = (int)v;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "tcp-proxy: want exactly one HOST:PORT\n");
		usage(stderr);
		return 2;
	}
	if (px_resolve(&px, argv[optind], err, sizeof(err)) != 0) {
		fprintf(stderr, "tcp-proxy: %s\n", err);
		return 1;
	}
	px.sigfd = stop_signals_fd();
	if (px.sigfd < 0) {
		fprintf(stderr, "tcp-proxy: signals: %s\n", strerror(errno));
		return 1;
	}
	if (px_listen(&px, err, sizeof(err)) != 0) {
		fprintf(stderr, "tcp-proxy: %s\n", err);
		return 1;
	}
	printf("port=%d\n", px.port);
	if (fflush(stdout) != 0 || serve(&px) != 0) {
		fprintf(stderr, "tcp-proxy: stdout: %s\n", strerror(errno));
		rc = 1;
	}
	for (i = 0; i < PX_CONNS_MAX; i++)
		if (px.conns[i] != NULL)
			conn_free(&px, i, false, "proxy exits");
	if (px.lfd >= 0)
		close(px.lfd);
	close(px.sigfd);
	return rc;
}
