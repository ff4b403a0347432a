/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_http.c -- libFuzzer harness: the health endpoint's request path.
 *
 * The request path is libmicrohttpd's parser plus our handlers in
 * http.c (method check, route table, /slot's query argument, the
 * connection slots and deadlines). A route-dispatch function would be
 * quicker to fuzz but would only see a path string that libmicrohttpd
 * has already parsed; the bytes a client can send reach our code through
 * libmicrohttpd's callbacks, so this harness goes the honest way: it
 * starts the real server once (http_start on 127.0.0.1:0, a published
 * snapshot so every route renders), sends each input as raw bytes over a
 * fresh TCP connection from 127.0.0.2, half-closes, reads whatever comes
 * back, and resets the connection.
 *
 * Checked: an answer, if any, starts with an HTTP/1.x status line of a
 * status the endpoint uses; and after every input a fresh GET /livez
 * from 127.0.0.1 still gets 200 "ok" (the server survived, and what the
 * input left behind does not lock out a probe). AddressSanitizer watches both the server threads and
 * our handlers. libmicrohttpd itself is not instrumented for coverage,
 * so the fuzzer steers by our code's coverage and by the dictionary
 * (tests/fuzz/http.dict). */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "health/http.h"
#include "lib/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* A complete request is answered within milliseconds; one cut short
 * is not (libmicrohttpd does not always notice the half-close of a
 * client in the middle of a request line, and the endpoint's own
 * deadline ends it after 3 s). So the fuzz connection waits this long
 * for the next byte and then resets; /livez gets the longer wait. */
#define FUZZ_READ_TIMEOUT_MS 300
#define LIVEZ_READ_TIMEOUT_MS 2000
#define LIVEZ_TRIES 3
#define FUZZ_MAX_REPLY 65536

static struct http_server *srv;
static int port;

static void fuzz_fail(const char *what, const char *reply)
{
	fprintf(stderr, "http: %s\n%s\n", what, reply ? reply : "");
	abort();
}

static void publish(void)
{
	static struct health_snapshot s;

	memset(&s, 0, sizeof(s));
	snprintf(s.slot_name, sizeof(s.slot_name), "outbox_relay");
	s.slot.valid = true;
	s.slot.slot_exists = true;
	s.slot.active = true;
	s.slot.active_pid = 4242;
	s.slot.restart_lsn = 0x1000000;
	s.slot.confirmed_flush_lsn = 0x1000100;
	s.slot.current_lsn = 0x1000200;
	s.slot.wal_status = WAL_STATUS_RESERVED;
	s.slot.safe_wal_size = -1;
	s.slot.max_slot_wal_keep_size = -1;
	s.relay.state = RELAY_PHASE_STREAMING;
	s.relay.kafka_up = true;
	s.relay.pg_up = true;
	s.relay.heartbeat_rtt_us = -1;
	s.relay.broker_rtt_us = -1;
	s.relay.kafka_queue_msgs = -1;
	s.relay.produce_requests = -1;
	s.relay.requests_in_flight = -1;
	s.relay.batch_msgs = -1;
	s.relay.events_received = 12;
	s.eval.state = HEALTH_WARN;
	health_reason_add(&s.eval, "a \"quoted\"\treason");
	health_reason_add(&s.eval, "and a second; with a semicolon");
	s.eval.eta_seconds = -1;
	s.ntopics = 2;
	snprintf(s.topics[0], sizeof(s.topics[0]), "outbox.event.order");
	snprintf(s.topics[1], sizeof(s.topics[1]), "outbox.event.we\"ird\\");
	s.topic_events[0] = 10;
	s.topic_events[1] = 2;
	http_publish(srv, &s);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char err[512];

	/* libmicrohttpd's complaints about bad requests are rate-limited
	 * warnings: not wanted between libFuzzer's lines. */
	log_set_level(LOG_LVL_ERROR);
	srv = http_start("127.0.0.1:0", 600000, err, sizeof(err));
	if (srv == NULL)
		fuzz_fail("http_start", err);
	port = http_port(srv);
	publish();
	return 0;
}

/* libFuzzer's -timeout watchdog is a SIGALRM every timeout/2 + 1 s,
 * installed without SA_RESTART, so any blocking call here may return
 * EINTR. Before these wrappers one alarm landing in connect() read as
 * "cannot connect" and failed a CI run after 22 s (the second alarm at
 * -timeout=20); with -timeout=2 it failed within half a minute. */

/* connect() that survives a signal: an interrupted connect goes on in
 * the kernel, so wait for it to finish and read its outcome. */
static int connect_eintr(int fd, const struct sockaddr *sa, socklen_t len)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	int soerr = 0;
	socklen_t sl = sizeof(soerr);

	if (connect(fd, sa, len) == 0)
		return 0;
	if (errno != EINTR && errno != EINPROGRESS)
		return -1;
	for (int spins = 0; spins < 1000; spins++) {
		int r = poll(&p, 1, 1000);
		if (r > 0)
			break;
		if (r == 0 || errno != EINTR) {
			errno = r == 0 ? ETIMEDOUT : errno;
			return -1;
		}
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0)
		return -1;
	if (soerr != 0) {
		errno = soerr;
		return -1;
	}
	return 0;
}

/* poll() for one descriptor that restarts after a signal with what is
 * left of wait_ms. */
static int poll_eintr(struct pollfd *p, int wait_ms)
{
	int64_t deadline = now_mono_us() + (int64_t)wait_ms * 1000;

	for (;;) {
		int64_t left = (deadline - now_mono_us()) / 1000;
		int r = poll(p, 1, left > 0 ? (int)left : 0);
		if (r >= 0 || errno != EINTR)
			return r;
	}
}

/* One connection from source address from (127.0.0.x): sends len
 * bytes, half-closes, reads the reply into buf (NUL-terminated) until
 * the server closes or wait_ms pass without a byte. Returns the reply's
 * length, or -1 when the server could not be reached. */
static ssize_t exchange(const char *from, const void *req, size_t len,
                        char *buf, size_t cap, int wait_ms)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct sockaddr_in src = { .sin_family = AF_INET };
	struct linger lg = { 1, 0 };
	size_t got = 0, sent = 0;
	int fd;

	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	(void)inet_pton(AF_INET, from, &src.sin_addr);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&src, sizeof(src)) != 0 ||
	    connect_eintr(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	/* The server may close before taking it all (a refused request):
	 * that is an answer, not a failure. */
	while (sent < len) {
		ssize_t n = send(fd, (const char *)req + sent, len - sent,
		                 MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		sent += (size_t)n;
	}
	/* The half-close a moment later, not in the same segment as the
	 * data: libmicrohttpd (edge-triggered epoll) may otherwise read the
	 * data, stop short of the end of file and sit out the deadline. */
	{
		struct pollfd p = { .fd = fd, .events = POLLIN };
		(void)poll_eintr(&p, 2);
	}
	(void)shutdown(fd, SHUT_WR);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll_eintr(&p, wait_ms) <= 0)
			break;
		n = recv(fd, buf + got, cap - 1 - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
		if (got == cap - 1)
			break;
	}
	buf[got] = '\0';
	/* No TIME_WAIT on our side: thousands of connections a second. */
	(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
	return (ssize_t)got;
}

static bool status_known(int st)
{
	static const int known[] = { 200, 400, 404, 405, 413, 414, 431, 500,
		                         501, 503, 505 };

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (st == known[i])
			return true;
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char reply[FUZZ_MAX_REPLY];
	static const char livez[] = "GET /livez HTTP/1.1\r\nHost: x\r\n\r\n";
	ssize_t n;

	http_tick(srv, now_mono_us());
	/* The input from one address, the probe from another: the
	 * per-address connection cap must keep the probe's way open
	 * whatever the input left behind. */
	n = exchange("127.0.0.2", data, size, reply, sizeof(reply),
	             FUZZ_READ_TIMEOUT_MS);
	if (n < 0)
		fuzz_fail("cannot connect", strerror(errno));
	if (n > 0) {
		int st = 0;
		if (strncmp(reply, "HTTP/1.", 7) != 0 || n < 12 ||
		    sscanf(reply + 9, "%3d", &st) != 1)
			fuzz_fail("not an HTTP status line", reply);
		if (!status_known(st))
			fuzz_fail("a status the endpoint does not use", reply);
	}
	/* A few tries: on a loaded machine (CI runs the suites side by
	 * side) one probe can miss its 2 s; a locked-out endpoint misses
	 * them all. */
	for (int i = 0; i < LIVEZ_TRIES; i++) {
		n = exchange("127.0.0.1", livez, sizeof(livez) - 1, reply,
		             sizeof(reply), LIVEZ_READ_TIMEOUT_MS);
		if (n > 0 && strncmp(reply, "HTTP/1.1 200 ", 13) == 0 &&
		    strstr(reply, "\r\n\r\nok\n") != NULL)
			return 0;
	}
	fuzz_fail("/livez no longer answers 200 ok", n > 0 ? reply : NULL);
	return 0;
}
