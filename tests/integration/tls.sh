# shellcheck shell=bash
# tests/integration/tls.sh -- a throwaway certificate authority (openssl)
# and a Kafka broker of a test's own with a SASL_SSL listener, for the
# security tests (t242, t244). Source it after lib.sh.
#
#   tls_ca DIR NAME                  DIR/NAME.key, DIR/NAME.crt: a CA,
#                                    valid two days
#   tls_cert DIR CA NAME SAN         DIR/NAME.key, DIR/NAME.crt signed by
#                                    DIR/CA; SAN like
#                                    "DNS:localhost,IP:127.0.0.1"
#   ktls_start DIR PORT CA CERT USERS...   a single-node KRaft broker in
#                                    DIR/ktls: SASL_SSL on 127.0.0.1:PORT
#                                    (SCRAM-SHA-512, certificate DIR/CERT
#                                    from DIR/CA), controller on PORT+1
#                                    (plaintext, loopback); USERS are
#                                    name=password pairs created at format
#                                    time, the first one used by the broker
#                                    itself; stopped at env_cleanup
#   ktls_stop DIR
#   ktls_kcat DIR USER PASSWORD ARGS...   kcat against that broker
#
# The broker has no authorizer: any authenticated user may do anything
# (the relay's ACLs are not what these tests are about). Keys and
# certificates use EC P-256: quick to make, and read by libpq, the JDK and
# OpenSSL alike.

if [[ -n ${_IT_TLS_SOURCED:-} ]]; then
	return 0
fi
_IT_TLS_SOURCED=1

tls_ca() {
	local dir=$1 name=$2
	mkdir -p "$dir"
	openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
		-nodes -keyout "$dir/$name.key" -out "$dir/$name.crt" -days 2 \
		-subj "/CN=outbox-relay test CA $name" \
		-addext "basicConstraints=critical,CA:TRUE" \
		-addext "keyUsage=critical,keyCertSign,cRLSign" \
		>"$dir/$name.openssl.log" 2>&1
}

tls_cert() {
	local dir=$1 ca=$2 name=$3 san=$4
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-keyout "$dir/$name.key" -out "$dir/$name.csr" -subj "/CN=$name" \
		>"$dir/$name.openssl.log" 2>&1 || return 1
	printf '%s\n' "basicConstraints=CA:FALSE" \
		"keyUsage=critical,digitalSignature,keyEncipherment" \
		"extendedKeyUsage=serverAuth" "subjectAltName=$san" >"$dir/$name.ext"
	openssl x509 -req -in "$dir/$name.csr" -CA "$dir/$ca.crt" \
		-CAkey "$dir/$ca.key" -CAcreateserial -days 2 -sha256 \
		-extfile "$dir/$name.ext" -out "$dir/$name.crt" \
		>>"$dir/$name.openssl.log" 2>&1
}

# ---------------------------------------------------------------- kafka

# tests/env/lib.sh's java command line: its log configuration suits the
# broker version in $KAFKA_JARS (reload4j for 3.x, log4j2 for 4.x).
_ktls_java() {
	local kdir=$1
	shift
	_kafka_java_cmd "$kdir"
	"${_KAFKA_CMD[@]}" "$@"
}

# kcat options for the SASL_SSL listener, as USER with PASSWORD: in a
# 0600 file, not on kcat's command line (-F reads librdkafka properties).
_ktls_kcat_conf() {
	local kdir=$1 user=$2 pw=$3 f=$1/kcat.$2.conf
	{
		echo "security.protocol=SASL_SSL"
		echo "sasl.mechanisms=SCRAM-SHA-512"
		echo "sasl.username=$user"
		echo "sasl.password=$pw"
		echo "ssl.ca.location=$(cat "$kdir/ca.path")"
	} >"$f"
	chmod 600 "$f"
	echo "$f"
}

ktls_kcat() {
	local dir=$1 user=$2 pw=$3 kdir=$1/ktls f
	shift 3
	f=$(_ktls_kcat_conf "$kdir" "$user" "$pw")
	kcat -F "$f" -b "127.0.0.1:$(cat "$kdir/port")" "$@"
}

_ktls_write_config() {
	local kdir=$1 port=$2 cport=$(($2 + 1)) admin=$3 admin_pw=$4
	cat >"$kdir/server.properties" <<-EOF
	# Single-node KRaft broker+controller with a SASL_SSL listener
	# (tests/integration/tls.sh).
	process.roles=broker,controller
	node.id=1
	controller.quorum.voters=1@127.0.0.1:$cport
	listeners=SASL_SSL://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
	advertised.listeners=SASL_SSL://127.0.0.1:$port
	controller.listener.names=CONTROLLER
	listener.security.protocol.map=SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT
	inter.broker.listener.name=SASL_SSL
	sasl.enabled.mechanisms=SCRAM-SHA-512
	sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512
	listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="$admin" password="$admin_pw";
	ssl.keystore.type=PKCS12
	ssl.keystore.location=$kdir/broker.p12
	ssl.keystore.password=$admin_pw
	ssl.key.password=$admin_pw
	ssl.truststore.type=PEM
	ssl.truststore.location=$(cat "$kdir/ca.path")
	ssl.client.auth=none
	log.dirs=$kdir/data
	offsets.topic.replication.factor=1
	transaction.state.log.replication.factor=1
	transaction.state.log.min.isr=1
	num.partitions=3
	group.initial.rebalance.delay.ms=0
	auto.create.topics.enable=true
	EOF
	chmod 600 "$kdir/server.properties"
	_kafka_write_log_config "$kdir"
}

# Ready: a metadata request over SASL_SSL, as the broker's own user,
# lists broker 1.
# A deadline, not a count of tries: each kcat may take its 3 s when the
# listener is up but refuses the login (t244 waited 435-600 s so on 4.4.0).
_ktls_wait_ready() {
	local dir=$1 user=$2 pw=$3 pid=$4 secs=${ENV_START_TIMEOUT:-60} deadline
	deadline=$((SECONDS + secs))
	while ((SECONDS < deadline)); do
		_env_pid_alive "$pid" || return 2
		if ktls_kcat "$dir" "$user" "$pw" -L -J -m 3 2>/dev/null |
			grep '"brokers":\[{"id":1,' >/dev/null; then
			return 0
		fi
		sleep 0.5
	done
	return 1
}

ktls_start() {
	local dir=$1 port=$2 ca=$3 cert=$4 kdir=$1/ktls
	local admin admin_pw cid u pid rc=0
	local scram=()
	shift 4
	admin=${1%%=*} admin_pw=${1#*=}
	for u in "$@"; do
		scram+=(--add-scram "SCRAM-SHA-512=[name=${u%%=*},password=${u#*=}]")
	done
	if ! compgen -G "$KAFKA_JARS/kafka_2.13-*.jar" >/dev/null; then
		env_log "ktls: no broker jars in $KAFKA_JARS"
		return 1
	fi
	if port_in_use 127.0.0.1 "$port" || port_in_use 127.0.0.1 $((port + 1)); then
		env_log "ktls: port $port or $((port + 1)) is already in use"
		return 1
	fi
	mkdir -p "$kdir/data"
	echo "$port" >"$kdir/port"
	echo "$dir/$ca.crt" >"$kdir/ca.path"
	# The broker's key and certificate chain as PKCS12, which the JDK reads.
	openssl pkcs12 -export -in "$dir/$cert.crt" -inkey "$dir/$cert.key" \
		-certfile "$dir/$ca.crt" -name broker -out "$kdir/broker.p12" \
		-passout "pass:$admin_pw" >"$kdir/pkcs12.log" 2>&1 || {
		env_log "ktls: openssl pkcs12 failed"
		_env_tail "$kdir/pkcs12.log"
		return 1
	}
	_ktls_write_config "$kdir" "$port" "$admin" "$admin_pw"
	cid=$(_ktls_java "$kdir" kafka.tools.StorageTool random-uuid 2>>"$kdir/format.log") || {
		env_log "ktls: StorageTool random-uuid failed"
		return 1
	}
	# SCRAM credentials go into the bootstrap metadata (KRaft): they exist
	# before the listener opens.
	if ! _ktls_java "$kdir" kafka.tools.StorageTool format -t "$cid" \
		-c "$kdir/server.properties" "${scram[@]}" >>"$kdir/format.log" 2>&1; then
		env_log "ktls: StorageTool format failed"
		_env_tail "$kdir/format.log"
		return 1
	fi
	_kafka_java_cmd "$kdir"
	(
		trap '' HUP
		exec setsid "${_KAFKA_CMD[@]}" kafka.Kafka "$kdir/server.properties"
	) </dev/null >>"$kdir/stdout.log" 2>&1 &
	pid=$!
	disown "$pid" 2>/dev/null || true
	echo "$pid" >"$kdir/kafka.pid"
	# Relays first (they must not see the broker go away under them).
	env_on_cleanup "_it_kill_relays; ktls_stop '$dir'"
	_ktls_wait_ready "$dir" "$admin" "$admin_pw" "$pid" || rc=$?
	if ((rc != 0)); then
		env_log "ktls: broker on 127.0.0.1:$port not ready (rc $rc)"
		_env_tail "$kdir/stdout.log" 20
		_env_tail "$kdir/server.log" 40
		ktls_stop "$dir"
		return 1
	fi
	env_log "ktls: SASL_SSL broker ready on 127.0.0.1:$port (pid $pid, log $kdir/server.log)"
}

ktls_stop() {
	local kdir=$1/ktls pid
	pid=$(cat "$kdir/kafka.pid" 2>/dev/null || true)
	[[ -n $pid ]] || return 0
	if _env_pid_alive "$pid"; then
		kill -TERM "$pid" 2>/dev/null || true
		if ! _env_wait_pid_gone "$pid" 30; then
			kill -9 "$pid" 2>/dev/null || true
			_env_wait_pid_gone "$pid" 10 || true
		fi
	fi
	rm -f "$kdir/kafka.pid"
}
