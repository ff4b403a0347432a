/* SPDX-License-Identifier: Apache-2.0 */
/* cli.h -- the runbook actions of the outbox-relay binary.
 *
 * --check, --create-slot, --drop-slot, --slot-status, --advance-slot,
 * --skip-transaction, --dry-run and --drain: one-shot operator commands
 * that share the relay's configuration. The slot-changing ones act only
 * on an explicit flag (and --yes where data can be lost), never as a side
 * effect; see docs/runbook-cli.md for outputs and exit codes. */
#ifndef RELAY_CLI_H
#define RELAY_CLI_H

#include <stdbool.h>

#include "config.h"

/* True when argv contains a runbook flag: an action, an abbreviation
 * getopt_long() would accept for one, an ambiguous prefix of one, or a
 * modifier (--yes, --json, ...) on its own, so that cli_main() rejects
 * the last two (exit 64) instead of the relay starting with them
 * ignored. The values of --config/-c and --set/-s are skipped. */
bool cli_is_action(int argc, char **argv);

/* Runs the action named in argv with the fully loaded configuration
 * (defaults, file, environment, --set; cfg_validate() is run here only
 * for the actions that need Kafka). argv is the whole command line: the
 * action flags and their arguments are parsed here, --config/--set and
 * their values are skipped. Prints to stdout (results) and stderr
 * (messages), never a secret. Returns the process exit code. */
int cli_main(const struct relay_config *cfg, int argc, char **argv);

#endif
