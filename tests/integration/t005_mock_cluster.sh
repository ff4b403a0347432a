#!/usr/bin/env bash
# t005_mock_cluster -- build/kafka-mock (librdkafka's mock cluster behind a
# line protocol, tests/mock/kafka_mock.c, driven by mock.sh) works with a
# real client: kcat produces and consumes through its bootstrap list, and
# every fault it injects reaches the client as the relay would meet it: a
# leaderless partition, retriable and fatal Produce errors, InitProducerId
# errors for the idempotent producer the relay uses, a broker down and up
# without a leader change, RTT, a topic error in Metadata. The run's
# PostgreSQL and Kafka are not used.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=mock.sh
source "$(dirname "$0")/mock.sh"
it_init

topic=t005
# What the relay sets (src/publisher.c): idempotence and acks=all.
idem=(-X enable.idempotence=true -X acks=all)

# kprod NAME RECORDS KCAT_ARGS...: produces RECORDS (one a line) with kcat
# to the mock; KP_RC is kcat's exit code, KP_MS how long it took, and its
# stderr is in $IT_TEST_DIR/NAME.err.
kprod() {
	local name=$1 records=$2 t0 rc=0
	shift 2
	t0=$(date +%s%N)
	timeout 30 kcat -b "$MOCK_BOOTSTRAP" -P "$@" \
		2>"$IT_TEST_DIR/$name.err" <<<"$records" || rc=$?
	KP_RC=$rc
	KP_MS=$((($(date +%s%N) - t0) / 1000000))
}

kprod_err() { cat "$IT_TEST_DIR/$1.err"; }

# payloads PARTITION: the topic's payloads in that partition, in order,
# space-separated (it_consume reads $KAFKA_BROKERS: pointed at the mock).
payloads() {
	local out=$IT_TEST_DIR/consumed.json
	KAFKA_BROKERS=$MOCK_BOOTSTRAP it_consume "$topic" "$out" || return 1
	it_fields "$out" partition payload | awk -F'\t' -v p="$1" \
		'$1 == p { printf "%s%s", sep, $2; sep = " " }'
}

# mock_refuses DESC LINE: the tool answers "error: ..." (and keeps going).
mock_refuses() {
	local rc=0
	mock_cmd "$2" 2>/dev/null || rc=$?
	if ((rc == 1)); then
		ok "$1"
	else
		not_ok "$1" "mock_cmd status $rc, answer '$MOCK_ANSWER'"
	fi
}

# -- the tool and its protocol
if mock_start --brokers 3; then
	ok "kafka-mock started"
else
	not_ok "kafka-mock started" "$(it_show_log "$MOCK_LOG")"
	it_summary
fi
n=$(tr ',' '\n' <<<"$MOCK_BOOTSTRAP" | grep -c '^127\.0\.0\.1:[0-9][0-9]*$' || true)
it_check "bootstrap line lists 3 brokers on 127.0.0.1 ($MOCK_BOOTSTRAP)" test "$n" = 3

mock_refuses "unknown command answers error" "bogus 1 2"
mock_refuses "missing arguments answer error" "leader $topic 0"
mock_refuses "negative partition answers error" "leader $topic -1 1"
mock_refuses "unknown broker answers error" "broker_down 9"
mock_refuses "unknown error name answers error" "push_errors Produce NO_SUCH_ERROR"
mock_refuses "unknown API key answers error" "push_errors NoSuchRequest 1"
it_check "still answers after errors: topic created" mock_cmd "topic $topic 3"
mock_refuses "existing topic answers error" "topic $topic 3"
# The 2.0.2 mock picks leaders at random: fix them so faults hit a
# known broker. Partition P is led by broker P+1.
it_check "leaders set" eval 'mock_cmd "leader $topic 0 1" &&
	mock_cmd "leader $topic 1 2" && mock_cmd "leader $topic 2 3"'

# -- round trip
kprod rt $'r1\nr2\nr3' -t "$topic" -p 0
it_check "kcat produced 3 records" test "$KP_RC" = 0
got=$(payloads 0 2>&1 || true)
it_check "kcat consumed them back in order" test "$got" = "r1 r2 r3"
[[ $got == "r1 r2 r3" ]] || it_diag "partition 0: $got"

# -- idempotent producer: InitProducerId, then produce
kprod idem $'i1\ni2' -t "$topic" -p 2 "${idem[@]}" -d eos
it_check "idempotent producer delivered" test "$KP_RC" = 0
it_check "idempotent producer got a PID from the mock (InitProducerId)" \
	grep -q "Acquired PID" "$IT_TEST_DIR/idem.err"
got=$(payloads 2 2>&1 || true)
it_check "idempotent records consumed" test "$got" = "i1 i2"

mock_cmd "push_errors InitProducerId COORDINATOR_NOT_AVAILABLE,NOT_COORDINATOR"
kprod pid_retry p1 -t "$topic" -p 2 "${idem[@]}" -X message.timeout.ms=10000
it_check "retriable InitProducerId errors: retried, delivered" test "$KP_RC" = 0
grep -c "Failed to acquire idempotence PID" "$IT_TEST_DIR/pid_retry.err" \
	>"$IT_TEST_DIR/pid_retry.n" || true
it_check "both InitProducerId errors reached the client" \
	test "$(cat "$IT_TEST_DIR/pid_retry.n")" = 2

mock_cmd "push_errors InitProducerId CLUSTER_AUTHORIZATION_FAILED"
kprod pid_fatal p2 -t "$topic" -p 2 "${idem[@]}" -X message.timeout.ms=10000
# kcat's exit code after a fatal error is 0 or 1 depending on a race with
# its own shutdown: the log line and the missing record are what count.
if grep -q "Fatal error: Broker: Cluster authorization failed" \
	"$IT_TEST_DIR/pid_fatal.err"; then
	ok "CLUSTER_AUTHORIZATION_FAILED on InitProducerId is a fatal producer error"
else
	not_ok "CLUSTER_AUTHORIZATION_FAILED on InitProducerId is a fatal producer error" \
		"kcat exit $KP_RC: $(kprod_err pid_fatal)"
fi
got=$(payloads 2 2>&1 || true)
it_check "nothing delivered after the fatal error" test "$got" = "i1 i2 p1"

# -- leaderless partition: never delivered, the others still are
it_check "partition 1 made leaderless" mock_cmd "leader $topic 1 -1"
kprod leaderless l1 -t "$topic" -p 1 -X message.timeout.ms=3000
if ((KP_RC != 0)) && grep -q "Message timed out" "$IT_TEST_DIR/leaderless.err" &&
	((KP_MS >= 2500 && KP_MS < 15000)); then
	ok "produce to a leaderless partition times out (${KP_MS} ms, message.timeout.ms=3000)"
else
	not_ok "produce to a leaderless partition times out" \
		"kcat exit $KP_RC after ${KP_MS} ms: $(kprod_err leaderless)"
fi
kprod other o1 -t "$topic" -p 0 -X message.timeout.ms=3000
it_check "partition 0 still takes records meanwhile" test "$KP_RC" = 0
mock_cmd "leader $topic 1 2"
kprod back l2 -t "$topic" -p 1 -X message.timeout.ms=3000
it_check "partition 1 takes records again once it has a leader" test "$KP_RC" = 0

# -- pushed Produce errors, idempotent producer as in the relay
mock_cmd "push_errors Produce NOT_LEADER_FOR_PARTITION,NOT_LEADER_FOR_PARTITION,NOT_LEADER_FOR_PARTITION"
kprod retriable n1 -t "$topic" -p 0 "${idem[@]}" -X message.timeout.ms=10000 -d protocol
it_check "3x NOT_LEADER_FOR_PARTITION: delivered after retries" test "$KP_RC" = 0
responses=$(grep -c "Received ProduceResponse" "$IT_TEST_DIR/retriable.err" || true)
it_check "4 Produce requests answered (3 errors + 1 success): $responses" \
	test "$responses" = 4
got=$(payloads 0 2>&1 || true)
it_check "retried record stored once" test "$(tr ' ' '\n' <<<"$got" | grep -c '^n1$')" = 1

mock_cmd "push_errors Produce MSG_SIZE_TOO_LARGE"
kprod too_large m1 -t "$topic" -p 0 "${idem[@]}" -X message.timeout.ms=10000
if ((KP_RC != 0)) && grep -q "Delivery failed.*Message size too large" \
	"$IT_TEST_DIR/too_large.err"; then
	ok "MSG_SIZE_TOO_LARGE: kcat reports the delivery error"
else
	not_ok "MSG_SIZE_TOO_LARGE: kcat reports the delivery error" \
		"kcat exit $KP_RC: $(kprod_err too_large)"
fi
mock_cmd "push_errors Produce TOPIC_AUTHORIZATION_FAILED"
kprod authz a1 -t "$topic" -p 0 "${idem[@]}" -X message.timeout.ms=10000
if ((KP_RC != 0)) && grep -q "Delivery failed.*Topic authorization failed" \
	"$IT_TEST_DIR/authz.err"; then
	ok "TOPIC_AUTHORIZATION_FAILED: kcat reports the delivery error"
else
	not_ok "TOPIC_AUTHORIZATION_FAILED: kcat reports the delivery error" \
		"kcat exit $KP_RC: $(kprod_err authz)"
fi
got=$(payloads 0 2>&1 || true)
it_check "failed records are not stored" test "$got" = "r1 r2 r3 o1 n1"

# -- broker down without a leader change, then up again
it_check "broker 1 (leader of partition 0) down" mock_cmd "broker_down 1"
kprod down d1 -t "$topic" -p 0 -X message.timeout.ms=3000
if ((KP_RC != 0)) && grep -q "Message timed out" "$IT_TEST_DIR/down.err"; then
	ok "produce to the down broker's partition times out"
else
	not_ok "produce to the down broker's partition times out" \
		"kcat exit $KP_RC after ${KP_MS} ms: $(kprod_err down)"
fi
kprod down_other d2 -t "$topic" -p 1 -X message.timeout.ms=3000
it_check "partition 1 (broker 2) still takes records" test "$KP_RC" = 0
# A producer waiting on the down broker delivers once it is back up.
(
	rc=0
	timeout 30 kcat -b "$MOCK_BOOTSTRAP" -P -t "$topic" -p 0 "${idem[@]}" \
		-X message.timeout.ms=20000 <<<"u1" 2>"$IT_TEST_DIR/up.err" || rc=$?
	echo "$rc" >"$IT_TEST_DIR/up.rc"
) &
waiter=$!
mock_cmd "sleep 1500"
it_check "broker 1 up" mock_cmd "broker_up 1"
wait "$waiter" || true
it_check "the waiting producer delivers after broker_up" \
	test "$(cat "$IT_TEST_DIR/up.rc" 2>/dev/null)" = 0

# -- latency
mock_cmd "rtt 2 1500"
kprod rtt t1 -t "$topic" -p 1
it_check "rtt 1500 on broker 2: delivered, took ${KP_MS} ms (>= 1500)" \
	test "$KP_RC" = 0 -a "$KP_MS" -ge 1500
mock_cmd "rtt 2 0"
mock_cmd "push_errors_rtt 3 Produce NOT_LEADER_FOR_PARTITION:1000,NO_ERROR:500"
kprod err_rtt e1 -t "$topic" -p 2 "${idem[@]}" -X message.timeout.ms=10000
it_check "push_errors_rtt: delivered after error+delay, took ${KP_MS} ms (>= 1500)" \
	test "$KP_RC" = 0 -a "$KP_MS" -ge 1500

# -- topic error in Metadata
mock_cmd "topic ${topic}_authz 1"
mock_cmd "topic_error ${topic}_authz TOPIC_AUTHORIZATION_FAILED"
meta=$(timeout 10 kcat -b "$MOCK_BOOTSTRAP" -L -t "${topic}_authz" 2>&1 || true)
it_check "topic_error shows in Metadata" grep -q "Topic authorization failed" <<<"$meta"
mock_cmd "topic_error ${topic}_authz NO_ERROR"
meta=$(timeout 10 kcat -b "$MOCK_BOOTSTRAP" -L -t "${topic}_authz" 2>&1 || true)
it_check "topic_error NO_ERROR clears it" test "$(grep -c "authorization" <<<"$meta")" = 0

# -- ways to end it
rc=0
mock_stop || rc=$?
it_check "quit: exit 0" test "$rc" = 0

rc=0
if mock_start --brokers 1 --partitions 2; then
	kill -TERM "$MOCK_PID"
	for ((i = 0; i < 50; i++)); do
		mock_alive || break
		sleep 0.1
	done
	mock_stop || rc=$?
else
	rc=start
fi
it_check "SIGTERM: exit 0" test "$rc" = 0

rc=0
out=$(printf 'topic x 1\nleader x 0 1' | timeout 10 "$MOCK_BIN" --brokers 1 2>&1) || rc=$?
it_check "EOF: exit 0, every line answered (last one without newline)" \
	test "$rc" = 0 -a "$(sed 1d <<<"$out" | tr '\n' ' ')" = "ok ok "
rc=0
"$MOCK_BIN" --brokers 0 </dev/null >/dev/null 2>&1 || rc=$?
it_check "bad option: exit 2" test "$rc" = 2

it_summary
