#!/usr/bin/env bash
# tests/env/servers.sh -- start or stop the throwaway PostgreSQL and Kafka
# servers by hand, e.g. to run the relay against them while developing:
#
#   tests/env/servers.sh start DIR    servers stay up after the script exits
#   tests/env/servers.sh stop DIR     stops both (DIR is left for inspection)
#   tests/env/servers.sh status DIR
#
# Ports: PGPORT_TEST (default 55432) and KAFKA_PORT_TEST (default 19092; the
# KRaft controller listens on the next port). The database is "outbox"
# (PG_TEST_DB overrides it). Logs: DIR/pg/postgres.log, DIR/kafka/server.log.
set -euo pipefail

# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

usage() {
	echo "usage: $0 start|stop|status DIR" >&2
	exit 2
}

(($# == 2)) || usage
cmd=$1
dir=$2
pgport=${PGPORT_TEST:-55432}
kport=${KAFKA_PORT_TEST:-19092}

case $cmd in
start)
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	# Half a start is worse than none: stop what did come up if the other
	# server fails. On success the servers must outlive this script.
	trap 'env_cleanup' EXIT
	trap 'env_cleanup; exit 130' INT
	trap 'env_cleanup; exit 143' TERM
	pg_start "$dir" "$pgport"
	kafka_start "$dir" "$kport"
	trap - EXIT INT TERM
	cat <<-MSG
	pg.conninfo = host=127.0.0.1 port=$pgport dbname=${PG_TEST_DB:-outbox} user=postgres
	kafka.bootstrap.servers = 127.0.0.1:$kport
	psql: $PG_BIN/psql -h 127.0.0.1 -p $pgport -U postgres ${PG_TEST_DB:-outbox}
	stop: $0 stop $dir
	MSG
	;;
stop)
	[[ -d $dir ]] || { echo "no such directory: $dir" >&2; exit 1; }
	kafka_stop "$dir"
	pg_stop "$dir"
	echo "stopped; files left in $dir"
	;;
status)
	rc=0
	if [[ -f $dir/pg/data/PG_VERSION ]] &&
		_pg_run "$PG_BIN/pg_ctl" -D "$dir/pg/data" status >/dev/null 2>&1; then
		echo "postgres: running on port $(cat "$dir/pg/port")"
	else
		echo "postgres: stopped"; rc=3
	fi
	kpid=$(cat "$dir/kafka/kafka.pid" 2>/dev/null || true)
	if _env_pid_alive "$kpid"; then
		echo "kafka: running on port $(cat "$dir/kafka/port") (pid $kpid)"
	else
		echo "kafka: stopped"; rc=3
	fi
	exit $rc
	;;
*) usage ;;
esac
