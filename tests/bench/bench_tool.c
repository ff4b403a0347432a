/* SPDX-License-Identifier: Apache-2.0 */
/* bench_tool.c -- the measuring side of `make bench` (tests/bench/run.sh):
 * a sampler of topic end offsets and /proc counters, a latency consumer
 * and a producer ceiling. A test tool only: never linked into the relay.
 *
 *   bench-tool sample  -b BROKERS [-t TOPIC] [-p PID,...] [-n COUNT]
 *                      [-T SECS] [-i MS] [-o FILE]
 *       every MS (100) milliseconds one line: wall time (s), the sum of
 *       TOPIC's end offsets (-1 while it does not exist; 0 without -t),
 *       then per PID its utime+stime (s) and VmHWM (kB) ("-" once gone).
 *       Ends when the sum reaches COUNT, when every PID is gone (with -p
 *       and no -n), after SECS (60), or on SIGTERM/SIGINT. Exit 0; 1 when
 *       COUNT was given and not reached.
 *   bench-tool consume -b BROKERS -t TOPIC [-n COUNT] [-I IDLE_MS] [-T SECS]
 *                      [-o FILE] [-X prop=value]...
 *       reads TOPIC from the beginning (every partition, no group) with
 *       isolation.level=read_committed (-X overrides it), one
 *       line per record: partition offset key c s t_us create_ms recv_us,
 *       where c, s and t are the payload's "c" (writer), "s" (its
 *       sequence) and "t" (statement time, epoch microseconds) members,
 *       found whether the payload is JSON or a JSON string holding it (-1
 *       when absent), create_ms the record's CreateTime and recv_us the
 *       wall time it was received. Waits for TOPIC to exist. Ends after
 *       COUNT records, IDLE_MS (0: never) without a record once at least
 *       one came, SECS (600), or SIGTERM/SIGINT. Stderr: a summary line.
 *   bench-tool produce -b BROKERS -t TOPIC -n COUNT [-s BYTES] [-k KEYS]
 *                      [-X prop=value]...
 *       the producer ceiling: COUNT records of BYTES (650) of JSON value,
 *       keys over KEYS (1000) aggregates and the relay's five headers,
 *       with the relay's producer defaults (idempotence, acks=all,
 *       murmur2_random, gapless, no message timeout, linger 20 ms, one
 *       request in flight), then waits for
 *       every delivery report. Stdout: "count=N secs=S rate=R failed=F".
 *       With -P MS, paced: MS milliseconds of idle before each record,
 *       which is then flushed (sent at once and acknowledged): Kafka's
 *       own latency floor for W5, the record's "t" being its produce
 *       time. -c C sets the payload's writer "c" (0). With -x N,
 *       transactional (transactional.id bench-tool-PID): a transaction
 *       commits every N records and at the end, the records of one
 *       counted delivered at its commit; "txns=T" is added to the line.
 *
 * Exit 2: bad usage; 1: a Kafka client could not be created. */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#define MAX_PIDS 16
#define MAX_PROPS 32
#define MAX_PARTS 256

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static double now_wall(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int64_t now_wall_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void usage(void)
{
	fprintf(stderr, "usage: bench-tool sample|consume|produce ... "
	        "(see tests/bench/bench_tool.c)\n");
	exit(2);
}

struct opts {
	const char *brokers, *topic, *out;
	pid_t pids[MAX_PIDS];
	int npids;
	long long count;
	long secs, interval_ms, idle_ms, bytes, keys, pace_ms, writer, txn_events;
	const char *props[MAX_PROPS];
	int nprops;
};

static void parse(int argc, char **argv, struct opts *o)
{
	int c;
	memset(o, 0, sizeof(*o));
	o->count = -1;
	o->secs = 60;
	o->interval_ms = 100;
	o->bytes = 650;
	o->keys = 1000;
	while ((c = getopt(argc, argv, "b:t:p:n:T:i:o:I:s:k:X:P:c:x:")) != -1) {
		switch (c) {
		case 'b': o->brokers = optarg; break;
		case 't': o->topic = optarg; break;
		case 'o': o->out = optarg; break;
		case 'n': o->count = strtoll(optarg, NULL, 10); break;
		case 'T': o->secs = strtol(optarg, NULL, 10); break;
		case 'i': o->interval_ms = strtol(optarg, NULL, 10); break;
		case 'I': o->idle_ms = strtol(optarg, NULL, 10); break;
		case 's': o->bytes = strtol(optarg, NULL, 10); break;
		case 'k': o->keys = strtol(optarg, NULL, 10); break;
		case 'P': o->pace_ms = strtol(optarg, NULL, 10); break;
		case 'c': o->writer = strtol(optarg, NULL, 10); break;
		case 'x': o->txn_events = strtol(optarg, NULL, 10); break;
		case 'X':
			if (o->nprops == MAX_PROPS)
				usage();
			o->props[o->nprops++] = optarg;
			break;
		case 'p': {
			char *s = optarg, *end;
			while (*s != '\0' && o->npids < MAX_PIDS) {
				long v = strtol(s, &end, 10);
				if (end == s)
					usage();
				o->pids[o->npids++] = (pid_t)v;
				s = *end == ',' ? end + 1 : end;
			}
			break;
		}
		default: usage();
		}
	}
	if (o->brokers == NULL)
		usage();
}

static FILE *open_out(const char *path)
{
	FILE *f = path != NULL ? fopen(path, "w") : stdout;
	if (f == NULL) {
		fprintf(stderr, "bench-tool: %s: %s\n", path, strerror(errno));
		exit(2);
	}
	return f;
}

static rd_kafka_t *client(rd_kafka_type_t type, const char *brokers,
                          const char *const *props, int nprops)
{
	char err[512];
	rd_kafka_conf_t *kc = rd_kafka_conf_new();
	if (rd_kafka_conf_set(kc, "bootstrap.servers", brokers, err,
	                      sizeof(err)) != RD_KAFKA_CONF_OK)
		goto bad;
	for (int i = 0; i < nprops; i++) {
		char name[256];
		const char *eq = strchr(props[i], '=');
		if (eq == NULL || (size_t)(eq - props[i]) >= sizeof(name)) {
			snprintf(err, sizeof(err), "-X %s: want name=value", props[i]);
			goto bad;
		}
		snprintf(name, sizeof(name), "%.*s", (int)(eq - props[i]), props[i]);
		if (rd_kafka_conf_set(kc, name, eq + 1, err, sizeof(err)) !=
		    RD_KAFKA_CONF_OK)
			goto bad;
	}
	{
		rd_kafka_t *rk = rd_kafka_new(type, kc, err, sizeof(err));
		if (rk != NULL)
			return rk;
		fprintf(stderr, "bench-tool: %s\n", err);
		exit(1);
	}
bad:
	fprintf(stderr, "bench-tool: %s\n", err);
	rd_kafka_conf_destroy(kc);
	exit(2);
}

/* Number of partitions of TOPIC, 0 while it does not exist. */
static int partitions_of(rd_kafka_t *rk, const char *topic)
{
	const struct rd_kafka_metadata *md = NULL;
	rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
	int n = 0;

	if (rkt == NULL)
		return 0;
	if (rd_kafka_metadata(rk, 0, rkt, &md, 2000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
		if (md->topic_cnt == 1 && md->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR)
			n = md->topics[0].partition_cnt;
		rd_kafka_metadata_destroy(md);
	}
	rd_kafka_topic_destroy(rkt);
	return n > MAX_PARTS ? MAX_PARTS : n;
}

/* utime+stime in seconds and VmHWM in kB; false once the process is gone. */
static bool proc_sample(pid_t pid, double *cpu, long *hwm)
{
	char path[64], buf[4096], *p;
	FILE *f;
	size_t n;
	unsigned long ut = 0, st = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (f == NULL)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* the command may hold spaces */
	if (p == NULL)
		return false;
	/* after ") ": state(3) ... utime(14) stime(15) */
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
	           &ut, &st) != 2)
		return false;
	if (p[2] == 'Z')
		return false;
	*cpu = (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
	*hwm = -1;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (f != NULL) {
		char line[256];
		while (fgets(line, sizeof(line), f) != NULL)
			if (strncmp(line, "VmHWM:", 6) == 0) {
				*hwm = strtol(line + 6, NULL, 10);
				break;
			}
		fclose(f);
	}
	return true;
}

static int cmd_sample(struct opts *o)
{
	FILE *out = open_out(o->out);
	rd_kafka_t *rk = NULL;
	int nparts = 0;
	double deadline = now_wall() + (double)o->secs;
	bool reached = false;

	if (o->topic != NULL)
		rk = client(RD_KAFKA_PRODUCER, o->brokers, NULL, 0);
	while (!stop && now_wall() < deadline) {
		long long sum = o->topic != NULL ? -1 : 0;
		int alive = 0;
		double t = now_wall();

		if (rk != NULL) {
			if (nparts == 0)
				nparts = partitions_of(rk, o->topic);
			if (nparts > 0) {
				sum = 0;
				for (int i = 0; i < nparts; i++) {
					int64_t lo, hi;
					if (rd_kafka_query_watermark_offsets(rk, o->topic, i, &lo,
					                                     &hi, 2000) !=
					    RD_KAFKA_RESP_ERR_NO_ERROR) {
						sum = -1;
						break;
					}
					sum += hi;
				}
			}
		}
		fprintf(out, "%.3f %lld", t, sum);
		for (int i = 0; i < o->npids; i++) {
			double cpu;
			long hwm;
			if (proc_sample(o->pids[i], &cpu, &hwm)) {
				fprintf(out, " %.2f %ld", cpu, hwm);
				alive++;
			} else {
				fprintf(out, " - -");
			}
		}
		fputc('\n', out);
		fflush(out);
		if (o->count >= 0 && sum >= o->count) {
			reached = true;
			break;
		}
		if (o->count < 0 && o->npids > 0 && alive == 0)
			break;
		{
			double next = t + (double)o->interval_ms / 1000.0, w = next - now_wall();
			if (w > 0) {
				struct timespec ts = { (time_t)w, (long)((w - (double)(time_t)w) * 1e9) };
				nanosleep(&ts, NULL);
			}
		}
	}
	if (rk != NULL)
		rd_kafka_destroy(rk);
	if (out != stdout)
		fclose(out);
	return o->count >= 0 && !reached ? 1 : 0;
}

/* The integer after "NAME": or \"NAME\": in a payload, -1 when absent
 * (the second: a JSON object sent as a string inside another, as Outboxx
 * sends the jsonb column, {"payload":"{\"c\": 3, ...}"}). */
static long long member(const char *s, size_t len, const char *name)
{
	size_t nl = strlen(name);
	for (size_t i = 1; i + nl + 1 < len; i++) {
		const char *p = s + i + nl;
		if (s[i - 1] != '"' || memcmp(s + i, name, nl) != 0)
			continue;
		if (*p == '\\')
			p++;
		if (*p != '"')
			continue;
		p++;
		while (p < s + len && (*p == '\\' || *p == '"' || *p == ':' || *p == ' '))
			p++;
		if (p < s + len && (*p == '-' || (*p >= '0' && *p <= '9')))
			return strtoll(p, NULL, 10);
	}
	return -1;
}

static int cmd_consume(struct opts *o)
{
	/* isolation.level is librdkafka's default, set all the same: the
	 * latency measured is what a read_committed consumer sees (records
	 * of an exactly-once relay appear at their transaction's commit).
	 * -X after these overrides them (isolation.level=read_uncommitted). */
	static const char *const defaults[] = {
		"group.id=bench-tool", "enable.auto.commit=false",
		"enable.partition.eof=false", "fetch.wait.max.ms=100",
		"fetch.min.bytes=1", "queued.max.messages.kbytes=65536",
		"isolation.level=read_committed",
	};
	const char *props[MAX_PROPS + 8];
	int np = 0;
	FILE *out = open_out(o->out);
	rd_kafka_t *rk;
	rd_kafka_topic_partition_list_t *tl;
	long long n = 0;
	int nparts = 0;
	double deadline = now_wall() + (double)o->secs;
	int64_t last_us = 0, flushed_us = 0;
	char keybuf[256];

	if (o->topic == NULL)
		usage();
	for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
		props[np++] = defaults[i];
	for (int i = 0; i < o->nprops; i++)
		props[np++] = o->props[i];
	rk = client(RD_KAFKA_CONSUMER, o->brokers, props, np);
	while (!stop && now_wall() < deadline &&
	       (nparts = partitions_of(rk, o->topic)) == 0)
		usleep(200 * 1000);
	if (nparts == 0) {
		fprintf(stderr, "bench-tool consume: topic %s never appeared\n", o->topic);
		rd_kafka_destroy(rk);
		return 1;
	}
	tl = rd_kafka_topic_partition_list_new(nparts);
	for (int i = 0; i < nparts; i++)
		rd_kafka_topic_partition_list_add(tl, o->topic, i)->offset =
			RD_KAFKA_OFFSET_BEGINNING;
	rd_kafka_assign(rk, tl);
	rd_kafka_topic_partition_list_destroy(tl);
	while (!stop && now_wall() < deadline && (o->count < 0 || n < o->count)) {
		rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
		int64_t recv = now_wall_us();
		/* Readers count lines while the run goes on: flush often. */
		if (m == NULL || recv - flushed_us > 100 * 1000) {
			fflush(out);
			flushed_us = recv;
		}
		if (m == NULL) {
			if (o->idle_ms > 0 && last_us > 0 &&
			    recv - last_us > o->idle_ms * 1000)
				break;
			continue;
		}
		if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
			rd_kafka_timestamp_type_t tt;
			int64_t ts = rd_kafka_message_timestamp(m, &tt);
			size_t kl = m->key_len < sizeof(keybuf) - 1 ? m->key_len
			                                            : sizeof(keybuf) - 1;
			const char *v = m->payload;
			memcpy(keybuf, m->key != NULL ? m->key : "", m->key != NULL ? kl : 0);
			keybuf[m->key != NULL ? kl : 0] = '\0';
			for (char *k = keybuf; *k != '\0'; k++)
				if (*k == ' ' || *k == '\n')
					*k = '_';
			fprintf(out, "%d %lld %s %lld %lld %lld %lld %lld\n",
			        (int)m->partition, (long long)m->offset,
			        keybuf[0] != '\0' ? keybuf : "-",
			        v ? member(v, m->len, "c") : -1,
			        v ? member(v, m->len, "s") : -1,
			        v ? member(v, m->len, "t") : -1, (long long)ts,
			        (long long)recv);
			n++;
			last_us = recv;
		}
		rd_kafka_message_destroy(m);
	}
	fprintf(stderr, "bench-tool consume: %lld records from %s\n", n, o->topic);
	rd_kafka_consumer_close(rk);
	rd_kafka_destroy(rk);
	if (out != stdout)
		fclose(out);
	return o->count >= 0 && n < o->count ? 1 : 0;
}

static long long delivered, failed;

static void on_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	(void)rk;
	(void)opaque;
	if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR)
		failed++;
	delivered++;
}

static long long txns;

/* A transactional call's error: printed, true. */
static bool txn_check(rd_kafka_error_t *e)
{
	if (e == NULL)
		return false;
	fprintf(stderr, "bench-tool produce: %s\n", rd_kafka_error_string(e));
	rd_kafka_error_destroy(e);
	return true;
}

static int cmd_produce(struct opts *o)
{
	static const char *const defaults[] = {
		"enable.idempotence=true", "acks=all", "partitioner=murmur2_random",
		"message.timeout.ms=0", "enable.gapless.guarantee=true",
		"client.id=bench-tool", "queue.buffering.max.messages=101024",
		/* the relay's own defaults besides (src/kafka/kafka_conf.c) */
		"linger.ms=20", "max.in.flight.requests.per.connection=1",
	};
	const char *props[MAX_PROPS + 8];
	int np = 0;
	rd_kafka_conf_t *kc;
	rd_kafka_t *rk;
	char err[512], *value, key[32], lsn[32], xid[32], id[48];
	double t0, t1;

	if (o->topic == NULL || o->count <= 0 || o->bytes < 64)
		usage();
	for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
		props[np++] = defaults[i];
	for (int i = 0; i < o->nprops; i++)
		props[np++] = o->props[i];
	/* client() has no delivery callback: build the conf here. */
	kc = rd_kafka_conf_new();
	rd_kafka_conf_set(kc, "bootstrap.servers", o->brokers, err, sizeof(err));
	for (int i = 0; i < np; i++) {
		char name[256];
		const char *eq = strchr(props[i], '=');
		if (eq == NULL)
			usage();
		snprintf(name, sizeof(name), "%.*s", (int)(eq - props[i]), props[i]);
		if (rd_kafka_conf_set(kc, name, eq + 1, err, sizeof(err)) !=
		    RD_KAFKA_CONF_OK) {
			fprintf(stderr, "bench-tool: %s\n", err);
			return 2;
		}
	}
	if (o->txn_events > 0) {
		char tid[64];
		snprintf(tid, sizeof(tid), "bench-tool-%d", (int)getpid());
		if (rd_kafka_conf_set(kc, "transactional.id", tid, err, sizeof(err)) !=
		    RD_KAFKA_CONF_OK) {
			fprintf(stderr, "bench-tool: %s\n", err);
			return 2;
		}
	}
	rd_kafka_conf_set_dr_msg_cb(kc, on_dr);
	rk = rd_kafka_new(RD_KAFKA_PRODUCER, kc, err, sizeof(err));
	if (rk == NULL) {
		fprintf(stderr, "bench-tool: %s\n", err);
		return 1;
	}
	if (o->txn_events > 0 && (txn_check(rd_kafka_init_transactions(rk, 30000)) ||
	                          txn_check(rd_kafka_begin_transaction(rk))))
		return 1;
	/* Metadata first, as the relay does (warm_topic), and one record
	 * acknowledged (the idempotent producer's id) before the clock runs. */
	(void)partitions_of(rk, o->topic);
	rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(o->topic), RD_KAFKA_V_KEY("warm", 4),
	                  /* writer -1, sequence 0: report.py's check
	                   * counts it as the warm-up it is */
	                  RD_KAFKA_V_VALUE("{\"c\": -1, \"s\": 0}", 17),
	                  RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
	                  RD_KAFKA_V_END);
	if (o->txn_events > 0 && (txn_check(rd_kafka_commit_transaction(rk, 30000)) ||
	                          txn_check(rd_kafka_begin_transaction(rk))))
		return 1;
	rd_kafka_flush(rk, 30000);
	delivered = 0;
	value = malloc((size_t)o->bytes + 1);
	if (value == NULL)
		return 1;
	t0 = now_wall();
	for (long long i = 0; i < o->count && !stop; i++) {
		int vl;
		if (o->pace_ms > 0)
			usleep((useconds_t)o->pace_ms * 1000);
		vl = snprintf(value, (size_t)o->bytes + 1,
		              "{\"c\": %ld, \"s\": %lld, \"t\": %lld, \"pad\": \"",
		              o->writer, i + 1, (long long)now_wall_us());
		rd_kafka_headers_t *h = rd_kafka_headers_new(5);
		rd_kafka_resp_err_t e;
		memset(value + vl, 'x', (size_t)(o->bytes - vl - 2));
		memcpy(value + o->bytes - 2, "\"}", 2);
		snprintf(key, sizeof(key), "a%lld", i % o->keys);
		snprintf(id, sizeof(id), "00000000-0000-0000-0000-%012lld", i);
		snprintf(lsn, sizeof(lsn), "0/%llX", 0x1000000 + i * 800);
		snprintf(xid, sizeof(xid), "%lld", 1000 + i / 100);
		rd_kafka_header_add(h, "id", -1, id, -1);
		rd_kafka_header_add(h, "event_type", -1, "BenchEvent", -1);
		rd_kafka_header_add(h, "aggregate_type", -1, "bench", -1);
		rd_kafka_header_add(h, "pg_lsn", -1, lsn, -1);
		rd_kafka_header_add(h, "pg_xid", -1, xid, -1);
		for (;;) {
			e = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(o->topic),
			                      RD_KAFKA_V_KEY(key, strlen(key)),
			                      RD_KAFKA_V_VALUE(value, (size_t)o->bytes),
			                      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
			                      RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_END);
			if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL)
				break;
			rd_kafka_poll(rk, 10);
		}
		if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
			fprintf(stderr, "bench-tool produce: %s\n", rd_kafka_err2str(e));
			rd_kafka_headers_destroy(h);
			failed++;
		}
		rd_kafka_poll(rk, 0);
		if (o->pace_ms > 0)
			rd_kafka_flush(rk, 30000);
		if (o->txn_events > 0 && ((i + 1) % o->txn_events == 0 || i + 1 == o->count)) {
			if (txn_check(rd_kafka_commit_transaction(rk, 60000)))
				return 1;
			txns++;
			if (i + 1 < o->count && txn_check(rd_kafka_begin_transaction(rk)))
				return 1;
		}
	}
	while (!stop && delivered + 0 < o->count && rd_kafka_outq_len(rk) > 0)
		rd_kafka_poll(rk, 50);
	t1 = now_wall();
	printf("count=%lld secs=%.3f rate=%.0f failed=%lld", delivered, t1 - t0,
	       (double)delivered / (t1 - t0), failed);
	if (o->txn_events > 0)
		printf(" txns=%lld", txns);
	putchar('\n');
	free(value);
	rd_kafka_destroy(rk);
	return failed > 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	const char *cmd;

	if (argc < 2)
		usage();
	cmd = argv[1];
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	parse(argc - 1, argv + 1, &o);
	if (strcmp(cmd, "sample") == 0)
		return cmd_sample(&o);
	if (strcmp(cmd, "consume") == 0)
		return cmd_consume(&o);
	if (strcmp(cmd, "produce") == 0)
		return cmd_produce(&o);
	usage();
	return 2;
}
