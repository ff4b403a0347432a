/* SPDX-License-Identifier: Apache-2.0 */
/* check_alert.c -- webhook alerts against a receiver in the test (a
 * libmicrohttpd server on 127.0.0.1, port 0) that answers from a script:
 * retries, giving up, drop-oldest on overflow, bounded shutdown, a dead or
 * hung receiver never blocking alert_post, and the rendered body. */
#include <check.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <microhttpd.h>

#include "health/alert.h"
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


#define RECV_MAX 128

/* The alerter under test: teardown stops it when a test fails early
 * (CK_FORK=no runs every test in one process). */
static struct alerter *cur;

/* The receiver: records every POST and answers codes[i] to the i-th
 * (default_code past the script). While gate_closed, the first request
 * waits in the handler, holding the sender's transfer. */
static struct receiver {
	struct MHD_Daemon *mhd;
	int port;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int codes[8];
	size_t ncodes;
	int default_code;
	size_t hits;
	char *bodies[RECV_MAX];
	char ctype[64], method[16], url[64], token[64];
	bool gate_closed, entered;
} rx;

struct upload {
	char *buf;
	size_t len;
};

static enum MHD_Result rx_handler(void *cls, struct MHD_Connection *c,
                                  const char *url, const char *method,
                                  const char *version, const char *data,
                                  size_t *size, void **req_cls)
{
	struct upload *up = *req_cls;
	struct MHD_Response *resp;
	const char *v;
	enum MHD_Result ret;
	int code;

	if (up == NULL) {
		*req_cls = calloc(1, sizeof(struct upload));
		return MHD_YES;
	}
	if (*size > 0) {
		up->buf = realloc(up->buf, up->len + *size + 1);
		memcpy(up->buf + up->len, data, *size);
		up->len += *size;
		up->buf[up->len] = '\0';
		*size = 0;
		return MHD_YES;
	}
	pthread_mutex_lock(&rx.lock);
	if (rx.hits < RECV_MAX)
		rx.bodies[rx.hits] = up->buf ? up->buf : strdup("");
	else
		free(up->buf);
	code = rx.hits < rx.ncodes ? rx.codes[rx.hits] : rx.default_code;
	rx.hits++;
	v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
	snprintf(rx.ctype, sizeof(rx.ctype), "%s", v ? v : "");
	snprintf(rx.method, sizeof(rx.method), "%s", method);
	snprintf(rx.url, sizeof(rx.url), "%s", url);
	v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "token");
	snprintf(rx.token, sizeof(rx.token), "%s", v ? v : "");
	rx.entered = true;
	pthread_cond_broadcast(&rx.cond);
	while (rx.gate_closed)
		pthread_cond_wait(&rx.cond, &rx.lock);
	pthread_mutex_unlock(&rx.lock);
	free(up);
	*req_cls = NULL;

	resp = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
	ret = MHD_queue_response(c, (unsigned int)code, resp);
	MHD_destroy_response(resp);
	return ret;
}

static void rx_start(int default_code, const int *codes, size_t ncodes)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
	                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	const union MHD_DaemonInfo *di;

	rx.default_code = default_code;
	rx.ncodes = ncodes;
	if (ncodes > 0)
		memcpy(rx.codes, codes, ncodes * sizeof(codes[0]));
	rx.mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO,
	                          0, NULL, NULL, rx_handler, NULL,
	                          MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
	                          MHD_OPTION_END);
	ck_assert_ptr_nonnull(rx.mhd);
	di = MHD_get_daemon_info(rx.mhd, MHD_DAEMON_INFO_BIND_PORT);
	ck_assert_ptr_nonnull(di);
	rx.port = di->port;
	ck_assert_int_gt(rx.port, 0);
}

static size_t rx_hits(void)
{
	size_t n;
	pthread_mutex_lock(&rx.lock);
	n = rx.hits;
	pthread_mutex_unlock(&rx.lock);
	return n;
}

/* Waits up to ms for at least n requests. */
static bool rx_wait(size_t n, int ms)
{
	int64_t end = now_mono_us() + (int64_t)ms * 1000 * TIME_SCALE;

	while (rx_hits() < n) {
		if (now_mono_us() > end)
			return false;
		usleep(2000);
	}
	return true;
}

static void rx_open_gate(void)
{
	pthread_mutex_lock(&rx.lock);
	rx.gate_closed = false;
	pthread_cond_broadcast(&rx.cond);
	pthread_mutex_unlock(&rx.lock);
}

static void setup(void)
{
	setenv("NO_PROXY", "*", 1);
	setenv("no_proxy", "*", 1);
	memset(&rx, 0, sizeof(rx));
	pthread_mutex_init(&rx.lock, NULL);
	pthread_cond_init(&rx.cond, NULL);
	alert_set_backoff_for_tests(10);
}


static void teardown(void)
{
	capture_reset();
	rx_open_gate();
	alert_stop(cur, 0);
	cur = NULL;
	if (rx.mhd != NULL)
		MHD_stop_daemon(rx.mhd);
	for (size_t i = 0; i < RECV_MAX; i++)
		free(rx.bodies[i]);
	pthread_cond_destroy(&rx.cond);
	pthread_mutex_destroy(&rx.lock);
	alert_set_backoff_for_tests(0);
}

static void stop(struct alerter *a, int timeout_ms)
{
	alert_stop(a, timeout_ms);
	cur = NULL;
}

static struct alerter *start(const char *path)
{
	char url[256], err[256] = "";
	struct alerter *a;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", rx.port, path);
	a = cur = alert_start(url, err, sizeof(err));
	ck_assert_msg(a != NULL, "alert_start: %s", err);
	return a;
}

/* A port on 127.0.0.1 where nothing listens (bound, then closed). */
static int dead_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
	                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	close(fd);
	return ntohs(sa.sin_port);
}

/* A port that accepts connections (the kernel does, from the backlog) and
 * never answers: a hung receiver. Returns the listening socket. */
static int hung_listener(int *port_out)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
	                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(fd, 8), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	*port_out = ntohs(sa.sin_port);
	return fd;
}

static void snap_init(struct health_snapshot *s)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->slot_name, sizeof(s->slot_name), "outbox_slot");
	s->slot.valid = true;
	s->slot.slot_exists = true;
	s->slot.retained_bytes = 9663676416;
	s->slot.confirmed_lag_bytes = 123456;
	s->slot.wal_status = WAL_STATUS_UNRESERVED;
	s->slot.safe_wal_size = 52428800;
	s->relay.confirmed_lsn = 0x16B374D848ULL;
	s->relay.inflight_events = 17;
	s->eval.state = HEALTH_CRITICAL;
	health_reason_add(&s->eval, "retained WAL 9.0 GiB >= critical 8.0 GiB");
	health_reason_add(&s->eval, "wal_status unreserved");
	s->eval.eta_seconds = 420.5;
	s->eval.outbox_lag_seconds = 12.25;
	s->now_us = 1700000000123456LL; /* 2023-11-14T22:13:20.123456Z */
}

START_TEST(test_render)
{
	struct health_snapshot s;
	json_t *j, *f, *r;
	json_error_t jerr;
	char *body;

	snap_init(&s);
	body = alert_render(&s, HEALTH_WARN);
	j = json_loads(body, JSON_REJECT_DUPLICATES, &jerr);
	ck_assert_msg(j != NULL, "%s: %s", body, jerr.text);
	ck_assert_uint_eq(json_object_size(j), 6);
	ck_assert_str_eq(json_string_value(json_object_get(j, "slot")),
	                 "outbox_slot");
	ck_assert_str_eq(json_string_value(json_object_get(j, "state")),
	                 "critical");
	ck_assert_str_eq(json_string_value(json_object_get(j, "previous_state")),
	                 "warn");
	ck_assert_str_eq(json_string_value(json_object_get(j, "at")),
	                 "2023-11-14T22:13:20.123Z");
	r = json_object_get(j, "reasons");
	ck_assert_uint_eq(json_array_size(r), 2);
	ck_assert_str_eq(json_string_value(json_array_get(r, 0)),
	                 "retained WAL 9.0 GiB >= critical 8.0 GiB");
	ck_assert_str_eq(json_string_value(json_array_get(r, 1)),
	                 "wal_status unreserved");
	f = json_object_get(j, "figures");
	ck_assert_uint_eq(json_object_size(f), 8);
	ck_assert_int_eq(json_integer_value(json_object_get(f,
	                 "retained_wal_bytes")), 9663676416);
	ck_assert_int_eq(json_integer_value(json_object_get(f,
	                 "confirmed_lag_bytes")), 123456);
	ck_assert_str_eq(json_string_value(json_object_get(f, "wal_status")),
	                 "unreserved");
	ck_assert_int_eq(json_integer_value(json_object_get(f,
	                 "safe_wal_size_bytes")), 52428800);
	ck_assert_double_eq(json_real_value(json_object_get(f, "eta_seconds")),
	                    420.5);
	ck_assert_double_eq(json_real_value(json_object_get(f,
	                    "outbox_lag_seconds")), 12.25);
	ck_assert_int_eq(json_integer_value(json_object_get(f,
	                 "inflight_events")), 17);
	ck_assert_str_eq(json_string_value(json_object_get(f, "confirmed_lsn")),
	                 "16/B374D848");
	ck_assert_ptr_null(strstr(body, "password"));
	json_decref(j);
	free(body);
}
END_TEST

START_TEST(test_render_unknowns)
{
	struct health_snapshot s;
	json_t *j, *f;
	char *body;

	snap_init(&s);
	s.slot.valid = false;
	s.eval.state = HEALTH_OK;
	s.eval.nreasons = 0;
	s.eval.eta_seconds = -1;
	s.eval.outbox_lag_seconds = INFINITY;
	s.relay.confirmed_lsn = 0;
	body = alert_render(&s, HEALTH_CRITICAL);
	j = json_loads(body, 0, NULL);
	ck_assert_ptr_nonnull(j);
	ck_assert_str_eq(json_string_value(json_object_get(j, "state")), "ok");
	ck_assert_str_eq(json_string_value(json_object_get(j, "previous_state")),
	                 "critical");
	ck_assert_uint_eq(json_array_size(json_object_get(j, "reasons")), 0);
	ck_assert(json_is_array(json_object_get(j, "reasons")));
	f = json_object_get(j, "figures");
	ck_assert(json_is_null(json_object_get(f, "retained_wal_bytes")));
	ck_assert(json_is_null(json_object_get(f, "confirmed_lag_bytes")));
	ck_assert(json_is_null(json_object_get(f, "wal_status")));
	ck_assert(json_is_null(json_object_get(f, "safe_wal_size_bytes")));
	ck_assert(json_is_null(json_object_get(f, "eta_seconds")));
	ck_assert(json_is_null(json_object_get(f, "outbox_lag_seconds")));
	ck_assert_uint_eq(json_object_size(f), 8);
	ck_assert_str_eq(json_string_value(json_object_get(f, "confirmed_lsn")),
	                 "0/0");
	json_decref(j);
	free(body);

	/* A sample with SQL NULLs: -1 figures are null too. */
	snap_init(&s);
	s.slot.safe_wal_size = -1;
	s.slot.wal_status = WAL_STATUS_UNKNOWN;
	body = alert_render(&s, HEALTH_OK);
	j = json_loads(body, 0, NULL);
	f = json_object_get(j, "figures");
	ck_assert(json_is_null(json_object_get(f, "safe_wal_size_bytes")));
	ck_assert(json_is_null(json_object_get(f, "wal_status")));
	ck_assert(json_is_integer(json_object_get(f, "retained_wal_bytes")));
	json_decref(j);
	free(body);

	/* Bytes that are not UTF-8 cannot drop a field or break the JSON. */
	snap_init(&s);
	snprintf(s.slot_name, sizeof(s.slot_name), "slot\xff\xfe");
	body = alert_render(&s, HEALTH_OK);
	j = json_loads(body, 0, NULL);
	ck_assert_ptr_nonnull(j);
	ck_assert_str_eq(json_string_value(json_object_get(j, "slot")), "slot??");
	json_decref(j);
	free(body);
}
END_TEST

START_TEST(test_start_bad_urls)
{
	static const char *const bad[] = {
		"", "not a url", "ftp://alice:s3cret@example.com/hook",
		"file:///etc/passwd", "example.com/hook?token=s3cret",
		"http://", "gopher://h/s3cret",
	};
	char err[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		ck_assert_msg(alert_start(bad[i], err, sizeof(err)) == NULL,
		              "accepted #%zu", i);
		ck_assert_msg(strncmp(err, "alert.webhook.url: ", 19) == 0,
		              "#%zu: %s", i, err);
		ck_assert_msg(strstr(err, "s3cret") == NULL, "%s", err);
		ck_assert_msg(strstr(err, "passwd") == NULL, "%s", err);
	}
	/* NULL alerter: no-ops. */
	alert_post(NULL, "{}");
	ck_assert_uint_eq(alert_dropped(NULL), 0);
	alert_stop(NULL, 0);
}
END_TEST

START_TEST(test_retry_then_accept)
{
	static const int script[] = { 500, 500, 200 };
	struct health_snapshot s;
	struct alerter *a;
	char *body;

	rx_start(200, script, 3);
	a = start("/hook?token=t0ken");
	snap_init(&s);
	body = alert_render(&s, HEALTH_WARN);
	alert_post(a, body);
	ck_assert_msg(rx_wait(3, 2000), "hits %zu", rx_hits());
	usleep(100 * 1000 * TIME_SCALE); /* accepted: no fourth attempt */
	ck_assert_uint_eq(rx_hits(), 3);
	for (size_t i = 0; i < 3; i++) {
		json_t *j = json_loads(rx.bodies[i], 0, NULL);
		ck_assert_str_eq(rx.bodies[i], body);
		ck_assert_ptr_nonnull(j);
		ck_assert_str_eq(json_string_value(json_object_get(j, "state")),
		                 "critical");
		json_decref(j);
	}
	ck_assert_str_eq(rx.method, "POST");
	ck_assert_str_eq(rx.ctype, "application/json");
	ck_assert_str_eq(rx.url, "/hook");
	ck_assert_str_eq(rx.token, "t0ken"); /* the URL is used as given */
	ck_assert_uint_eq(alert_dropped(a), 0);
	stop(a, 1000);
	free(body);
}
END_TEST

START_TEST(test_2xx_accepted)
{
	static const int script[] = { 204, 299, 300 };
	struct alerter *a;

	rx_start(200, script, 3);
	a = start("/");
	alert_post(a, "{\"n\":1}");
	ck_assert(rx_wait(1, 2000));
	alert_post(a, "{\"n\":2}");
	ck_assert(rx_wait(2, 2000));
	usleep(50 * 1000 * TIME_SCALE);
	ck_assert_uint_eq(rx_hits(), 2); /* 204 and 299: no retry */
	/* 300 is not success (no redirects followed): retried, then 200. */
	alert_post(a, "{\"n\":3}");
	ck_assert(rx_wait(4, 2000));
	ck_assert_str_eq(rx.bodies[3], "{\"n\":3}");
	ck_assert_uint_eq(alert_dropped(a), 0);
	stop(a, 1000);
}
END_TEST

START_TEST(test_gives_up)
{
	struct alerter *a;
	char url[256], err[256] = "", *log, origin[64];

	rx_start(503, NULL, 0);
	alert_set_backoff_for_tests(5);
	/* Credentials and a token in the URL: never in the log. */
	snprintf(url, sizeof(url),
	         "http://alice:s3cret@127.0.0.1:%d/hook?token=t0ken", rx.port);
	capture_begin();
	a = cur = alert_start(url, err, sizeof(err));
	ck_assert_msg(a != NULL, "%s", err);
	alert_post(a, "{\"state\":\"critical\"}");
	ck_assert(rx_wait(6, 2000));
	for (int i = 0; i < 200 * TIME_SCALE && alert_dropped(a) == 0; i++)
		usleep(5000);
	ck_assert_uint_eq(alert_dropped(a), 1);
	usleep(100 * 1000 * TIME_SCALE);
	ck_assert_uint_eq(rx_hits(), 6); /* six attempts, no more */
	stop(a, 1000);
	log = capture_end();
	snprintf(origin, sizeof(origin), "alert: webhook http://127.0.0.1:%d: ",
	         rx.port);
	ck_assert_msg(strstr(log, origin) != NULL, "%s", log);
	ck_assert_msg(strstr(log, "after 6 attempts: HTTP 503") != NULL, "%s",
	              log);
	ck_assert_msg(strstr(log, "s3cret") == NULL, "%s", log);
	ck_assert_msg(strstr(log, "alice") == NULL, "%s", log);
	ck_assert_msg(strstr(log, "t0ken") == NULL, "%s", log);
	ck_assert_msg(strstr(log, "/hook") == NULL, "%s", log);
	/* Once per body: one line. */
	ck_assert_ptr_null(strstr(strstr(log, origin) + 1, origin));
	free(log);
}
END_TEST

START_TEST(test_dead_url_never_blocks)
{
	char url[128], err[256] = "";
	struct alerter *a;
	int64_t t0, worst = 0;

	/* Default backoff (500 ms): alert_stop must cut the wait short. */
	alert_set_backoff_for_tests(0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/hook", dead_port());
	capture_begin();
	a = cur = alert_start(url, err, sizeof(err));
	ck_assert_msg(a != NULL, "%s", err);
	for (int i = 0; i < 20; i++) {
		t0 = now_mono_us();
		alert_post(a, "{\"state\":\"critical\"}");
		if (now_mono_us() - t0 > worst)
			worst = now_mono_us() - t0;
	}
	ck_assert_msg(worst < 10000 * TIME_SCALE, "alert_post took %lld us",
	              (long long)worst);
	usleep(50 * 1000);
	t0 = now_mono_us();
	stop(a, 100);
	t0 = now_mono_us() - t0;
	free(capture_end());
	ck_assert_msg(t0 < 400000 * TIME_SCALE, "alert_stop took %lld us",
	              (long long)t0);
}
END_TEST

START_TEST(test_stop_cuts_hung_transfer)
{
	char url[128], err[256] = "";
	struct alerter *a;
	int fd, hport;
	int64_t t0;

	fd = hung_listener(&hport);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/hook", hport);
	capture_begin();
	a = cur = alert_start(url, err, sizeof(err));
	ck_assert_msg(a != NULL, "%s", err);
	t0 = now_mono_us();
	alert_post(a, "{}");
	ck_assert_int_lt(now_mono_us() - t0, 10000 * TIME_SCALE);
	usleep(100 * 1000); /* the worker is inside the transfer */
	t0 = now_mono_us();
	stop(a, 200);
	t0 = now_mono_us() - t0;
	free(capture_end());
	close(fd);
	/* Within the timeout plus scheduling, far below curl's 5 s. */
	ck_assert_msg(t0 >= 150000 && t0 < 600000 * TIME_SCALE,
	              "alert_stop took %lld us",
	              (long long)t0);
}
END_TEST

START_TEST(test_stop_now_cuts_hung_transfer)
{
	char url[128], err[256] = "";
	struct alerter *a;
	int fd, hport;
	int64_t t0;

	fd = hung_listener(&hport);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/hook", hport);
	capture_begin();
	a = cur = alert_start(url, err, sizeof(err));
	ck_assert_msg(a != NULL, "%s", err);
	alert_post(a, "{}");
	usleep(300 * 1000); /* the worker waits in curl_multi_poll */
	t0 = now_mono_us();
	stop(a, 0);
	t0 = now_mono_us() - t0;
	free(capture_end());
	close(fd);
	ck_assert_msg(t0 < 100000 * TIME_SCALE, "alert_stop took %lld us",
	              (long long)t0);
}
END_TEST

START_TEST(test_stop_drains_queue)
{
	struct alerter *a;
	char body[32];

	rx_start(200, NULL, 0);
	a = start("/");
	for (int i = 0; i < 5; i++) {
		snprintf(body, sizeof(body), "{\"n\":%d}", i);
		alert_post(a, body);
	}
	stop(a, 2000 * TIME_SCALE); /* returns once the queue is empty */
	ck_assert_uint_eq(rx_hits(), 5);
	for (int i = 0; i < 5; i++) {
		snprintf(body, sizeof(body), "{\"n\":%d}", i);
		ck_assert_str_eq(rx.bodies[i], body);
	}
}
END_TEST

START_TEST(test_stop_deadline_abandons_queue)
{
	struct alerter *a;
	char *log;
	int64_t t0;

	rx.gate_closed = true;
	rx_start(200, NULL, 0);
	capture_begin();
	a = start("/");
	alert_post(a, "{\"n\":0}");
	pthread_mutex_lock(&rx.lock);
	while (!rx.entered)
		pthread_cond_wait(&rx.cond, &rx.lock);
	pthread_mutex_unlock(&rx.lock);
	for (int i = 1; i <= 20; i++)
		alert_post(a, "{\"n\":1}");
	/* Body 0 is held by the receiver; the deadline ends it, and the 20
	 * queued bodies are not even tried. */
	t0 = now_mono_us();
	stop(a, 50);
	t0 = now_mono_us() - t0;
	log = capture_end();
	ck_assert_msg(t0 < 300000 * TIME_SCALE, "alert_stop took %lld us",
	              (long long)t0);
	rx_open_gate();
	usleep(100 * 1000);
	ck_assert_int_eq(rx_hits(), 1);
	ck_assert_msg(strstr(log, "alert dropped after 1 attempt: shutting "
	                     "down") != NULL, "%s", log);
	ck_assert_msg(strstr(log, ": 20 alerts not sent before shutdown") != NULL,
	              "%s", log);
	free(log);
}
END_TEST

START_TEST(test_overflow_drops_oldest)
{
	struct alerter *a;
	char body[32];

	rx.gate_closed = true;
	rx_start(200, NULL, 0);
	a = start("/");
	alert_post(a, "{\"n\":0}");
	/* Wait until body 0 is in flight, held by the receiver. */
	pthread_mutex_lock(&rx.lock);
	while (!rx.entered)
		pthread_cond_wait(&rx.cond, &rx.lock);
	pthread_mutex_unlock(&rx.lock);
	/* 74 more: 64 fit, the 10 oldest are dropped. */
	for (int i = 1; i <= 74; i++) {
		snprintf(body, sizeof(body), "{\"n\":%d}", i);
		alert_post(a, body);
	}
	ck_assert_uint_eq(alert_dropped(a), 10);
	rx_open_gate();
	ck_assert_msg(rx_wait(65, 3000), "hits %zu", rx_hits());
	ck_assert_str_eq(rx.bodies[0], "{\"n\":0}");
	for (int i = 1; i <= 64; i++) {
		snprintf(body, sizeof(body), "{\"n\":%d}", i + 10);
		ck_assert_str_eq(rx.bodies[i], body);
	}
	ck_assert_uint_eq(alert_dropped(a), 10);
	stop(a, 1000);
	ck_assert_uint_eq(rx_hits(), 65);
}
END_TEST

Suite *alert_suite(void)
{
	Suite *s = suite_create("alert");
	TCase *tc = tcase_create("webhook");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, test_render);
	tcase_add_test(tc, test_render_unknowns);
	tcase_add_test(tc, test_start_bad_urls);
	tcase_add_test(tc, test_retry_then_accept);
	tcase_add_test(tc, test_2xx_accepted);
	tcase_add_test(tc, test_gives_up);
	tcase_add_test(tc, test_dead_url_never_blocks);
	tcase_add_test(tc, test_stop_cuts_hung_transfer);
	tcase_add_test(tc, test_stop_now_cuts_hung_transfer);
	tcase_add_test(tc, test_stop_drains_queue);
	tcase_add_test(tc, test_stop_deadline_abandons_queue);
	tcase_add_test(tc, test_overflow_drops_oldest);
	suite_add_tcase(s, tc);
	return s;
}
