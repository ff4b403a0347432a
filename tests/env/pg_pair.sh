# shellcheck shell=bash
# tests/env/pg_pair.sh -- a PostgreSQL primary and a streaming standby of
# any major version (PG_BIN of tests/env/pgdist.sh) on loopback, for the
# failover tests: kill -9 the primary, promote the standby. Source it after
# tests/env/lib.sh (tests/integration/lib.sh sources that); it does not
# change the caller's shell options.
#
#   pair_bin BIN                  the bin directory of the pair's servers
#                                 (default $PG_BIN); sets PAIR_MAJOR
#   pair_primary_start DIR PORT DB [--standby-slot NAME]
#                                 [--synchronized-standby-slots]
#                                 initdb, wal_level logical, start, create
#                                 DB and a physical slot NAME (sb1) for the
#                                 standby; with --synchronized-standby-slots
#                                 (17+) the primary's logical walsenders
#                                 send nothing the standby has not flushed
#   pair_standby_start SDIR PDIR PORT DB [--standby-slot NAME]
#                                 [--upstream PORT] [--sync-slots]
#                                 stops the primary cleanly, copies its data
#                                 directory (its slots left out), starts the
#                                 primary again and the copy as a streaming
#                                 standby: standby.signal, primary_conninfo
#                                 with dbname=DB (slot sync needs it) to
#                                 127.0.0.1:PORT of --upstream (default the
#                                 primary's; a proxy goes there),
#                                 primary_slot_name, hot_standby_feedback;
#                                 --sync-slots (17+): sync_replication_slots
#                                 = on. Waits until it streams
#   pair_port DIR                 the port a pair member listens on
#   pair_sql DIR DB SQL           psql_q on that member
#   pair_wait_streaming PDIR [SECS] [NAME]
#                                 the primary has a streaming walsender for
#                                 the standby (application_name NAME, sb1)
#   pair_wait_caught_up PDIR SDIR [SECS]
#                                 the standby replayed the primary's WAL
#                                 as of the call
#   pair_wait_synced SDIR DB SLOT [SECS] [LSN]
#                                 the standby has SLOT synced from the
#                                 primary (synced, not temporary) and, with
#                                 LSN, its confirmed_flush_lsn >= LSN; with
#                                 sync_replication_slots = off it asks for
#                                 a sync (pg_sync_replication_slots())
#                                 every 2 s meanwhile. A new slot is synced
#                                 once its primary's copy has moved past
#                                 the standby's own horizon: consume it
#   pair_kill DIR                 kill -9 of the postmaster and every child
#                                 it has (the host is gone: a backend or
#                                 walsender of a postmaster killed alone
#                                 carries on until it next waits); prints
#                                 the time in ms since the epoch after the
#                                 last kill
#   pair_promote SDIR [SECS]      pg_ctl promote -w; then waits until the
#                                 server takes writes
#   pair_timeline DIR             the member's current timeline
#   pair_history SDIR TLI         TLI's history file (the switch points)
#   pair_stop DIR                 fast shutdown, kill -9 as a last resort
#   pair_cleanup                  stops every member this shell started
#                                 (registered with env_on_cleanup on the
#                                 first start)
#
# Layout of a member's DIR is lib.sh's (DIR/pg/{data,sock,postgres.log,
# postgres.pid,port}); DIR/pg/bin names the bin directory it runs from, so
# pair_stop works from any process. The servers run as user postgres
# (lib.sh's _pg_run). PostgreSQL 15 and 16 have no slot synchronisation:
# --sync-slots and --synchronized-standby-slots are refused there.
# Bounded waits: ENV_START_TIMEOUT (60 s) for starts, the SECS given
# elsewhere.

if [[ -n ${_PG_PAIR_SOURCED:-} ]]; then
	return 0
fi
_PG_PAIR_SOURCED=1

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PAIR_BIN=
PAIR_MAJOR=
_PAIR_MEMBERS=()
_PAIR_HOOKED=

pair_bin() {
	local bin=${1:-$PG_BIN} v
	if [[ ! -x $bin/postgres || ! -x $bin/pg_ctl || ! -x $bin/initdb ]]; then
		env_log "pair_bin: no postgres, pg_ctl and initdb in $bin"
		return 1
	fi
	v=$(_pg_run "$bin/postgres" --version) || return 1
	# "postgres (PostgreSQL) 17.10"
	PAIR_MAJOR=$(sed -n 's/.*(PostgreSQL) \([0-9][0-9]*\).*/\1/p' <<<"$v")
	if [[ -z $PAIR_MAJOR ]]; then
		env_log "pair_bin: cannot read the version of $bin/postgres: $v"
		return 1
	fi
	PAIR_BIN=$bin
}

pair_port() { cat "$1/pg/port"; }
pair_sql() { psql_q "$(pair_port "$1")" "$2" "$3"; }

_pair_member_bin() { cat "$1/pg/bin" 2>/dev/null || echo "$PAIR_BIN"; }

_pair_register() {
	_PAIR_MEMBERS+=("$1")
	if [[ -z $_PAIR_HOOKED ]]; then
		env_on_cleanup pair_cleanup
		_PAIR_HOOKED=1
	fi
}

# A member killed by pair_kill stays dead: its postmaster.pid may name a
# zombie (an init that does not reap), which pg_ctl takes for a server.
pair_stop() {
	local dir=$1 pm PG_BIN
	pm=$(head -n1 "$dir/pg/data/postmaster.pid" 2>/dev/null) || pm=
	if [[ ! $pm =~ ^[0-9]+$ ]] || ! _env_pid_alive "$pm"; then
		rm -f "$dir/pg/postgres.pid"
		return 0
	fi
	PG_BIN=$(_pair_member_bin "$dir")
	pg_stop "$dir"
}

pair_cleanup() {
	local i
	for ((i = ${#_PAIR_MEMBERS[@]} - 1; i >= 0; i--)); do
		pair_stop "${_PAIR_MEMBERS[i]}" || true
	done
	_PAIR_MEMBERS=()
}

# lib.sh's _pg_launch with this member's binaries (PG_BIN is dynamically
# scoped: lib.sh's functions called from here see the local one).
_pair_launch() {
	local dir=$1 port=$2 PG_BIN
	PG_BIN=$(_pair_member_bin "$dir")
	_pg_launch "$dir/pg" "$port"
}

pair_primary_start() {
	local dir=$1 port=$2 db=$3 slot=sb1 ssslots= PG_BIN=$PAIR_BIN
	local pgdir=$1/pg
	shift 3
	while (($# > 0)); do
		case $1 in
		--standby-slot)
			slot=$2
			shift
			;;
		--synchronized-standby-slots) ssslots=1 ;;
		*)
			env_log "pair_primary_start: unknown option $1"
			return 1
			;;
		esac
		shift
	done
	[[ -n $PAIR_BIN ]] || pair_bin || return 1
	if [[ -n $ssslots ]] && ((PAIR_MAJOR < 17)); then
		env_log "pair_primary_start: synchronized_standby_slots needs PostgreSQL 17+, not $PAIR_MAJOR"
		return 1
	fi
	if [[ $pgdir == *"'"* || ! $db =~ ^[a-z_][a-z0-9_]*$ || ! $slot =~ ^[a-z_][a-z0-9_]*$ ]]; then
		env_log "pair_primary_start: bad directory, database or slot name"
		return 1
	fi
	mkdir -p "$pgdir/sock"
	echo "$PAIR_BIN" >"$pgdir/bin"
	[[ $EUID -ne 0 ]] || chown -R postgres:postgres "$pgdir"
	if ! _pg_run "$PAIR_BIN/initdb" -D "$pgdir/data" -U postgres -A trust \
		-E UTF8 --locale=C -N >"$pgdir/initdb.log" 2>&1; then
		env_log "pair_primary_start: initdb failed"
		_env_tail "$pgdir/initdb.log"
		return 1
	fi
	_pg_write_config "$pgdir" "$port"
	{
		echo "# ---- primary of a pair (tests/env/pg_pair.sh) ----"
		echo "hot_standby = on"
		echo "wal_keep_size = '128MB'"
		echo "log_min_messages = info"
		if [[ -n $ssslots ]]; then
			# The primary's logical walsenders send nothing the standby
			# behind this physical slot has not confirmed: a failover
			# slot never runs ahead of the standby.
			echo "synchronized_standby_slots = '$slot'"
		fi
	} >>"$pgdir/data/postgresql.conf"
	_pair_launch "$dir" "$port" || return 1
	_pair_register "$dir"
	psql_q "$port" postgres "CREATE DATABASE \"$db\"" || return 1
	psql_q "$port" postgres "SELECT pg_create_physical_replication_slot('$slot')" \
		>/dev/null || return 1
	env_log "primary (PostgreSQL $PAIR_MAJOR) ready on 127.0.0.1:$port (db $db, standby slot $slot, log $pgdir/postgres.log)"
}

pair_standby_start() {
	local sdir=$1 pdir=$2 port=$3 db=$4 slot=sb1 upstream= sync= pport
	local spg=$1/pg ppg=$2/pg PG_BIN
	shift 4
	while (($# > 0)); do
		case $1 in
		--standby-slot)
			slot=$2
			shift
			;;
		--upstream)
			upstream=$2
			shift
			;;
		--sync-slots) sync=1 ;;
		*)
			env_log "pair_standby_start: unknown option $1"
			return 1
			;;
		esac
		shift
	done
	PG_BIN=$(_pair_member_bin "$pdir")
	pport=$(pair_port "$pdir") || return 1
	upstream=${upstream:-$pport}
	if [[ -n $sync ]] && ((PAIR_MAJOR < 17)); then
		env_log "pair_standby_start: sync_replication_slots needs PostgreSQL 17+, not $PAIR_MAJOR"
		return 1
	fi
	if [[ $spg == *"'"* ]]; then
		env_log "pair_standby_start: directory must not contain a quote: $spg"
		return 1
	fi
	# The base copy: of the cleanly stopped primary (no backup label
	# needed, the standby starts from its shutdown checkpoint).
	pg_stop "$pdir"
	mkdir -p "$spg/sock"
	rm -rf "$spg/data"
	cp -a "$ppg/data" "$spg/data" || return 1
	# The primary's slots are the primary's: a copied physical slot would
	# pin WAL on the standby, a copied logical one would not be synced.
	rm -rf "$spg/data/pg_replslot" "$spg/data/postmaster.pid"
	mkdir "$spg/data/pg_replslot"
	echo "$PG_BIN" >"$spg/bin"
	{
		echo "# ---- standby of a pair (tests/env/pg_pair.sh) ----"
		echo "port = $port"
		echo "unix_socket_directories = '$spg/sock'"
		echo "primary_conninfo = 'host=127.0.0.1 port=$upstream user=postgres dbname=$db application_name=$slot'"
		echo "primary_slot_name = '$slot'"
		echo "hot_standby = on"
		echo "hot_standby_feedback = on"
		echo "wal_receiver_status_interval = 1s"
		echo "wal_retrieve_retry_interval = 1s"
		if ((PAIR_MAJOR >= 17)); then
			# Once promoted the standby has no standby of its own: its
			# logical walsenders must not wait for the primary's.
			echo "synchronized_standby_slots = ''"
			if [[ -n $sync ]]; then
				echo "sync_replication_slots = on"
			else
				echo "sync_replication_slots = off"
			fi
		fi
	} >>"$spg/data/postgresql.conf"
	: >"$spg/data/standby.signal"
	[[ $EUID -ne 0 ]] || chown -R postgres:postgres "$spg"
	_pair_launch "$pdir" "$pport" || return 1
	_pair_launch "$sdir" "$port" || return 1
	_pair_register "$sdir"
	if [[ $upstream == "$pport" ]]; then
		pair_wait_streaming "$pdir" 30 "$slot" || {
			env_log "pair_standby_start: the standby does not stream"
			_env_tail "$spg/postgres.log" 20
			return 1
		}
	fi
	env_log "standby ready on 127.0.0.1:$port (upstream port $upstream, slot sync ${sync:-off}, log $spg/postgres.log)"
}

pair_wait_streaming() {
	local pdir=$1 secs=${2:-30} name=${3:-sb1} i
	for ((i = 0; i < secs * 5; i++)); do
		[[ $(pair_sql "$pdir" postgres "SELECT count(*) FROM pg_stat_replication
			WHERE application_name = '$name' AND state = 'streaming'" 2>/dev/null) == 1 ]] &&
			return 0
		sleep 0.2
	done
	return 1
}

pair_wait_caught_up() {
	local pdir=$1 sdir=$2 secs=${3:-30} want got i
	want=$(pair_sql "$pdir" postgres "SELECT pg_current_wal_lsn()") || return 1
	for ((i = 0; i < secs * 5; i++)); do
		got=$(pair_sql "$sdir" postgres "SELECT pg_last_wal_replay_lsn()" 2>/dev/null) || got=
		[[ -n $got ]] && lsn_ge "$got" "$want" && return 0
		sleep 0.2
	done
	env_log "pair_wait_caught_up: the standby replayed ${got:-nothing} of $want after ${secs}s"
	return 1
}

pair_wait_synced() {
	local sdir=$1 db=$2 slot=$3 secs=${4:-30} lsn=${5:-} i row
	for ((i = 0; i < secs * 5; i++)); do
		row=$(pair_sql "$sdir" "$db" "SELECT synced AND NOT temporary,
			confirmed_flush_lsn FROM pg_replication_slots
			WHERE slot_name = '$slot'" 2>/dev/null) || row=
		if [[ ${row%%|*} == t ]] && { [[ -z $lsn ]] || lsn_ge "${row#*|}" "$lsn"; }; then
			return 0
		fi
		# Without the sync worker (sync_replication_slots = off) nothing
		# syncs unless asked; with it, the worker does (it refuses a
		# concurrent request).
		if ((i % 10 == 9)) && [[ $(pair_sql "$sdir" postgres "SHOW sync_replication_slots" 2>/dev/null) == off ]]; then
			timeout 10 "$PG_BIN/psql" -h 127.0.0.1 -p "$(pair_port "$sdir")" \
				-U postgres -d "$db" -X -q -At \
				-c "SELECT pg_sync_replication_slots()" >/dev/null 2>&1 || true
		fi
		sleep 0.2
	done
	env_log "pair_wait_synced: slot $slot on the standby after ${secs}s: ${row:-none} (want synced${lsn:+, confirmed >= $lsn})"
	return 1
}

pair_kill() {
	local dir=$1 pm kids
	pm=$(head -n1 "$dir/pg/data/postmaster.pid" 2>/dev/null) || pm=
	if [[ ! $pm =~ ^[0-9]+$ ]] || ! kill -0 "$pm" 2>/dev/null; then
		env_log "pair_kill: no running postmaster in $dir"
		return 1
	fi
	# Stopped, the postmaster forks no new child while its list is read.
	kill -STOP "$pm"
	kids=$(ps -o pid= --ppid "$pm" 2>/dev/null | tr -s ' \n' ' ') || kids=
	kill -9 "$pm"
	# shellcheck disable=SC2086 # a list of pids
	[[ -z ${kids// /} ]] || kill -9 $kids 2>/dev/null || true
	# After the children: nothing starts on the old primary after this.
	echo $(($(date +%s%N) / 1000000))
	_env_wait_pid_gone "$pm" 10 || env_log "pair_kill: postmaster $pm still there"
	rm -f "$dir/pg/postgres.pid"
}

pair_promote() {
	local sdir=$1 secs=${2:-60} i PG_BIN
	PG_BIN=$(_pair_member_bin "$sdir")
	if ! _pg_run "$PG_BIN/pg_ctl" -D "$sdir/pg/data" -w -t "$secs" promote \
		>"$sdir/pg/promote.log" 2>&1; then
		env_log "pair_promote: pg_ctl promote failed"
		_env_tail "$sdir/pg/promote.log" 10
		_env_tail "$sdir/pg/postgres.log" 20
		return 1
	fi
	for ((i = 0; i < secs * 5; i++)); do
		[[ $(pair_sql "$sdir" postgres "SELECT pg_is_in_recovery()" 2>/dev/null) == f ]] &&
			return 0
		sleep 0.2
	done
	env_log "pair_promote: still in recovery after ${secs}s"
	return 1
}

# IDENTIFY_SYSTEM's answer, as a client streaming from it sees it (the
# control file's checkpoint lags behind a promotion).
pair_timeline() {
	PGCONNECT_TIMEOUT=10 "$PG_BIN/psql" -X -q -At -F ' ' -c IDENTIFY_SYSTEM \
		"host=127.0.0.1 port=$(pair_port "$1") user=postgres dbname=postgres replication=database" |
		awk '{ print $2 }'
}

# The file is the server's; root (or postgres) can read it.
pair_history() {
	local f
	f=$(printf '%s/pg/data/pg_wal/%08X.history' "$1" "$2")
	cat "$f"
}
