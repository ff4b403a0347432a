/* SPDX-License-Identifier: Apache-2.0 */
/* check_http.c -- the health endpoint over real sockets on 127.0.0.1,
 * with libcurl as the client (raw sockets where a request is too broken
 * for curl to send): routes, codes, bodies, content types, methods, and
 * the limits of libmicrohttpd 0.9.75 (431 for oversized headers, 414 for
 * an oversized request line), and /livez under 200 slow or idle clients. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "health/http.h"
#include "capture.h"

/* Time bounds stretch under valgrind, which runs threads one at a time
 * and many times slower. */
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define TIME_SCALE (RUNNING_ON_VALGRIND ? 20 : 1)
#endif
#endif
#ifndef TIME_SCALE
#define TIME_SCALE 1
#endif

#define CT_TEXT "text/plain; charset=utf-8"
#define CT_JSON "application/json"
#define CT_METRICS "text/plain; version=0.0.4; charset=utf-8"

static struct http_server *srv;
static int port;

struct resp {
	CURLcode rc;
	long code;
	char *body;
	size_t len;
	char ctype[160];
	char allow[64];
	long clen;              /* Content-Length header; -1 when absent */
};

static void setup(void)
{
	/* Requests to 127.0.0.1 must never go through a proxy. */
	setenv("NO_PROXY", "*", 1);
	setenv("no_proxy", "*", 1);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	srv = NULL;
}

static void publisher_stop(void);
static void slow_stop(void);

static void teardown(void)
{
	capture_reset();
	publisher_stop();
	slow_stop();
	http_stop(srv);
	srv = NULL;
	curl_global_cleanup();
}

static void start_server(int64_t livez_timeout_ms)
{
	char err[256] = "";

	srv = http_start("127.0.0.1:0", livez_timeout_ms, err, sizeof(err));
	ck_assert_msg(srv != NULL, "http_start: %s", err);
	port = http_port(srv);
	ck_assert_int_gt(port, 0);
	http_tick(srv, now_mono_us());
}

static size_t body_cb(char *p, size_t size, size_t n, void *ud)
{
	struct resp *r = ud;
	r->body = realloc(r->body, r->len + size * n + 1);
	memcpy(r->body + r->len, p, size * n);
	r->len += size * n;
	r->body[r->len] = '\0';
	return size * n;
}

/* Copies the value of header name (case-insensitive) from line. */
static void header_value(const char *line, size_t n, const char *name,
                         char *out, size_t outlen)
{
	size_t nl = strlen(name);

	if (n <= nl || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
		return;
	line += nl + 1;
	n -= nl + 1;
	while (n > 0 && *line == ' ')
		line++, n--;
	while (n > 0 && (line[n - 1] == '\r' || line[n - 1] == '\n'))
		n--;
	if (n >= outlen)
		n = outlen - 1;
	memcpy(out, line, n);
	out[n] = '\0';
}

static size_t header_cb(char *p, size_t size, size_t n, void *ud)
{
	struct resp *r = ud;
	char clen[32] = "";

	header_value(p, size * n, "Content-Type", r->ctype, sizeof(r->ctype));
	header_value(p, size * n, "Allow", r->allow, sizeof(r->allow));
	header_value(p, size * n, "Content-Length", clen, sizeof(clen));
	if (clen[0])
		r->clen = strtol(clen, NULL, 10);
	return size * n;
}

/* One request with libcurl. method: "GET", "HEAD", "POST" (with a small
 * body) or any other verb. extra: one header line or NULL. */
static void request(const char *url, const char *method, const char *extra,
                    const char *body, long timeout_ms, struct resp *r)
{
	CURL *c = curl_easy_init();
	struct curl_slist *hdrs = NULL;

	memset(r, 0, sizeof(*r));
	r->clen = -1;
	r->body = calloc(1, 1);
	ck_assert_ptr_nonnull(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, body_cb);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, header_cb);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
	if (strcmp(method, "HEAD") == 0) {
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	} else if (strcmp(method, "POST") == 0) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : "x=1");
	} else {
		if (body != NULL)
			curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	}
	if (extra != NULL) {
		hdrs = curl_slist_append(NULL, extra);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	}
	r->rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->code);
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(c);
}

static void fetch_method(const char *method, const char *path, struct resp *r)
{
	char url[256];

	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
	request(url, method, NULL, NULL, 3000 * TIME_SCALE, r);
	ck_assert_msg(r->rc == CURLE_OK, "%s %s: %s", method, path,
	              curl_easy_strerror(r->rc));
}

static void fetch(const char *path, struct resp *r)
{
	fetch_method("GET", path, r);
}

static void resp_free(struct resp *r)
{
	free(r->body);
	r->body = NULL;
}

/* GET path and check code, content type and the exact body. */
static void expect(const char *path, long code, const char *ctype,
                   const char *body)
{
	struct resp r;

	fetch(path, &r);
	ck_assert_msg(r.code == code, "GET %s: code %ld, want %ld (body %s)",
	              path, r.code, code, r.body);
	ck_assert_str_eq(r.ctype, ctype);
	ck_assert_str_eq(r.body, body);
	resp_free(&r);
}

static void snap_init(struct health_snapshot *s, enum health_state st)
{
	static const char *const reasons[] = {
		"", "retained WAL 2.0 GiB >= warn 1.0 GiB",
		"retained WAL 9.0 GiB >= critical 8.0 GiB; wal_status unreserved",
		"wal_status lost: the slot is invalidated",
	};
	static const char *const wal[] = { "reserved", "extended", "unreserved",
	                                   "lost" };

	memset(s, 0, sizeof(*s));
	snprintf(s->slot_name, sizeof(s->slot_name), "outbox_slot");
	s->slot.valid = true;
	s->slot.slot_exists = true;
	s->slot.active = true;
	s->slot.active_pid = 4242;
	s->slot.restart_lsn = 0x16B3000000ULL;
	s->slot.confirmed_flush_lsn = 0x16B374D848ULL;
	s->slot.current_lsn = 0x16C0000000ULL;
	s->slot.wal_status = wal_status_parse(wal[st]);
	s->slot.safe_wal_size = 1 << 30;
	s->slot.max_slot_wal_keep_size = -1;
	s->slot.retained_bytes = 1234567;
	s->slot.confirmed_lag_bytes = 4567;
	s->relay.state = RELAY_PHASE_STREAMING;
	s->relay.kafka_up = true;
	s->relay.confirmed_lsn = 0x16B374D848ULL;
	s->relay.inflight_events = 3;
	s->relay.heartbeat_rtt_us = -1;
	s->relay.broker_rtt_us = -1;
	s->relay.kafka_queue_msgs = -1;
	s->relay.produce_requests = -1;
	s->relay.requests_in_flight = -1;
	s->relay.batch_msgs = -1;
	s->eval.state = st;
	s->eval.nreasons = 0;
	if (reasons[st][0] != '\0')
		health_reason_add(&s->eval, "%s", reasons[st]);
	s->eval.eta_seconds = -1;
	s->now_us = now_wall_us();
}

START_TEST(test_listen_errors)
{
	static const char *const bad[] = {
		"", "8080", "127.0.0.1", "127.0.0.1:", "127.0.0.1:99999",
		"127.0.0.1:80x", "127.0.0.1:-1", "localhost:8080", "::1:8080",
		"[::1]8080", "[::1]", "[]:8080", "[127.0.0.1]:8080", ":8080",
		"999.1.1.1:8080",
	};
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		srv = http_start(bad[i], 1000, err, sizeof(err));
		ck_assert_msg(srv == NULL, "\"%s\" accepted", bad[i]);
		ck_assert_msg(strncmp(err, "http.listen: ", 13) == 0,
		              "\"%s\": %s", bad[i], err);
	}
}
END_TEST

START_TEST(test_bind_in_use)
{
	char listen[64], err[256] = "", want[128];
	struct http_server *second;

	start_server(60000);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
	second = http_start(listen, 1000, err, sizeof(err));
	ck_assert_ptr_null(second);
	snprintf(want, sizeof(want),
	         "http.listen: cannot bind 127.0.0.1:%d: Address already in use",
	         port);
	ck_assert_str_eq(err, want);
	/* The first server is undisturbed. */
	expect("/livez", 200, CT_TEXT, "ok\n");
}
END_TEST

START_TEST(test_ipv6_loopback)
{
	char err[256] = "", url[128];
	struct resp r;
	int fd = socket(AF_INET6, SOCK_STREAM, 0);
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6,
	                           .sin6_addr = IN6ADDR_LOOPBACK_INIT };

	/* Skip (pass) on a host without IPv6 loopback. */
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		if (fd >= 0)
			close(fd);
		return;
	}
	close(fd);
	srv = http_start("[::1]:0", 60000, err, sizeof(err));
	ck_assert_msg(srv != NULL, "%s", err);
	port = http_port(srv);
	ck_assert_int_gt(port, 0);
	snprintf(url, sizeof(url), "http://[::1]:%d/livez", port);
	request(url, "GET", NULL, NULL, 3000 * TIME_SCALE, &r);
	ck_assert_int_eq(r.rc, CURLE_OK);
	ck_assert_int_eq(r.code, 200);
	ck_assert_str_eq(r.body, "ok\n");
	resp_free(&r);
}
END_TEST

START_TEST(test_livez_and_stall)
{
	struct resp r;
	long ms;

	start_server(200 * TIME_SCALE);
	expect("/livez", 200, CT_TEXT, "ok\n");
	expect("/healthz", 200, CT_TEXT, "ok\n");
	usleep(300 * 1000 * TIME_SCALE);
	fetch("/livez", &r);
	ck_assert_int_eq(r.code, 503);
	ck_assert_str_eq(r.ctype, CT_TEXT);
	ck_assert_msg(sscanf(r.body, "loop stalled for %ld ms\n", &ms) == 1,
	              "%s", r.body);
	ck_assert_msg(ms >= 300 * TIME_SCALE && ms < 5000 * TIME_SCALE, "%ld",
	              ms);
	ck_assert_ptr_nonnull(strstr(r.body, " ms\n"));
	resp_free(&r);
	fetch("/healthz", &r);
	ck_assert_int_eq(r.code, 503);
	resp_free(&r);
	/* The loop turns again. */
	http_tick(srv, now_mono_us());
	expect("/livez", 200, CT_TEXT, "ok\n");
	expect("/healthz", 200, CT_TEXT, "ok\n");
}
END_TEST

START_TEST(test_livez_never_ticked)
{
	char err[256] = "";

	/* No tick at all since start: alive for one timeout, then stalled. */
	srv = http_start("127.0.0.1:0", 100 * TIME_SCALE, err, sizeof(err));
	ck_assert_msg(srv != NULL, "%s", err);
	port = http_port(srv);
	expect("/livez", 200, CT_TEXT, "ok\n");
	usleep(150 * 1000 * TIME_SCALE);
	struct resp r;
	fetch("/livez", &r);
	ck_assert_int_eq(r.code, 503);
	resp_free(&r);
}
END_TEST

START_TEST(test_no_snapshot)
{
	start_server(60000);
	expect("/readyz", 503, CT_TEXT, "no snapshot yet\n");
	expect("/slot", 503, CT_TEXT, "no snapshot yet\n");
	expect("/metrics", 503, CT_TEXT, "no snapshot yet\n");
	/* Liveness does not depend on it. */
	expect("/livez", 200, CT_TEXT, "ok\n");
}
END_TEST

START_TEST(test_readyz_reasons)
{
	static const struct {
		const char *state, *reason;
		bool kafka_up;
		enum health_state eval;
		long code;
		const char *body;
	} cases[] = {
		{ "streaming", "", true, HEALTH_OK, 200, "ready\n" },
		{ "streaming", "", true, HEALTH_WARN, 200, "ready\n" },
		{ "connecting", "connection refused", true, HEALTH_OK, 503,
		  "not streaming: connecting: connection refused\n" },
		/* A healthy standby is ready: a rolling update waits for it. */
		{ "standby", "slot active for PID 4242 (standby)", true, HEALTH_OK,
		  200, "standby: slot held by another process (PID 4242); takes "
		  "over when it is released\n" },
		{ "standby", "slot active for PID 4242 (standby)", true, HEALTH_WARN,
		  200, "standby: slot held by another process (PID 4242); takes "
		  "over when it is released\n" },
		{ "standby", "", false, HEALTH_OK, 503, "kafka broker down\n" },
		{ "standby", "", true, HEALTH_CRITICAL, 503,
		  "slot critical: retained WAL 9.0 GiB >= critical 8.0 GiB; "
		  "wal_status unreserved\n" },
		{ "stopping", "", true, HEALTH_OK, 503, "not streaming: stopping\n" },
		{ "backoff", "", true, HEALTH_OK, 503, "not streaming: backoff\n" },
		/* A multi-line server message stays on one line. */
		{ "connecting", "FATAL: x\nDETAIL: y", true, HEALTH_OK, 503,
		  "not streaming: connecting: FATAL: x DETAIL: y\n" },
		{ "streaming", "", false, HEALTH_OK, 503, "kafka broker down\n" },
		{ "streaming", "", true, HEALTH_CRITICAL, 503,
		  "slot critical: retained WAL 9.0 GiB >= critical 8.0 GiB; "
		  "wal_status unreserved\n" },
		{ "streaming", "", true, HEALTH_FATAL, 503,
		  "slot fatal: wal_status lost: the slot is invalidated\n" },
		{ "fail-stopped", "poison event at 0/16B3F00", false, HEALTH_OK,
		  503, "fail-stopped: poison event at 0/16B3F00\n" },
		/* Order: not streaming wins over the broker and the slot. */
		{ "connecting", "timeout", false, HEALTH_CRITICAL, 503,
		  "not streaming: connecting: timeout\n" },
		{ "streaming", "", false, HEALTH_CRITICAL, 503,
		  "kafka broker down\n" },
	};
	struct health_snapshot s;

	start_server(60000);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snap_init(&s, cases[i].eval);
		s.relay.state = relay_phase_parse(cases[i].state);
		snprintf(s.relay.reason, sizeof(s.relay.reason), "%s",
		         cases[i].reason);
		s.relay.kafka_up = cases[i].kafka_up;
		s.relay.pg_up = true;
		http_publish(srv, &s);
		expect("/readyz", cases[i].code, CT_TEXT, cases[i].body);
	}
}
END_TEST

/* A standby has no stream of its own: PostgreSQL answering is the
 * watchdog's word (pg_up), and the broker must answer as for the active
 * relay. The PID comes from the slot's row when the sample has one. */
START_TEST(test_readyz_standby)
{
	struct health_snapshot s;

	start_server(60000);
	snap_init(&s, HEALTH_OK);
	s.relay.state = RELAY_PHASE_STANDBY;
	s.relay.pg_up = true;
	s.slot.active_pid = 0;
	http_publish(srv, &s);
	expect("/readyz", 200, CT_TEXT, "standby: slot held by another process; "
	       "takes over when it is released\n");
	s.relay.pg_up = false;
	http_publish(srv, &s);
	expect("/readyz", 503, CT_TEXT, "standby: PostgreSQL does not answer "
	       "the watchdog (see the log)\n");
	s.relay.pg_up = true;
	s.relay.kafka_contact_age_us = 16 * 1000000LL;
	s.relay.kafka_stale = true;
	http_publish(srv, &s);
	expect("/readyz", 503, CT_TEXT, "no answer from a Kafka broker for 16 s "
	       "(kafka.contact.timeout.ms)\n");
	/* Fail-stopped and backoff never serve, whatever else holds. */
	s.relay.kafka_stale = false;
	s.relay.state = RELAY_PHASE_BACKOFF;
	http_publish(srv, &s);
	expect("/readyz", 503, CT_TEXT, "not streaming: backoff\n");
}
END_TEST

/* Connected is not answering: a stopped walsender or broker keeps its
 * TCP connection, so readiness also asks when each last said something. */
START_TEST(test_readyz_silence)
{
	struct health_snapshot s;

	start_server(60000);
	snap_init(&s, HEALTH_OK);
	s.relay.pg_rx_age_us = 12 * 1000000LL;
	s.relay.pg_stale = true;
	http_publish(srv, &s);
	expect("/readyz", 503, CT_TEXT, "no message from PostgreSQL for 12 s "
	       "(pg.receive.timeout.ms)\n");
	s.relay.pg_stale = false;
	s.relay.kafka_contact_age_us = 16 * 1000000LL;
	s.relay.kafka_stale = true;
	http_publish(srv, &s);
	expect("/readyz", 503, CT_TEXT, "no answer from a Kafka broker for 16 s "
	       "(kafka.contact.timeout.ms)\n");
	s.relay.kafka_stale = false;
	http_publish(srv, &s);
	expect("/readyz", 200, CT_TEXT, "ready\n");
}
END_TEST

START_TEST(test_slot_by_state)
{
	static const long codes[] = { 200, 200, 503, 503 };
	struct health_snapshot s;
	struct resp r;

	start_server(60000);
	for (int st = HEALTH_OK; st <= HEALTH_FATAL; st++) {
		char *compact, *pretty;
		json_t *j;
		json_error_t jerr;

		snap_init(&s, (enum health_state)st);
		http_publish(srv, &s);
		compact = health_render_slot_json(&s, false);
		pretty = health_render_slot_json(&s, true);
		ck_assert_str_ne(compact, pretty);

		expect("/slot", codes[st], CT_JSON, compact);
		expect("/slot?pretty=0", codes[st], CT_JSON, compact);
		expect("/slot?pretty=1", codes[st], CT_JSON, pretty);
		expect("/slot?verbose&pretty=1&x=y", codes[st], CT_JSON, pretty);

		fetch("/slot?pretty=1", &r);
		j = json_loads(r.body, 0, &jerr);
		ck_assert_msg(j != NULL, "not JSON: %s", jerr.text);
		json_decref(j);
		ck_assert_ptr_null(strstr(r.body, "password"));
		resp_free(&r);
		free(compact);
		free(pretty);
	}
}
END_TEST

START_TEST(test_metrics)
{
	struct health_snapshot s;
	char *want;

	start_server(60000);
	for (int st = HEALTH_OK; st <= HEALTH_FATAL; st++) {
		snap_init(&s, (enum health_state)st);
		http_publish(srv, &s);
		want = health_render_metrics(&s);
		/* Always 200 once there is a snapshot: the state is a metric. */
		expect("/metrics", 200, CT_METRICS, want);
		expect("/metrics?name[]=x", 200, CT_METRICS, want);
		ck_assert_ptr_null(strstr(want, "password"));
		free(want);
	}
}
END_TEST

START_TEST(test_head)
{
	static const char *const paths[] = { "/livez", "/readyz", "/slot",
	                                     "/metrics" };
	static const char *const ctypes[] = { CT_TEXT, CT_TEXT, CT_JSON,
	                                      CT_METRICS };
	struct health_snapshot s;
	struct resp get, head;

	start_server(60000);
	snap_init(&s, HEALTH_CRITICAL);
	http_publish(srv, &s);
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		fetch(paths[i], &get);
		fetch_method("HEAD", paths[i], &head);
		ck_assert_int_eq(head.code, get.code);
		ck_assert_str_eq(head.ctype, ctypes[i]);
		ck_assert_uint_eq(head.len, 0);
		ck_assert_int_eq(head.clen, (long)get.len);
		resp_free(&get);
		resp_free(&head);
	}
	/* /slot is 503 when critical, HEAD too. */
	fetch_method("HEAD", "/slot", &head);
	ck_assert_int_eq(head.code, 503);
	resp_free(&head);
}
END_TEST

START_TEST(test_wrong_methods)
{
	static const char *const methods[] = { "POST", "PUT", "DELETE",
	                                       "OPTIONS", "PATCH", "TRACE" };
	struct resp r;

	start_server(60000);
	for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
		fetch_method(methods[i], "/livez", &r);
		ck_assert_msg(r.code == 405, "%s: %ld", methods[i], r.code);
		ck_assert_str_eq(r.allow, "GET, HEAD");
		ck_assert_str_eq(r.body, "method not allowed\n");
		resp_free(&r);
	}
	/* Any path: the method is checked first. */
	fetch_method("POST", "/nope", &r);
	ck_assert_int_eq(r.code, 405);
	ck_assert_str_eq(r.allow, "GET, HEAD");
	resp_free(&r);
	/* A large POST body is not read, and the server carries on. */
	{
		char url[128], *big = malloc(256 * 1024 + 1);
		memset(big, 'b', 256 * 1024);
		big[256 * 1024] = '\0';
		snprintf(url, sizeof(url), "http://127.0.0.1:%d/livez", port);
		request(url, "POST", NULL, big, 3000 * TIME_SCALE, &r);
		free(big);
		/* Either the 405 arrives, or the connection is closed while curl
		 * is still sending: never a 2xx. */
		ck_assert_msg(r.code == 405 || r.code == 0, "%ld", r.code);
		resp_free(&r);
	}
	expect("/livez", 200, CT_TEXT, "ok\n");
}
END_TEST

START_TEST(test_unknown_paths)
{
	static const char *const paths[] = { "/", "/livez/", "/LIVEZ",
	                                     "/slotx", "/metric", "/env",
	                                     "/config", "/readyz.json",
	                                     "//livez" };
	struct resp r;

	start_server(60000);
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		fetch(paths[i], &r);
		ck_assert_msg(r.code == 404, "%s: %ld", paths[i], r.code);
		ck_assert_str_eq(r.body, "not found\n");
		ck_assert_str_eq(r.ctype, CT_TEXT);
		resp_free(&r);
	}
}
END_TEST

START_TEST(test_query_ignored)
{
	struct health_snapshot s;

	start_server(60000);
	snap_init(&s, HEALTH_OK);
	http_publish(srv, &s);
	expect("/livez?verbose", 200, CT_TEXT, "ok\n");
	expect("/healthz?pretty=1", 200, CT_TEXT, "ok\n");
	expect("/readyz?pretty=1&a=b", 200, CT_TEXT, "ready\n");
}
END_TEST

/* Sends len bytes on a fresh connection and reads the answer until the
 * server closes. Returns the status code, 0 when there was none. */
static int raw_request(const char *req, size_t len)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
	                          .sin_port = htons((uint16_t)port),
	                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval tv = { .tv_sec = 3 };
	char buf[4096];
	size_t got = 0, off = 0;
	int fd, code = 0;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (off < len) {
		ssize_t n = send(fd, req + off, len - off, MSG_NOSIGNAL);
		if (n <= 0)
			break; /* the server answered and closed: read it below */
		off += (size_t)n;
	}
	for (;;) {
		ssize_t n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
		if (n <= 0)
			break;
		got += (size_t)n;
		if (got == sizeof(buf) - 1)
			break;
	}
	buf[got] = '\0';
	close(fd);
	if (sscanf(buf, "HTTP/1.1 %d ", &code) != 1)
		code = 0;
	return code;
}

static char *big_request(const char *before, size_t fill, const char *after)
{
	size_t b = strlen(before), a = strlen(after);
	char *req = malloc(b + fill + a + 1);

	memcpy(req, before, b);
	memset(req + b, 'a', fill);
	memcpy(req + b + fill, after, a + 1);
	return req;
}

START_TEST(test_oversized_header)
{
	char *req;

	capture_begin(); /* libmicrohttpd logs each refusal */
	start_server(60000);
	/* One 64 KiB header: libmicrohttpd 0.9.75 answers 431 itself (the
	 * 16 KiB per-connection memory limit), before any handler runs. */
	req = big_request("GET /livez HTTP/1.1\r\nHost: x\r\nX-Big: ", 64 * 1024,
	                  "\r\n\r\n");
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(raw_request(req, strlen(req)), 431);
	free(req);
	/* Many small headers adding up: 431 too. */
	{
		size_t cap = 3000 * 16 + 64, n = 0;
		char *many = malloc(cap);
		n += (size_t)snprintf(many + n, cap - n,
		                      "GET /livez HTTP/1.1\r\nHost: x\r\n");
		for (int i = 0; i < 3000; i++)
			n += (size_t)snprintf(many + n, cap - n, "X-H%d: v\r\n", i);
		n += (size_t)snprintf(many + n, cap - n, "\r\n");
		ck_assert_int_eq(raw_request(many, n), 431);
		free(many);
	}
	/* 24 KiB: over our 16 KiB limit, under libmicrohttpd's 32 KiB default
	 * (so this one pins MHD_OPTION_CONNECTION_MEMORY_LIMIT). */
	req = big_request("GET /livez HTTP/1.1\r\nHost: x\r\nX-Big: ", 24 * 1024,
	                  "\r\n\r\n");
	ck_assert_int_eq(raw_request(req, strlen(req)), 431);
	free(req);
	/* Under the limit: served. */
	req = big_request("GET /livez HTTP/1.1\r\nHost: x\r\nX-Big: ", 4096,
	                  "\r\n\r\n");
	ck_assert_int_eq(raw_request(req, strlen(req)), 200);
	free(req);
	/* Through libcurl as well, then a normal request still works. */
	{
		char url[128], *hdr = big_request("X-Big: ", 64 * 1024, "");
		struct resp r;
		snprintf(url, sizeof(url), "http://127.0.0.1:%d/livez", port);
		request(url, "GET", hdr, NULL, 3000 * TIME_SCALE, &r);
		ck_assert_msg(r.code == 431 || r.code == 0, "%ld", r.code);
		resp_free(&r);
		free(hdr);
	}
	expect("/livez", 200, CT_TEXT, "ok\n");
	free(capture_end());
}
END_TEST

static int count_substr(const char *s, const char *sub)
{
	int n = 0;

	while ((s = strstr(s, sub)) != NULL) {
		n++;
		s += strlen(sub);
	}
	return n;
}

START_TEST(test_mhd_log_routed_and_limited)
{
	char *req, *log;

	capture_begin();
	start_server(60000);
	req = big_request("GET /livez HTTP/1.1\r\nHost: x\r\nX-Big: ", 64 * 1024,
	                  "\r\n\r\n");
	/* Each refused request makes libmicrohttpd log a line: a client can
	 * provoke them, so only the first ten reach the log. */
	for (int i = 0; i < 20; i++)
		ck_assert_int_eq(raw_request(req, strlen(req)), 431);
	free(req);
	expect("/livez", 200, CT_TEXT, "ok\n");
	log = capture_end();
	ck_assert_int_eq(count_substr(log, " WARN  http: "), 11);
	/* Not a bare "431": a timestamp's milliseconds can read .431. */
	ck_assert_int_eq(count_substr(log, "response code is 431"), 10);
	ck_assert_int_eq(count_substr(log, "WARN  http: further libmicrohttpd "
	                              "messages suppressed for up to 60 s"), 1);
	free(log);
}
END_TEST

START_TEST(test_long_uri)
{
	char *req;

	capture_begin(); /* libmicrohttpd logs each refusal */
	start_server(60000);
	/* A 64 KiB request line: libmicrohttpd 0.9.75 answers 414 URI Too
	 * Long itself; no handler of ours sees it. */
	req = big_request("GET /livez?", 64 * 1024, " HTTP/1.1\r\nHost: x\r\n\r\n");
	ck_assert_int_eq(raw_request(req, strlen(req)), 414);
	free(req);
	req = big_request("GET /", 64 * 1024, " HTTP/1.1\r\nHost: x\r\n\r\n");
	ck_assert_int_eq(raw_request(req, strlen(req)), 414);
	free(req);
	expect("/livez", 200, CT_TEXT, "ok\n");
	free(capture_end());
}
END_TEST

START_TEST(test_get_body_ignored)
{
	char url[128], *big = malloc(100 * 1024 + 1);
	struct resp r;

	start_server(60000);
	memset(big, 'b', 100 * 1024);
	big[100 * 1024] = '\0';
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/livez", port);
	/* GET with a body: answered without reading it. */
	request(url, "GET", NULL, big, 3000 * TIME_SCALE, &r);
	ck_assert_int_eq(r.rc, CURLE_OK);
	ck_assert_int_eq(r.code, 200);
	ck_assert_str_eq(r.body, "ok\n");
	resp_free(&r);
	free(big);
	expect("/livez", 200, CT_TEXT, "ok\n");
}
END_TEST

START_TEST(test_publish_copies)
{
	struct health_snapshot s;
	char *want;

	start_server(60000);
	snap_init(&s, HEALTH_OK);
	snprintf(s.slot_name, sizeof(s.slot_name), "first");
	http_publish(srv, &s);
	want = health_render_slot_json(&s, false);
	/* Changing the caller's struct after publishing changes nothing. */
	snprintf(s.slot_name, sizeof(s.slot_name), "changed");
	s.eval.state = HEALTH_FATAL;
	expect("/slot", 200, CT_JSON, want);
	free(want);
	/* Publishing again replaces it. */
	http_publish(srv, &s);
	want = health_render_slot_json(&s, false);
	expect("/slot", 503, CT_JSON, want);
	free(want);
}
END_TEST

static atomic_bool publishing;
static pthread_t publisher;
static bool publisher_running;

/* Two snapshots that differ in every byte /readyz shows. */
static void snap_ab(struct health_snapshot *s, int which)
{
	snap_init(s, HEALTH_OK);
	s->relay.state = which ? RELAY_PHASE_BACKOFF : RELAY_PHASE_CONNECTING;
	memset(s->relay.reason, which ? 'B' : 'A', sizeof(s->relay.reason) - 1);
	s->relay.reason[sizeof(s->relay.reason) - 1] = '\0';
}

static void *publisher_main(void *arg)
{
	struct health_snapshot *s = malloc(2 * sizeof(*s));

	snap_ab(&s[0], 0);
	snap_ab(&s[1], 1);
	while (atomic_load(&publishing)) {
		http_publish(srv, &s[0]);
		http_publish(srv, &s[1]);
		http_tick(srv, now_mono_us());
		if (TIME_SCALE > 1)
			sched_yield(); /* valgrind runs one thread at a time */
	}
	free(s);
	return NULL;
}

static void publisher_stop(void)
{
	if (!publisher_running)
		return;
	atomic_store(&publishing, false);
	pthread_join(publisher, NULL);
	publisher_running = false;
}

START_TEST(test_publish_concurrent)
{
	struct health_snapshot ab;
	char want[2][320], torn[400] = "";
	struct resp r;

	for (int i = 0; i < 2; i++) {
		snap_ab(&ab, i);
		snprintf(want[i], sizeof(want[i]), "not streaming: %s: %s\n",
		         relay_phase_name(ab.relay.state), ab.relay.reason);
	}
	start_server(60000);
	atomic_store(&publishing, true);
	ck_assert_int_eq(pthread_create(&publisher, NULL, publisher_main, NULL),
	                 0);
	publisher_running = true;
	/* Every answer is one whole snapshot, never a mix of two. */
	for (int i = 0; i < 200 && torn[0] == '\0'; i++) {
		fetch("/readyz", &r);
		if (strcmp(r.body, "no snapshot yet\n") != 0 &&
		    strcmp(r.body, want[0]) != 0 && strcmp(r.body, want[1]) != 0)
			snprintf(torn, sizeof(torn), "%s", r.body);
		resp_free(&r);
	}
	publisher_stop();
	ck_assert_msg(torn[0] == '\0', "torn snapshot: %s", torn);
}
END_TEST

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (d == NULL)
		return -1;
	while (readdir(d) != NULL)
		n++;
	closedir(d);
	return n;
}

START_TEST(test_stop_releases)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
	                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int before = count_fds(), fd;

	start_server(60000);
	expect("/livez", 200, CT_TEXT, "ok\n");
	http_stop(srv);
	srv = NULL;
	ck_assert_int_eq(count_fds(), before);
	/* Nothing listens on the port any more. */
	sa.sin_port = htons((uint16_t)port);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ne(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(errno, ECONNREFUSED);
	close(fd);
	/* NULL is a no-op everywhere. */
	http_stop(NULL);
	http_tick(NULL, 0);
	http_publish(NULL, NULL);
}
END_TEST

/* ---- slow and idle clients ----
 *
 * A local process holds SLOW_CONNS connections from 127.0.0.1 that never
 * finish a request: some send nothing, some trickle a request line or a
 * header one byte at a time (each byte used to reset libmicrohttpd's idle
 * timeout). Whenever the server closes one, it comes back SLOW_REOPEN_MS
 * later, so the pressure lasts the whole test. Meanwhile GET /livez is
 * probed from PROBE_ADDR, as a kubelet on another address would.
 * CHECK_HTTP_FIGURES=1 in the environment prints what was measured. */
#define SLOW_CONNS 200          /* attacking connections, all from 127.0.0.1 */
#define SLOW_REOPEN_MS 500      /* a connection closed by the server returns */
#define SLOW_SETTLE_MS 500      /* attack in place before the first probe */
#define PROBE_ADDR "127.0.0.2"  /* lo carries all of 127/8 on Linux */
#define PROBE_EVERY_MS 250      /* one probe started this often ... */
#define PROBE_WINDOW_MS 10000   /* ... for this long (about 40 probes) ... */
#define PROBE_TIMEOUT_MS 2000   /* ... and each must get its 200 within this */
/* What the issue asks of the server: a connection that has not sent a
 * complete request is closed this long after accept, whatever it sends;
 * the margin covers the server's sweep period and a busy 2-core host. */
#define REQUEST_DEADLINE_MS 3000
#define CLOSE_MARGIN_MS 1500
#define SLOW_HELD_MS 1000       /* closed later than this: the server held
                                 * it (per-address refusals come at once) */

/* How each attacking connection behaves; connection i is kind i % n. */
static const struct slow_kind {
	const char *opening;    /* sent once connected */
	int trickle_ms;         /* then one byte this often; 0: nothing */
} slow_kinds[] = {
	{ "", 0 },                                          /* idle */
	{ "GET /livez HTTP/1.1\r\nHost: x\r\nX-Pad: ", 500 }, /* headers */
	{ "GET /livez?", 1000 },                            /* request line */
	{ "GET /livez HTTP/1.1\r\nX-Pad: ", 50 },            /* many bytes */
};
#define SLOW_NKINDS (sizeof(slow_kinds) / sizeof(slow_kinds[0]))

struct slow_conn {
	int fd;                 /* -1 while waiting to come back */
	bool connected;
	int64_t connected_us;   /* handshake done: the server can accept it */
	int64_t next_us;        /* next byte, or when to reconnect */
	unsigned int sent;      /* bytes trickled on this connection */
};

/* What the attacker saw; read by the test once the thread is joined. */
struct slow_stats {
	unsigned int opened;        /* handshakes completed */
	unsigned int closed;        /* ... then closed by the server */
	unsigned int held_closed;   /* ... after SLOW_HELD_MS or more */
	unsigned int trickled_closed; /* held, trickling, then closed */
	int64_t held_min_us, held_max_us; /* lifetimes of the held ones */
	unsigned int max_bytes_closed; /* most bytes a closed one trickled */
	unsigned int overdue;       /* open past the deadline at the end */
	int64_t oldest_open_us;     /* age of the oldest still open */
};

static struct slow_conn slow_conns[SLOW_CONNS];
static struct slow_stats slow_stats;
static atomic_bool slow_running;
static pthread_t slow_thread;
static bool slow_started;

static void slow_open(struct slow_conn *sc, int64_t now)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
	                          .sin_port = htons((uint16_t)port),
	                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

	sc->connected = false;
	sc->sent = 0;
	sc->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (sc->fd < 0) {
		sc->next_us = now + SLOW_REOPEN_MS * 1000LL;
		return;
	}
	/* Non-blocking: while the server is not accepting, the handshake
	 * waits in the kernel and must not hold up the others. */
	if (connect(sc->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 &&
	    errno != EINPROGRESS) {
		close(sc->fd);
		sc->fd = -1;
		sc->next_us = now + SLOW_REOPEN_MS * 1000LL;
	}
}

/* The server closed sc (or refused it): note how long it was held. */
static void slow_closed(struct slow_conn *sc, const struct slow_kind *k,
                        int64_t now)
{
	int64_t held = now - sc->connected_us;

	if (sc->connected) {
		slow_stats.closed++;
		if (held >= SLOW_HELD_MS * 1000LL) {
			slow_stats.held_closed++;
			if (k->trickle_ms > 0)
				slow_stats.trickled_closed++;
			if (slow_stats.held_min_us == 0 ||
			    held < slow_stats.held_min_us)
				slow_stats.held_min_us = held;
			if (held > slow_stats.held_max_us)
				slow_stats.held_max_us = held;
		}
		if (sc->sent > slow_stats.max_bytes_closed)
			slow_stats.max_bytes_closed = sc->sent;
	}
	close(sc->fd);
	sc->fd = -1;
	sc->connected = false;
	sc->next_us = now + SLOW_REOPEN_MS * 1000LL;
}

static void slow_send(struct slow_conn *sc, const struct slow_kind *k,
                      const char *buf, size_t len, int64_t now)
{
	if (len > 0 && send(sc->fd, buf, len, MSG_NOSIGNAL) < 0 &&
	    errno != EAGAIN)
		slow_closed(sc, k, now);
}

/* The attacker: one poll() loop over every connection. */
static void *slow_main(void *arg)
{
	static struct pollfd pfd[SLOW_CONNS];
	static int idx[SLOW_CONNS];
	int64_t now;

	while (atomic_load(&slow_running)) {
		int n = 0;

		now = now_mono_us();
		for (int i = 0; i < SLOW_CONNS; i++) {
			struct slow_conn *sc = &slow_conns[i];
			if (sc->fd < 0 && now >= sc->next_us)
				slow_open(sc, now);
			if (sc->fd < 0)
				continue;
			pfd[n] = (struct pollfd){
				.fd = sc->fd,
				.events = sc->connected ? POLLIN : POLLOUT,
			};
			idx[n++] = i;
		}
		(void)poll(pfd, (nfds_t)n, 10);
		now = now_mono_us();
		for (int j = 0; j < n; j++) {
			struct slow_conn *sc = &slow_conns[idx[j]];
			const struct slow_kind *k =
				&slow_kinds[idx[j] % SLOW_NKINDS];
			char buf[512];
			int soerr = 0;
			socklen_t sl = sizeof(soerr);

			if (pfd[j].revents == 0)
				continue;
			if (!sc->connected) {
				if (getsockopt(sc->fd, SOL_SOCKET, SO_ERROR, &soerr,
				               &sl) != 0 || soerr != 0) {
					/* refused: try again later */
					slow_closed(sc, k, now);
					continue;
				}
				sc->connected = true;
				sc->connected_us = now;
				sc->next_us = now + k->trickle_ms * 1000LL;
				slow_stats.opened++;
				slow_send(sc, k, k->opening, strlen(k->opening),
				          now);
				continue;
			}
			/* Readable: the server closed (0 or an error); any bytes
			 * it sends first are read and dropped. */
			if (recv(sc->fd, buf, sizeof(buf), MSG_DONTWAIT) <= 0)
				slow_closed(sc, k, now);
		}
		for (int i = 0; i < SLOW_CONNS; i++) {
			struct slow_conn *sc = &slow_conns[i];
			const struct slow_kind *k = &slow_kinds[i % SLOW_NKINDS];

			if (sc->fd < 0 || !sc->connected || k->trickle_ms == 0 ||
			    now < sc->next_us)
				continue;
			sc->next_us = now + k->trickle_ms * 1000LL;
			sc->sent++;
			slow_send(sc, k, "a", 1, now);
		}
	}
	/* What the server has left open: none of it should be overdue. */
	now = now_mono_us();
	for (int i = 0; i < SLOW_CONNS; i++) {
		struct slow_conn *sc = &slow_conns[i];
		int64_t age = now - sc->connected_us;

		if (sc->fd < 0 || !sc->connected)
			continue;
		if (age > (REQUEST_DEADLINE_MS + CLOSE_MARGIN_MS) * 1000LL *
		          TIME_SCALE)
			slow_stats.overdue++;
		if (age > slow_stats.oldest_open_us)
			slow_stats.oldest_open_us = age;
	}
	return NULL;
}

static void slow_start(void)
{
	memset(&slow_stats, 0, sizeof(slow_stats));
	for (int i = 0; i < SLOW_CONNS; i++)
		slow_conns[i] = (struct slow_conn){ .fd = -1 };
	atomic_store(&slow_running, true);
	ck_assert_int_eq(pthread_create(&slow_thread, NULL, slow_main, NULL), 0);
	slow_started = true;
}

/* Joins the attacker and closes every socket it holds (teardown too). */
static void slow_stop(void)
{
	if (!slow_started)
		return;
	atomic_store(&slow_running, false);
	pthread_join(slow_thread, NULL);
	slow_started = false;
	for (int i = 0; i < SLOW_CONNS; i++) {
		if (slow_conns[i].fd >= 0)
			close(slow_conns[i].fd);
		slow_conns[i].fd = -1;
	}
}

/* Waits until fd is ready for events or deadline (now_mono_us()) passes.
 * Returns revents, 0 on timeout. */
static short wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = events };
		int64_t left = deadline - now_mono_us();
		int rc;

		if (left <= 0)
			return 0;
		rc = poll(&p, 1, (int)((left + 999) / 1000));
		if (rc > 0)
			return p.revents;
		if (rc == 0 || errno != EINTR)
			return 0;
	}
}

/* GET /livez from source address src. Returns the status code, 0 when
 * there was no complete status line within timeout_ms; *took_us is how
 * long it took either way. */
static int probe_from(const char *src_addr, int timeout_ms, int64_t *took_us)
{
	static const char req[] = "GET /livez HTTP/1.1\r\nHost: x\r\n"
	                          "Connection: close\r\n\r\n";
	struct sockaddr_in sa = { .sin_family = AF_INET,
	                          .sin_port = htons((uint16_t)port),
	                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in src = { .sin_family = AF_INET };
	int64_t start = now_mono_us(), deadline = start + timeout_ms * 1000LL;
	char buf[512] = "";
	size_t got = 0;
	int fd, code = 0, soerr = 0;
	socklen_t sl = sizeof(soerr);

	ck_assert_int_eq(inet_pton(AF_INET, src_addr, &src.sin_addr), 1);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	if (bind(fd, (struct sockaddr *)&src, sizeof(src)) != 0) {
		close(fd);
		ck_abort_msg("bind %s: %s", src_addr, strerror(errno));
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 &&
	    errno != EINPROGRESS)
		goto out;
	if (!(wait_fd(fd, POLLOUT, deadline) & POLLOUT) ||
	    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0 || soerr != 0)
		goto out;
	/* 60 bytes on a fresh socket: one send. */
	if (send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) != sizeof(req) - 1)
		goto out;
	while (got < sizeof(buf) - 1 && strstr(buf, "\r\n") == NULL) {
		ssize_t n;

		if (!(wait_fd(fd, POLLIN, deadline) & (POLLIN | POLLHUP | POLLERR)))
			break;
		n = recv(fd, buf + got, sizeof(buf) - 1 - got, MSG_DONTWAIT);
		if (n <= 0)
			break;
		got += (size_t)n;
		buf[got] = '\0';
	}
	if (got > 0 && strstr(buf, "\r\n") != NULL &&
	    sscanf(buf, "HTTP/1.1 %d ", &code) != 1)
		code = 0;
out:
	close(fd);
	*took_us = now_mono_us() - start;
	return code;
}

START_TEST(test_slow_clients)
{
	int probes = 0, answered = 0, first_bad = 0;
	int64_t worst_us = 0, end, next;
	const char *figures = getenv("CHECK_HTTP_FIGURES");
	char *log;

	capture_begin(); /* refusals and closures are logged */
	start_server(60000);
	slow_start();
	usleep(SLOW_SETTLE_MS * 1000);
	next = now_mono_us();
	end = next + PROBE_WINDOW_MS * 1000LL;
	/* Probes start every PROBE_EVERY_MS, or right after the last one when
	 * it took longer; none starts after the window. */
	while (now_mono_us() < end) {
		int64_t took, wait = next - now_mono_us();
		int code;

		if (wait > 0)
			usleep((useconds_t)wait);
		next = now_mono_us() + PROBE_EVERY_MS * 1000LL;
		code = probe_from(PROBE_ADDR, PROBE_TIMEOUT_MS * TIME_SCALE, &took);
		probes++;
		if (code == 200)
			answered++;
		else if (first_bad == 0)
			first_bad = probes;
		if (took > worst_us)
			worst_us = took;
	}
	slow_stop();
	log = capture_end();

	if (figures != NULL)
		fprintf(stderr, "slow clients: %d/%d probes answered, slowest "
		        "%lld ms; attacker: %u opened, %u closed by the server, "
		        "%u held >= %d ms then closed (%u trickling, held %lld-%lld "
		        "ms, up to %u bytes trickled); at the end %u open past "
		        "the deadline, oldest %lld ms\n", answered, probes,
		        (long long)(worst_us / 1000), slow_stats.opened,
		        slow_stats.closed, slow_stats.held_closed, SLOW_HELD_MS,
		        slow_stats.trickled_closed,
		        (long long)(slow_stats.held_min_us / 1000),
		        (long long)(slow_stats.held_max_us / 1000),
		        slow_stats.max_bytes_closed, slow_stats.overdue,
		        (long long)(slow_stats.oldest_open_us / 1000));
	ck_assert_msg(answered == probes, "%d of %d probes unanswered (first: "
	              "#%d; slowest %lld ms)", probes - answered, probes,
	              first_bad, (long long)(worst_us / 1000));
	ck_assert_msg(worst_us <= PROBE_TIMEOUT_MS * 1000LL * TIME_SCALE,
	              "slowest probe %lld ms", (long long)(worst_us / 1000));
	/* Answered quickly, so the window held about 40 of them. */
	ck_assert_msg(probes >= PROBE_WINDOW_MS / PROBE_EVERY_MS / 2,
	              "only %d probes", probes);
	/* Trickling did keep connections alive; now the server must close
	 * them on time. */
	ck_assert_msg(slow_stats.trickled_closed > 0,
	              "no trickling connection was ever closed by the server");
	ck_assert_msg(slow_stats.held_max_us <=
	              (REQUEST_DEADLINE_MS + CLOSE_MARGIN_MS) * 1000LL * TIME_SCALE,
	              "a connection was held %lld ms",
	              (long long)(slow_stats.held_max_us / 1000));
	ck_assert_msg(slow_stats.overdue == 0, "%u connections still open past "
	              "the deadline (oldest %lld ms)", slow_stats.overdue,
	              (long long)(slow_stats.oldest_open_us / 1000));
	/* Closures are logged, but clients choose how often they happen: one
	 * line in a minute. */
	ck_assert_msg(count_substr(log, "that sent no complete request within "
	                           "3 s") == 1, "%s", log);
	free(log);
}
END_TEST

/* A blocking connection to the server from source address src. */
static int connect_from(const char *src_addr)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
	                          .sin_port = htons((uint16_t)port),
	                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in src = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(inet_pton(AF_INET, src_addr, &src.sin_addr), 1);
	ck_assert_msg(bind(fd, (struct sockaddr *)&src, sizeof(src)) == 0,
	              "bind %s: %s", src_addr, strerror(errno));
	ck_assert_msg(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0,
	              "connect: %s", strerror(errno));
	return fd;
}

/* The server's per-address cap, and a request from the same address. */
#define PER_ADDRESS_LIMIT 32

START_TEST(test_per_address_limit)
{
	static const char req[] = "GET /livez HTTP/1.1\r\nHost: x\r\n\r\n";
	int fds[PER_ADDRESS_LIMIT], code;
	int64_t took;

	capture_begin(); /* libmicrohttpd logs each refusal */
	start_server(60000);
	/* Idle clients take 127.0.0.1's whole share (the checks below end
	 * well within the 3 s request deadline that would close them) ... */
	for (int i = 0; i < PER_ADDRESS_LIMIT; i++)
		fds[i] = connect_from("127.0.0.1");
	usleep(100 * 1000);
	/* ... so one more from there is closed unanswered ... */
	ck_assert_int_eq(raw_request(req, strlen(req)), 0);
	/* ... while another address is served at once ... */
	code = probe_from("127.0.0.2", 1000 * TIME_SCALE, &took);
	ck_assert_msg(code == 200, "probe from 127.0.0.2: %d", code);
	/* ... and 127.0.0.1 again once they go away. */
	for (int i = 0; i < PER_ADDRESS_LIMIT; i++)
		close(fds[i]);
	usleep(100 * 1000);
	expect("/livez", 200, CT_TEXT, "ok\n");
	free(capture_end());
}
END_TEST

START_TEST(test_connection_limit)
{
	enum { NOFILE = 40, LIMIT = NOFILE / 2 };
	struct rlimit saved, low;
	int fds[LIMIT], code;
	int64_t took;
	char *log, err[256] = "";

	/* Under a low descriptor limit the server takes half of it. The
	 * limit is read once, at start; it is restored before the clients
	 * below (which share this process) open anything. */
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &saved), 0);
	low = saved;
	low.rlim_cur = NOFILE;
	capture_begin();
	if (setrlimit(RLIMIT_NOFILE, &low) != 0) {
		free(capture_end());
		return; /* a sandbox may refuse: nothing to check then */
	}
	srv = http_start("127.0.0.1:0", 60000, err, sizeof(err));
	/* Back up before any assertion, which would leave it low for the
	 * tests after this one under CK_FORK=no. */
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &saved), 0);
	ck_assert_msg(srv != NULL, "http_start: %s", err);
	port = http_port(srv);
	/* Twenty idle clients, under the per-address cap, take every slot
	 * (well within the 3 s request deadline that would free them) ... */
	for (int i = 0; i < LIMIT; i++)
		fds[i] = connect_from("127.0.0.1");
	usleep(100 * 1000);
	/* ... so a probe from anywhere waits ... */
	code = probe_from("127.0.0.2", TIME_SCALE == 1 ? 300 : 2000, &took);
	ck_assert_msg(code == 0, "served past the connection limit: %d", code);
	/* ... until they go away. */
	for (int i = 0; i < LIMIT; i++)
		close(fds[i]);
	usleep(100 * 1000);
	code = probe_from("127.0.0.2", 1000 * TIME_SCALE, &took);
	ck_assert_msg(code == 200, "probe from 127.0.0.2: %d", code);
	log = capture_end();
	ck_assert_msg(strstr(log, "WARN  http: at most 20 connections, half the "
	                     "descriptor limit (RLIMIT_NOFILE 40); raise it to "
	                     "1024 for the usual 512\n") != NULL,
	              "no warning in [%s]", log);
	free(log);
}
END_TEST

/* Sends s on fd; false when the server has closed. */
static bool send_str(int fd, const char *s)
{
	return send(fd, s, strlen(s), MSG_NOSIGNAL) == (ssize_t)strlen(s);
}

START_TEST(test_deadline_whole_request)
{
	static const char *const parts[] = { "GET /livez HTTP/1.1\r\n",
	                                     "Host: x\r\n", "\r\n" };
	char buf[1024] = "";
	size_t got = 0;
	int fd;

	start_server(60000);
	fd = connect_from("127.0.0.1");
	/* A complete request trickled over a second is served: the deadline
	 * bounds the whole request, not the pace within it. */
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		if (i > 0)
			usleep(500 * 1000);
		ck_assert(send_str(fd, parts[i]));
	}
	/* The reply ends the connection (libmicrohttpd 0.9.75 does so when a
	 * reply is queued on the handler's first call), so no second request
	 * on it can start a slow trickle after the first was answered. */
	for (;;) {
		ssize_t n;

		ck_assert(wait_fd(fd, POLLIN, now_mono_us() + 2000000LL * TIME_SCALE));
		n = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);
		ck_assert_int_ge(n, 0);
		if (n == 0)
			break;
		got += (size_t)n;
		buf[got] = '\0';
		ck_assert_uint_lt(got, sizeof(buf) - 1);
	}
	close(fd);
	ck_assert_msg(strncmp(buf, "HTTP/1.1 200 ", 13) == 0, "%s", buf);
	ck_assert_ptr_nonnull(strstr(buf, "\r\nConnection: close\r\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\r\n\r\nok\n"));
}
END_TEST

Suite *http_suite(void)
{
	Suite *s = suite_create("http");
	TCase *tc = tcase_create("endpoint");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, test_listen_errors);
	tcase_add_test(tc, test_bind_in_use);
	tcase_add_test(tc, test_ipv6_loopback);
	tcase_add_test(tc, test_livez_and_stall);
	tcase_add_test(tc, test_livez_never_ticked);
	tcase_add_test(tc, test_no_snapshot);
	tcase_add_test(tc, test_readyz_reasons);
	tcase_add_test(tc, test_readyz_silence);
	tcase_add_test(tc, test_readyz_standby);
	tcase_add_test(tc, test_slot_by_state);
	tcase_add_test(tc, test_metrics);
	tcase_add_test(tc, test_head);
	tcase_add_test(tc, test_wrong_methods);
	tcase_add_test(tc, test_unknown_paths);
	tcase_add_test(tc, test_query_ignored);
	tcase_add_test(tc, test_oversized_header);
	tcase_add_test(tc, test_mhd_log_routed_and_limited);
	tcase_add_test(tc, test_long_uri);
	tcase_add_test(tc, test_get_body_ignored);
	tcase_add_test(tc, test_publish_copies);
	tcase_add_test(tc, test_publish_concurrent);
	tcase_add_test(tc, test_stop_releases);
	tcase_add_test(tc, test_slow_clients);
	tcase_add_test(tc, test_per_address_limit);
	tcase_add_test(tc, test_connection_limit);
	tcase_add_test(tc, test_deadline_whole_request);
	suite_add_tcase(s, tc);
	return s;
}
