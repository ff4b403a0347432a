/* SPDX-License-Identifier: Apache-2.0 */
/* cli.c -- the command line: one table of options, parsed with
 * getopt_long() (which also takes unambiguous abbreviations), printed as
 * the usage text, and the dispatch of the runbook actions (cli.h). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_int.h"

#define A(x) (1u << (x))
#define A_ALL (~0u)

_Static_assert(CLI_NACTIONS <= 32, "actions are bits of a 32-bit mask");

enum opt_kind {
	OPT_MAIN,                   /* the relay's own: --config, --set, ... */
	OPT_ACTION,                 /* a runbook action */
	OPT_MODIFIER,               /* goes with the actions in allowed */
};

/* Every option the binary takes, in the order --help lists them. */
static const struct cli_option {
	const char *name;
	int has_arg;                /* no_argument / required_argument */
	char shortopt;              /* 0: long only */
	enum opt_kind kind;
	enum cli_action action;     /* OPT_ACTION */
	unsigned allowed;           /* OPT_MODIFIER: the actions it goes with */
	const char *synopsis;       /* how --help shows it */
	const char *help;
} options[] = {
	{ "check", no_argument, 0, OPT_ACTION, CLI_CHECK, 0, "--check",
	  "preflight PostgreSQL, slot, table and Kafka" },
	{ "create-slot", no_argument, 0, OPT_ACTION, CLI_CREATE_SLOT, 0,
	  "--create-slot [--if-not-exists]", "create the slot of slot.plugin "
	  "(pgoutput: its publication first)" },
	{ "drop-slot", no_argument, 0, OPT_ACTION, CLI_DROP_SLOT, 0,
	  "--drop-slot --yes", "drop the slot (refused while active)" },
	{ "slot-status", no_argument, 0, OPT_ACTION, CLI_SLOT_STATUS, 0,
	  "--slot-status", "slot health; exit 0 ok, 1 warn, 2 critical, 3 lost "
	  "or missing" },
	{ "advance-slot", required_argument, 0, OPT_ACTION, CLI_ADVANCE_SLOT, 0,
	  "--advance-slot=LSN --yes", "move the slot forward (lists what it "
	  "skips)" },
	{ "skip-transaction", required_argument, 0, OPT_ACTION, CLI_SKIP_TXN, 0,
	  "--skip-transaction=XID --yes [--to-dlq=TOPIC]", "skip the first "
	  "pending (poison) transaction" },
	{ "dry-run", no_argument, 0, OPT_ACTION, CLI_DRY_RUN, 0,
	  "--dry-run [--max-events=N]", "print pending events as JSON, publish "
	  "nothing" },
	{ "drain", no_argument, 0, OPT_ACTION, CLI_DRAIN, 0,
	  "--drain [--timeout-ms=N]", "run until caught up with the WAL at "
	  "start" },
	{ "accept-slot", no_argument, 0, OPT_ACTION, CLI_ACCEPT_SLOT, 0,
	  "--accept-slot --yes", "record the slot's position in the slot ledger "
	  "after a deliberate recreate" },
	{ "from-debezium", required_argument, 0, OPT_ACTION, CLI_FROM_DEBEZIUM,
	  0, "--from-debezium=FILE", "print the relay configuration of a "
	  "Debezium connector's (JSON or .properties); what does not map, with "
	  "why, on stderr" },
	{ "reconcile", no_argument, 0, OPT_ACTION, CLI_RECONCILE, 0,
	  "--reconcile --since=T --until=T", "count per event type what the "
	  "database did in [T, T) and the events in Kafka; exit 1 when some are "
	  "missing (docs/reconcile.md)" },
	{ "if-not-exists", no_argument, 0, OPT_MODIFIER, CLI_NONE,
	  A(CLI_CREATE_SLOT), "--if-not-exists",
	  "--create-slot: accept an existing slot of slot.plugin" },
	{ "yes", no_argument, 0, OPT_MODIFIER, CLI_NONE,
	  A(CLI_DROP_SLOT) | A(CLI_ADVANCE_SLOT) | A(CLI_SKIP_TXN) |
	      A(CLI_ACCEPT_SLOT), "--yes", "confirm an action that loses events" },
	{ "json", no_argument, 0, OPT_MODIFIER, CLI_NONE,
	  A_ALL & ~A(CLI_FROM_DEBEZIUM), "--json",
	  "print the result as one JSON document" },
	{ "to-dlq", required_argument, 0, OPT_MODIFIER, CLI_NONE, A(CLI_SKIP_TXN),
	  "--to-dlq=TOPIC", "--skip-transaction: publish its events there first" },
	{ "max-events", required_argument, 0, OPT_MODIFIER, CLI_NONE,
	  A(CLI_DRY_RUN), "--max-events=N", "--dry-run: stop after N events "
	  "[1000]" },
	{ "since", required_argument, 0, OPT_MODIFIER, CLI_NONE,
	  A(CLI_RECONCILE), "--since=T", "--reconcile: the window's start, a "
	  "timestamptz (2026-12-05T04:00:00Z) or an interval before now "
	  "(\"2 hours\")" },
	{ "until", required_argument, 0, OPT_MODIFIER, CLI_NONE,
	  A(CLI_RECONCILE), "--until=T", "--reconcile: the window's end "
	  "(excluded), as --since" },
	{ "metrics-file", required_argument, 0, OPT_MODIFIER, CLI_NONE,
	  A(CLI_RECONCILE), "--metrics-file=PATH", "--reconcile: write the "
	  "run's gauges there (Prometheus text, replaced atomically)" },
	{ "timeout-ms", required_argument, 0, OPT_MODIFIER, CLI_NONE,
	  A(CLI_CHECK) | A(CLI_DRY_RUN) | A(CLI_DRAIN) | A(CLI_SKIP_TXN) |
	      A(CLI_RECONCILE),
	  "--timeout-ms=N", "bound of --check, --dry-run, --drain, "
	  "--skip-transaction, --reconcile (each query, each topic read)" },
	{ "config", required_argument, 'c', OPT_MAIN, CLI_NONE, 0,
	  "-c, --config=FILE", "read key = value lines from FILE" },
	{ "set", required_argument, 's', OPT_MAIN, CLI_NONE, 0,
	  "-s, --set=KEY=VALUE", "override one key (repeatable; wins over the "
	  "file and OUTBOX_RELAY_<KEY> variables)" },
	{ "print-config", no_argument, 0, OPT_MAIN, CLI_NONE, 0,
	  "--print-config", "print the effective configuration with the source "
	  "of each value (secrets redacted), exit" },
	{ "version", no_argument, 'V', OPT_MAIN, CLI_NONE, 0, "-V, --version",
	  "print the version, exit" },
	{ "help", no_argument, 'h', OPT_MAIN, CLI_NONE, 0, "-h, --help",
	  "show this help, exit" },
};

#define NOPTIONS (sizeof(options) / sizeof(options[0]))
#define OPT_BASE 256                /* getopt value of options[i]: base + i */

_Static_assert(NOPTIONS <= 32, "options given are bits of a 32-bit mask");

/* The runbook actions and what they need first. */
static const struct {
	enum cli_action action;
	cli_action_fn run;
	bool needs_pg;              /* pg.conninfo must be set and valid */
	int64_t timeout_ms;         /* --timeout-ms default; -1 the action's */
} actions[] = {
	{ CLI_CHECK, act_check, false, -1 },
	{ CLI_CREATE_SLOT, act_create_slot, true, -1 },
	{ CLI_DROP_SLOT, act_drop_slot, true, -1 },
	{ CLI_SLOT_STATUS, act_slot_status, true, -1 },
	{ CLI_ADVANCE_SLOT, act_advance_slot, true, -1 },
	{ CLI_SKIP_TXN, act_skip_txn, true, 30000 },
	{ CLI_DRY_RUN, act_dry_run, true, -1 },
	{ CLI_DRAIN, act_drain, true, -1 },
	{ CLI_ACCEPT_SLOT, act_accept_slot, true, -1 },
	{ CLI_FROM_DEBEZIUM, act_from_debezium, false, -1 },
	{ CLI_RECONCILE, act_reconcile, true, 120000 },
};

static int usage_error(const char *fmt, const char *a, const char *b)
{
	fputs("outbox-relay: ", stderr);
	fprintf(stderr, fmt, a, b);
	fputs("\nTry \"outbox-relay --help\".\n", stderr);
	return RELAY_EXIT_USAGE;
}

static int parse_int(const char *flag, const char *v, int64_t max,
                     int64_t *out)
{
	char *end;
	long long n;

	errno = 0;
	n = strtoll(v, &end, 10);
	if (errno != 0 || end == v || *end != '\0' || n < 1 || n > max) {
		cli_err("--%s: \"%s\" is not an integer in [1, %lld]", flag, v,
		        (long long)max);
		return -1;
	}
	*out = n;
	return 0;
}

/* One option getopt_long() found. Returns 0 or RELAY_EXIT_USAGE. */
static int take(struct cli_args *a, const struct cli_option *o,
                const char *v)
{
	char first[64];

	switch (o->kind) {
	case OPT_ACTION:
		if (a->action != CLI_NONE) {
			snprintf(first, sizeof(first), "--%s", a->action_name);
			return usage_error("%s and --%s: one action at a time", first,
			                   o->name);
		}
		a->action = o->action;
		a->action_name = o->name;
		a->arg = v;
		return 0;
	case OPT_MODIFIER:
		if (strcmp(o->name, "if-not-exists") == 0)
			a->if_not_exists = true;
		else if (strcmp(o->name, "yes") == 0)
			a->yes = true;
		else if (strcmp(o->name, "json") == 0)
			a->json = true;
		else if (strcmp(o->name, "to-dlq") == 0)
			a->dlq_topic = v;
		else if (strcmp(o->name, "since") == 0)
			a->since = v;
		else if (strcmp(o->name, "until") == 0)
			a->until = v;
		else if (strcmp(o->name, "metrics-file") == 0)
			a->metrics_file = v;
		else if (strcmp(o->name, "max-events") == 0)
			return parse_int(o->name, v, 100000000, &a->max_events) < 0
			           ? RELAY_EXIT_USAGE : 0;
		else if (parse_int(o->name, v, 86400000, &a->timeout_ms) < 0)
			return RELAY_EXIT_USAGE;
		return 0;
	case OPT_MAIN:
		if (o->shortopt == 'c')
			a->config_path = v;
		else if (o->shortopt == 's')
			a->sets[a->nsets++] = v;
		else if (o->shortopt == 'V')
			a->version = true;
		else if (o->shortopt == 'h')
			a->help = true;
		else
			a->print_config = true;
		return 0;
	}
	return 0;
}

int cli_parse(int argc, char **argv, struct cli_args *a)
{
	struct option longs[NOPTIONS + 1];
	char shorts[16], flag[64], act[64];
	uint32_t given = 0;         /* bit i: options[i] was given */
	size_t ns = 0;
	int c, rc;

	memset(a, 0, sizeof(*a));
	a->max_events = a->timeout_ms = -1;
	a->argv0 = argv[0];
	a->sets = xcalloc((size_t)argc + 1, sizeof(*a->sets));
	for (size_t i = 0; i < NOPTIONS; i++) {
		longs[i] = (struct option){ options[i].name, options[i].has_arg, NULL,
			                        OPT_BASE + (int)i };
		if (options[i].shortopt != 0) {
			shorts[ns++] = options[i].shortopt;
			if (options[i].has_arg == required_argument)
				shorts[ns++] = ':';
		}
	}
	longs[NOPTIONS] = (struct option){ NULL, 0, NULL, 0 };
	shorts[ns] = '\0';
	opterr = 1;
	optind = 1;
	while ((c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
		const struct cli_option *o = NULL;
		if (c >= OPT_BASE && c < OPT_BASE + (int)NOPTIONS)
			o = &options[c - OPT_BASE];
		for (size_t i = 0; o == NULL && i < NOPTIONS; i++)
			if (c == options[i].shortopt)
				o = &options[i];
		if (o == NULL) {
			/* getopt_long() said why: unknown, ambiguous, no value. */
			fprintf(stderr, "Try \"outbox-relay --help\".\n");
			return RELAY_EXIT_USAGE;
		}
		given |= UINT32_C(1) << (o - options);
		if ((rc = take(a, o, optarg)) != 0)
			return rc;
	}
	if (optind < argc)
		return usage_error("unexpected argument \"%s\"%s", argv[optind], "");
	if (a->help || a->version)
		return 0;
	/* Each modifier with an action it goes with: a modifier alone must
	 * not start the relay with it ignored. */
	for (size_t i = 0; i < NOPTIONS; i++) {
		if (!(given & (UINT32_C(1) << i)) || options[i].kind != OPT_MODIFIER)
			continue;
		if (a->action == CLI_NONE)
			return usage_error("no runbook action given (--%s goes with "
			                   "one)%s", options[i].name, "");
		if (!(options[i].allowed & A(a->action))) {
			snprintf(flag, sizeof(flag), "--%s", options[i].name);
			snprintf(act, sizeof(act), "--%s", a->action_name);
			return usage_error("%s does not go with %s", flag, act);
		}
	}
	return 0;
}

void cli_args_free(struct cli_args *a)
{
	free(a->sets);
	a->sets = NULL;
}

static void usage_rows(FILE *out, enum opt_kind kind)
{
	for (size_t i = 0; i < NOPTIONS; i++) {
		const struct cli_option *o = &options[i];
		const char *pad = o->shortopt ? "  " : "      ";
		int w;
		if (o->kind != kind)
			continue;
		w = (int)strlen(pad) + (int)strlen(o->synopsis);
		if (w <= 30)
			fprintf(out, "%s%-*s%s\n", pad, 30 - (int)strlen(pad) + 2,
			        o->synopsis, o->help);
		else
			fprintf(out, "%s%s\n%32s%s\n", pad, o->synopsis, "", o->help);
	}
}

void cli_usage(FILE *out)
{
	fprintf(out,
	        "outbox-relay streams committed outbox rows from a PostgreSQL logical\n"
	        "replication slot (wal2json) to Kafka, confirming each LSN only after\n"
	        "Kafka has acknowledged every event up to it.\n"
	        "\n"
	        "Usage:\n"
	        "  outbox-relay --config FILE [--set KEY=VALUE]...\n"
	        "  outbox-relay --config FILE ACTION [MODIFIER]...\n"
	        "\n"
	        "Runbook actions (see docs/runbook-cli.md; --json where status is printed):\n");
	usage_rows(out, OPT_ACTION);
	fprintf(out, "\nModifiers:\n");
	usage_rows(out, OPT_MODIFIER);
	fprintf(out, "\nOptions:\n");
	usage_rows(out, OPT_MAIN);
	fprintf(out, "\nConfiguration keys (defaults in brackets; see docs/configuration.md):\n");
	cfg_help(out);
	fprintf(out,
	        "\n"
	        "Exit codes: 0 stopped by signal after draining; 1 second signal\n"
	        "(--reconcile: events missing);\n"
	        "64 usage; 65 fail-stop on a poison event; 69 slot missing, lost or\n"
	        "invalidated, the database went back in time, or the endpoint cannot\n"
	        "bind; 70 internal error; 77 PostgreSQL or Kafka refuses the\n"
	        "credentials or the role; 78 configuration error (also a missing outbox table or\n"
	        "column, or one that is not an ordinary table).\n");
}

int cli_run(const struct relay_config *cfg, const struct cli_args *a)
{
	struct cli_args args = *a;
	int rc;

	for (size_t i = 0; i < sizeof(actions) / sizeof(actions[0]); i++) {
		if (actions[i].action != a->action)
			continue;
		if (actions[i].needs_pg && (rc = cli_require_pg(cfg)) != 0)
			return rc;
		if (args.timeout_ms < 0)
			args.timeout_ms = actions[i].timeout_ms;
		return actions[i].run(cfg, &args);
	}
	return RELAY_EXIT_USAGE;
}
