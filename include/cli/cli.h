/* SPDX-License-Identifier: Apache-2.0 */
/* cli.h -- the command line of the outbox-relay binary (src/cli/).
 *
 * One table of options (src/cli/cli.c) is parsed with getopt_long() and
 * prints the usage text: the relay's own options (--config, --set, ...)
 * and the runbook actions --check, --create-slot, --drop-slot,
 * --slot-status, --advance-slot, --skip-transaction, --dry-run, --drain
 * and --accept-slot with their modifiers, --reconcile (what the database
 * did in a window against the events in Kafka), and --from-debezium, which
 * converts a Debezium connector's configuration (cli/from_debezium.h). The slot-changing actions act
 * only on an explicit flag (and --yes where data can be lost), never as a
 * side effect; see docs/runbook-cli.md for outputs and exit codes. Only
 * main.c calls these. */
#ifndef RELAY_CLI_H
#define RELAY_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/config.h"

enum cli_action {
	CLI_NONE = 0,               /* run the relay */
	CLI_CHECK,
	CLI_CREATE_SLOT,
	CLI_DROP_SLOT,
	CLI_SLOT_STATUS,
	CLI_ADVANCE_SLOT,
	CLI_SKIP_TXN,
	CLI_DRY_RUN,
	CLI_DRAIN,
	CLI_ACCEPT_SLOT,
	CLI_FROM_DEBEZIUM,
	CLI_RECONCILE,
	CLI_NACTIONS
};

/* The parsed command line. Strings point into argv. */
struct cli_args {
	const char *config_path;
	const char **sets;          /* --set values in order; owned array */
	int nsets;
	bool print_config;
	bool version;
	bool help;
	enum cli_action action;
	const char *action_name;    /* "dry-run" */
	const char *arg;            /* the action's value (LSN, XID) */
	bool yes, json, if_not_exists;
	const char *dlq_topic;
	const char *since, *until;  /* --reconcile's window */
	const char *metrics_file;   /* --reconcile: "" or NULL off */
	int64_t max_events;         /* -1: the action's default */
	int64_t timeout_ms;         /* -1: the action's default */
	const char *argv0;
};

/* Parses argv into a (a->sets must be released with cli_args_free()).
 * Returns 0, or RELAY_EXIT_USAGE after saying why on stderr (an unknown
 * or ambiguous option, two actions, a modifier of another action or of
 * none, a bad value). */
int cli_parse(int argc, char **argv, struct cli_args *a);
void cli_args_free(struct cli_args *a);

/* The --help text, made from the option table. */
void cli_usage(FILE *out);

/* Runs a->action with the fully loaded configuration (kc_validate_config() is
 * run here only for the actions that need Kafka). Prints results on
 * stdout and messages on stderr, never a secret. Returns the process
 * exit code. */
int cli_run(const struct relay_config *cfg, const struct cli_args *a);

#endif
