# shellcheck shell=bash
# tests/env/kafka_cluster.sh -- a throwaway three-node Apache Kafka cluster
# (KRaft) on loopback, for the replicated-cluster test (t800). Source it
# after tests/env/lib.sh (it uses that file's java command line, log
# configuration and process helpers, for whichever broker version
# $KAFKA_JARS holds).
#
# Every node is broker and controller; the three controllers are the
# quorum's voters. Node N (1..3) listens on 127.0.0.1:BASE+2(N-1) (broker)
# and BASE+2(N-1)+1 (controller). The broker defaults make every new topic
# (auto-created ones too) replication factor 3 with min.insync.replicas 2
# and no unclean leader election; sessions time out fast (4 s) so a killed
# node is fenced and replaced as leader within seconds.
#
#   kc_start DIR BASE          format (first time) + start three nodes, wait
#                              until all three are registered brokers
#   kc_stop DIR                SIGTERM to every node, bounded, then SIGKILL
#   kc_kill DIR N              kill -9 node N (waits until it is gone)
#   kc_launch DIR N...         start nodes again (after kc_kill), all at once,
#                              wait until each is back in the metadata
#   kc_brokers DIR             the bootstrap list "127.0.0.1:P1,...,P3"
#   kc_alive DIR N             true while node N's process runs
#   kc_live_brokers DIR        the node ids in a metadata answer, sorted
#   kc_wait_brokers DIR IDS [SECS]  until the metadata lists exactly IDS
#                              ("1 2 3"), a live node answering
#   kc_partitions DIR TOPIC    one line per partition: "P LEADER R ISR",
#                              R and ISR as counts (kcat metadata)
#   kc_top_leader DIR TOPIC    the node that leads most of TOPIC's partitions
#   kc_wait_isr DIR TOPIC N [SECS]  until every partition of TOPIC has a
#                              leader and N in-sync replicas
#   kc_topic_config DIR TOPIC KEY=VALUE...  set topic configs (ConfigCommand)
#   kc_describe_topic DIR TOPIC  the topic's dynamic configs (ConfigCommand)
#
# Layout: DIR/kc/nN/{data,server.properties,log4j[2].properties,server.log,
# stdout.log,kafka.pid,port}. kc_start registers kc_stop with env_cleanup.
# Knobs: KC_HEAP (default 320m per node), ENV_START_TIMEOUT.

if [[ -n ${_KC_LIB_SOURCED:-} ]]; then
	return 0
fi
_KC_LIB_SOURCED=1

KC_NODES=3

_kc_dir() { printf '%s/kc/n%s\n' "$1" "$2"; }

kc_brokers() {
	local dir=$1 base n list=
	base=$(cat "$dir/kc/base") || return 1
	for ((n = 1; n <= KC_NODES; n++)); do
		list+="${list:+,}127.0.0.1:$((base + 2 * (n - 1)))"
	done
	printf '%s\n' "$list"
}

_kc_write_config() {
	local dir=$1 n=$2 base=$3 kdir voters= m port cport
	kdir=$(_kc_dir "$dir" "$n")
	port=$((base + 2 * (n - 1)))
	cport=$((port + 1))
	for ((m = 1; m <= KC_NODES; m++)); do
		voters+="${voters:+,}$m@127.0.0.1:$((base + 2 * (m - 1) + 1))"
	done
	echo "$port" >"$kdir/port"
	cat >"$kdir/server.properties" <<-EOF
	# Node $n of a three-node KRaft cluster for tests (tests/env/kafka_cluster.sh).
	process.roles=broker,controller
	node.id=$n
	controller.quorum.voters=$voters
	listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
	advertised.listeners=PLAINTEXT://127.0.0.1:$port
	controller.listener.names=CONTROLLER
	listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
	inter.broker.listener.name=PLAINTEXT
	log.dirs=$kdir/data
	# What a production cluster is meant to run with: three copies, two
	# of them in sync before an acks=all write is acknowledged, and never
	# a leader that is not in sync.
	default.replication.factor=3
	min.insync.replicas=2
	unclean.leader.election.enable=false
	offsets.topic.replication.factor=3
	transaction.state.log.replication.factor=3
	transaction.state.log.min.isr=2
	# Six coordinator partitions, not fifty: 150 replicas to place and
	# keep in sync would only slow the exactly-once runs on a busy host.
	transaction.state.log.num.partitions=6
	num.partitions=6
	auto.create.topics.enable=true
	group.initial.rebalance.delay.ms=0
	# A killed node is fenced (and out of every ISR) 4 s after its last
	# heartbeat, as in tests/env/lib.sh; a restarted one gets its
	# preferred leaderships back within seconds (default: 5 min).
	broker.session.timeout.ms=4000
	broker.heartbeat.interval.ms=500
	leader.imbalance.check.interval.seconds=5
	# A replica that stops fetching leaves the ISR after 10 s (30 s).
	replica.lag.time.max.ms=10000
	EOF
	_kafka_write_log_config "$kdir"
}

# Starts node N's JVM in the background (its own session, like lib.sh's
# broker, so run.sh's timeout cannot take it down), without waiting.
_kc_spawn() {
	local dir=$1 n=$2 kdir pid
	kdir=$(_kc_dir "$dir" "$n")
	KAFKA_HEAP=${KC_HEAP:-320m} _kafka_java_cmd "$kdir"
	(
		trap '' HUP
		exec setsid "${_KAFKA_CMD[@]}" kafka.Kafka "$kdir/server.properties"
	) </dev/null >>"$kdir/stdout.log" 2>&1 &
	pid=$!
	disown "$pid" 2>/dev/null || true
	echo "$pid" >"$kdir/kafka.pid"
}

kc_alive() {
	local kdir
	kdir=$(_kc_dir "$1" "$2")
	_env_pid_alive "$(cat "$kdir/kafka.pid" 2>/dev/null || true)"
}

# The registered, unfenced brokers a live node reports (fenced brokers are
# left out of metadata answers), as sorted ids on one line.
kc_live_brokers() {
	local dir=$1 n port json
	for ((n = 1; n <= KC_NODES; n++)); do
		kc_alive "$dir" "$n" || continue
		port=$(cat "$(_kc_dir "$dir" "$n")/port")
		json=$(kcat -b "127.0.0.1:$port" -L -J -m 3 2>/dev/null) || continue
		python3 -c '
import json, sys
d = json.loads(sys.argv[1])
print(" ".join(str(b["id"]) for b in sorted(d.get("brokers", []), key=lambda b: b["id"])))
' "$json" 2>/dev/null && return 0
	done
	return 1
}

kc_wait_brokers() {
	local dir=$1 want=$2 secs=${3:-$ENV_START_TIMEOUT} i got
	for ((i = 0; i < secs * 2; i++)); do
		got=$(kc_live_brokers "$dir" 2>/dev/null) || got=
		[[ $got == "$want" ]] && return 0
		sleep 0.5
	done
	env_log "kafka cluster: brokers '${got:-none}' after ${secs}s, wanted '$want'"
	return 1
}

_kc_tail_node() {
	local kdir
	kdir=$(_kc_dir "$1" "$2")
	_env_tail "$kdir/stdout.log" 10
	_env_tail "$kdir/server.log" 30
}

kc_start() {
	local dir=$1 base=$2 n kdir cid port all=
	if ! compgen -G "$KAFKA_JARS/kafka_2.13-*.jar" >/dev/null; then
		env_log "kafka cluster: no broker jars in $KAFKA_JARS; run tests/env/deps.sh"
		return 1
	fi
	for ((port = base; port < base + 2 * KC_NODES; port++)); do
		if port_in_use 127.0.0.1 "$port"; then
			env_log "kafka cluster: port $port is already in use"
			return 1
		fi
	done
	mkdir -p "$dir/kc"
	echo "$base" >"$dir/kc/base"
	env_on_cleanup "kc_stop '$dir'"
	for ((n = 1; n <= KC_NODES; n++)); do
		kdir=$(_kc_dir "$dir" "$n")
		mkdir -p "$kdir/data"
		_kc_write_config "$dir" "$n" "$base"
	done
	# One cluster id, every node's log directory formatted with it; the
	# voters come from controller.quorum.voters (a static quorum).
	if [[ ! -f $(_kc_dir "$dir" 1)/data/meta.properties ]]; then
		kdir=$(_kc_dir "$dir" 1)
		cid=$(KAFKA_HEAP=256m _kafka_java "$kdir" kafka.tools.StorageTool random-uuid \
			2>>"$kdir/format.log") || {
			env_log "kafka cluster: StorageTool random-uuid failed"
			_env_tail "$kdir/format.log"
			return 1
		}
		for ((n = 1; n <= KC_NODES; n++)); do
			kdir=$(_kc_dir "$dir" "$n")
			if ! KAFKA_HEAP=256m _kafka_java "$kdir" kafka.tools.StorageTool format \
				-t "$cid" -c "$kdir/server.properties" >>"$kdir/format.log" 2>&1; then
				env_log "kafka cluster: StorageTool format of node $n failed"
				_env_tail "$kdir/format.log"
				return 1
			fi
		done
	fi
	# All three at once: a controller waits for a majority of voters.
	for ((n = 1; n <= KC_NODES; n++)); do
		_kc_spawn "$dir" "$n"
		all+="${all:+ }$n"
	done
	if ! kc_wait_brokers "$dir" "$all" $((ENV_START_TIMEOUT * 2)); then
		for ((n = 1; n <= KC_NODES; n++)); do
			kc_alive "$dir" "$n" || env_log "kafka cluster: node $n died during startup"
			_kc_tail_node "$dir" "$n"
		done
		kc_stop "$dir"
		return 1
	fi
	env_log "kafka cluster ready: $(kc_brokers "$dir") (logs $dir/kc/n*/server.log)"
}

kc_kill() {
	local dir=$1 n=$2 kdir pid
	kdir=$(_kc_dir "$dir" "$n")
	pid=$(cat "$kdir/kafka.pid" 2>/dev/null || true)
	[[ -n $pid ]] || return 0
	kill -9 "$pid" 2>/dev/null || true
	_env_wait_pid_gone "$pid" 10 || {
		env_log "kafka cluster: node $n ($pid) still there 10s after SIGKILL"
		return 1
	}
	rm -f "$kdir/kafka.pid"
}

# Starts the nodes again (all at once: two of them may be needed for a
# quorum) and waits until a live node lists each one as a broker.
kc_launch() {
	local dir=$1 n kdir port i secs=$((ENV_START_TIMEOUT * 2))
	shift
	for n in "$@"; do
		kdir=$(_kc_dir "$dir" "$n")
		port=$(cat "$kdir/port")
		# Right after a kill the old listeners may still be closing.
		for ((i = 0; i < 25; i++)); do
			port_in_use 127.0.0.1 "$port" || port_in_use 127.0.0.1 $((port + 1)) || break
			sleep 0.2
		done
		_kc_spawn "$dir" "$n"
	done
	for n in "$@"; do
		port=$(cat "$(_kc_dir "$dir" "$n")/port")
		for ((i = 0; i < secs * 2; i++)); do
			if ! kc_alive "$dir" "$n"; then
				env_log "kafka cluster: node $n died while starting"
				_kc_tail_node "$dir" "$n"
				return 1
			fi
			if kcat -b "127.0.0.1:$port" -L -J -m 3 2>/dev/null |
				grep "{\"id\":$n," >/dev/null; then
				continue 2
			fi
			sleep 0.5
		done
		env_log "kafka cluster: node $n not back after ${secs}s"
		_kc_tail_node "$dir" "$n"
		return 1
	done
}

kc_stop() {
	local dir=$1 n kdir pid pids=()
	for ((n = 1; n <= KC_NODES; n++)); do
		kdir=$(_kc_dir "$dir" "$n")
		pid=$(cat "$kdir/kafka.pid" 2>/dev/null || true)
		[[ -n $pid ]] || continue
		kill -TERM "$pid" 2>/dev/null || true
		pids+=("$n:$pid")
	done
	# A node that cannot reach the quorum may take long to stop: bounded.
	for n in "${pids[@]}"; do
		pid=${n#*:}
		if ! _env_wait_pid_gone "$pid" 30; then
			kill -9 "$pid" 2>/dev/null || true
			_env_wait_pid_gone "$pid" 10 || true
		fi
		rm -f "$(_kc_dir "$dir" "${n%%:*}")/kafka.pid"
	done
}

# "PARTITION LEADER REPLICAS ISR" per partition, replicas and ISR counted,
# from the metadata of any live node.
kc_partitions() {
	local dir=$1 topic=$2 n port json
	for ((n = 1; n <= KC_NODES; n++)); do
		kc_alive "$dir" "$n" || continue
		port=$(cat "$(_kc_dir "$dir" "$n")/port")
		json=$(kcat -b "127.0.0.1:$port" -L -J -m 3 -t "$topic" 2>/dev/null) || continue
		python3 -c '
import json, sys
d = json.loads(sys.argv[1])
for t in d.get("topics", []):
    if t.get("topic") != sys.argv[2] or t.get("err"):
        continue
    for p in sorted(t.get("partitions", []), key=lambda p: p["partition"]):
        print(p["partition"], p.get("leader", -1), len(p.get("replicas", [])),
              len(p.get("isrs", [])))
' "$json" "$topic" 2>/dev/null && return 0
	done
	return 1
}

kc_top_leader() {
	kc_partitions "$1" "$2" | awk '$2 >= 0 { c[$2]++ }
		END { best = -1; for (l in c) if (c[l] > best) { best = c[l]; who = l }
			if (best > 0) print who; else exit 1 }'
}

kc_wait_isr() {
	local dir=$1 topic=$2 want=$3 secs=${4:-60} i parts
	for ((i = 0; i < secs * 2; i++)); do
		parts=$(kc_partitions "$dir" "$topic" 2>/dev/null) || parts=
		if [[ -n $parts ]] && awk -v w="$want" '$2 < 0 || $4 != w { bad = 1 }
			END { exit bad }' <<<"$parts"; then
			return 0
		fi
		sleep 0.5
	done
	env_log "kafka cluster: $topic not at $want in-sync replicas after ${secs}s: $(tr '\n' ';' <<<"$parts")"
	return 1
}

_kc_config_command() {
	local dir=$1
	shift
	java -Xmx256m -Dlog4j.configuration=file:/dev/null \
		-Dlog4j2.configurationFile=/dev/null -cp "$KAFKA_JARS/*" \
		"$(kafka_config_command)" --bootstrap-server "$(kc_brokers "$dir")" "$@"
}

kc_topic_config() {
	local dir=$1 topic=$2 kv
	shift 2
	for kv in "$@"; do
		_kc_config_command "$dir" --entity-type topics --entity-name "$topic" \
			--alter --add-config "$kv" >/dev/null 2>&1 || {
			env_log "kafka cluster: could not set $kv on $topic"
			return 1
		}
	done
}

kc_describe_topic() {
	_kc_config_command "$1" --entity-type topics --entity-name "$2" --describe 2>/dev/null
}
