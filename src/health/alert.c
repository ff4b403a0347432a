/* SPDX-License-Identifier: Apache-2.0 */
/* alert.c -- webhook alerts: a bounded queue and one worker thread that
 * POSTs each body with libcurl, retrying with capped exponential backoff.
 *
 * alert_post() only takes a short mutex and copies the body; the worker
 * never holds the mutex during a transfer or a backoff. The URL may carry
 * a token (userinfo or query), so logs name only scheme://host:port. */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>

#include "health/alert.h"
#include "lib/log.h"

#define ALERT_QUEUE_MAX 64
#define ALERT_ATTEMPTS 6            /* per body, then it is dropped */
#define ALERT_BACKOFF_FIRST_MS 500  /* doubles after each failed attempt */
#define ALERT_BACKOFF_CAP_MS 30000
#define ALERT_TIMEOUT_MS 5000       /* whole transfer */
#define ALERT_CONNECT_TIMEOUT_MS 2000
#define ALERT_POLL_MS 1000          /* longest wait inside a transfer */

/* First backoff; tests shorten it (alert_set_backoff_for_tests). */
static _Atomic int backoff_first_ms = ALERT_BACKOFF_FIRST_MS;

struct alerter {
	char origin[320];           /* scheme://host:port: what logs show */
	CURLM *multi;               /* drives easy, so alert_stop can wake it */
	CURL *easy;                 /* reused: keeps the connection alive */
	struct curl_slist *headers;
	pthread_t thread;
	pthread_mutex_t lock;       /* guards queue .. deadline_us */
	pthread_cond_t cond;        /* CLOCK_MONOTONIC */
	char *queue[ALERT_QUEUE_MAX]; /* ring, oldest at head */
	size_t head, len;
	bool stopping;
	int64_t deadline_us;        /* now_mono_us() when stopping must end */
	_Atomic size_t dropped;     /* read without the lock */
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init_once(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

#ifdef OUTBOX_RELAY_TEST_HOOKS
void alert_set_backoff_for_tests(int ms)
{
	atomic_store(&backoff_first_ms, ms > 0 ? ms : ALERT_BACKOFF_FIRST_MS);
}
#endif

/* True once alert_stop's deadline has passed. Caller holds a->lock. */
static bool expired_locked(const struct alerter *a)
{
	return a->stopping && now_mono_us() >= a->deadline_us;
}

static bool expired(struct alerter *a)
{
	bool e;
	pthread_mutex_lock(&a->lock);
	e = expired_locked(a);
	pthread_mutex_unlock(&a->lock);
	return e;
}

/* How long the worker may sleep in curl_multi_poll: until the stop
 * deadline at most, so alert_stop's timeout holds. */
static int poll_ms(struct alerter *a)
{
	int ms = ALERT_POLL_MS;

	pthread_mutex_lock(&a->lock);
	if (a->stopping) {
		int64_t left = (a->deadline_us - now_mono_us()) / 1000 + 1;
		if (left < ms)
			ms = left > 0 ? (int)left : 0;
	}
	pthread_mutex_unlock(&a->lock);
	return ms;
}

static size_t discard_cb(char *p, size_t size, size_t n, void *ud)
{
	return size * n; /* the receiver's answer is not used */
}

/* One POST. Returns 0 on a 2xx; else -1 with why filled (no URL in it). */
static int post_once(struct alerter *a, const char *body, char *why,
                     size_t whylen)
{
	CURLcode res = CURLE_OK;
	CURLMcode mc;
	CURLMsg *msg;
	int running = 1, left;
	long code = 0;
	bool aborted = false;

	curl_easy_setopt(a->easy, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(a->easy, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	mc = curl_multi_add_handle(a->multi, a->easy);
	if (mc != CURLM_OK) {
		errbuf_set(why, whylen, "%s", curl_multi_strerror(mc));
		return -1;
	}
	for (;;) {
		mc = curl_multi_perform(a->multi, &running);
		if (mc != CURLM_OK || running == 0)
			break;
		if (expired(a)) {
			aborted = true;
			break;
		}
		mc = curl_multi_poll(a->multi, NULL, 0, poll_ms(a), NULL);
		if (mc != CURLM_OK)
			break;
	}
	while ((msg = curl_multi_info_read(a->multi, &left)) != NULL)
		if (msg->msg == CURLMSG_DONE && msg->easy_handle == a->easy)
			res = msg->data.result;
	curl_multi_remove_handle(a->multi, a->easy);

	if (aborted) {
		errbuf_set(why, whylen, "shutting down");
		return -1;
	}
	if (mc != CURLM_OK) {
		errbuf_set(why, whylen, "%s", curl_multi_strerror(mc));
		return -1;
	}
	/* curl_easy_strerror, not the error buffer: fixed texts that cannot
	 * echo the URL. */
	if (res != CURLE_OK) {
		errbuf_set(why, whylen, "%s", curl_easy_strerror(res));
		return -1;
	}
	curl_easy_getinfo(a->easy, CURLINFO_RESPONSE_CODE, &code);
	if (code >= 200 && code < 300)
		return 0;
	errbuf_set(why, whylen, "HTTP %ld", code);
	return -1;
}

/* Sleeps ms unless the stop deadline comes first. Returns 0 after the
 * full sleep, -1 when the deadline passed. */
static int backoff_sleep(struct alerter *a, int ms)
{
	int64_t until = now_mono_us() + (int64_t)ms * 1000;
	int rc = 0;

	pthread_mutex_lock(&a->lock);
	for (;;) {
		int64_t wake = until;
		struct timespec ts;

		if (expired_locked(a)) {
			rc = -1;
			break;
		}
		if (now_mono_us() >= until)
			break;
		if (a->stopping && a->deadline_us < wake)
			wake = a->deadline_us;
		/* now_mono_us() is CLOCK_MONOTONIC, the condvar's clock. */
		ts.tv_sec = wake / 1000000;
		ts.tv_nsec = (wake % 1000000) * 1000;
		pthread_cond_timedwait(&a->cond, &a->lock, &ts);
	}
	pthread_mutex_unlock(&a->lock);
	return rc;
}

/* Delivers one body or gives up on it (counted, one warning). */
static void deliver(struct alerter *a, const char *body)
{
	int ms = atomic_load(&backoff_first_ms);
	char why[128];
	int attempt;

	for (attempt = 1;; attempt++) {
		if (post_once(a, body, why, sizeof(why)) == 0)
			return;
		if (attempt == ALERT_ATTEMPTS || backoff_sleep(a, ms) != 0)
			break;
		ms = ms > ALERT_BACKOFF_CAP_MS / 2 ? ALERT_BACKOFF_CAP_MS : ms * 2;
	}
	atomic_fetch_add(&a->dropped, 1);
	log_warn("alert: webhook %s: alert dropped after %d attempt%s: %s",
	         a->origin, attempt, attempt == 1 ? "" : "s", why);
}

/* The worker (its own thread): queue -> POST until stopped. */
static void *alert_main(void *arg)
{
	struct alerter *a = arg;
	size_t left;

	for (;;) {
		char *body;

		pthread_mutex_lock(&a->lock);
		while (a->len == 0 && !a->stopping)
			pthread_cond_wait(&a->cond, &a->lock);
		if (a->len == 0 || expired_locked(a)) {
			pthread_mutex_unlock(&a->lock);
			break;
		}
		body = a->queue[a->head];
		a->head = (a->head + 1) % ALERT_QUEUE_MAX;
		a->len--;
		pthread_mutex_unlock(&a->lock);

		deliver(a, body);
		free(body);
	}

	pthread_mutex_lock(&a->lock);
	left = a->len;
	while (a->len > 0) {
		free(a->queue[a->head]);
		a->head = (a->head + 1) % ALERT_QUEUE_MAX;
		a->len--;
	}
	pthread_mutex_unlock(&a->lock);
	if (left > 0)
		log_warn("alert: webhook %s: %zu alert%s not sent before shutdown",
		         a->origin, left, left == 1 ? "" : "s");
	return NULL;
}

/* Fills a->origin from url; checks the scheme. Returns 0 or -1 with err
 * filled. Error texts never contain the URL. */
static int url_check(struct alerter *a, const char *url, char *err,
                     size_t errlen)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL;
	int rc = -1;

	if (u == NULL) {
		errbuf_set(err, errlen, "alert.webhook.url: out of memory");
		return -1;
	}
	if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) !=
	        CURLUE_OK) {
		errbuf_set(err, errlen, "alert.webhook.url: not a valid URL");
		goto out;
	}
	if (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0) {
		errbuf_set(err, errlen, "alert.webhook.url: the scheme must be http or "
		        "https");
		goto out;
	}
	snprintf(a->origin, sizeof(a->origin), "%s://%s:%s", scheme, host, port);
	rc = 0;
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(u);
	return rc;
}

static void alerter_free(struct alerter *a)
{
	if (a->easy != NULL)
		curl_easy_cleanup(a->easy);
	if (a->multi != NULL)
		curl_multi_cleanup(a->multi);
	curl_slist_free_all(a->headers);
	pthread_cond_destroy(&a->cond);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

struct alerter *alert_start(const char *url, char *err, size_t errlen)
{
	struct alerter *a;
	pthread_condattr_t ca;
	sigset_t all, old;
	int rc;

	pthread_once(&curl_once, curl_init_once);
	if (curl_init_rc != CURLE_OK) {
		errbuf_set(err, errlen, "alert: curl_global_init: %s",
		        curl_easy_strerror(curl_init_rc));
		return NULL;
	}

	a = xcalloc(1, sizeof(*a));
	pthread_mutex_init(&a->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&a->cond, &ca);
	pthread_condattr_destroy(&ca);

	if (url_check(a, url, err, errlen) != 0)
		goto err;
	a->multi = curl_multi_init();
	a->easy = curl_easy_init();
	if (a->multi == NULL || a->easy == NULL) {
		errbuf_set(err, errlen, "alert: cannot create a libcurl handle");
		goto err;
	}
	a->headers = curl_slist_append(NULL, "Content-Type: application/json");
	/* No "Expect: 100-continue" round trip for larger bodies. */
	a->headers = curl_slist_append(a->headers, "Expect:");

	curl_easy_setopt(a->easy, CURLOPT_URL, url);
	curl_easy_setopt(a->easy, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(a->easy, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(a->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(a->easy, CURLOPT_TIMEOUT_MS, (long)ALERT_TIMEOUT_MS);
	curl_easy_setopt(a->easy, CURLOPT_CONNECTTIMEOUT_MS,
	                 (long)ALERT_CONNECT_TIMEOUT_MS);
	curl_easy_setopt(a->easy, CURLOPT_POST, 1L);
	curl_easy_setopt(a->easy, CURLOPT_HTTPHEADER, a->headers);
	curl_easy_setopt(a->easy, CURLOPT_USERAGENT, "outbox-relay/" RELAY_VERSION);
	curl_easy_setopt(a->easy, CURLOPT_WRITEFUNCTION, discard_cb);

	/* The worker inherits this mask: signals go to the loop. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(&a->thread, NULL, alert_main, a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		errbuf_set(err, errlen, "alert: pthread_create: %s", strerror(rc));
		goto err;
	}
	return a;

err:
	alerter_free(a);
	return NULL;
}

void alert_post(struct alerter *a, const char *body)
{
	char *copy;

	if (a == NULL)
		return;
	copy = xstrdup(body);
	pthread_mutex_lock(&a->lock);
	if (a->len == ALERT_QUEUE_MAX) {
		/* Full: the newest state matters most, drop the oldest. */
		free(a->queue[a->head]);
		a->head = (a->head + 1) % ALERT_QUEUE_MAX;
		a->len--;
		atomic_fetch_add(&a->dropped, 1);
	}
	a->queue[(a->head + a->len) % ALERT_QUEUE_MAX] = copy;
	a->len++;
	pthread_cond_signal(&a->cond);
	pthread_mutex_unlock(&a->lock);
}

size_t alert_dropped(const struct alerter *a)
{
	return a == NULL ? 0 : atomic_load(&a->dropped);
}

void alert_stop(struct alerter *a, int timeout_ms)
{
	if (a == NULL)
		return;
	pthread_mutex_lock(&a->lock);
	a->stopping = true;
	a->deadline_us = now_mono_us() + (int64_t)(timeout_ms > 0 ? timeout_ms : 0)
	                                     * 1000;
	pthread_cond_broadcast(&a->cond);
	pthread_mutex_unlock(&a->lock);
	/* Ends a curl_multi_poll now rather than after ALERT_POLL_MS. */
	curl_multi_wakeup(a->multi);
	pthread_join(a->thread, NULL);
	alerter_free(a);
}

/* ---- the body ---- */

/* A JSON string for s; bytes that are not UTF-8 become '?', so a value is
 * never silently left out. */
static json_t *jstr(const char *s)
{
	json_t *j = json_string(s);
	char *copy;

	if (j != NULL)
		return j;
	copy = xstrdup(s);
	for (char *p = copy; *p; p++)
		if ((unsigned char)*p >= 0x80)
			*p = '?';
	j = json_string(copy);
	free(copy);
	return j;
}

/* An integer figure, null when unknown (negative). */
static json_t *jbytes(int64_t v)
{
	return v < 0 ? json_null() : json_integer((json_int_t)v);
}

/* A real figure; null when negative (unknown) or not finite. */
static json_t *jseconds(double v)
{
	return v < 0 || !isfinite(v) ? json_null() : json_real(v);
}

/* "2026-11-29T20:09:17.537Z" */
static void format_rfc3339(int64_t wall_us, char *buf, size_t len)
{
	time_t t = (time_t)(wall_us / 1000000);
	struct tm tm;
	size_t n;

	gmtime_r(&t, &tm);
	n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%03dZ", (int)(wall_us % 1000000 / 1000));
}

char *alert_render(const struct health_snapshot *s, enum health_state prev)
{
	json_t *root = json_object(), *reasons = json_array();
	json_t *fig = json_object();
	char at[40], lsn[32];
	char *out;

	/* One array item a reason, as the evaluation wrote it. */
	for (size_t i = 0; i < s->eval.nreasons && i < HEALTH_MAX_REASONS; i++) {
		char *item = xstrndup(s->eval.reason[i], sizeof(s->eval.reason[i]));
		if (item[0] != '\0')
			json_array_append_new(reasons, jstr(item));
		free(item);
	}

	format_rfc3339(s->now_us > 0 ? s->now_us : now_wall_us(), at, sizeof(at));
	snprintf(lsn, sizeof(lsn), LSN_FMT, LSN_ARGS(s->relay.confirmed_lsn));

	if (s->slot.valid) {
		json_object_set_new(fig, "retained_wal_bytes",
		                    jbytes(s->slot.retained_bytes));
		json_object_set_new(fig, "confirmed_lag_bytes",
		                    jbytes(s->slot.confirmed_lag_bytes));
		json_object_set_new(fig, "wal_status",
		                    s->slot.wal_status != WAL_STATUS_UNKNOWN
		                            ? jstr(wal_status_name(s->slot.wal_status))
		                                          : json_null());
		json_object_set_new(fig, "safe_wal_size_bytes",
		                    jbytes(s->slot.safe_wal_size));
	} else {
		json_object_set_new(fig, "retained_wal_bytes", json_null());
		json_object_set_new(fig, "confirmed_lag_bytes", json_null());
		json_object_set_new(fig, "wal_status", json_null());
		json_object_set_new(fig, "safe_wal_size_bytes", json_null());
	}
	json_object_set_new(fig, "eta_seconds", jseconds(s->eval.eta_seconds));
	json_object_set_new(fig, "outbox_lag_seconds",
	                    jseconds(s->eval.outbox_lag_seconds));
	json_object_set_new(fig, "inflight_events",
	                    json_integer((json_int_t)s->relay.inflight_events));
	json_object_set_new(fig, "confirmed_lsn", json_string(lsn));

	json_object_set_new(root, "slot", jstr(s->slot_name));
	json_object_set_new(root, "state",
	                    json_string(health_state_name(s->eval.state)));
	json_object_set_new(root, "previous_state",
	                    json_string(health_state_name(prev)));
	json_object_set_new(root, "reasons", reasons);
	json_object_set_new(root, "at", json_string(at));
	json_object_set_new(root, "figures", fig);

	out = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	if (out == NULL) {
		log_error("alert: out of memory rendering an alert");
		abort();
	}
	return out;
}
