/* SPDX-License-Identifier: Apache-2.0 */
/* kafka_mock.c -- a librdkafka mock Kafka cluster in its own process,
 * steered by one-line commands on stdin, for the fault tests a real broker
 * cannot produce. A test tool only: it is never linked into the relay.
 *
 *   build/kafka-mock [--brokers N] [--partitions N]
 *
 * The cluster has N brokers (default 3), ids 1..N, each listening on a
 * free port of 127.0.0.1, so any client (the relay, kcat) reaches it
 * through its bootstrap list. Protocol, all lines end in '\n':
 *
 *   stdout, first line:  bootstrap=127.0.0.1:PORT[,127.0.0.1:PORT...]
 *   stdin:               one command a line
 *   stdout:              one answer per input line, flushed: "ok" or
 *                        "error: REASON"; a blank line or a line starting
 *                        with '#' is answered "ok" too, so that writer and
 *                        reader never get out of step
 *
 * The tool ends cleanly (cluster destroyed, exit 0) on "quit", on EOF of
 * stdin and on SIGTERM, SIGINT or SIGHUP. librdkafka's own log lines go
 * to stderr. Exit 1: the cluster could not be created or stdout is gone;
 * exit 2: bad command line.
 *
 * Commands (BROKER is a broker id; -1 means every broker where allowed):
 *
 *   topic NAME [PARTITIONS [REPLICATION]]  create a topic (PARTITIONS
 *                                  defaults to --partitions)
 *   leader TOPIC PARTITION BROKER|-1       move the leader; -1: leaderless
 *   broker_down BROKER|-1          close its connections, refuse new ones
 *   broker_up BROKER|-1            accept connections again
 *   rtt BROKER|-1 MS               delay every response by MS
 *   push_errors APIKEY ERR[,ERR...]        the next requests of APIKEY to
 *                                  any broker fail with these, in order
 *   push_errors_rtt BROKER APIKEY ERR[:MS][,ERR[:MS]...]   same, for one
 *                                  broker, each answer delayed by MS
 *   clear_errors APIKEY            drop what push_errors left unused
 *   topic_error TOPIC ERR          Metadata reports ERR for TOPIC
 *                                  (NO_ERROR clears it)
 *   sleep MS                       answer after MS (for scripts)
 *   quit                           answer "ok", then exit 0
 *
 * APIKEY is a Kafka request name (Produce, Metadata, InitProducerId, ...,
 * see api_keys[]) or its number. ERR is a librdkafka error name without
 * the RD_KAFKA_RESP_ERR_ prefix (NOT_LEADER_FOR_PARTITION,
 * MSG_SIZE_TOO_LARGE; _TRANSPORT makes the broker drop the connection
 * instead of answering) or its number. Names are case-insensitive.
 *
 * What librdkafka 2.0.2's mock does not do (rdkafka_mock.c, v2.0.2):
 *   - topics that clients create implicitly (a Metadata request for an
 *     unknown topic) always get 4 partitions; --partitions only changes the
 *     default of the "topic" command;
 *   - REPLICATION is accepted but ignored: every partition gets
 *     min(3, brokers) replicas and a leader picked at random among them,
 *     so a test that needs a known leader sets it with "leader";
 *   - "leader" and "topic_error" on a topic that does not exist create it
 *     ("leader": PARTITION + 1 partitions; "topic_error": 4);
 *   - broker_down/broker_up never move a leader;
 *   - errors are per request, not per partition: a pushed Produce error
 *     fails every partition of the next Produce request;
 *   - clear_errors clears only the cluster-wide stack of push_errors,
 *     not the per-broker one of push_errors_rtt;
 *   - no request tracking, no topic deletion, no fixed listener ports.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#define MOCK_LINE_MAX 4096 /* longest command line, '\n' included */
#define MOCK_ARGS_MAX 8    /* words in a command, name included */
#define MOCK_ERRS_MAX 256  /* errors in one push_errors command */
#define MOCK_ERRLEN 256    /* answer text after "error: " */

struct mock {
	rd_kafka_t *rk;                   /* owns the cluster's bookkeeping */
	rd_kafka_mock_cluster_t *mcluster; /* the brokers */
	int brokers;                      /* broker ids are 1..brokers */
	int default_partitions;           /* "topic NAME" without a count */
	int sigfd;                        /* signalfd: TERM, INT, HUP */
	int stop;                         /* quit, EOF or signal seen */
};

/* ---------------------------------------------------------------- parsing */

/* Kafka protocol request keys (the protocol's numbering), limited to those
 * the 2.0.2 mock answers; any other key can still be given as a number. */
static const struct {
	const char *name;
	int16_t key;
} api_keys[] = {
	{"Produce", 0},
	{"Fetch", 1},
	{"ListOffsets", 2},
	{"Metadata", 3},
	{"OffsetCommit", 8},
	{"OffsetFetch", 9},
	{"FindCoordinator", 10},
	{"JoinGroup", 11},
	{"Heartbeat", 12},
	{"LeaveGroup", 13},
	{"SyncGroup", 14},
	{"ApiVersions", 18},
	{"InitProducerId", 22},
	{"AddPartitionsToTxn", 24},
	{"AddOffsetsToTxn", 25},
	{"EndTxn", 26},
	{"TxnOffsetCommit", 28},
};

#define ERR_PREFIX "RD_KAFKA_RESP_ERR_"

/* Parses a whole decimal word into [min, max]; 0 or -1. */
static int parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	if (*s == '\0')
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

static int parse_int(const char *what, const char *s, long min, long max,
		     int *out, char *errbuf, size_t errlen)
{
	long v;

	if (parse_long(s, min, max, &v) != 0) {
		snprintf(errbuf, errlen, "%s must be %ld..%ld, not '%s'", what,
			 min, max, s);
		return -1;
	}
	*out = (int)v;
	return 0;
}

/* BROKER: an existing id, or -1 (every broker) when all_ok. */
static int parse_broker(const struct mock *m, const char *s, int all_ok,
			int32_t *out, char *errbuf, size_t errlen)
{
	long v;

	if (parse_long(s, -1, INT32_MAX, &v) != 0 || (v == -1 && !all_ok) ||
	    v == 0 || v > m->brokers) {
		snprintf(errbuf, errlen, "broker must be %s1..%d, not '%s'",
			 all_ok ? "-1 or " : "", m->brokers, s);
		return -1;
	}
	*out = (int32_t)v;
	return 0;
}

static int parse_apikey(const char *s, int16_t *out, char *errbuf,
			size_t errlen)
{
	long v;
	size_t i;

	for (i = 0; i < sizeof(api_keys) / sizeof(api_keys[0]); i++) {
		if (strcasecmp(s, api_keys[i].name) == 0) {
			*out = api_keys[i].key;
			return 0;
		}
	}
	if (parse_long(s, 0, INT16_MAX, &v) == 0) {
		*out = (int16_t)v;
		return 0;
	}
	snprintf(errbuf, errlen, "unknown API key '%s' (a request name such "
		 "as Produce, Metadata, InitProducerId, or a number)", s);
	return -1;
}

/* ERR: a name from librdkafka's own error table (rd_kafka_get_err_descs,
 * names without the RD_KAFKA_RESP_ERR_ prefix), the prefixed name, or a
 * number librdkafka knows. */
static int parse_err(const char *s, rd_kafka_resp_err_t *out, char *errbuf,
		     size_t errlen)
{
	const struct rd_kafka_err_desc *descs;
	size_t cnt, i;
	const char *name = s;
	long v;

	if (strncasecmp(name, ERR_PREFIX, strlen(ERR_PREFIX)) == 0)
		name += strlen(ERR_PREFIX);
	rd_kafka_get_err_descs(&descs, &cnt);
	if (parse_long(s, INT_MIN, INT_MAX, &v) == 0) {
		for (i = 0; i < cnt; i++) {
			if (descs[i].name != NULL && descs[i].code == v) {
				*out = descs[i].code;
				return 0;
			}
		}
	} else {
		for (i = 0; i < cnt; i++) {
			if (descs[i].name != NULL &&
			    strcasecmp(name, descs[i].name) == 0) {
				*out = descs[i].code;
				return 0;
			}
		}
	}
	snprintf(errbuf, errlen, "unknown error '%s' (a librdkafka error name "
		 "such as NOT_LEADER_FOR_PARTITION, or its number)", s);
	return -1;
}

/* Splits LIST at ',' in place; returns the number of items, or -1 when
 * there are more than max or an item is empty. */
static int split_list(char *list, char **items, int max)
{
	int n = 0;
	char *p = list;

	for (;;) {
		size_t len = strcspn(p, ",");

		if (len == 0 || n == max)
			return -1;
		items[n++] = p;
		if (p[len] == '\0')
			return n;
		p[len] = '\0';
		p += len + 1;
	}
}

/* Formats a failed mock call: "what: NAME (description)". */
static int api_error(const char *what, rd_kafka_resp_err_t err,
		     char *errbuf, size_t errlen)
{
	snprintf(errbuf, errlen, "%s: %s (%s)", what, rd_kafka_err2name(err),
		 rd_kafka_err2str(err));
	return -1;
}

/* ---------------------------------------------------------------- commands */

/* Each command gets its words (argv[0] is its name), checked for count by
 * the table; returns 0, or -1 with the reason in errbuf. */

static int cmd_topic(struct mock *m, int argc, char **argv, char *errbuf,
		     size_t errlen)
{
	int partitions = m->default_partitions;
	int replication = m->brokers < 3 ? m->brokers : 3;
	rd_kafka_resp_err_t err;

	if (argc > 2 && parse_int("partitions", argv[2], 1, 10000,
				  &partitions, errbuf, errlen) != 0)
		return -1;
	if (argc > 3 && parse_int("replication", argv[3], 1, m->brokers,
				  &replication, errbuf, errlen) != 0)
		return -1;
	err = rd_kafka_mock_topic_create(m->mcluster, argv[1], partitions,
					 replication);
	if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
		return api_error("topic", err, errbuf, errlen);
	return 0;
}

static int cmd_leader(struct mock *m, int argc, char **argv, char *errbuf,
		      size_t errlen)
{
	int partition;
	int32_t broker;
	rd_kafka_resp_err_t err;

	/* A negative partition would index before the partition array of
	 * the 2.0.2 mock: it must never reach it. */
	if (parse_int("partition", argv[2], 0, 9999, &partition, errbuf,
		      errlen) != 0)
		return -1;
	if (parse_broker(m, argv[3], 1, &broker, errbuf, errlen) != 0)
		return -1;
	err = rd_kafka_mock_partition_set_leader(m->mcluster, argv[1],
						 partition, broker);
	if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
		return api_error("leader", err, errbuf, errlen);
	return 0;
}

static int cmd_broker_updown(struct mock *m, int argc, char **argv,
			     char *errbuf, size_t errlen)
{
	int32_t broker;
	rd_kafka_resp_err_t err;

	if (parse_broker(m, argv[1], 1, &broker, errbuf, errlen) != 0)
		return -1;
	if (strcmp(argv[0], "broker_down") == 0)
		err = rd_kafka_mock_broker_set_down(m->mcluster, broker);
	else
		err = rd_kafka_mock_broker_set_up(m->mcluster, broker);
	if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
		return api_error(argv[0], err, errbuf, errlen);
	return 0;
}

static int cmd_rtt(struct mock *m, int argc, char **argv, char *errbuf,
		   size_t errlen)
{
	int32_t broker;
	int ms;
	rd_kafka_resp_err_t err;

	if (parse_broker(m, argv[1], 1, &broker, errbuf, errlen) != 0)
		return -1;
	if (parse_int("rtt", argv[2], 0, 3600 * 1000, &ms, errbuf,
		      errlen) != 0)
		return -1;
	err = rd_kafka_mock_broker_set_rtt(m->mcluster, broker, ms);
	if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
		return api_error("rtt", err, errbuf, errlen);
	return 0;
}

static int cmd_push_errors(struct mock *m, int argc, char **argv,
			   char *errbuf, size_t errlen)
{
	rd_kafka_resp_err_t errs[MOCK_ERRS_MAX];
	char *items[MOCK_ERRS_MAX];
	int16_t key;
	int n, i;

	if (parse_apikey(argv[1], &key, errbuf, errlen) != 0)
		return -1;
	n = split_list(argv[2], items, MOCK_ERRS_MAX);
	if (n < 0) {
		snprintf(errbuf, errlen, "errors must be 1..%d names joined by "
			 "',' without empty items", MOCK_ERRS_MAX);
		return -1;
	}
	/* All parsed before any is pushed: a typo pushes nothing. */
	for (i = 0; i < n; i++) {
		if (parse_err(items[i], &errs[i], errbuf, errlen) != 0)
			return -1;
	}
	rd_kafka_mock_push_request_errors_array(m->mcluster, key, (size_t)n,
						errs);
	return 0;
}

static int cmd_push_errors_rtt(struct mock *m, int argc, char **argv,
			       char *errbuf, size_t errlen)
{
	rd_kafka_resp_err_t errs[MOCK_ERRS_MAX];
	int rtts[MOCK_ERRS_MAX];
	char *items[MOCK_ERRS_MAX];
	int32_t broker;
	int16_t key;
	int n, i;

	if (parse_broker(m, argv[1], 0, &broker, errbuf, errlen) != 0)
		return -1;
	if (parse_apikey(argv[2], &key, errbuf, errlen) != 0)
		return -1;
	n = split_list(argv[3], items, MOCK_ERRS_MAX);
	if (n < 0) {
		snprintf(errbuf, errlen, "tuples must be 1..%d ERR[:MS] "
			 "joined by ',' without empty items", MOCK_ERRS_MAX);
		return -1;
	}
	for (i = 0; i < n; i++) {
		char *colon = strrchr(items[i], ':');

		rtts[i] = 0;
		if (colon != NULL) {
			*colon = '\0';
			if (parse_int("rtt", colon + 1, 0, 3600 * 1000,
				      &rtts[i], errbuf, errlen) != 0)
				return -1;
		}
		if (parse_err(items[i], &errs[i], errbuf, errlen) != 0)
			return -1;
	}
	/* The call only takes (err, rtt) pairs as varargs: one pair a call.
	 * Each call appends to the broker's stack, which is served from
	 * the front, so the order given is the order answered. */
	for (i = 0; i < n; i++) {
		rd_kafka_resp_err_t err;

		err = rd_kafka_mock_broker_push_request_error_rtts(
			m->mcluster, broker, key, 1, errs[i], rtts[i]);
		if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
			return api_error("push_errors_rtt", err, errbuf,
					 errlen);
	}
	return 0;
}

static int cmd_clear_errors(struct mock *m, int argc, char **argv,
			    char *errbuf, size_t errlen)
{
	int16_t key;

	if (parse_apikey(argv[1], &key, errbuf, errlen) != 0)
		return -1;
	rd_kafka_mock_clear_request_errors(m->mcluster, key);
	return 0;
}

static int cmd_topic_error(struct mock *m, int argc, char **argv,
			   char *errbuf, size_t errlen)
{
	rd_kafka_resp_err_t err;

	if (parse_err(argv[2], &err, errbuf, errlen) != 0)
		return -1;
	/* Returns nothing: 2.0.2 cannot fail here (it creates the topic). */
	rd_kafka_mock_topic_set_error(m->mcluster, argv[1], err);
	return 0;
}

static int cmd_sleep(struct mock *m, int argc, char **argv, char *errbuf,
		     size_t errlen)
{
	struct pollfd pfd = {.fd = m->sigfd, .events = POLLIN};
	int ms;

	if (parse_int("sleep", argv[1], 0, 600 * 1000, &ms, errbuf,
		      errlen) != 0)
		return -1;
	/* A signal cuts the sleep short; the main loop then sees it. */
	if (poll(&pfd, 1, ms) < 0 && errno != EINTR) {
		snprintf(errbuf, errlen, "poll: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static int cmd_quit(struct mock *m, int argc, char **argv, char *errbuf,
		    size_t errlen)
{
	m->stop = 1;
	return 0;
}

static const struct {
	const char *name;
	int min_args; /* words after the name */
	int max_args;
	const char *usage;
	int (*run)(struct mock *m, int argc, char **argv, char *errbuf,
		   size_t errlen);
} cmds[] = {
	{"topic", 1, 3, "topic NAME [PARTITIONS [REPLICATION]]", cmd_topic},
	{"leader", 3, 3, "leader TOPIC PARTITION BROKER|-1", cmd_leader},
	{"broker_down", 1, 1, "broker_down BROKER|-1", cmd_broker_updown},
	{"broker_up", 1, 1, "broker_up BROKER|-1", cmd_broker_updown},
	{"rtt", 2, 2, "rtt BROKER|-1 MS", cmd_rtt},
	{"push_errors", 2, 2, "push_errors APIKEY ERR[,ERR...]",
	 cmd_push_errors},
	{"push_errors_rtt", 3, 3,
	 "push_errors_rtt BROKER APIKEY ERR[:MS][,ERR[:MS]...]",
	 cmd_push_errors_rtt},
	{"clear_errors", 1, 1, "clear_errors APIKEY", cmd_clear_errors},
	{"topic_error", 2, 2, "topic_error TOPIC ERR", cmd_topic_error},
	{"sleep", 1, 1, "sleep MS", cmd_sleep},
	{"quit", 0, 0, "quit", cmd_quit},
};

/* Runs one command line (no '\n'), modified in place; 0 or -1 with the
 * reason in errbuf. */
static int run_line(struct mock *m, char *line, char *errbuf, size_t errlen)
{
	char *argv[MOCK_ARGS_MAX];
	int argc = 0;
	char *p = line;
	size_t i;

	for (;;) {
		size_t len;

		p += strspn(p, " \t\r");
		if (*p == '\0')
			break;
		if (argc == MOCK_ARGS_MAX) {
			snprintf(errbuf, errlen, "more than %d words",
				 MOCK_ARGS_MAX);
			return -1;
		}
		len = strcspn(p, " \t\r");
		argv[argc++] = p;
		if (p[len] == '\0')
			break;
		p[len] = '\0';
		p += len + 1;
	}
	if (argc == 0 || argv[0][0] == '#')
		return 0;

	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		if (strcmp(argv[0], cmds[i].name) != 0)
			continue;
		if (argc - 1 < cmds[i].min_args ||
		    argc - 1 > cmds[i].max_args) {
			snprintf(errbuf, errlen, "usage: %s", cmds[i].usage);
			return -1;
		}
		return cmds[i].run(m, argc, argv, errbuf, errlen);
	}
	snprintf(errbuf, errlen, "unknown command '%s'", argv[0]);
	return -1;
}

/* Prints the answer and flushes it; -1 when stdout is gone. */
static int answer(int rc, const char *errbuf)
{
	if (rc == 0)
		fputs("ok\n", stdout);
	else
		printf("error: %s\n", errbuf);
	return fflush(stdout) == 0 && !ferror(stdout) ? 0 : -1;
}

/* ---------------------------------------------------------------- main loop */

/* Reads stdin until quit, EOF or a signal; answers every line. Returns 0,
 * or -1 when stdout is gone. Reads with read(2), not stdio, so that poll
 * sees exactly what is left. */
static int serve(struct mock *m)
{
	char buf[MOCK_LINE_MAX];
	char errbuf[MOCK_ERRLEN];
	size_t used = 0;
	int discarding = 0; /* inside a line that was too long */

	while (!m->stop) {
		struct pollfd pfds[2] = {
			{.fd = STDIN_FILENO, .events = POLLIN},
			{.fd = m->sigfd, .events = POLLIN},
		};
		ssize_t n;
		char *nl;

		if (poll(pfds, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "kafka-mock: poll: %s\n",
				strerror(errno));
			return 0;
		}
		if (pfds[1].revents != 0)
			break;
		if (pfds[0].revents == 0)
			continue;

		n = read(STDIN_FILENO, buf + used, sizeof(buf) - 1 - used);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			fprintf(stderr, "kafka-mock: read stdin: %s\n",
				strerror(errno));
			break;
		}
		if (n == 0) {
			/* EOF: a last line without '\n' still counts. */
			if (used > 0 && !discarding) {
				buf[used] = '\0';
				if (answer(run_line(m, buf, errbuf,
						    sizeof(errbuf)),
					   errbuf) != 0)
					return -1;
			}
			break;
		}
		used += (size_t)n;
		buf[used] = '\0';

		while (!m->stop) {
			size_t len;
			int rc;

			nl = memchr(buf, '\n', used);
			if (nl == NULL)
				break;
			*nl = '\0';
			len = (size_t)(nl - buf) + 1;
			if (discarding) {
				discarding = 0;
			} else {
				rc = run_line(m, buf, errbuf, sizeof(errbuf));
				if (answer(rc, errbuf) != 0)
					return -1;
			}
			memmove(buf, buf + len, used - len);
			used -= len;
			buf[used] = '\0';
		}
		if (used == sizeof(buf) - 1) {
			/* Answered once, now; the rest of it is dropped. */
			if (!discarding) {
				snprintf(errbuf, sizeof(errbuf),
					 "line longer than %d bytes",
					 MOCK_LINE_MAX - 1);
				if (answer(-1, errbuf) != 0)
					return -1;
			}
			discarding = 1;
			used = 0;
		}
	}
	return 0;
}

static void usage(FILE *out)
{
	size_t i;

	fprintf(out,
		"Usage: kafka-mock [--brokers N] [--partitions N]\n"
		"\n"
		"A librdkafka mock Kafka cluster on 127.0.0.1 for fault tests.\n"
		"Prints \"bootstrap=HOST:PORT,...\" first, then reads one "
		"command a line on\n"
		"stdin and answers each with \"ok\" or \"error: REASON\". "
		"quit, EOF or SIGTERM\n"
		"end it.\n"
		"\n"
		"Options:\n"
		"  --brokers N     brokers, ids 1..N (default 3)\n"
		"  --partitions N  partitions of \"topic NAME\" without a "
		"count (default 4)\n"
		"  -h, --help      this text\n"
		"\n"
		"Commands:\n");
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(out, "  %s\n", cmds[i].usage);
	fprintf(out,
		"\n"
		"APIKEY: Produce, Metadata, InitProducerId, ... or a number.\n"
		"ERR: a librdkafka error name without RD_KAFKA_RESP_ERR_ "
		"(MSG_SIZE_TOO_LARGE,\n"
		"_TRANSPORT to drop the connection) or a number.\n");
}

/* Blocks the stop signals in this thread before any other thread exists
 * (librdkafka's and the mock cluster's inherit the mask), and returns a
 * signalfd that reports them to the main loop; -1 on error. */
static int stop_signals_fd(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	if (pthread_sigmask(SIG_BLOCK, &set, NULL) != 0)
		return -1;
	/* A reader that went away is an error on write, not a kill. */
	signal(SIGPIPE, SIG_IGN);
	return signalfd(-1, &set, SFD_CLOEXEC);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"brokers", required_argument, NULL, 'b'},
		{"partitions", required_argument, NULL, 'p'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct mock m = {.brokers = 3, .default_partitions = 4, .sigfd = -1};
	rd_kafka_conf_t *conf;
	char errstr[512]; /* librdkafka API error reporting buffer */
	long v;
	int c, rc = 0;

	for (;;) {
		c = getopt_long(argc, argv, "h", opts, NULL);
		if (c == -1)
			break;
		switch (c) {
		case 'b':
			if (parse_long(optarg, 1, 32, &v) != 0) {
				fprintf(stderr, "kafka-mock: --brokers must "
					"be 1..32, not '%s'\n", optarg);
				return 2;
			}
			m.brokers = (int)v;
			break;
		case 'p':
			if (parse_long(optarg, 1, 10000, &v) != 0) {
				fprintf(stderr, "kafka-mock: --partitions must"
					" be 1..10000, not '%s'\n", optarg);
				return 2;
			}
			m.default_partitions = (int)v;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "kafka-mock: unexpected argument '%s'\n",
			argv[optind]);
		usage(stderr);
		return 2;
	}

	m.sigfd = stop_signals_fd();
	if (m.sigfd < 0) {
		fprintf(stderr, "kafka-mock: signals: %s\n", strerror(errno));
		return 1;
	}

	/* The handle only hosts the cluster: it never connects anywhere,
	 * and without a bootstrap list it would say so in a warning. */
	conf = rd_kafka_conf_new();
	if (rd_kafka_conf_set(conf, "log_level", "3", errstr,
			      sizeof(errstr)) != RD_KAFKA_CONF_OK) {
		fprintf(stderr, "kafka-mock: %s\n", errstr);
		rd_kafka_conf_destroy(conf);
		return 1;
	}
	/* rd_kafka_new() takes ownership of conf on success only. */
	m.rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
	if (m.rk == NULL) {
		fprintf(stderr, "kafka-mock: rd_kafka_new: %s\n", errstr);
		rd_kafka_conf_destroy(conf);
		return 1;
	}
	m.mcluster = rd_kafka_mock_cluster_new(m.rk, m.brokers);
	if (m.mcluster == NULL) {
		fprintf(stderr, "kafka-mock: could not create the mock "
			"cluster\n");
		rd_kafka_destroy(m.rk);
		return 1;
	}

	printf("bootstrap=%s\n", rd_kafka_mock_cluster_bootstraps(m.mcluster));
	if (fflush(stdout) != 0 || serve(&m) != 0) {
		fprintf(stderr, "kafka-mock: stdout: %s\n", strerror(errno));
		rc = 1;
	}

	rd_kafka_mock_cluster_destroy(m.mcluster);
	rd_kafka_destroy(m.rk);
	close(m.sigfd);
	return rc;
}
