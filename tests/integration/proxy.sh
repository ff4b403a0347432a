# shellcheck shell=bash
# tests/integration/proxy.sh -- drives build/tcp-proxy (tests/proxy/
# tcp_proxy.c), a TCP proxy with faults switched at run time, from a test
# script: a half-open peer (blackhole), resets, connections cut after N
# bytes, delays, a refused port, an ErrorResponse injected into a live
# replication stream. Source it after lib.sh and after it_init:
#
#   source "$(dirname "$0")/proxy.sh"
#   proxy_start "127.0.0.1:$PGPORT"    # sets PROXY_PORT, PROXY_PID, PROXY_LOG
#   it_write_config "$conf" "$db" "pg.conninfo=$(proxy_conninfo "$db")"
#   proxy_cmd blackhole                # "ok" -> 0
#   proxy_cmd stats; echo "$PROXY_ANSWER"
#   rc=0; proxy_stop || rc=$?          # exit status of tcp-proxy
#
# Functions:
#   proxy_start TARGET [ARGS...]  starts the proxy to TARGET (HOST:PORT) with
#                            ARGS (--port N; default any free port), waits
#                            for its port line; sets PROXY_PORT, PROXY_PID,
#                            PROXY_LOG (its stderr: one line per connection
#                            event) and registers proxy_stop with
#                            env_on_cleanup. Non-zero if it does not start.
#   proxy_cmd LINE [SECS]    sends one command, waits up to SECS (default
#                            PROXY_CMD_TIMEOUT, 10) for the answer, kept in
#                            PROXY_ANSWER: 0 on "ok...", 1 on "error: ..."
#                            (printed on stderr), 2 if no answer came
#   proxy_stat NAME          one figure of "stats" (conns, accepted,
#                            streaming, resets, cuts, injected, refusing,
#                            mode, delay, close_after,
#                            blackhole_after_ready); fails if none
#   proxy_wait_stat NAME MIN [SECS]   until figure NAME >= MIN (default 30 s)
#   proxy_start_pg [PREFIX]  proxy_start to the run's PostgreSQL; if it
#                            does not start: not_ok "PREFIXtcp-proxy
#                            starts" and the test ends (it_summary)
#   proxy_conninfo DB        libpq conninfo for DB through the proxy
#   proxy_stop               "quit", then TERM, then KILL, each bounded;
#                            returns the proxy's exit status (124 if it had
#                            to be killed); does nothing if none runs
#   proxy_alive              true while the proxy runs
#
# One proxy per test shell; proxy_start and proxy_stop must run in the
# test's own shell (not inside $(...)), like it_start_relay. The proxy
# talks through two FIFOs in a private temp dir. Knobs: PROXY_BIN
# (build/tcp-proxy), PROXY_CMD_TIMEOUT.

if [[ -n ${_PROXY_SH_SOURCED:-} ]]; then
	return 0
fi
_PROXY_SH_SOURCED=1

# shellcheck source=../env/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../env/lib.sh"

PROXY_BIN=${PROXY_BIN:-$ENV_REPO_ROOT/build/tcp-proxy}
PROXY_CMD_TIMEOUT=${PROXY_CMD_TIMEOUT:-10}
PROXY_PORT=
PROXY_PID=
PROXY_LOG=
PROXY_ANSWER=
_PROXY_DIR=
_PROXY_IN=  # fd: our end of the proxy's stdin
_PROXY_OUT= # fd: our end of the proxy's stdout
_PROXY_HOOKED=

proxy_alive() { _env_pid_alive "$PROXY_PID"; }

proxy_start() {
	local target=$1 line=
	shift
	if [[ -n $PROXY_PID ]]; then
		echo "proxy_start: tcp-proxy already runs (pid $PROXY_PID)" >&2
		return 1
	fi
	if [[ ! -x $PROXY_BIN ]]; then
		echo "proxy_start: $PROXY_BIN missing (make build/tcp-proxy)" >&2
		return 1
	fi
	_PROXY_DIR=$(env_mktemp tcp-proxy) || return 1
	env_register_tmpdir "$_PROXY_DIR"
	mkfifo "$_PROXY_DIR/in" "$_PROXY_DIR/out" || return 1
	# The log outlives the temp dir when the test keeps it next to its
	# own files.
	PROXY_LOG=${IT_TEST_DIR:-$_PROXY_DIR}/tcp-proxy.log
	if [[ -z $_PROXY_HOOKED ]]; then
		env_on_cleanup "proxy_stop >/dev/null 2>&1"
		_PROXY_HOOKED=1
	fi
	# Same order of opens on both ends as mock.sh: in, then out.
	"$PROXY_BIN" "$@" "$target" <"$_PROXY_DIR/in" >"$_PROXY_DIR/out" \
		2>>"$PROXY_LOG" &
	PROXY_PID=$!
	exec {_PROXY_IN}>"$_PROXY_DIR/in"
	exec {_PROXY_OUT}<"$_PROXY_DIR/out"
	if ! IFS= read -r -t "$PROXY_CMD_TIMEOUT" -u "$_PROXY_OUT" line ||
		[[ ! $line =~ ^port=[0-9]+$ ]]; then
		echo "proxy_start: no port line from tcp-proxy (got '$line')" >&2
		_env_tail "$PROXY_LOG" 20
		proxy_stop >/dev/null 2>&1 || true
		return 1
	fi
	PROXY_PORT=${line#port=}
	export PROXY_PORT
}

proxy_cmd() {
	local line=$1 secs=${2:-$PROXY_CMD_TIMEOUT} rc=0
	PROXY_ANSWER=
	if [[ -z $PROXY_PID || -z $_PROXY_IN ]]; then
		echo "proxy_cmd: tcp-proxy is not running" >&2
		return 2
	fi
	if [[ $line == *$'\n'* ]]; then
		echo "proxy_cmd: one line at a time" >&2
		return 2
	fi
	# A write to a FIFO nobody reads any more must fail, not kill the
	# test with SIGPIPE: the write runs in a subshell that ignores it.
	if ! (trap '' PIPE && printf '%s\n' "$line" >&"$_PROXY_IN") 2>/dev/null; then
		echo "proxy_cmd: tcp-proxy does not read commands any more" >&2
		return 2
	fi
	IFS= read -r -t "$secs" -u "$_PROXY_OUT" PROXY_ANSWER || rc=$?
	if ((rc != 0)); then
		if ((rc > 128)); then
			echo "proxy_cmd: no answer to '$line' within ${secs}s" >&2
		else
			echo "proxy_cmd: tcp-proxy ended before answering '$line'" >&2
		fi
		return 2
	fi
	case $PROXY_ANSWER in
	ok | "ok "*) return 0 ;;
	error:*)
		echo "proxy_cmd '$line': $PROXY_ANSWER" >&2
		return 1
		;;
	*)
		echo "proxy_cmd '$line': unexpected answer '$PROXY_ANSWER'" >&2
		return 2
		;;
	esac
}

proxy_stat() {
	local name=$1 word
	proxy_cmd stats >/dev/null || return 1
	for word in $PROXY_ANSWER; do
		if [[ $word == "$name="* ]]; then
			echo "${word#*=}"
			return 0
		fi
	done
	return 1
}

proxy_wait_stat() {
	local name=$1 min=$2 secs=${3:-30} i v
	for ((i = 0; i < secs * 5; i++)); do
		v=$(proxy_stat "$name") || return 1
		[[ $v =~ ^-?[0-9]+$ ]] && ((v >= min)) && return 0
		sleep 0.2
	done
	return 1
}

# A test cannot go on without its proxy: a not_ok and the end of the test.
proxy_start_pg() {
	if ! proxy_start "127.0.0.1:$PGPORT"; then
		not_ok "${1:-}tcp-proxy starts"
		it_summary
	fi
}

proxy_conninfo() {
	echo "host=127.0.0.1 port=$PROXY_PORT dbname=$1 user=postgres"
}

proxy_stop() {
	local pid=$PROXY_PID rc=0
	[[ -n $pid ]] || return 0
	if proxy_alive; then
		proxy_cmd quit 5 >/dev/null 2>&1 || true
	fi
	# quit or EOF on stdin ends it; closing our end gives it the EOF.
	if [[ -n $_PROXY_IN ]]; then
		exec {_PROXY_IN}>&-
		_PROXY_IN=
	fi
	it_reap_child "$pid" "proxy_stop: tcp-proxy" || rc=$?
	if [[ -n $_PROXY_OUT ]]; then
		exec {_PROXY_OUT}<&-
		_PROXY_OUT=
	fi
	PROXY_PID=
	PROXY_PORT=
	return $rc
}
