# shellcheck shell=bash
# tests/integration/mock.sh -- drives build/kafka-mock (tests/mock/
# kafka_mock.c), librdkafka's mock Kafka cluster, from a test script: for
# the faults a real broker cannot produce (leaderless partitions, pushed
# broker errors, RTT, a broker down without a leader change). Source it
# after lib.sh and after it_init:
#
#   source "$(dirname "$0")/mock.sh"
#   mock_start --brokers 3          # sets MOCK_BOOTSTRAP, MOCK_PID
#   mock_cmd "topic t 3"            # "ok" -> 0
#   mock_cmd "leader t 0 -1"
#   kcat -b "$MOCK_BOOTSTRAP" ...
#   rc=0; mock_stop || rc=$?        # exit status of kafka-mock
#
# Functions:
#   mock_start [ARGS...]     starts the tool with ARGS (--brokers N,
#                            --partitions N), waits for its bootstrap line;
#                            sets MOCK_BOOTSTRAP, MOCK_PID, MOCK_LOG (its
#                            stderr) and registers mock_stop with
#                            env_on_cleanup. Non-zero if it does not start.
#   mock_cmd LINE [SECS]     sends one command, waits up to SECS (default
#                            MOCK_CMD_TIMEOUT, 10; "sleep MS" adds MS) for
#                            the answer, kept in MOCK_ANSWER: 0 on "ok", 1
#                            on "error: ..." (printed on stderr), 2 if no
#                            answer came (tool gone or too slow)
#   mock_stop                "quit", then TERM, then KILL, each bounded;
#                            returns the tool's exit status (124 if it had
#                            to be killed); does nothing if none runs
#   mock_alive               true while the tool runs
#
# One tool per test shell; mock_start and mock_stop must run in the test's
# own shell (not inside $(...)), like it_start_relay. The tool talks through two FIFOs in a private
# temp dir; a mock_cmd run inside $(...) works, but its MOCK_ANSWER stays
# in the subshell. Knobs: MOCK_BIN (build/kafka-mock), MOCK_CMD_TIMEOUT.

if [[ -n ${_MOCK_SH_SOURCED:-} ]]; then
	return 0
fi
_MOCK_SH_SOURCED=1

# shellcheck source=../env/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../env/lib.sh"

MOCK_BIN=${MOCK_BIN:-$ENV_REPO_ROOT/build/kafka-mock}
MOCK_CMD_TIMEOUT=${MOCK_CMD_TIMEOUT:-10}
MOCK_BOOTSTRAP=
MOCK_PID=
MOCK_LOG=
MOCK_ANSWER=
_MOCK_DIR=
_MOCK_IN=  # fd: our end of the tool's stdin
_MOCK_OUT= # fd: our end of the tool's stdout
_MOCK_HOOKED=

mock_alive() { _env_pid_alive "$MOCK_PID"; }

mock_start() {
	local line=
	if [[ -n $MOCK_PID ]]; then
		echo "mock_start: kafka-mock already runs (pid $MOCK_PID)" >&2
		return 1
	fi
	if [[ ! -x $MOCK_BIN ]]; then
		echo "mock_start: $MOCK_BIN missing (make build/kafka-mock)" >&2
		return 1
	fi
	_MOCK_DIR=$(env_mktemp kafka-mock) || return 1
	env_register_tmpdir "$_MOCK_DIR"
	mkfifo "$_MOCK_DIR/in" "$_MOCK_DIR/out" || return 1
	MOCK_LOG=$_MOCK_DIR/stderr.log
	if [[ -z $_MOCK_HOOKED ]]; then
		env_on_cleanup "mock_stop >/dev/null 2>&1"
		_MOCK_HOOKED=1
	fi
	# The child opens in, then out; we open them in the same order, so
	# neither open can wait for the other. The child opens both before
	# it execs, so the opens return even when the binary fails to run.
	"$MOCK_BIN" "$@" <"$_MOCK_DIR/in" >"$_MOCK_DIR/out" 2>"$MOCK_LOG" &
	MOCK_PID=$!
	exec {_MOCK_IN}>"$_MOCK_DIR/in"
	exec {_MOCK_OUT}<"$_MOCK_DIR/out"
	if ! IFS= read -r -t "$MOCK_CMD_TIMEOUT" -u "$_MOCK_OUT" line ||
		[[ $line != bootstrap=* ]]; then
		echo "mock_start: no bootstrap line from kafka-mock (got '$line')" >&2
		_env_tail "$MOCK_LOG" 20
		mock_stop >/dev/null 2>&1 || true
		return 1
	fi
	MOCK_BOOTSTRAP=${line#bootstrap=}
	export MOCK_BOOTSTRAP
}

mock_cmd() {
	local line=$1 secs=${2:-$MOCK_CMD_TIMEOUT} ms rc=0
	MOCK_ANSWER=
	if [[ -z $MOCK_PID || -z $_MOCK_IN ]]; then
		echo "mock_cmd: kafka-mock is not running" >&2
		return 2
	fi
	if [[ $line == *$'\n'* ]]; then
		echo "mock_cmd: one line at a time" >&2
		return 2
	fi
	if [[ -z ${2:-} && $line =~ ^[[:space:]]*sleep[[:space:]]+([0-9]{1,7})[[:space:]]*$ ]]; then
		ms=${BASH_REMATCH[1]}
		secs=$((secs + 10#$ms / 1000 + 1))
	fi
	# A write to a FIFO nobody reads any more must fail, not kill the
	# test with SIGPIPE: the write runs in a subshell that ignores it.
	if ! (trap '' PIPE && printf '%s\n' "$line" >&"$_MOCK_IN") 2>/dev/null; then
		echo "mock_cmd: kafka-mock does not read commands any more" >&2
		return 2
	fi
	IFS= read -r -t "$secs" -u "$_MOCK_OUT" MOCK_ANSWER || rc=$?
	if ((rc != 0)); then
		if ((rc > 128)); then
			echo "mock_cmd: no answer to '$line' within ${secs}s" >&2
		else
			echo "mock_cmd: kafka-mock ended before answering '$line'" >&2
		fi
		return 2
	fi
	case $MOCK_ANSWER in
	ok) return 0 ;;
	error:*)
		echo "mock_cmd '$line': $MOCK_ANSWER" >&2
		return 1
		;;
	*)
		echo "mock_cmd '$line': unexpected answer '$MOCK_ANSWER'" >&2
		return 2
		;;
	esac
}

mock_stop() {
	local pid=$MOCK_PID rc=0
	[[ -n $pid ]] || return 0
	if mock_alive; then
		mock_cmd quit 5 >/dev/null 2>&1 || true
	fi
	# quit or EOF on stdin ends it; closing our end gives it the EOF.
	if [[ -n $_MOCK_IN ]]; then
		exec {_MOCK_IN}>&-
		_MOCK_IN=
	fi
	it_reap_child "$pid" "mock_stop: kafka-mock" || rc=$?
	if [[ -n $_MOCK_OUT ]]; then
		exec {_MOCK_OUT}<&-
		_MOCK_OUT=
	fi
	MOCK_PID=
	MOCK_BOOTSTRAP=
	return $rc
}
