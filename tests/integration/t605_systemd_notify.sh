#!/usr/bin/env bash
# t605_systemd_notify -- Type=notify: the relay speaks systemd's
# notification protocol to NOTIFY_SOCKET (a datagram socket this test
# binds, as the service manager would), with WATCHDOG_USEC=2000000:
#  (a) relay A, streaming: READY=1 comes exactly once, with STATUS=
#      "streaming: ..." in the same datagram (before it only STATUS=
#      "connecting" and pings); WATCHDOG=1 from the start to STOPPING=1,
#      never more than 2 s apart (systemd's limit; asked for every 1 s)
#      and at least 3 times in the 6 s before SIGTERM; STATUS= updates
#      carry "events in flight" and "confirmed X/X";
#  (b) relay B on the same slot, a standby: READY=1 with STATUS=
#      "standby: ..." (a standby is started: it does its job);
#  (c) SIGTERM: STOPPING=1 after READY=1 and nothing but WATCHDOG=1
#      after it; exit 0. WATCHDOG_PID naming another process turns the
#      pings off (sd_watchdog_enabled), READY=1 still comes;
#  (d) without NOTIFY_SOCKET nothing is sent and the relay runs as before
#      (every other test).
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

db=t605_systemd_notify
type=t605_$(date +%s)
it_setup_db "$db"
conf=$IT_TEST_DIR/relay.conf
it_write_config "$conf" "$db" standby.retry.ms=500 reconnect.backoff.ms=100

# listen NAME: binds $IT_TEST_DIR/NAME.sock and writes every datagram
# received as one JSON line (seconds since start, text) to NAME.msgs,
# for at most 60 s or until NAME.stop exists.
listen() {
	local name=$1
	python3 - "$IT_TEST_DIR/$name.sock" "$IT_TEST_DIR/$name.msgs" "$IT_TEST_DIR/$name.stop" <<-'PY' &
	import json, os, socket, sys, time
	path, out, stop = sys.argv[1:4]
	s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
	s.bind(path)
	s.settimeout(0.2)
	t0 = time.monotonic()
	with open(out, "w") as f:
	    while time.monotonic() - t0 < 60 and not os.path.exists(stop):
	        try:
	            data = s.recv(4096)
	        except socket.timeout:
	            continue
	        f.write(json.dumps([round(time.monotonic() - t0, 3), data.decode()]) + "\n")
	        f.flush()
	PY
	LISTENER=$!
	for ((i = 0; i < 50; i++)); do
		[[ -S $IT_TEST_DIR/$name.sock ]] && return 0
		sleep 0.1
	done
	return 1
}
# has NAME REGEX SECS: some message of NAME matches REGEX within SECS.
has() { it_wait_log "$IT_TEST_DIR/$1.msgs" "$2" "$3"; }

# ------------------------------------------------------------------ (a)
listen a || { not_ok "notify socket a"; it_summary; }
listener_a=$LISTENER
NOTIFY_SOCKET=$IT_TEST_DIR/a.sock WATCHDOG_USEC=2000000 \
	it_start_relay "$conf" "$IT_TEST_DIR/a.log"
pid_a=$IT_RELAY_PID
it_check "(a) relay A sends READY=1" has a 'READY=1' 30
it_event "$db" "$type" a1
it_check "(a) the event arrives" it_consume_wait "outbox.event.$type" "$IT_TEST_DIR/out.json" 1 30

# ------------------------------------------------------------------ (b)
listen b || { not_ok "notify socket b"; it_summary; }
listener_b=$LISTENER
NOTIFY_SOCKET=$IT_TEST_DIR/b.sock WATCHDOG_USEC=1000000 WATCHDOG_PID=1 \
	it_start_relay "$conf" "$IT_TEST_DIR/b.log"
pid_b=$IT_RELAY_PID
it_check "(b) standby B sends READY=1 with STATUS=standby" has b 'READY=1\\nSTATUS=standby: ' 20
sleep 6
rc=0; it_stop_relay "$pid_a" || rc=$?
it_check "(c) relay A exits 0 on SIGTERM" test "$rc" -eq 0
rc=0; it_stop_relay "$pid_b" || rc=$?
it_check "(c) relay B exits 0 on SIGTERM" test "$rc" -eq 0
sleep 0.5
touch "$IT_TEST_DIR/a.stop" "$IT_TEST_DIR/b.stop"
wait "$listener_a" "$listener_b" 2>/dev/null || true

# The order, from the recorded datagrams.
it_check "(a)(c) relay A: READY=1 once with STATUS=streaming, pings at most 2 s apart, STOPPING=1 last" \
	python3 - "$IT_TEST_DIR/a.msgs" <<-'PY'
	import json, re, sys
	msgs = [json.loads(l) for l in open(sys.argv[1])]
	texts = [m[1] for m in msgs]
	assert texts, "no message at all"
	ready = [i for i, t in enumerate(texts) if "READY=1" in t]
	assert len(ready) == 1, ("READY=1 count", texts)
	assert texts[ready[0]].startswith("READY=1\nSTATUS=streaming: "), texts[ready[0]]
	assert all(t in ("WATCHDOG=1", "STATUS=connecting") for t in texts[:ready[0]]), texts[:ready[0]]
	stop = [i for i, t in enumerate(texts) if "STOPPING=1" in t]
	assert len(stop) == 1 and stop[0] > ready[0], ("STOPPING=1", texts)
	assert all(t == "WATCHDOG=1" for t in texts[stop[0] + 1:]), texts[stop[0]:]
	t_stop = msgs[stop[0]][0]
	pings = [m[0] for m in msgs if m[1] == "WATCHDOG=1" and m[0] < t_stop]
	gaps = [b - a for a, b in zip([0.0] + pings, pings + [t_stop])]
	assert max(gaps) <= 2.0, ("a gap between pings over WATCHDOG_USEC", gaps)
	last6 = [t for t in pings if t >= t_stop - 6]
	assert len(last6) >= 3, ("WATCHDOG=1 in the 6 s before STOPPING", pings)
	assert any(re.match(r"STATUS=streaming: \d+ events in flight, outbox lag [0-9.]+ s, confirmed [0-9A-F]+/[0-9A-F]+$", t)
	           for t in texts), texts
	print(len(texts), "messages, longest gap between pings", max(gaps))
	PY
it_check "(b)(c) standby B: READY once, no WATCHDOG=1 (WATCHDOG_PID is not B), STOPPING=1" \
	python3 - "$IT_TEST_DIR/b.msgs" <<-'PY'
	import json, sys
	texts = [json.loads(l)[1] for l in open(sys.argv[1])]
	assert sum("READY=1" in t for t in texts) == 1, texts
	assert "WATCHDOG=1" not in texts, texts
	assert any("STOPPING=1" in t for t in texts), texts
	PY
it_diag "relay A's first messages: $(head -n 3 "$IT_TEST_DIR/a.msgs" | tr '\n' ' ')"

it_summary
