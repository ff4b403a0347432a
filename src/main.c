/* SPDX-License-Identifier: Apache-2.0 */
/* main.c -- command line, configuration, signals; then the relay runs.
 * Only wiring lives here. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <libpq-fe.h>

#include "config.h"
#include "log.h"
#include "relay.h"
#include "cli.h"

extern char **environ;

static int sig_pipe[2] = { -1, -1 };
static volatile sig_atomic_t sig_count;

/* What the signal handler writes on a second signal, rendered before the
 * handler is installed (log.format=json gets a JSON line, timed then). */
#define SECOND_SIGNAL_MSG "second signal: exiting now; the slot replays " \
                          "whatever was not confirmed"
static char second_msg[512] = SECOND_SIGNAL_MSG "\n";
static size_t second_len = sizeof(SECOND_SIGNAL_MSG);

static void on_signal(int signo)
{
	int saved = errno;
	char b = (char)signo;

	if (signo != SIGUSR1 && signo != SIGHUP && ++sig_count >= 2) {
		ssize_t w = write(STDERR_FILENO, second_msg, second_len);
		(void)w;
		_exit(RELAY_EXIT_FAILURE);
	}
	if (write(sig_pipe[1], &b, 1) < 0) {
		/* Pipe full: a byte is already waiting, nothing is lost. */
	}
	errno = saved;
}

static void usage(FILE *out)
{
	fprintf(out,
	        "outbox-relay streams committed outbox rows from a PostgreSQL logical\n"
	        "replication slot (wal2json) to Kafka, confirming each LSN only after\n"
	        "Kafka has acknowledged every event up to it.\n"
	        "\n"
	        "Usage:\n"
	        "  outbox-relay --config FILE [--set KEY=VALUE]...\n"
	        "\n"
	        "Runbook actions (see docs/runbook-cli.md; --json where status is printed):\n"
	        "      --check                 preflight PostgreSQL, slot, table and Kafka\n"
	        "      --create-slot [--if-not-exists]\n"
	        "                              create the wal2json slot\n"
	        "      --drop-slot --yes       drop the slot (refused while active)\n"
	        "      --slot-status           slot health; exit 0 ok, 1 warn, 2 critical,\n"
	        "                              3 lost or missing\n"
	        "      --advance-slot=LSN --yes\n"
	        "                              move the slot forward (lists what it skips)\n"
	        "      --skip-transaction=XID --yes [--to-dlq=TOPIC]\n"
	        "                              skip the first pending (poison) transaction\n"
	        "      --dry-run [--max-events=N]\n"
	        "                              print pending events as JSON, publish nothing\n"
	        "      --drain [--timeout-ms=N]\n"
	        "                              run until caught up with the WAL at start\n"
	        "      --accept-slot --yes     record the slot's position in the slot\n"
	        "                              ledger after a deliberate recreate\n"
	        "\n"
	        "Options:\n"
	        "  -c, --config=FILE      read key = value lines from FILE\n"
	        "  -s, --set=KEY=VALUE    override one key (repeatable; wins over the\n"
	        "                         file and OUTBOX_RELAY_<KEY> variables)\n"
	        "      --print-config     print the effective configuration with the\n"
	        "                         source of each value (secrets redacted), exit\n"
	        "  -V, --version          print the version, exit\n"
	        "  -h, --help             show this help, exit\n"
	        "\n"
	        "Configuration keys (defaults in brackets; see docs/configuration.md):\n"
	        "  pg.conninfo                 libpq connection string or URI [required]\n"
	        "  slot.name                   wal2json slot, never created here [outbox_relay]\n"
	        "  outbox.table                schema.table, exact case [public.outbox]\n"
	        "  table.field.event.id        [id]\n"
	        "  table.field.event.key       [aggregate_id]\n"
	        "  table.field.event.type      [event_type]\n"
	        "  table.field.event.payload   [payload]\n"
	        "  route.by.field              [aggregate_type]\n"
	        "  route.topic.replacement     [outbox.event.${routedByValue}]\n"
	        "  kafka.<property>            passed to librdkafka, e.g.\n"
	        "                              kafka.bootstrap.servers=127.0.0.1:9092\n"
	        "  http.listen                 health endpoint; empty: off [127.0.0.1:8080]\n"
	        "  heartbeat.interval.ms       logical-message heartbeats; 0: off [0]\n"
	        "  watchdog.*                  slot sampling and thresholds (docs/monitoring.md)\n"
	        "  alert.webhook.url           JSON POST on health state changes\n"
	        "\n"
	        "Exit codes: 0 stopped by signal after draining; 1 second signal;\n"
	        "64 usage; 65 fail-stop on a poison event; 69 slot missing, lost or\n"
	        "invalidated, the database went back in time, or the endpoint cannot\n"
	        "bind; 70 internal error; 77 PostgreSQL or Kafka refuses the\n"
	        "credentials or the role; 78 configuration error (also a missing outbox table or\n"
	        "column, or one that is not an ordinary table).\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "set", required_argument, NULL, 's' },
		{ "print-config", no_argument, NULL, 'P' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		/* runbook flags: parsed by cli_main() */
		{ "check", no_argument, NULL, 'R' },
		{ "create-slot", no_argument, NULL, 'R' },
		{ "if-not-exists", no_argument, NULL, 'R' },
		{ "drop-slot", no_argument, NULL, 'R' },
		{ "yes", no_argument, NULL, 'R' },
		{ "slot-status", no_argument, NULL, 'R' },
		{ "json", no_argument, NULL, 'R' },
		{ "advance-slot", required_argument, NULL, 'R' },
		{ "skip-transaction", required_argument, NULL, 'R' },
		{ "to-dlq", required_argument, NULL, 'R' },
		{ "dry-run", no_argument, NULL, 'R' },
		{ "max-events", required_argument, NULL, 'R' },
		{ "timeout-ms", required_argument, NULL, 'R' },
		{ "drain", no_argument, NULL, 'R' },
		{ "accept-slot", no_argument, NULL, 'R' },
		{ NULL, 0, NULL, 0 },
	};
	struct relay_config cfg;
	const char *config_path = NULL;
	char **sets = NULL;
	int nsets = 0, c, code;
	bool print_config = false;
	char err[1024];
	struct sigaction sa;
	struct rlimit nocore = { 0, 0 };
	enum log_level lvl;
	enum log_format fmt;

	/* jansson seeds its hash function lazily; do it before any thread
	 * (HTTP, watchdog, librdkafka statistics) can race to it. */
	json_object_seed(0);
	sets = calloc((size_t)argc, sizeof(*sets));
	while ((c = getopt_long(argc, argv, "c:s:Vh", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			config_path = optarg;
			break;
		case 's':
			sets[nsets++] = optarg;
			break;
		case 'P':
			print_config = true;
			break;
		case 'R':
			break;
		case 'V':
			printf("outbox-relay %s (librdkafka %s, libpq %d)\n", RELAY_VERSION,
			       rd_kafka_version_str(), PQlibVersion());
			free(sets);
			return RELAY_EXIT_OK;
		case 'h':
			usage(stdout);
			free(sets);
			return RELAY_EXIT_OK;
		default:
			fprintf(stderr, "Try \"outbox-relay --help\".\n");
			free(sets);
			return RELAY_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "outbox-relay: unexpected argument \"%s\"\n"
		        "Try \"outbox-relay --help\".\n", argv[optind]);
		free(sets);
		return RELAY_EXIT_USAGE;
	}

	cfg_init(&cfg);
	if ((config_path != NULL &&
	     cfg_load_file(&cfg, config_path, err, sizeof(err)) < 0) ||
	    cfg_load_env(&cfg, environ, err, sizeof(err)) < 0) {
		fprintf(stderr, "outbox-relay: %s\n", err);
		code = RELAY_EXIT_CONFIG;
		goto out;
	}
	for (int i = 0; i < nsets; i++) {
		if (cfg_set_flag(&cfg, sets[i], err, sizeof(err)) < 0) {
			fprintf(stderr, "outbox-relay: %s\n", err);
			code = RELAY_EXIT_CONFIG;
			goto out;
		}
	}
	if (print_config) {
		cfg_print(&cfg, stdout);
		code = RELAY_EXIT_OK;
		goto out;
	}
	if (log_format_parse(cfg.log_format, &fmt) == 0)
		log_set_format(fmt);
	if (cfg_apply_password_file(&cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "outbox-relay: %s\n", err);
		code = RELAY_EXIT_CONFIG;
		goto out;
	}
	if (cli_is_action(argc, argv)) {
		if (log_level_parse(cfg.log_level, &lvl) == 0)
			log_set_level(lvl);
		(void)setrlimit(RLIMIT_CORE, &nocore);
		code = cli_main(&cfg, argc, argv);
		goto out;
	}
	if (cfg_validate(&cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "outbox-relay: %s\n", err);
		code = RELAY_EXIT_CONFIG;
		goto out;
	}
	if (log_level_parse(cfg.log_level, &lvl) == 0)
		log_set_level(lvl);

	/* A core dump would hold the connection password. */
	(void)setrlimit(RLIMIT_CORE, &nocore);
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);

	if (pipe2(sig_pipe, O_NONBLOCK | O_CLOEXEC) < 0) {
		log_error("pipe: %s", strerror(errno));
		code = RELAY_EXIT_SOFTWARE;
		goto out;
	}
	if (log_get_format() == LOG_FMT_JSON)
		second_len = log_render_json(LOG_LVL_ERROR, now_wall_us(),
		                             SECOND_SIGNAL_MSG, second_msg,
		                             sizeof(second_msg));
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	/* Not a stop: a terminal closing or a "reload" from a supervisor
	 * must not kill the relay without its final status update. */
	sigaction(SIGHUP, &sa, NULL);
	if (getenv("RELAY_TEST_STALL_MS") != NULL)
		sigaction(SIGUSR1, &sa, NULL); /* test hook, see relay.c */
	signal(SIGPIPE, SIG_IGN);

	log_info("outbox-relay %s starting: slot \"%s\", table %s.%s", RELAY_VERSION,
	         cfg.slot_name, cfg.outbox_schema, cfg.outbox_table);
	code = relay_run(&cfg, sig_pipe[0]);
	log_info("outbox-relay exiting with code %d", code);
out:
	cfg_free(&cfg);
	free(sets);
	return code;
}
