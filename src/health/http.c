/* SPDX-License-Identifier: Apache-2.0 */
/* http.c -- the health endpoint: libmicrohttpd on its own thread, a fixed
 * route table, GET and HEAD only, small request limits.
 *
 * The loop publishes a snapshot (copied under a mutex) and ticks an
 * atomic clock; handlers copy the snapshot out and render it without the
 * lock, so no client, however slow, can hold up the replication loop.
 * Responses carry only the renderings of health.h: never config, env or
 * conninfo.
 *
 * Nor can clients crowd out the probes: connections are capped per
 * address, and a sweeper thread closes any connection that has not sent a
 * complete request within HTTP_REQUEST_DEADLINE_US, which libmicrohttpd's
 * own idle timeout (restarted by every byte) does not do. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "health/http.h"
#include "lib/log.h"

/* Request limits. A probe or a scrape is one short GET; anything bigger
 * is refused by libmicrohttpd before it reaches a handler. */
#define HTTP_MEMORY_LIMIT 16384     /* per connection: request line,
                                     * headers and the response headers */
/* Handshakes the kernel completes before libmicrohttpd accepts them. A
 * burst larger than this leaves the excess half-open, believed connected
 * by the client and never seen by the server (16 did, under the 200
 * connections of check_http.c). The kernel caps it at somaxconn. */
#define HTTP_LISTEN_BACKLOG 512

/* Connection limits. Each connection holds a descriptor and up to
 * HTTP_MEMORY_LIMIT (512 of them: 8 MiB). 512 is half the usual soft
 * RLIMIT_NOFILE of 1024, so clients can never take the descriptors libpq,
 * librdkafka (a few sockets per broker) and the webhook need; under a
 * lower soft limit http_start takes half of that instead. */
#define HTTP_CONNECTION_LIMIT 512u
/* From one address. A prober or a scraper needs one or two at a time, so
 * one misbehaving process holds at most this many and a probe from any
 * other address still gets in. */
#define HTTP_PER_IP_LIMIT 32u
/* A complete request (line and headers) is due this long after accept
 * (or after the previous reply, see on_completed), however many bytes
 * trickle in meanwhile: libmicrohttpd's timeout below restarts on every
 * byte, so a client sending one a second would hold its slot forever. */
#define HTTP_REQUEST_DEADLINE_US (3 * 1000000LL)
#define HTTP_SWEEP_PERIOD_US (250 * 1000LL) /* deadline overshoot, at most */
/* No progress at all for this long (while a reply is being sent, too):
 * libmicrohttpd closes the connection. */
#define HTTP_CONNECTION_TIMEOUT_S 5u

/* Log lines clients can provoke: at most HTTP_LOG_BURST a window. */
#define HTTP_LOG_BURST 10
#define HTTP_LOG_WINDOW_US (60 * 1000000LL)

#define CT_TEXT "text/plain; charset=utf-8"
#define CT_JSON "application/json"
#define CT_METRICS "text/plain; version=0.0.4; charset=utf-8"

/* One accepted connection, from libmicrohttpd's NOTIFY_STARTED to its
 * NOTIFY_CLOSED; the slot is the connection's socket context. */
struct http_conn {
	int fd;                 /* -1: slot free. libmicrohttpd owns it */
	int64_t deadline_us;    /* a complete request is due; 0: none (one is
	                         * being answered, or the sweeper shut it) */
};

struct http_server {
	struct MHD_Daemon *mhd;
	int64_t livez_timeout_us;
	_Atomic int64_t last_tick_us;   /* now_mono_us() of the last tick */
	_Atomic int64_t log_window_us;  /* rate limit of libmicrohttpd's log */
	_Atomic int log_count;
	pthread_mutex_t lock;           /* guards have_snapshot and snap */
	bool have_snapshot;
	struct health_snapshot snap;

	/* Its own lock, so the loop's http_publish never waits for a sweep. */
	pthread_mutex_t conn_lock;      /* guards conns and sweep_stop */
	pthread_cond_t sweep_cond;      /* signalled to stop the sweeper */
	bool sweep_stop;
	bool sweeper_started;
	pthread_t sweeper;
	unsigned int conn_limit;        /* slots in conns */
	struct http_conn *conns;
};

/* What a route answers. body is malloc'd and handed to libmicrohttpd. */
struct reply {
	unsigned int status;
	const char *content_type;
	char *body;
};

static void reply_text(struct reply *r, unsigned int status, const char *fmt,
                       ...) RELAY_PRINTF(3, 4);

static void reply_text(struct reply *r, unsigned int status, const char *fmt,
                       ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	r->body = xmalloc((size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(r->body, (size_t)n + 1, fmt, ap);
	va_end(ap);
	r->status = status;
	r->content_type = CT_TEXT;
}

/* Reasons are echoed on one line: flatten control characters. */
static void one_line(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = ' ';
}

/* Copies the published snapshot to the heap, so rendering runs without
 * the lock. Returns NULL when nothing was published yet; caller frees. */
static struct health_snapshot *snapshot_copy(struct http_server *h)
{
	struct health_snapshot *s = xmalloc(sizeof(*s));

	pthread_mutex_lock(&h->lock);
	if (!h->have_snapshot) {
		pthread_mutex_unlock(&h->lock);
		free(s);
		return NULL;
	}
	memcpy(s, &h->snap, sizeof(*s));
	pthread_mutex_unlock(&h->lock);
	/* Strings rendered below must end inside their arrays whatever the
	 * publisher wrote. */
	s->relay.reason[sizeof(s->relay.reason) - 1] = '\0';
	if (s->eval.nreasons > HEALTH_MAX_REASONS)
		s->eval.nreasons = HEALTH_MAX_REASONS;
	for (size_t i = 0; i < s->eval.nreasons; i++)
		s->eval.reason[i][sizeof(s->eval.reason[i]) - 1] = '\0';
	return s;
}

static bool state_is_healthy(enum health_state st)
{
	return st == HEALTH_OK || st == HEALTH_WARN;
}

/* ---- routes (HTTP thread) ---- */

/* /livez, /healthz: the loop turned recently. No dependency checks, so a
 * Kafka or PostgreSQL outage never gets the relay restarted. */
static void route_livez(struct http_server *h, struct MHD_Connection *c,
                        struct reply *r)
{
	int64_t age = now_mono_us() - atomic_load(&h->last_tick_us);

	if (age <= h->livez_timeout_us)
		reply_text(r, MHD_HTTP_OK, "ok\n");
	else
		reply_text(r, MHD_HTTP_SERVICE_UNAVAILABLE,
		           "loop stalled for %lld ms\n", (long long)(age / 1000));
}

/* /readyz: able to serve, so that a rolling update moves on. Two states
 * serve: streaming from the slot ("ready"), and standby, another process
 * streaming from it while this one retries and takes over when it lets
 * go ("standby: ..."): a healthy standby is what a rollout waits for.
 * Both need PostgreSQL answering (the stream, or for a standby the
 * watchdog's sample), a Kafka broker answering and the slot not
 * critical. The first failing condition is the one-line reason. */
static void route_readyz(struct http_server *h, struct MHD_Connection *c,
                         struct reply *r)
{
	struct health_snapshot *s = snapshot_copy(h);
	char reasons[1024];
	bool standby;

	if (s == NULL) {
		reply_text(r, MHD_HTTP_SERVICE_UNAVAILABLE, "no snapshot yet\n");
		return;
	}
	one_line(s->relay.reason);
	health_reasons_join(&s->eval, reasons, sizeof(reasons));
	one_line(reasons);
	standby = s->relay.state == RELAY_PHASE_STANDBY;
	if (s->relay.state == RELAY_PHASE_FAIL_STOPPED)
		reply_text(r, MHD_HTTP_SERVICE_UNAVAILABLE, "fail-stopped: %s\n",
		           s->relay.reason);
	else if (s->relay.state != RELAY_PHASE_STREAMING && !standby)
		reply_text(r, MHD_HTTP_SERVICE_UNAVAILABLE, "not streaming: %s%s%s\n",
		           relay_phase_name(s->relay.state),
		           s->relay.reason[0] ? ": " : "",
		           s->relay.reason);
	else if (s->relay.pg_stale)
		reply_text(r, MHD_HTTP_SERVICE_UNAVAILABLE, "no message from "
		           "PostgreSQL for %lld s (pg.receive.timeout.ms)\n",
		           (long long)(s->relay.pg_rx_age_us / 1000000));
	else if (standby && !s->relay.pg_up)
		reply_text(r, MHD_HTTP_SERVICE_UNAVAILABLE, "standby: PostgreSQL "
		           "does not answer the watchdog (see the log)\n");
	else if (!s->relay.kafka_up)
		reply_text(r, MHD_HTTP_SERVICE_UNAVAILABLE, "kafka broker down\n");
	else if (s->relay.kafka_stale)
		reply_text(r, MHD_HTTP_SERVICE_UNAVAILABLE, "no answer from a Kafka "
		           "broker for %lld s (kafka.contact.timeout.ms)\n",
		           (long long)(s->relay.kafka_contact_age_us / 1000000));
	else if (!state_is_healthy(s->eval.state))
		reply_text(r, MHD_HTTP_SERVICE_UNAVAILABLE, "slot %s: %s\n",
		           health_state_name(s->eval.state), reasons);
	else if (standby && s->slot.valid && s->slot.active &&
	         s->slot.active_pid > 0)
		reply_text(r, MHD_HTTP_OK, "standby: slot held by another process "
		           "(PID %d); takes over when it is released\n",
		           s->slot.active_pid);
	else if (standby)
		reply_text(r, MHD_HTTP_OK, "standby: slot held by another process; "
		           "takes over when it is released\n");
	else
		reply_text(r, MHD_HTTP_OK, "ready\n");
	free(s);
}

/* /slot[?pretty=1]: every figure as JSON; 503 when critical or fatal. */
static void route_slot(struct http_server *h, struct MHD_Connection *c,
                       struct reply *r)
{
	struct health_snapshot *s = snapshot_copy(h);
	const char *pretty;

	if (s == NULL) {
		reply_text(r, MHD_HTTP_SERVICE_UNAVAILABLE, "no snapshot yet\n");
		return;
	}
	pretty = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "pretty");
	r->body = health_render_slot_json(s, pretty && strcmp(pretty, "1") == 0);
	if (r->body == NULL) {
		reply_text(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "render failed\n");
	} else {
		r->status = state_is_healthy(s->eval.state)
		                ? MHD_HTTP_OK
		                : MHD_HTTP_SERVICE_UNAVAILABLE;
		r->content_type = CT_JSON;
	}
	free(s);
}

/* /metrics: Prometheus text format 0.0.4. */
static void route_metrics(struct http_server *h, struct MHD_Connection *c,
                          struct reply *r)
{
	struct health_snapshot *s = snapshot_copy(h);

	if (s == NULL) {
		reply_text(r, MHD_HTTP_SERVICE_UNAVAILABLE, "no snapshot yet\n");
		return;
	}
	r->body = health_render_metrics(s);
	if (r->body == NULL) {
		reply_text(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "render failed\n");
	} else {
		r->status = MHD_HTTP_OK;
		r->content_type = CT_METRICS;
	}
	free(s);
}

typedef void route_fn(struct http_server *h, struct MHD_Connection *c,
                      struct reply *r);

/* Exact paths; a query string is only read by /slot. */
static const struct route {
	const char *path;
	route_fn *fn;
} routes[] = {
	{ "/livez", route_livez },
	{ "/healthz", route_livez },
	{ "/readyz", route_readyz },
	{ "/slot", route_slot },
	{ "/metrics", route_metrics },
};

static const struct route *route_lookup(const char *path)
{
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		if (strcmp(path, routes[i].path) == 0)
			return &routes[i];
	return NULL;
}

static enum MHD_Result send_reply(struct MHD_Connection *c, struct reply *r,
                                  bool allow_header)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	resp = MHD_create_response_from_buffer(strlen(r->body), r->body,
	                                       MHD_RESPMEM_MUST_FREE);
	if (resp == NULL) {
		free(r->body);
		return MHD_NO; /* libmicrohttpd closes the connection */
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
	                        r->content_type);
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	if (allow_header)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(c, r->status, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* ---- the request deadline (HTTP thread, sweeper thread) ---- */

/* Connection c's slot, NULL if it got none. */
static struct http_conn *conn_slot(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci != NULL ? ci->socket_context : NULL;
}

/* Starts c's deadline (arm) or clears it. */
static void conn_deadline(struct http_server *h, struct MHD_Connection *c,
                          bool arm)
{
	struct http_conn *hc = conn_slot(c);

	if (hc == NULL)
		return;
	pthread_mutex_lock(&h->conn_lock);
	hc->deadline_us = arm ? now_mono_us() + HTTP_REQUEST_DEADLINE_US : 0;
	pthread_mutex_unlock(&h->conn_lock);
}

/* libmicrohttpd's connection notifier (HTTP thread): a slot per accepted
 * connection, its deadline running from accept. libmicrohttpd 0.9.75
 * calls CLOSED before it closes the descriptor, on every path, and never
 * holds more connections than conn_limit, so a free slot always exists
 * and a descriptor in a slot is still this connection's. */
static void on_connection(void *cls, struct MHD_Connection *c,
                          void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
	struct http_server *h = cls;
	struct http_conn *hc = *socket_context;
	const union MHD_ConnectionInfo *ci;

	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (hc != NULL) {
			pthread_mutex_lock(&h->conn_lock);
			hc->fd = -1;
			pthread_mutex_unlock(&h->conn_lock);
		}
		return;
	}
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (ci == NULL)
		return;
	pthread_mutex_lock(&h->conn_lock);
	for (unsigned int i = 0; i < h->conn_limit && hc == NULL; i++)
		if (h->conns[i].fd < 0)
			hc = &h->conns[i];
	if (hc != NULL) {
		hc->fd = ci->connect_fd;
		hc->deadline_us = now_mono_us() + HTTP_REQUEST_DEADLINE_US;
	}
	pthread_mutex_unlock(&h->conn_lock);
	/* No slot cannot happen (see above); if it did, the connection would
	 * escape the deadline, so end it now. */
	if (hc == NULL)
		(void)shutdown(ci->connect_fd, SHUT_RDWR);
	*socket_context = hc;
}

/* libmicrohttpd's request-completed notifier (HTTP thread): the reply is
 * out (or failed). libmicrohttpd 0.9.75 then closes the connection, since
 * on_request queues every reply on its first call; should a later version
 * keep it alive instead, the next request is due within a fresh
 * deadline. */
static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
	conn_deadline(cls, c, true);
}

/* The sweeper thread: every HTTP_SWEEP_PERIOD_US, shuts the connections
 * whose deadline has passed. shutdown(), never close(): the descriptor is
 * libmicrohttpd's, which then sees end of file and closes the connection
 * and the descriptor itself. Done under conn_lock, which NOTIFY_CLOSED
 * also takes before libmicrohttpd closes, so the number cannot have been
 * reused for another file meanwhile. A thread of its own rather than a
 * chore in http_tick(): the loop sleeps up to a second when idle, the
 * deadline should not depend on the loop /livez watches, and http_tick
 * stays lock-free. */
static void *sweeper_main(void *arg)
{
	struct http_server *h = arg;
	int64_t now, last_report = now_mono_us() - HTTP_LOG_WINDOW_US;
	unsigned int shut = 0, n;
	struct timespec ts;

	pthread_mutex_lock(&h->conn_lock);
	while (!h->sweep_stop) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += HTTP_SWEEP_PERIOD_US * 1000;
		ts.tv_sec += ts.tv_nsec / 1000000000;
		ts.tv_nsec %= 1000000000;
		(void)pthread_cond_timedwait(&h->sweep_cond, &h->conn_lock, &ts);
		if (h->sweep_stop)
			break;
		now = now_mono_us();
		n = 0;
		for (unsigned int i = 0; i < h->conn_limit; i++) {
			struct http_conn *hc = &h->conns[i];

			if (hc->fd < 0 || hc->deadline_us == 0 ||
			    now < hc->deadline_us)
				continue;
			(void)shutdown(hc->fd, SHUT_RDWR);
			hc->deadline_us = 0;
			n++;
		}
		shut += n;
		/* Clients choose how often this happens: one line a window. */
		if (shut > 0 && now - last_report >= HTTP_LOG_WINDOW_US) {
			pthread_mutex_unlock(&h->conn_lock);
			log_warn("http: closed %u connection%s that sent no "
			         "complete request within %lld s (at most one such "
			         "line a minute)", shut, shut == 1 ? "" : "s",
			         (long long)(HTTP_REQUEST_DEADLINE_US / 1000000));
			pthread_mutex_lock(&h->conn_lock);
			shut = 0;
			last_report = now;
		}
	}
	pthread_mutex_unlock(&h->conn_lock);
	return NULL;
}

/* libmicrohttpd's access handler (HTTP thread). Answers on the first call,
 * once the headers are in: a body, if any, is never read (libmicrohttpd
 * then closes the connection after the reply). HEAD gets GET's headers
 * without the body; libmicrohttpd drops it. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
                                  const char *url, const char *method,
                                  const char *version,
                                  const char *upload_data,
                                  size_t *upload_data_size, void **req_cls)
{
	struct http_server *h = cls;
	const struct route *rt;
	struct reply r = { 0 };

	/* The request is in: from here on libmicrohttpd's own timeout is
	 * enough (on_completed starts the next deadline). */
	conn_deadline(h, c, false);
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
	    strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
		reply_text(&r, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
		return send_reply(c, &r, true);
	}
	rt = route_lookup(url);
	if (rt == NULL) {
		reply_text(&r, MHD_HTTP_NOT_FOUND, "not found\n");
		return send_reply(c, &r, false);
	}
	rt->fn(h, c, &r);
	return send_reply(c, &r, false);
}

/* libmicrohttpd's error log, routed to ours (any thread). Clients can
 * provoke these lines (every refused request logs one), so at most
 * HTTP_LOG_BURST lines per HTTP_LOG_WINDOW_US reach the log. */
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct http_server *h = cls;
	int64_t now = now_mono_us();
	char msg[512];
	size_t n;
	int seen;

	/* Races between threads only blur the count; the bound holds. */
	if (now - atomic_load(&h->log_window_us) >= HTTP_LOG_WINDOW_US) {
		atomic_store(&h->log_window_us, now);
		atomic_store(&h->log_count, 0);
	}
	seen = atomic_fetch_add(&h->log_count, 1);
	if (seen == HTTP_LOG_BURST)
		log_warn("http: further libmicrohttpd messages suppressed for up "
		         "to %lld s", (long long)(HTTP_LOG_WINDOW_US / 1000000));
	if (seen >= HTTP_LOG_BURST)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = '\0';
	log_warn("http: %s", msg);
}

/* Splits "host:port" or "[v6]:port" and resolves the numeric address.
 * Returns 0 and *out (freeaddrinfo() it), or -1 with err filled. */
static int listen_resolve(const char *addr, struct addrinfo **out,
                          char *err, size_t errlen)
{
	char host[128];
	const char *port, *colon;
	size_t hlen, plen;
	struct addrinfo hints = { 0 };
	int rc;

	if (addr[0] == '[') {
		const char *rb = strchr(addr, ']');
		if (rb == NULL || rb[1] != ':') {
			errbuf_set(err, errlen, "http.listen: \"%s\": expected "
			        "[ipv6]:port", addr);
			return -1;
		}
		hlen = (size_t)(rb - addr - 1);
		if (hlen == 0 || hlen >= sizeof(host))
			goto bad_host;
		memcpy(host, addr + 1, hlen);
		port = rb + 2;
		hints.ai_family = AF_INET6;
	} else {
		colon = strchr(addr, ':');
		if (colon == NULL || strchr(colon + 1, ':') != NULL) {
			errbuf_set(err, errlen, "http.listen: \"%s\": expected host:port "
			        "or [ipv6]:port", addr);
			return -1;
		}
		hlen = (size_t)(colon - addr);
		if (hlen == 0 || hlen >= sizeof(host))
			goto bad_host;
		memcpy(host, addr, hlen);
		port = colon + 1;
		hints.ai_family = AF_INET;
	}
	host[hlen] = '\0';

	/* Port: 0-65535, digits only (0 picks a free port). */
	plen = strlen(port);
	if (plen == 0 || plen > 5 || strspn(port, "0123456789") != plen ||
	    strtol(port, NULL, 10) > 65535) {
		errbuf_set(err, errlen, "http.listen: \"%s\": bad port", addr);
		return -1;
	}

	/* Numeric only: bind exactly the address written, never what a name
	 * happens to resolve to. */
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV;
	rc = getaddrinfo(host, port, &hints, out);
	if (rc != 0)
		goto bad_host;
	return 0;

bad_host:
	errbuf_set(err, errlen, "http.listen: \"%s\": the host must be an IPv4 "
	        "address or a bracketed IPv6 address", addr);
	return -1;
}

/* Binds and listens on exactly the address in addr. Returns the socket,
 * or -1 with err filled ("http.listen: cannot bind ...: <strerror>"). */
static int listen_socket(const char *addr, bool *v6, char *err,
                         size_t errlen)
{
	struct addrinfo *ai = NULL;
	int fd = -1, one = 1;

	if (listen_resolve(addr, &ai, err, errlen) != 0)
		return -1;
	*v6 = ai->ai_family == AF_INET6;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		errbuf_set(err, errlen, "http.listen: cannot bind %s: socket: %s",
		        addr, strerror(errno));
		goto err;
	}
	/* A restart must not fail on the last run's TIME_WAIT connections. */
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (*v6)
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 ||
	    listen(fd, HTTP_LISTEN_BACKLOG) != 0) {
		errbuf_set(err, errlen, "http.listen: cannot bind %s: %s", addr,
		        strerror(errno));
		goto err;
	}
	freeaddrinfo(ai);
	return fd;

err:
	if (fd >= 0)
		close(fd);
	freeaddrinfo(ai);
	return -1;
}

/* After a failed MHD_start_daemon: libmicrohttpd closes the listening
 * socket on some failure paths and not on others, so close fd only if it
 * is still the same socket (a socket's inode is unique while it is open). */
static void close_if_same(int fd, ino_t ino)
{
	struct stat st;

	if (fstat(fd, &st) == 0 && st.st_ino == ino)
		close(fd);
}

/* HTTP_CONNECTION_LIMIT, or half the soft RLIMIT_NOFILE when that is
 * lower (with a warning): the other half stays for everything else. */
static unsigned int conn_limit(void)
{
	struct rlimit rl;
	unsigned int n;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
	    rl.rlim_cur / 2 >= HTTP_CONNECTION_LIMIT)
		return HTTP_CONNECTION_LIMIT;
	n = rl.rlim_cur >= 2 ? (unsigned int)(rl.rlim_cur / 2) : 1;
	log_warn("http: at most %u connections, half the descriptor limit "
	         "(RLIMIT_NOFILE %llu); raise it to %u for the usual %u",
	         n, (unsigned long long)rl.rlim_cur, 2 * HTTP_CONNECTION_LIMIT,
	         HTTP_CONNECTION_LIMIT);
	return n;
}

/* Frees h and what it holds; libmicrohttpd and the sweeper are stopped. */
static void server_free(struct http_server *h)
{
	pthread_cond_destroy(&h->sweep_cond);
	pthread_mutex_destroy(&h->conn_lock);
	pthread_mutex_destroy(&h->lock);
	free(h->conns);
	free(h);
}

struct http_server *http_start(const char *addr, int64_t livez_timeout_ms,
                               char *err, size_t errlen)
{
	struct http_server *h;
	pthread_condattr_t ca;
	sigset_t all, old;
	struct stat st;
	bool v6 = false;
	int fd, rc = 0;
	unsigned int flags;

	fd = listen_socket(addr, &v6, err, errlen);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) != 0)
		st.st_ino = 0;

	h = xcalloc(1, sizeof(*h));
	h->livez_timeout_us = livez_timeout_ms * 1000;
	/* A loop that never ticks fails /livez after one timeout. */
	atomic_store(&h->last_tick_us, now_mono_us());
	atomic_store(&h->log_window_us, now_mono_us());
	pthread_mutex_init(&h->lock, NULL);
	pthread_mutex_init(&h->conn_lock, NULL);
	/* The sweeper's waits are timed on the monotonic clock. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&h->sweep_cond, &ca);
	pthread_condattr_destroy(&ca);
	h->conn_limit = conn_limit();
	h->conns = xcalloc(h->conn_limit, sizeof(*h->conns));
	for (unsigned int i = 0; i < h->conn_limit; i++)
		h->conns[i].fd = -1;

	flags = MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD |
	        MHD_USE_ERROR_LOG;
	if (v6)
		flags |= MHD_USE_IPv6;
	/* The HTTP and sweeper threads inherit this mask: signals go to the
	 * loop. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	h->mhd = MHD_start_daemon(
		flags, 0, NULL, NULL, on_request, h,
		/* First, or libmicrohttpd logs the other options' errors to
		 * stderr itself. */
		MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, (void *)h,
		MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
		MHD_OPTION_CONNECTION_LIMIT, h->conn_limit,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, HTTP_PER_IP_LIMIT,
		MHD_OPTION_CONNECTION_TIMEOUT, HTTP_CONNECTION_TIMEOUT_S,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_MEMORY_LIMIT,
		MHD_OPTION_NOTIFY_CONNECTION, on_connection, (void *)h,
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, (void *)h,
		MHD_OPTION_END);
	if (h->mhd != NULL) {
		rc = pthread_create(&h->sweeper, NULL, sweeper_main, h);
		h->sweeper_started = rc == 0;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (h->mhd == NULL) {
		errbuf_set(err, errlen, "http.listen: cannot serve %s: libmicrohttpd "
		        "failed to start (see the log above)", addr);
		close_if_same(fd, st.st_ino);
		server_free(h);
		return NULL;
	}
	if (!h->sweeper_started) {
		errbuf_set(err, errlen, "http.listen: cannot serve %s: cannot "
		        "start a thread: %s", addr, strerror(rc));
		MHD_stop_daemon(h->mhd); /* closes fd */
		server_free(h);
		return NULL;
	}
	return h;
}

int http_port(const struct http_server *h)
{
	const union MHD_DaemonInfo *di;

	/* Also right with MHD_OPTION_LISTEN_SOCKET (checked on 0.9.75). */
	di = MHD_get_daemon_info(h->mhd, MHD_DAEMON_INFO_BIND_PORT);
	return di != NULL ? di->port : -1;
}

void http_publish(struct http_server *h, const struct health_snapshot *s)
{
	if (h == NULL)
		return;
	pthread_mutex_lock(&h->lock);
	memcpy(&h->snap, s, sizeof(*s));
	h->have_snapshot = true;
	pthread_mutex_unlock(&h->lock);
}

void http_tick(struct http_server *h, int64_t now)
{
	if (h != NULL)
		atomic_store_explicit(&h->last_tick_us, now,
		                      memory_order_relaxed);
}

void http_stop(struct http_server *h)
{
	if (h == NULL)
		return;
	/* The sweeper reads the slots: joined before they are freed. */
	pthread_mutex_lock(&h->conn_lock);
	h->sweep_stop = true;
	pthread_cond_signal(&h->sweep_cond);
	pthread_mutex_unlock(&h->conn_lock);
	pthread_join(h->sweeper, NULL);
	/* Joins the HTTP thread, closes every connection (each one through
	 * on_connection) and the listening socket. */
	MHD_stop_daemon(h->mhd);
	server_free(h);
}
