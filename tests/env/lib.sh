# shellcheck shell=bash
# tests/env/lib.sh -- throwaway PostgreSQL 15 and Kafka (KRaft) servers for
# the integration tests, the demo and interactive use. Source it; it does
# not change the caller's shell options (callers use set -euo pipefail and
# every function here is written to work under them).
#
#   pg_start DIR PORT [DB]     initdb (first time) + start, wait ready, create DB
#   pg_stop DIR                fast shutdown (kill -9 as last resort)
#   pg_restart DIR             stop, start again on the same data dir and port
#   pg_stop_immediate DIR      pg_ctl stop -m immediate (a crash: no shutdown
#                              checkpoint, slots as of their last save)
#   pg_launch DIR              start again (after a stop) on the same port
#   (DB defaults to $PG_TEST_DB or outbox; the superuser is "postgres")
#   kafka_start DIR PORT       format (first time) + start, wait ready
#                              (controller listener on PORT+1)
#   kafka_stop DIR             SIGTERM, bounded wait, then SIGKILL
#   kafka_stop_hard DIR        SIGKILL at once (fault tests)
#   kafka_restart DIR          start again on the same data dir and port
#   kafka_wait_ready PORT [SECS]   metadata request answered by a live broker
#   kafka_version              the broker version of $KAFKA_JARS ("3.9.1")
#   kafka_major                its major version (3, 4)
#   kafka_config_command       the class of kafka-configs.sh for that version
#   wait_for_port HOST PORT [SECS] a TCP connect succeeds
#   port_in_use HOST PORT      something accepts connections there
#   psql_q PORT DB SQL         as user postgres over TCP, -X -q -At, stops at
#                              the first error (several statements in SQL
#                              run as one transaction)
#   psql_f PORT DB FILE        same for a file ('-' = stdin)
#   env_mktemp NAME            prints a new temp dir under ${TMPDIR:-/tmp}
#   env_register_tmpdir DIR    have env_cleanup remove DIR (env_mktemp runs
#                              in $(...), so its caller registers the dir)
#   env_on_cleanup CMD         run CMD (eval) first at cleanup, last-in first-out
#   env_cleanup                hooks, then stop the servers this shell started
#                              (pg_start/kafka_start; restarts do not count),
#                              then remove registered temp dirs; idempotent
#   env_trap_cleanup           trap env_cleanup on EXIT, INT and TERM
#   env_log MSG                "[env] MSG" on stderr
#
# Layout of DIR: DIR/pg/{data,sock,postgres.log,postgres.pid,port} and
# DIR/kafka/{data,server.properties,log4j.properties,server.log,stdout.log,
# kafka.pid,port} (log4j2.properties instead of log4j.properties for a
# Kafka 4 broker). PIDs and ports live in files, not shell variables, so a
# test process can stop or restart a server that its parent started.
#
# Environment knobs: PG_BIN (default /usr/lib/postgresql/15/bin),
# PG_TEST_DB (default outbox), PG_WAL_SENDER_TIMEOUT (default 60s),
# KAFKA_JARS (default tests/kafka/target/dependency: 3.9.1;
# tests/kafka4/target/dependency holds a 4.x broker), KAFKA_HEAP (512m),
# ENV_START_TIMEOUT (seconds, default 60), ENV_KEEP_TMP=1 keeps temp dirs.

if [[ -n ${_ENV_LIB_SOURCED:-} ]]; then
	return 0
fi
_ENV_LIB_SOURCED=1

ENV_REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
KAFKA_JARS=${KAFKA_JARS:-$ENV_REPO_ROOT/tests/kafka/target/dependency}
ENV_START_TIMEOUT=${ENV_START_TIMEOUT:-60}

_ENV_STARTED=()      # "pg:DIR" / "kafka:DIR", in start order
_ENV_TMPDIRS=()      # removed by env_cleanup
_ENV_HOOKS=()        # eval'd by env_cleanup, last first
_ENV_CLEANED=

env_log() { printf '[env] %s\n' "$*" >&2; }

# Prints the last lines of a log file to stderr, for failure messages.
_env_tail() {
	local f=$1 n=${2:-40}
	if [[ -f $f ]]; then
		printf '[env] ---- last %s lines of %s ----\n' "$n" "$f" >&2
		tail -n "$n" "$f" >&2 || true
		printf '[env] ---- end of %s ----\n' "$f" >&2
	fi
}

# True while PID runs. A zombie (killed but not yet reaped by its parent)
# still answers kill -0, so it is checked for explicitly: a killed child of
# a busy shell would otherwise look alive until the wait times out. But a
# multi-threaded process (the JVM) shows Z for its main thread while the
# other threads are still exiting and its sockets still open: it only
# counts as gone once no thread but the zombie leader is left.
_env_pid_alive() {
	local pid=$1 state tasks
	[[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 1
	state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || return 1
	[[ $state != Z ]] && return 0
	tasks=$(find "/proc/$pid/task" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
	((tasks > 1))
}

# Waits up to SECS for PID to be gone; reaps it if it is our child.
_env_wait_pid_gone() {
	local pid=$1 secs=$2 i
	for ((i = 0; i < secs * 10; i++)); do
		_env_pid_alive "$pid" || break
		sleep 0.1
	done
	if _env_pid_alive "$pid"; then
		return 1
	fi
	wait "$pid" 2>/dev/null || true
	return 0
}

port_in_use() {
	# bash's /dev/tcp gives a plain connect() without extra tools.
	# shellcheck disable=SC2016 # $0/$1 expand in the inner bash
	timeout 2 bash -c ': <>/dev/tcp/"$0"/"$1"' "$1" "$2" 2>/dev/null
}

wait_for_port() {
	local host=$1 port=$2 secs=${3:-$ENV_START_TIMEOUT} i
	for ((i = 0; i < secs * 5; i++)); do
		port_in_use "$host" "$port" && return 0
		sleep 0.2
	done
	env_log "nothing answers on $host:$port after ${secs}s"
	return 1
}

_env_register() { _ENV_STARTED+=("$1"); }

# ---------------------------------------------------------------- temp dirs

env_mktemp() {
	local name=${1:-outbox-relay} d
	d=$(mktemp -d "${TMPDIR:-/tmp}/$name.XXXXXX")
	# mktemp makes 0700; the postgres user must be able to reach its subdir.
	chmod 755 "$d"
	printf '%s\n' "$d"
}

# env_mktemp is called in $(...), a subshell, where registering would be
# lost: callers register the dir with this in their own shell.
env_register_tmpdir() { _ENV_TMPDIRS+=("$1"); }

env_on_cleanup() { _ENV_HOOKS+=("$1"); }

# ---------------------------------------------------------------- postgres

# Runs a PostgreSQL server binary as the postgres user when we are root
# (the server refuses to run as root); from / so that a cwd the postgres
# user cannot read does not produce warnings or failures.
_pg_run() {
	if [[ $EUID -eq 0 ]]; then
		(cd / && runuser -u postgres -- "$@")
	else
		(cd / && "$@")
	fi
}

psql_q() {
	local port=$1 db=$2 sql=$3
	PGCONNECT_TIMEOUT=10 "$PG_BIN/psql" -h 127.0.0.1 -p "$port" -U postgres \
		-d "$db" -X -q -At -v ON_ERROR_STOP=1 -c "$sql"
}

psql_f() {
	local port=$1 db=$2 file=$3
	PGCONNECT_TIMEOUT=10 "$PG_BIN/psql" -h 127.0.0.1 -p "$port" -U postgres \
		-d "$db" -X -q -At -v ON_ERROR_STOP=1 -f "$file"
}

_pg_write_config() {
	local pgdir=$1 port=$2 conf=$1/data/postgresql.conf
	{
		echo
		echo "# ---- outbox-relay throwaway test cluster (tests/env/lib.sh) ----"
		echo "listen_addresses = '127.0.0.1'"
		echo "port = $port"
		echo "unix_socket_directories = '$pgdir/sock'"
		echo "wal_level = logical"
		echo "max_replication_slots = 20"
		echo "max_wal_senders = 20"
		echo "wal_sender_timeout = '${PG_WAL_SENDER_TIMEOUT:-60s}'"
		echo "# Durability is irrelevant for a cluster deleted after the run."
		echo "fsync = off"
		echo "full_page_writes = off"
		echo "# pg_ctl -l sends stderr to postgres.log in the temp dir."
		echo "logging_collector = off"
		echo "log_line_prefix = '%m [%p] %q%a '"
		echo "log_replication_commands = on"
	} >>"$conf"
	# Recent 15.x minors only load output plugins listed here; older ones
	# do not know the setting and would refuse to start with it.
	if _pg_run "$PG_BIN/postgres" -D "$pgdir/data" -C output_plugin_libraries \
		>/dev/null 2>&1; then
		echo "output_plugin_libraries = 'pgoutput, test_decoding, wal2json'" >>"$conf"
	fi
	# Throwaway cluster listening on loopback only: trust authentication is
	# acceptable here and nowhere else.
	cat >"$pgdir/data/pg_hba.conf" <<-'EOF'
	# Throwaway test cluster on loopback only: trust is fine here, never elsewhere.
	local   all             all                     trust
	local   replication     all                     trust
	host    all             all     127.0.0.1/32    trust
	host    replication     all     127.0.0.1/32    trust
	EOF
}

# Starts an initialised cluster and waits until it takes connections on
# 127.0.0.1:PORT. Not registered for cleanup: callers decide who owns it.
_pg_launch() {
	local pgdir=$1 port=$2 i
	if port_in_use 127.0.0.1 "$port"; then
		env_log "postgres: port $port is already in use"
		return 1
	fi
	echo "$port" >"$pgdir/port"
	# -p: the port file wins over postgresql.conf if a caller changed it.
	if ! _pg_run "$PG_BIN/pg_ctl" -D "$pgdir/data" -l "$pgdir/postgres.log" \
		-o "-p $port" -w -t "$ENV_START_TIMEOUT" start >/dev/null 2>&1; then
		env_log "postgres: pg_ctl start failed"
		_env_tail "$pgdir/postgres.log"
		return 1
	fi
	head -n1 "$pgdir/data/postmaster.pid" >"$pgdir/postgres.pid"
	# pg_ctl -w already waits; pg_isready also proves the TCP listener.
	for ((i = 0; i < ENV_START_TIMEOUT * 5; i++)); do
		"$PG_BIN/pg_isready" -q -h 127.0.0.1 -p "$port" -t 2 && return 0
		sleep 0.2
	done
	env_log "postgres: not ready on port $port after ${ENV_START_TIMEOUT}s"
	_env_tail "$pgdir/postgres.log"
	pg_stop "${pgdir%/pg}"
	return 1
}

pg_start() {
	local dir=$1 port=$2 db=${3:-${PG_TEST_DB:-outbox}}
	local pgdir=$dir/pg
	if [[ ! $db =~ ^[a-z_][a-z0-9_]*$ ]]; then
		env_log "pg_start: database name '$db' must match [a-z_][a-z0-9_]*"
		return 1
	fi
	if [[ $pgdir == *"'"* ]]; then
		env_log "pg_start: directory must not contain a quote: $pgdir"
		return 1
	fi
	mkdir -p "$pgdir/sock"
	if [[ $EUID -eq 0 ]]; then
		chown -R postgres:postgres "$pgdir"
		if ! runuser -u postgres -- test -w "$pgdir"; then
			env_log "pg_start: user postgres cannot reach $pgdir (check the parent dirs' permissions)"
			return 1
		fi
	fi
	if [[ ! -f $pgdir/data/PG_VERSION ]]; then
		# -N: no fsync of the new cluster, it is thrown away anyway.
		if ! _pg_run "$PG_BIN/initdb" -D "$pgdir/data" -U postgres -A trust \
			-E UTF8 --locale=C -N >"$pgdir/initdb.log" 2>&1; then
			env_log "pg_start: initdb failed"
			_env_tail "$pgdir/initdb.log"
			return 1
		fi
		_pg_write_config "$pgdir" "$port"
	fi
	_pg_launch "$pgdir" "$port" || return 1
	_env_register "pg:$dir"
	if [[ -z $(psql_q "$port" postgres "SELECT 1 FROM pg_database WHERE datname = '$db'") ]]; then
		psql_q "$port" postgres "CREATE DATABASE \"$db\"" || return 1
	fi
	env_log "postgres ready on 127.0.0.1:$port (db $db, log $pgdir/postgres.log)"
}

pg_stop() {
	local dir=$1 pgdir=$1/pg pid
	[[ -f $pgdir/data/PG_VERSION ]] || return 0
	pid=$(cat "$pgdir/postgres.pid" 2>/dev/null || true)
	if _pg_run "$PG_BIN/pg_ctl" -D "$pgdir/data" status >/dev/null 2>&1; then
		if ! _pg_run "$PG_BIN/pg_ctl" -D "$pgdir/data" -m fast -w -t 30 stop \
			>/dev/null 2>&1; then
			env_log "pg_stop: fast shutdown timed out, killing postmaster $pid"
			if [[ -n $pid ]]; then
				kill -9 "$pid" 2>/dev/null || true
				_env_wait_pid_gone "$pid" 10 || true
			fi
		fi
	fi
	rm -f "$pgdir/postgres.pid"
}

# Not registered for cleanup here, like kafka_restart: a test restarting
# the run's shared server must not stop it when the test exits.
pg_restart() {
	local dir=$1 port
	port=$(cat "$dir/pg/port" 2>/dev/null) || {
		env_log "pg_restart: $dir was never started"
		return 1
	}
	pg_stop "$dir"
	_pg_launch "$dir/pg" "$port" || return 1
	env_log "postgres restarted on 127.0.0.1:$port"
}

# A crash as far as PostgreSQL can tell: no shutdown checkpoint, so the
# next start runs crash recovery and slots come back as last saved.
pg_stop_immediate() {
	local dir=$1 pgdir=$1/pg
	[[ -f $pgdir/data/PG_VERSION ]] || return 0
	_pg_run "$PG_BIN/pg_ctl" -D "$pgdir/data" -m immediate -w -t 30 stop \
		>/dev/null 2>&1 || true
	rm -f "$pgdir/postgres.pid"
}

# Starts a stopped cluster again on its port (not registered: whoever
# started it first owns it).
pg_launch() {
	local dir=$1 port
	port=$(cat "$dir/pg/port" 2>/dev/null) || {
		env_log "pg_launch: $dir was never started"
		return 1
	}
	_pg_launch "$dir/pg" "$port"
}

# ---------------------------------------------------------------- kafka

# The broker version of the jars in $KAFKA_JARS, from the core jar's name
# (kafka_2.13-3.9.1.jar: 3.9.1); empty if there is none.
kafka_version() {
	local jar
	jar=$(compgen -G "$KAFKA_JARS/kafka_2.13-*.jar" | head -n1) || true
	jar=${jar##*/kafka_2.13-}
	printf '%s\n' "${jar%.jar}"
}

kafka_major() {
	local v
	v=$(kafka_version)
	printf '%s\n' "${v%%.*}"
}

# Kafka 4 moved kafka-configs.sh's class from the core jar to kafka-tools.
kafka_config_command() {
	if (($(kafka_major) >= 4)); then
		echo org.apache.kafka.tools.ConfigCommand
	else
		echo kafka.admin.ConfigCommand
	fi
}

# The java command line shared by the storage tool and the broker; logs of
# both go through the log4j file written by _kafka_write_config (Kafka 3:
# reload4j, log4j 1.x; Kafka 4: log4j2).
_kafka_java_cmd() {
	local kdir=$1 logconf
	if (($(kafka_major) >= 4)); then
		logconf=-Dlog4j2.configurationFile="$kdir/log4j2.properties"
	else
		logconf=-Dlog4j.configuration="file:$kdir/log4j.properties"
	fi
	_KAFKA_CMD=(java -Xmx"${KAFKA_HEAP:-512m}" -XX:+ExitOnOutOfMemoryError
		-Djava.awt.headless=true
		"$logconf"
		-cp "$KAFKA_JARS/*")
}

_kafka_java() {
	local kdir=$1
	shift
	_kafka_java_cmd "$kdir"
	"${_KAFKA_CMD[@]}" "$@"
}

_kafka_write_config() {
	local kdir=$1 port=$2 cport=$(($2 + 1))
	cat >"$kdir/server.properties" <<-EOF
	# Single-node KRaft broker+controller for tests (tests/env/lib.sh).
	process.roles=broker,controller
	node.id=1
	controller.quorum.voters=1@127.0.0.1:$cport
	listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
	advertised.listeners=PLAINTEXT://127.0.0.1:$port
	controller.listener.names=CONTROLLER
	listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
	inter.broker.listener.name=PLAINTEXT
	log.dirs=$kdir/data
	offsets.topic.replication.factor=1
	transaction.state.log.replication.factor=1
	transaction.state.log.min.isr=1
	num.partitions=3
	group.initial.rebalance.delay.ms=0
	auto.create.topics.enable=true
	# After a kill -9 the controller keeps the dead broker's registration
	# until the session times out (default 9 s), and the restarted broker
	# cannot register before that: shorter values make fault tests faster.
	broker.session.timeout.ms=4000
	broker.heartbeat.interval.ms=500
	EOF
	_kafka_write_log_config "$kdir"
}

# Everything into DIR/server.log: reload4j's log4j 1.x syntax for Kafka
# 3, log4j2's properties syntax (the same appender, pattern and levels)
# for Kafka 4, which logs through log4j2 only.
_kafka_write_log_config() {
	local kdir=$1
	if (($(kafka_major) >= 4)); then
		cat >"$kdir/log4j2.properties" <<-EOF
		status = warn
		appender.file.type = File
		appender.file.name = file
		appender.file.fileName = $kdir/server.log
		appender.file.append = true
		appender.file.layout.type = PatternLayout
		appender.file.layout.pattern = [%d] %p %m (%c)%n
		rootLogger.level = INFO
		rootLogger.appenderRef.file.ref = file
		logger.state.name = state.change.logger
		logger.state.level = WARN
		logger.request.name = kafka.request.logger
		logger.request.level = WARN
		EOF
		return 0
	fi
	# reload4j (log4j 1.x syntax): everything into one file in the temp dir.
	cat >"$kdir/log4j.properties" <<-EOF
	log4j.rootLogger=INFO, file
	log4j.appender.file=org.apache.log4j.FileAppender
	log4j.appender.file.File=$kdir/server.log
	log4j.appender.file.Append=true
	log4j.appender.file.layout=org.apache.log4j.PatternLayout
	log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
	log4j.logger.state.change.logger=WARN
	log4j.logger.kafka.request.logger=WARN
	EOF
}

# A metadata answer that lists a broker means the broker is registered
# and unfenced (a fenced KRaft broker is left out of metadata responses),
# i.e. topics can be created and produced to.
kafka_wait_ready() {
	local port=$1 secs=${2:-$ENV_START_TIMEOUT} pid=${3:-} i
	for ((i = 0; i < secs * 2; i++)); do
		if [[ -n $pid ]] && ! _env_pid_alive "$pid"; then
			return 2
		fi
		if kcat -b "127.0.0.1:$port" -L -J -m 3 2>/dev/null |
			grep '"brokers":\[{"id":1,' >/dev/null; then
			return 0
		fi
		sleep 0.5
	done
	return 1
}

_kafka_launch() {
	local kdir=$1 port=$2 pid rc=0 i
	# A few seconds of grace: right after a stop the old listeners may
	# still be closing.
	for ((i = 0; i < 25; i++)); do
		port_in_use 127.0.0.1 "$port" || port_in_use 127.0.0.1 $((port + 1)) || break
		sleep 0.2
	done
	if port_in_use 127.0.0.1 "$port" || port_in_use 127.0.0.1 $((port + 1)); then
		env_log "kafka: port $port or $((port + 1)) is already in use"
		return 1
	fi
	# HUP ignored so that an interactive servers.sh start survives closing
	# the terminal; exec keeps $! equal to the java PID. setsid (no fork:
	# the subshell is not a group leader) puts the broker in its own
	# session, so a test killed by run.sh's timeout (which signals its
	# whole process group) cannot take a restarted shared broker with it.
	_kafka_java_cmd "$kdir"
	(
		trap '' HUP
		exec setsid "${_KAFKA_CMD[@]}" kafka.Kafka "$kdir/server.properties"
	) </dev/null >>"$kdir/stdout.log" 2>&1 &
	pid=$!
	# Out of the job table: no "Killed" notice after kafka_stop_hard (the
	# shell still reaps it; the pid file is how every stop finds it).
	disown "$pid" 2>/dev/null || true
	echo "$pid" >"$kdir/kafka.pid"
	kafka_wait_ready "$port" "$ENV_START_TIMEOUT" "$pid" || rc=$?
	if ((rc != 0)); then
		if ((rc == 2)); then
			env_log "kafka: broker process $pid died during startup"
		else
			env_log "kafka: broker on port $port not ready after ${ENV_START_TIMEOUT}s"
		fi
		_env_tail "$kdir/stdout.log" 20
		_env_tail "$kdir/server.log" 40
		kill -9 "$pid" 2>/dev/null || true
		_env_wait_pid_gone "$pid" 10 || true
		rm -f "$kdir/kafka.pid"
		return 1
	fi
	env_log "kafka ready on 127.0.0.1:$port (pid $pid, log $kdir/server.log)"
}

kafka_start() {
	local dir=$1 port=$2 kdir=$1/kafka cid
	if ! compgen -G "$KAFKA_JARS/kafka_2.13-*.jar" >/dev/null; then
		env_log "kafka: no broker jars in $KAFKA_JARS; run tests/env/deps.sh"
		return 1
	fi
	mkdir -p "$kdir/data"
	echo "$port" >"$kdir/port"
	_kafka_write_config "$kdir" "$port"
	if [[ ! -f $kdir/data/meta.properties ]]; then
		cid=$(_kafka_java "$kdir" kafka.tools.StorageTool random-uuid 2>>"$kdir/format.log") || {
			env_log "kafka: StorageTool random-uuid failed"
			_env_tail "$kdir/format.log"
			return 1
		}
		if ! _kafka_java "$kdir" kafka.tools.StorageTool format -t "$cid" \
			-c "$kdir/server.properties" >>"$kdir/format.log" 2>&1; then
			env_log "kafka: StorageTool format failed"
			_env_tail "$kdir/format.log"
			return 1
		fi
	fi
	_kafka_launch "$kdir" "$port" || return 1
	_env_register "kafka:$dir"
}

kafka_stop() {
	local kdir=$1/kafka pid
	pid=$(cat "$kdir/kafka.pid" 2>/dev/null || true)
	[[ -n $pid ]] || return 0
	if _env_pid_alive "$pid"; then
		kill -TERM "$pid" 2>/dev/null || true
		if ! _env_wait_pid_gone "$pid" 60; then
			env_log "kafka: broker $pid ignored SIGTERM for 60s, killing it"
			kill -9 "$pid" 2>/dev/null || true
			_env_wait_pid_gone "$pid" 10 || true
		fi
	fi
	rm -f "$kdir/kafka.pid"
}

kafka_stop_hard() {
	local kdir=$1/kafka pid
	pid=$(cat "$kdir/kafka.pid" 2>/dev/null || true)
	[[ -n $pid ]] || return 0
	kill -9 "$pid" 2>/dev/null || true
	_env_wait_pid_gone "$pid" 10 || {
		env_log "kafka: broker $pid still there 10s after SIGKILL"
		return 1
	}
	rm -f "$kdir/kafka.pid"
}

# Not registered for cleanup here: the start that created the dir owns it
# (a test restarting the run's shared broker must not stop it on exit).
kafka_restart() {
	local dir=$1 kdir=$1/kafka port
	port=$(cat "$kdir/port" 2>/dev/null) || {
		env_log "kafka_restart: $dir was never started"
		return 1
	}
	kafka_stop "$dir"
	_kafka_launch "$kdir" "$port"
}

# ---------------------------------------------------------------- cleanup

env_cleanup() {
	local i entry
	[[ -z $_ENV_CLEANED ]] || return 0
	_ENV_CLEANED=1
	for ((i = ${#_ENV_HOOKS[@]} - 1; i >= 0; i--)); do
		eval "${_ENV_HOOKS[i]}" || true
	done
	for ((i = ${#_ENV_STARTED[@]} - 1; i >= 0; i--)); do
		entry=${_ENV_STARTED[i]}
		case $entry in
		pg:*) pg_stop "${entry#pg:}" || true ;;
		kafka:*) kafka_stop "${entry#kafka:}" || true ;;
		esac
	done
	for i in "${_ENV_TMPDIRS[@]}"; do
		if [[ -n ${ENV_KEEP_TMP:-} ]]; then
			env_log "kept $i (ENV_KEEP_TMP set)"
		else
			rm -rf -- "$i"
		fi
	done
	return 0
}

# EXIT alone does not fire on a signal that the shell has no trap for, and
# a trap on INT/TERM that does not exit lets the script carry on: so the
# signal traps clean up and exit with the conventional 128+N status.
env_trap_cleanup() {
	trap 'env_cleanup' EXIT
	trap 'env_cleanup; exit 130' INT
	trap 'env_cleanup; exit 143' TERM
}
