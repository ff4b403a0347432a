/* SPDX-License-Identifier: Apache-2.0 */
/* main.c -- command line, configuration, signals; then the relay runs.
 * Only wiring lives here. */
#include <errno.h>
#include <fcntl.h>
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

#include "decode/stream_spec.h"
#include "lib/config.h"
#include "lib/log.h"
#include "kafka/kafka_conf.h"
#include "relay/relay.h"
#include "cli/cli.h"

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

int main(int argc, char **argv)
{
	struct relay_config cfg;
	struct cli_args args;
	int code;
	char err[1024];
	struct sigaction sa;
	struct rlimit nocore = { 0, 0 };
	enum log_level lvl;
	enum log_format fmt;

	/* jansson seeds its hash function lazily; do it before any thread
	 * (HTTP, watchdog, librdkafka statistics) can race to it. */
	json_object_seed(0);
	if ((code = cli_parse(argc, argv, &args)) != 0) {
		cli_args_free(&args);
		return code;
	}
	if (args.help) {
		cli_usage(stdout);
		cli_args_free(&args);
		return RELAY_EXIT_OK;
	}
	if (args.version) {
		printf("outbox-relay %s (librdkafka %s, libpq %d)\n", RELAY_VERSION,
		       rd_kafka_version_str(), PQlibVersion());
		cli_args_free(&args);
		return RELAY_EXIT_OK;
	}

	cfg_init(&cfg);
	if ((args.config_path != NULL &&
	     cfg_load_file(&cfg, args.config_path, err, sizeof(err)) < 0) ||
	    cfg_load_env(&cfg, environ, err, sizeof(err)) < 0) {
		fprintf(stderr, "outbox-relay: %s\n", err);
		code = RELAY_EXIT_CONFIG;
		goto out;
	}
	for (int i = 0; i < args.nsets; i++) {
		if (cfg_set_flag(&cfg, args.sets[i], err, sizeof(err)) < 0) {
			fprintf(stderr, "outbox-relay: %s\n", err);
			code = RELAY_EXIT_CONFIG;
			goto out;
		}
	}
	if (args.print_config) {
		cfg_finish(&cfg);
		cfg_print(&cfg, stdout);
		kc_print_defaults(&cfg, stdout);
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
	/* The record's shape (route.topic.regex, placements, formats) is
	 * checked for the runbook too: it decodes as the relay does. */
	if (ss_check_config(&cfg, err, sizeof(err)) < 0) {
		fprintf(stderr, "outbox-relay: %s\n", err);
		code = RELAY_EXIT_CONFIG;
		goto out;
	}
	if (args.action != CLI_NONE) {
		if (log_level_parse(cfg.log_level, &lvl) == 0)
			log_set_level(lvl);
		(void)setrlimit(RLIMIT_CORE, &nocore);
		code = cli_run(&cfg, &args);
		goto out;
	}
	if (kc_validate_config(&cfg, err, sizeof(err)) < 0) {
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
#ifdef OUTBOX_RELAY_TEST_HOOKS
	if (getenv("RELAY_TEST_STALL_MS") != NULL)
		sigaction(SIGUSR1, &sa, NULL); /* test hook, see relay.c */
#endif
	signal(SIGPIPE, SIG_IGN);

	log_info("outbox-relay %s starting: slot \"%s\", table %s.%s", RELAY_VERSION,
	         cfg.slot_name, cfg.outbox_schema, cfg.outbox_table);
	code = relay_run(&cfg, sig_pipe[0]);
	log_info("outbox-relay exiting with code %d", code);
out:
	cfg_free(&cfg);
	cli_args_free(&args);
	return code;
}
