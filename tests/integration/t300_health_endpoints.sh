#!/usr/bin/env bash
# t300_health_endpoints -- the health endpoint (http.listen=127.0.0.1:0, a
# free port read back from the relay's log), with curl, while the relay
# streams:
#  - /livez and /healthz: 200 "ok"; /readyz: 200 "ready";
#  - /slot: 200 JSON (python3 -m json.tool) with state ok, the slot name,
#    relay.state streaming and server.wal_status; ?pretty=1 is indented
#    (and the same document);
#  - /metrics: 200, Content-Type text/plain; version=0.0.4, every line
#    parsed strictly (# HELP / # TYPE once per family and before its
#    samples, families not interleaved, `name{labels} value` without
#    timestamps, counters end in _total, histogram buckets increasing and
#    cumulative with +Inf last and = _count); build_info, health_state,
#    events_published_total, slot_retained_wal_bytes and the
#    commit_to_ack_seconds histogram present; events_published_total and
#    the histogram's _count grow by the events written;
#  - bad requests: POST -> 405 with Allow: GET, HEAD; /nope -> 404; a
#    64 KiB header -> 431; a 64 KiB URI -> 414; /livez still 200 after them
#    and the relay still publishes;
#  - no response (bodies and headers, every request of this test) contains
#    the conninfo password (pg.conninfo ... password=S3cretPw9; the server
#    trusts loopback), the kafka.sasl.password (accepted with the
#    plaintext protocol, see t240), nor the word "password";
#  - Kafka down (the shared broker SIGKILLed, restarted at the end and in
#    a cleanup hook) with an event written: /readyz turns 503 with a reason
#    naming kafka (or the outbox lag) within 40 s, /metrics shows kafka_up
#    0 and the event in flight, and /readyz is 200 again after the
#    restart; /livez stays 200 all along (no dependency checks);
#  - a stuck loop: a second relay with RELAY_TEST_STALL_MS=6000 and
#    http.livez.timeout.ms=2000; SIGUSR1 blocks its loop for 6 s: /livez
#    turns 503 within 5 s, 200 again afterwards, the relay keeps running
#    and exits 0 on SIGTERM.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

it_scenario t300_health_endpoints
pw=S3cretPw9
sasl_pw=S3cretPw9k
hdir=$IT_TEST_DIR/http
mkdir -p "$hdir"
nreq=0

# req NAME URL [CURL_ARGS...]: one request; body in $hdir/N_NAME.body,
# headers in .hdr (every response is kept for the secret scan); sets
# CODE (000 when curl got no response) and BODY.
req() {
	local name=$1 url=$2 f
	shift 2
	nreq=$((nreq + 1))
	f=$hdir/${nreq}_$name
	CODE=$(curl -s -m 10 -D "$f.hdr" -o "$f.body" -w '%{http_code}' "$@" "$url" \
		2>"$f.err") || true
	[[ -n $CODE ]] || CODE=000
	BODY=$(cat "$f.body" 2>/dev/null || true)
	LAST=$f
}

# Strict Prometheus text format 0.0.4 parser. Prints "series value" per
# sample (series exactly as written); exits 1 naming the first bad line.
prom_parse() {
	python3 - "$1" <<-'PY'
	import math, re, sys
	NAME = r'[a-zA-Z_:][a-zA-Z0-9_:]*'
	LABEL = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"'
	SAMPLE = re.compile(r'^(%s)(\{(?:%s(?:,%s)*)?\})? (\S+)$' % (NAME, LABEL, LABEL))
	HELP = re.compile(r'^# HELP (%s) (.*)$' % NAME)
	TYPE = re.compile(r'^# TYPE (%s) (counter|gauge|histogram|summary|untyped)$' % NAME)
	def fail(n, line, why):
	    print("line %d: %s: %r" % (n, why, line[:200]))
	    sys.exit(1)
	text = open(sys.argv[1], encoding="utf-8").read()
	if not text.endswith("\n"):
	    fail(0, text[-50:], "no final newline")
	helps, types, done, out = {}, {}, set(), []
	current = None
	hist = {}
	for n, line in enumerate(text[:-1].split("\n"), 1):
	    if line.startswith("#"):
	        m = HELP.match(line) or TYPE.match(line)
	        if not m:
	            fail(n, line, "comment is neither # HELP nor # TYPE")
	        fam = m.group(1)
	        table = helps if line.startswith("# HELP") else types
	        if fam in table:
	            fail(n, line, "second %s for %s" % (line[2:6], fam))
	        if fam != current:
	            if fam in done:
	                fail(n, line, "family %s interleaved" % fam)
	            done.add(fam)
	            current = fam
	        table[fam] = m.group(2)
	        continue
	    m = SAMPLE.match(line)
	    if not m:
	        fail(n, line, "not `name{labels} value`")
	    name, labels, value = m.group(1), m.group(2) or "", m.group(3)
	    try:
	        v = float(value)
	    except ValueError:
	        fail(n, line, "bad value")
	    if value.lower() in ("inf", "infinity", "nan") or (math.isinf(v) and value not in ("+Inf", "-Inf")):
	        fail(n, line, "value not in Prometheus spelling")
	    fam = name
	    if types.get(current) == "histogram" and re.sub(r'_(bucket|sum|count)$', '', name) == current:
	        fam = current
	    if fam != current:
	        fail(n, line, "sample outside its family (current %s)" % current)
	    if fam not in types or fam not in helps:
	        fail(n, line, "sample before # HELP and # TYPE")
	    if types[fam] == "counter" and not name.endswith("_total"):
	        fail(n, line, "counter without _total")
	    if types[fam] == "histogram":
	        h = hist.setdefault(fam, {"buckets": [], "count": None})
	        if name.endswith("_bucket"):
	            le = re.search(r'le="([^"]*)"', labels)
	            if not le:
	                fail(n, line, "bucket without le")
	            h["buckets"].append((float(le.group(1)), v))
	        elif name.endswith("_count"):
	            h["count"] = v
	    out.append("%s%s %s" % (name, labels, value))
	for fam, h in hist.items():
	    b = h["buckets"]
	    if not b or b[-1][0] != math.inf:
	        fail(0, fam, "histogram without +Inf bucket last")
	    if any(b[i][0] >= b[i + 1][0] or b[i][1] > b[i + 1][1] for i in range(len(b) - 1)):
	        fail(0, fam, "histogram buckets not increasing and cumulative")
	    if h["count"] != b[-1][1]:
	        fail(0, fam, "_count != +Inf bucket")
	for fam in types:
	    if fam not in helps:
	        fail(0, fam, "# TYPE without # HELP")
	print("\n".join(out))
	PY
}

# scrape NAME: GET /metrics into $LAST.body, parsed into $LAST.parsed;
# returns non-zero when the request or the parse failed.
scrape() {
	req "$1" "$base/metrics"
	[[ $CODE == 200 ]] && prom_parse "$LAST.body" >"$LAST.parsed"
}

insert_events() { # N AGG
	it_sql "$db" "INSERT INTO outbox (aggregate_type, aggregate_id, event_type, payload)
		SELECT '$type', '$2', 'Health', jsonb_build_object('n', g)
		FROM generate_series(1, $1) g"
}

env_on_cleanup it_restore_kafka

# ------------------------------------------------------------- the relay
it_write_config "$conf" "$db" \
	"pg.conninfo=$(it_conninfo "$db") password=$pw" \
	"kafka.sasl.password=$sasl_pw" \
	http.listen=127.0.0.1:0 watchdog.interval.ms=500 status.interval.ms=500 \
	kafka.reconnect.backoff.max.ms=1000 shutdown.timeout.ms=5000
it_start_relay "$conf" "$log"
it_check "relay holds the slot" it_wait_slot_active "$db" "$db" 30
if port=$(it_health_port "$log"); then
	ok "health endpoint port from the log: $port"
else
	not_ok "health endpoint port from the log" "$(it_show_log "$log")"
	it_summary
fi
base=http://127.0.0.1:$port

# A first watchdog sample takes up to watchdog.interval.ms, and one taken
# before START_REPLICATION reached the server shows the slot inactive.
for ((i = 0; i < 50; i++)); do
	req slot_wait "$base/slot"
	[[ $CODE == 200 && $BODY == *'"wal_status":"'* && $BODY == *'"active":true'* ]] && break
	sleep 0.2
done

# ------------------------------------------------------------- the probes
req livez "$base/livez"
it_check "/livez 200 \"ok\" (got $CODE '$BODY')" test "$CODE:$BODY" = "200:ok"
req healthz "$base/healthz"
it_check "/healthz 200 \"ok\" (got $CODE '$BODY')" test "$CODE:$BODY" = "200:ok"
req readyz "$base/readyz"
it_check "/readyz 200 \"ready\" (got $CODE '$BODY')" test "$CODE:$BODY" = "200:ready"
req livez_head "$base/livez" -I
it_check "HEAD /livez 200 (got $CODE)" test "$CODE" = 200

# ------------------------------------------------------------- /slot
req slot "$base/slot"
slotf=$LAST.body
it_check "/slot 200 (got $CODE)" test "$CODE" = 200
it_check "/slot Content-Type application/json" grep -qi '^content-type: application/json' "$LAST.hdr"
it_check "/slot parses (python3 -m json.tool)" python3 -m json.tool "$slotf"
got=$(it_json_get "$slotf" '"|".join(map(str, [d["state"], d["slot"], d["relay"]["state"], d["server"]["wal_status"], d["server"]["active"]]))' 2>&1 || true)
it_check "/slot state ok, slot $db, relay streaming, wal_status reserved, active (got $got)" \
	test "$got" = "ok|$db|streaming|reserved|True"
it_check "/slot compact: one line" test "$(grep -c . "$slotf")" = 1
got=$(it_json_get "$slotf" 'd["plugin"]' 2>&1 || true)
it_check "/slot names the plugin, $RELAY_PLUGIN (got $got)" test "$got" = "$RELAY_PLUGIN"
req slot_pretty "$base/slot?pretty=1"
prettyf=$LAST.body
it_check "/slot?pretty=1 200 (got $CODE)" test "$CODE" = 200
it_check "/slot?pretty=1 parses" python3 -m json.tool "$prettyf"
it_check "/slot?pretty=1 indented (several lines, two-space keys)" \
	grep -qE '^  "state": "ok",$' "$prettyf"
same=$(python3 - "$slotf" "$prettyf" <<-'PY'
	import json, sys
	a, b = (json.load(open(p)) for p in sys.argv[1:3])
	for d in (a, b):
	    for k in ("generated_at",):
	        d.pop(k, None)
	    d.pop("server", None); d.pop("relay", None)
	    for k in ("growth_bytes_per_second", "outbox_lag_seconds", "since_confirm_seconds", "eta_seconds"):
	        d.pop(k, None)
	print("same" if a == b else "differ: %r vs %r" % (a, b))
	PY
)
it_check "/slot?pretty=1 is the same document (slot, state, reasons, thresholds): $same" \
	test "$same" = same

# ------------------------------------------------------------- /metrics
if scrape metrics0; then
	ok "/metrics 200 and every line parses strictly ($(grep -c . "$LAST.parsed") samples)"
else
	not_ok "/metrics 200 and every line parses strictly" "HTTP $CODE: $(head -n 3 "$LAST.parsed" 2>/dev/null)"
fi
m0=$LAST
it_check "/metrics Content-Type text/plain; version=0.0.4" \
	grep -qiE '^content-type: text/plain; *version=0\.0\.4' "$m0.hdr"
missing=
for s in 'outbox_relay_build_info{version="' outbox_relay_health_state \
	outbox_relay_kafka_up outbox_relay_events_received_total \
	outbox_relay_events_published_total outbox_relay_slot_retained_wal_bytes \
	outbox_relay_slot_confirmed_lag_bytes 'outbox_relay_slot_wal_status{status="reserved"} 1' \
	'outbox_relay_commit_to_ack_seconds_bucket{le="+Inf"}' \
	outbox_relay_commit_to_ack_seconds_count outbox_relay_commit_to_ack_seconds_sum \
	outbox_relay_inflight_events outbox_relay_confirmed_lsn; do
	grep -qF -- "$s" "$m0.parsed" 2>/dev/null || missing+=" $s"
done
it_check "/metrics has the key families and samples${missing:+ (missing:$missing)}" test -z "$missing"
it_check "/metrics health_state 0, kafka_up 1" \
	test "$(it_metric_in "$m0.parsed" outbox_relay_health_state):$(it_metric_in "$m0.parsed" outbox_relay_kafka_up)" = "0:1"
pub0=$(it_metric_in "$m0.parsed" outbox_relay_events_published_total)
cnt0=$(it_metric_in "$m0.parsed" outbox_relay_commit_to_ack_seconds_count)

nev=7
insert_events "$nev" agg-1
if it_consume_wait "$topic" "$IT_TEST_DIR/out1.json" "$nev" 30; then
	ok "$nev events reached Kafka"
else
	not_ok "$nev events reached Kafka" "$(it_show_log "$log")"
fi
pub1=$pub0
for ((i = 0; i < 25; i++)); do
	if scrape metrics1; then
		pub1=$(it_metric_in "$LAST.parsed" outbox_relay_events_published_total)
		((pub1 < pub0 + nev)) || break
	fi
	sleep 0.2
done
m1=$LAST
cnt1=$(it_metric_in "$m1.parsed" outbox_relay_commit_to_ack_seconds_count)
it_check "events_published_total grew by $nev ($pub0 -> $pub1)" test "$pub1" -eq $((pub0 + nev))
it_check "commit_to_ack_seconds_count grew by $nev ($cnt0 -> $cnt1)" test "$cnt1" -eq $((cnt0 + nev))
it_check "events_published_by_topic_total{topic=\"$topic\"} $nev" \
	grep -qxF "outbox_relay_events_published_by_topic_total{topic=\"$topic\"} $nev" "$m1.parsed"
rwb=$(it_metric_in "$m1.parsed" outbox_relay_slot_retained_wal_bytes)
it_check "slot_retained_wal_bytes a non-negative integer ($rwb)" grep -qxE '[0-9]+' <<<"$rwb"

# ------------------------------------------------------------- bad requests
req post "$base/livez" -X POST -d x=1
it_check "POST /livez -> 405 (got $CODE)" test "$CODE" = 405
it_check "405 carries Allow: GET, HEAD" grep -qiE '^allow: GET, HEAD' "$LAST.hdr"
req put_slot "$base/slot" -X PUT -d '{}'
it_check "PUT /slot -> 405 (got $CODE)" test "$CODE" = 405
req delete_metrics "$base/metrics" -X DELETE
it_check "DELETE /metrics -> 405 (got $CODE)" test "$CODE" = 405
req nope "$base/nope"
it_check "GET /nope -> 404 (got $CODE)" test "$CODE" = 404
req livez_slash "$base/livez/"
it_check "GET /livez/ -> 404 (exact paths; got $CODE)" test "$CODE" = 404
big=$(head -c 65536 /dev/zero | tr '\0' a)
req big_header "$base/livez" -H "X-Big: $big"
it_check "64 KiB header -> 431 (got $CODE)" test "$CODE" = 431
req big_uri "$base/livez?$big"
it_check "64 KiB URI -> 414 (got $CODE)" test "$CODE" = 414
req big_path "$base/$big"
it_check "64 KiB path -> 414 (got $CODE)" test "$CODE" = 414
# Many headers, each small, adding up past the limit.
hdrs=()
for ((i = 0; i < 400; i++)); do hdrs+=(-H "X-H$i: $(printf '%060d' "$i")"); done
req many_headers "$base/livez" "${hdrs[@]}"
it_check "400 headers of 60 bytes -> 431 (got $CODE)" test "$CODE" = 431
req livez_after "$base/livez"
it_check "/livez still 200 after the bad requests (got $CODE)" test "$CODE:$BODY" = "200:ok"
it_check "relay alive after the bad requests" it_relay_alive
insert_events 1 agg-2
if it_consume_wait "$topic" "$IT_TEST_DIR/out2.json" $((nev + 1)) 30; then
	ok "relay still publishes after the bad requests"
else
	not_ok "relay still publishes after the bad requests" "$(it_show_log "$log")"
fi

# ------------------------------------------------------------- Kafka down
kafka_stop_hard "$IT_DIR"
t_down=$SECONDS
insert_events 1 agg-3
ready_down="" ready_body="" livez_bad=""
for ((i = 0; i < 80; i++)); do
	req readyz_down "$base/readyz"
	if [[ $CODE == 503 ]]; then
		ready_down=$((SECONDS - t_down))
		ready_body=$BODY
		break
	fi
	req livez_down "$base/livez"
	[[ $CODE == 200 ]] || livez_bad+=" $CODE"
	sleep 0.5
done
if [[ -n $ready_down ]]; then
	ok "/readyz 503 ${ready_down} s after the broker was killed"
else
	not_ok "/readyz 503 within 40 s of the broker being killed" \
		"last: $CODE '$BODY'
$(it_show_log "$log" 15)"
fi
it_check "/readyz reason names kafka or the outbox lag ('$ready_body')" \
	grep -qiE 'kafka|outbox lag' <<<"$ready_body"
# The event written meanwhile waits in flight: the metrics say so.
down_m=
for ((i = 0; i < 50; i++)); do
	if scrape metrics_down; then
		down_m="$(it_metric_in "$LAST.parsed" outbox_relay_kafka_up) $(it_metric_in "$LAST.parsed" outbox_relay_inflight_events)"
		[[ $down_m == "0 1" ]] && break
	fi
	sleep 0.2
done
it_check "while down: /metrics kafka_up 0 and inflight_events 1 (got '$down_m')" \
	test "$down_m" = "0 1"
req livez_down2 "$base/livez"
it_check "/livez 200 while Kafka is down (no dependency checks; bad:${livez_bad:- none})" \
	test "$CODE:${livez_bad:-}" = "200:"
if kafka_restart "$IT_DIR"; then
	ok "kafka restarted after $((SECONDS - t_down)) s"
else
	not_ok "kafka restarted"
fi
t_up=$SECONDS
ready_up=
for ((i = 0; i < 120; i++)); do
	req readyz_up "$base/readyz"
	if [[ $CODE == 200 ]]; then
		ready_up=$((SECONDS - t_up))
		break
	fi
	sleep 0.5
done
if [[ -n $ready_up ]]; then
	ok "/readyz 200 again ${ready_up} s after the restart"
else
	not_ok "/readyz 200 again within 60 s of the restart" "last: $CODE '$BODY'
$(it_show_log "$log" 15)"
fi
if it_consume_wait "$topic" "$IT_TEST_DIR/out3.json" $((nev + 2)) 60; then
	ok "the event written while Kafka was down arrived"
else
	not_ok "the event written while Kafka was down arrived" "$(it_show_log "$log" 15)"
fi

it_stop_checked "relay exits 0 on SIGTERM"

# ------------------------------------------------------------- stuck loop
conf2=$IT_TEST_DIR/relay-stall.conf
log2=$IT_TEST_DIR/relay-stall.log
it_write_config "$conf2" "$db" http.listen=127.0.0.1:0 http.livez.timeout.ms=2000 \
	watchdog.interval.ms=500
RELAY_TEST_STALL_MS=6000 it_start_relay "$conf2" "$log2"
stall_pid=$IT_RELAY_PID
it_check "stall relay holds the slot" it_wait_slot_active "$db" "$db" 30
if port2=$(it_health_port "$log2"); then
	base2=http://127.0.0.1:$port2
	req livez_pre "$base2/livez"
	it_check "stall relay: /livez 200 before the stall (got $CODE)" test "$CODE" = 200
	kill -USR1 "$stall_pid"
	t_stall=$SECONDS
	stalled="" stall_body=""
	for ((i = 0; i < 25; i++)); do
		req livez_stall "$base2/livez"
		if [[ $CODE == 503 ]]; then
			stalled=$((SECONDS - t_stall))
			stall_body=$BODY
			break
		fi
		sleep 0.2
	done
	if [[ -n $stalled ]]; then
		ok "/livez 503 during the stall (after ~$stalled s: '$stall_body')"
	else
		not_ok "/livez 503 within 5 s of SIGUSR1" "last: $CODE '$BODY'
$(it_show_log "$log2" 10)"
	fi
	it_check "stall relay logged the test hook" grep -q 'test hook: blocking the loop' "$log2"
	recovered=
	for ((i = 0; i < 50; i++)); do
		req livez_post "$base2/livez"
		if [[ $CODE == 200 ]]; then
			recovered=$((SECONDS - t_stall))
			break
		fi
		sleep 0.2
	done
	if [[ -n $recovered ]]; then
		ok "/livez 200 again after the stall (~$recovered s after SIGUSR1)"
	else
		not_ok "/livez 200 again within 10 s after the stall" "last: $CODE '$BODY'"
	fi
	it_check "stall relay still running" it_relay_alive "$stall_pid"
	insert_events 1 agg-4
	if it_consume_wait "$topic" "$IT_TEST_DIR/out4.json" $((nev + 3)) 30; then
		ok "stall relay publishes after the stall"
	else
		not_ok "stall relay publishes after the stall" "$(it_show_log "$log2" 15)"
	fi
else
	not_ok "stall relay: health endpoint port from the log" "$(it_show_log "$log2")"
fi
it_stop_checked "stall relay exits 0 on SIGTERM" "$stall_pid"

# ------------------------------------------------------------- secrets
hits=$(grep -rliF -e "$pw" -e "$sasl_pw" -e password "$hdir" --include='*.body' \
	--include='*.hdr' || true)
it_check "no response ($nreq requests, bodies and headers) contains the passwords or \"password\"${hits:+: $hits}" \
	test -z "$hits"
it_check "the scan covers /slot and /metrics bodies" \
	test -s "$slotf" -a -s "$m1.body"

it_drop_db "$db" >/dev/null 2>&1 || true
it_summary
