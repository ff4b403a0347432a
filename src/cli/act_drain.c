/* SPDX-License-Identifier: Apache-2.0 */
/* act_drain.c -- --drain: runs the relay (this binary, same
 * configuration) until the slot confirmed the WAL position taken at
 * start, then stops it with SIGTERM. The relay loop stays untouched: the
 * drain is watched from outside, through pg_replication_slots. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_int.h"

#define DRAIN_POLL_US 500000

static volatile sig_atomic_t drain_signalled;

static void on_signal(int signo)
{
	(void)signo;
	drain_signalled = 1;
}

/* The relay's command line: the same --config and --set, no action. */
static char **child_argv(const struct cli_args *a,
                         const struct relay_config *cfg)
{
	char **out = xcalloc((size_t)a->nsets * 2 + 6, sizeof(*out));
	int n = 0;

	out[n++] = (char *)a->argv0;
	if (a->config_path != NULL) {
		out[n++] = "--config";
		out[n++] = (char *)a->config_path;
	}
	for (int i = 0; i < a->nsets; i++) {
		out[n++] = "--set";
		out[n++] = (char *)a->sets[i];
	}
	/* Confirms reach pg_replication_slots at each status update. */
	if (cfg->status_interval_ms > 1000) {
		out[n++] = "--set";
		out[n++] = "status.interval.ms=1000";
	}
	out[n] = NULL;
	return out;
}

static int exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return RELAY_EXIT_FAILURE;
}

/* SIGTERM to the child, then its exit status (SIGKILL after the relay's
 * own shutdown timeout and 10 s more). */
static int stop_child(pid_t pid, const struct relay_config *cfg)
{
	int64_t deadline = now_mono_us() +
	                   (cfg->shutdown_timeout_ms + 10000) * 1000;
	int status = 0;

	kill(pid, SIGTERM);
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (now_mono_us() > deadline) {
			cli_err("drain: relay PID %d did not stop; killing it", (int)pid);
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			break;
		}
		usleep(50000);
	}
	return exit_code(status);
}

/* confirmed_flush_lsn now, or LSN_INVALID when it cannot be read. */
static uint64_t confirmed(const struct relay_config *cfg, PGconn **conn)
{
	struct pgu_status st;
	struct slot_row s;
	char err[1400];

	if (*conn == NULL || PQstatus(*conn) != CONNECTION_OK) {
		PQfinish(*conn);
		*conn = cli_connect(cfg, false, 10000, err, sizeof(err));
		if (*conn == NULL)
			return LSN_INVALID;
	}
	if (slot_read(*conn, cfg->slot_name, cli_deadline(), &s, &st, err,
	              sizeof(err)) < 0 || !s.exists)
		return LSN_INVALID;
	return s.confirmed_lsn;
}

static void report(const struct cli_args *a, const char *name, bool drained,
                   uint64_t target, uint64_t conf, int code)
{
	if (a->json) {
		json_t *j = json_object();
		json_object_set_new(j, "slot", cli_jstr(name));
		json_object_set_new(j, "drained", json_boolean(drained));
		json_object_set_new(j, "target_lsn", cli_jlsn(target));
		json_object_set_new(j, "confirmed_flush_lsn", cli_jlsn(conf));
		json_object_set_new(j, "relay_exit_code", json_integer(code));
		cli_json_out(j);
	} else if (drained) {
		printf("drained slot \"%s\": confirmed_flush_lsn " LSN_FMT " >= "
		       LSN_FMT " (the WAL position at start)\n", name,
		       LSN_ARGS(conf), LSN_ARGS(target));
	}
}

/* Starts this binary as the relay: its own process group (a terminal's
 * ^C reaches only this process, which forwards one SIGTERM), and gone
 * with this process. Returns the PID or -1. */
static pid_t spawn(char **cargv)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid != 0)
		return pid;
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	execv("/proc/self/exe", cargv);
	fprintf(stderr, "outbox-relay: drain: exec: %s\n", strerror(errno));
	_exit(RELAY_EXIT_SOFTWARE);
}

/* Polls confirmed_flush_lsn until it reaches target, the relay exits,
 * the deadline passes or a signal comes. Returns the exit code. */
static int watch(const struct relay_config *cfg, const struct cli_args *a,
                 pid_t pid, uint64_t target, int64_t deadline, PGconn **conn)
{
	const char *name = cfg->slot_name;
	uint64_t conf = LSN_INVALID;
	int status = 0, code;

	for (;;) {
		usleep(DRAIN_POLL_US);
		if (waitpid(pid, &status, WNOHANG) == pid) {
			code = exit_code(status);
			conf = confirmed(cfg, conn);
			if (code == 0 && conf != LSN_INVALID && conf >= target) {
				report(a, name, true, target, conf, 0);
				return RELAY_EXIT_OK;
			}
			cli_err("drain: the relay exited with code %d before the slot "
			        "was drained", code);
			report(a, name, false, target, conf, code);
			return code != 0 ? code : RELAY_EXIT_UNAVAILABLE;
		}
		conf = confirmed(cfg, conn);
		if (conf != LSN_INVALID && conf >= target) {
			code = stop_child(pid, cfg);
			report(a, name, code == 0, target, conf, code);
			return code;
		}
		if (drain_signalled || now_mono_us() > deadline) {
			cli_err("drain: %s before slot \"%s\" confirmed " LSN_FMT
			        " (at " LSN_FMT "); stopping the relay",
			        drain_signalled ? "interrupted" : "timed out", name,
			        LSN_ARGS(target), LSN_ARGS(conf));
			code = stop_child(pid, cfg);
			report(a, name, false, target, conf, code);
			return RELAY_EXIT_UNAVAILABLE;
		}
	}
}

int act_drain(const struct relay_config *cfg, const struct cli_args *a)
{
	const char *name = cfg->slot_name;
	int64_t timeout = a->timeout_ms > 0 ? a->timeout_ms : 300000;
	struct sigaction sa, old_int, old_term;
	struct slot_row s;
	char **cargv;
	PGconn *conn;
	pid_t pid;
	int rc;

	conn = cli_open_slot(cfg, false, 10000, 0, &s, &rc);
	if (conn == NULL)
		return rc;
	if (s.confirmed_lsn >= s.current_lsn) {
		report(a, name, true, s.current_lsn, s.confirmed_lsn, 0);
		PQfinish(conn);
		return RELAY_EXIT_OK;
	}
	cargv = child_argv(a, cfg);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	pid = spawn(cargv);
	if (pid < 0) {
		cli_err("drain: fork: %s", strerror(errno));
		rc = RELAY_EXIT_SOFTWARE;
	} else {
		cli_err("drain: relay PID %d streams slot \"%s\" until it confirms "
		        LSN_FMT " (timeout %lld ms)", (int)pid, name,
		        LSN_ARGS(s.current_lsn), (long long)timeout);
		rc = watch(cfg, a, pid, s.current_lsn,
		           now_mono_us() + timeout * 1000, &conn);
	}
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	free(cargv);
	PQfinish(conn);
	return rc;
}
