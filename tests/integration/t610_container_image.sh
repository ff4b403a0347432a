#!/usr/bin/env bash
# t610_container_image -- the container image of deploy/docker/Dockerfile
# (make image: deploy/docker/build-image.sh, buildah with vfs storage and
# chroot isolation, on a Debian 12 base it bootstraps itself and caches
# in IMAGE_STORE, default /var/tmp/outbox-relay-image) runs the relay:
#  (a) the image builds (size and time printed); its configuration:
#      ENTRYPOINT ["outbox-relay"], no CMD, user 10001:10001, the port;
#      only runtime libraries (no compiler, no -dev package) inside;
#  (b) `buildah run` with the host's network and the configuration as a
#      container gets it: a mounted file (--config) plus OUTBOX_RELAY_*
#      variables (Kafka, http.listen, log.format=json), the PostgreSQL
#      password in a mounted file of mode 0444 (pg.password.file),
#      checked by a cluster of the test's own with scram-sha-256 for the
#      relay's role (port PGPORT+19, or +23, +27): the relay runs as
#      uid 10001, streams, /readyz says ready, the events written arrive
#      in the run's Kafka, and every log line is a JSON object (its
#      peak RSS is printed from the summary line);
#  (c) SIGTERM to the relay in the container: exit 0, passed on by
#      buildah run;
#  (d) a wrong password in the mounted file: exit 77 (the file is what
#      the relay authenticates with).
# Runs in `make check-image` (IT_IMAGE=1), not in `make check`: on 2
# CPUs a first build on a new machine bootstraps the base (50 s idle,
# 2 min busy), then the image takes 40 s to 2 min more; later runs
# reuse the base. Skipped, with the
# reason, when this machine cannot build images (build-image.sh exits 2:
# not root, no buildah or debootstrap, Debian's archive unreachable,
# buildah's chroot isolation refused); a build that fails otherwise fails.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
it_init

if [[ -z ${IT_IMAGE:-} ]]; then
	skip "container image" "make check-image runs it (IT_IMAGE=1): building the image takes 1 to 4.5 min"
	it_summary
fi

IMAGE_NAME=${IMAGE_NAME:-localhost/outbox-relay:it}
IMAGE_STORE=${IMAGE_STORE:-/var/tmp/outbox-relay-image}
export IMAGE_NAME IMAGE_STORE
bah() {
	buildah --root "$IMAGE_STORE/storage" --runroot "$IMAGE_STORE/run" \
		--storage-driver vfs "$@"
}

# ------------------------------------------------------------------ (a)
t0=$SECONDS
rc=0
"$IT_ROOT/deploy/docker/build-image.sh" >"$IT_TEST_DIR/build.out" 2>"$IT_TEST_DIR/build.log" || rc=$?
if ((rc == 0)); then
	ok "(a) image built in $((SECONDS - t0)) s: $(tail -n1 "$IT_TEST_DIR/build.out")"
	it_diag "$(grep '^\[image\]' "$IT_TEST_DIR/build.log")"
elif ((rc == 2)); then
	skip "container image" "$(grep '^\[image\] cannot build here' "$IT_TEST_DIR/build.log" | tail -n1 | sed 's/^\[image\] //')"
	it_summary
else
	not_ok "(a) image built (exit $rc)" "$(tail -n 30 "$IT_TEST_DIR/build.log")"
	it_summary
fi
ctr=t610-$$
env_on_cleanup "buildah --root '$IMAGE_STORE/storage' --runroot '$IMAGE_STORE/run' --storage-driver vfs rm '$ctr' >/dev/null 2>&1 || true"
bah from --name "$ctr" "$IMAGE_NAME" >/dev/null
bah inspect --type image "$IMAGE_NAME" >"$IT_TEST_DIR/inspect.json"
it_check "(a) ENTRYPOINT [\"outbox-relay\"], no CMD, user 10001:10001, port 8080" python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))["OCIv1"]["config"]
assert c["Entrypoint"] == ["outbox-relay"], c.get("Entrypoint")
assert not c.get("Cmd"), c.get("Cmd")
assert c["User"] == "10001:10001", c.get("User")
assert "8080/tcp" in c.get("ExposedPorts", {}), c.get("ExposedPorts")
' "$IT_TEST_DIR/inspect.json"
it_check "(a) runtime libraries only: no compiler, headers or -dev packages" \
	bah run --isolation chroot "$ctr" -- sh -c \
	'! command -v gcc && ! command -v cc && ! ls /usr/include/libpq-fe.h && ! dpkg -l | grep -E "^ii +[^ ]+-dev[: ]"'

# ------------------------------------------------------------------ (b)
own=$IT_TEST_DIR/own
port=
for p in $((PGPORT + 19)) $((PGPORT + 23)) $((PGPORT + 27)); do
	port_in_use 127.0.0.1 "$p" || { port=$p; break; }
done
db=t610_image
role=t610_relay
pw=T610scramPw4
type=t610_$(date +%s)
if [[ -z $port ]] || ! pg_start "$own" "$port" "$db" 2>"$IT_TEST_DIR/pg.err"; then
	not_ok "own PostgreSQL cluster on port $port" "$(cat "$IT_TEST_DIR/pg.err")"
	it_summary
fi
sql() { psql_q "$port" "$db" "$1"; }
echo "password_encryption = 'scram-sha-256'" >>"$own/pg/data/postgresql.conf"
sql "SELECT pg_reload_conf()" >/dev/null
sleep 0.5
sql "CREATE ROLE $role LOGIN REPLICATION PASSWORD '$pw'" >/dev/null
psql_f "$port" "$db" "$IT_ROOT/sql/outbox.sql" >/dev/null
sql "SELECT pg_create_logical_replication_slot('$db', 'wal2json')" >/dev/null
hba=$own/pg/data/pg_hba.conf
{
	echo "host all $role 127.0.0.1/32 scram-sha-256"
	cat "$hba"
} >"$hba.new"
mv "$hba.new" "$hba"
chown postgres:postgres "$hba" 2>/dev/null || true
sql "SELECT pg_reload_conf()" >/dev/null
it_check "(b) the relay's role must authenticate (no password: refused)" \
	bash -c "! PGPASSWORD= psql -X -w -h 127.0.0.1 -p $port -U $role -d $db -c 'SELECT 1' 2>/dev/null"

cdir=$IT_TEST_DIR/container
mkdir -p "$cdir"
chmod 755 "$cdir"
cat >"$cdir/relay.conf" <<-EOF
	# mounted at /etc/outbox-relay/relay.conf
	pg.conninfo = host=127.0.0.1 port=$port dbname=$db user=$role
	pg.password.file = /etc/outbox-relay/secret/password
	slot.name = $db
	reconnect.backoff.ms = 100
EOF
chmod 0444 "$cdir/relay.conf"
printf '%s\n' "$pw" >"$cdir/password"
chmod 0444 "$cdir/password"

# run_relay LOG: the image's relay in the background (RUN_PID: buildah).
run_relay() {
	bah run --isolation chroot --network host \
		-v "$cdir/relay.conf:/etc/outbox-relay/relay.conf:ro" \
		-v "$cdir/password:/etc/outbox-relay/secret/password:ro" \
		-e OUTBOX_RELAY_KAFKA_BOOTSTRAP_SERVERS="$KAFKA_BROKERS" \
		-e OUTBOX_RELAY_HTTP_LISTEN=127.0.0.1:0 \
		-e OUTBOX_RELAY_LOG_FORMAT=json \
		"$ctr" -- outbox-relay --config /etc/outbox-relay/relay.conf \
		</dev/null >"$1" 2>&1 &
	RUN_PID=$!
}
# relay_pid: the relay process under buildah run (its descendant).
relay_pid() {
	local queue=("$RUN_PID") p kid
	while ((${#queue[@]} > 0)); do
		p=${queue[0]}
		queue=("${queue[@]:1}")
		for kid in $(pgrep -P "$p" 2>/dev/null || true); do
			if [[ $(cat "/proc/$kid/comm" 2>/dev/null) == outbox-relay ]]; then
				echo "$kid"
				return 0
			fi
			queue+=("$kid")
		done
	done
	return 1
}
# wait_run SECS: buildah run's exit code in RC, 124 if still running.
wait_run() {
	local i
	RC=124
	for ((i = 0; i < $1 * 10; i++)); do
		kill -0 "$RUN_PID" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$RUN_PID" 2>/dev/null; then
		kill -TERM "$RUN_PID" 2>/dev/null || true
		wait "$RUN_PID" 2>/dev/null || true
		return
	fi
	RC=0
	wait "$RUN_PID" || RC=$?
}

log=$IT_TEST_DIR/relay.log
run_relay "$log"
env_on_cleanup 'kill -TERM "$RUN_PID" 2>/dev/null || true'
if it_wait_log "$log" 'streaming from slot' 60; then
	ok "(b) the relay in the container streams (password from the mounted file)"
else
	not_ok "(b) the relay in the container streams" "$(it_show_log "$log")"
fi
rpid=$(relay_pid) || rpid=
it_check "(b) it runs as uid 10001" test "$(awk '/^Uid:/ {print $2}' "/proc/${rpid:-0}/status" 2>/dev/null)" = 10001
hport=$(sed -n 's/.*health endpoint on http:[^ ]* (port \([0-9][0-9]*\)).*/\1/p' "$log" | sed -n 1p)
ready=
for ((i = 0; i < 40; i++)); do
	ready=$(curl -s -m 2 "http://127.0.0.1:${hport:-1}/readyz" || true)
	[[ $ready == ready ]] && break
	sleep 0.25
done
it_check "(b) /readyz from the host: ready (got '$ready')" test "$ready" = ready
for i in 1 2 3; do
	IT_EVENTS_PORT=$port it_event "$db" "$type" "agg-$i" Made "{\"n\": $i}"
done
out=$IT_TEST_DIR/out.json
if it_consume_wait "outbox.event.$type" "$out" 3 30; then
	ok "(b) the 3 events arrive in Kafka"
else
	not_ok "(b) the 3 events arrive in Kafka ($(it_count "$out"))" "$(it_show_log "$log")"
fi
last=$(sql "SELECT pg_current_wal_lsn()")

# ------------------------------------------------------------------ (c)
if [[ -n $rpid ]]; then
	kill -TERM "$rpid"
	wait_run 40
else
	wait_run 0
fi
it_check "(c) SIGTERM: the container exits 0 (got $RC)" test "$RC" -eq 0
conf_lsn=$(sql "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = '$db'")
it_check "(c) the final status update confirmed the events ($conf_lsn >= $last)" lsn_ge "$conf_lsn" "$last"
it_check "(b) every log line is a JSON object with ts, level and msg" python3 -c '
import json, sys
n = kafka = 0
for line in open(sys.argv[1]):
    d = json.loads(line)
    assert {"ts", "level", "msg"} <= d.keys(), line
    n += 1
    kafka += d["msg"].startswith("kafka: ")
    if "streaming from slot" in d["msg"]:
        assert d.get("slot") == sys.argv[2], line
assert n >= 5 and kafka >= 1, (n, kafka)
print(n, "lines,", kafka, "from librdkafka")
' "$log" "$db"
rss=$(python3 -c '
import json, re, sys
for line in open(sys.argv[1]):
    m = re.search(r"peak_rss_kb=(\d+)", json.loads(line)["msg"])
    if m:
        print(int(m.group(1)) // 1024)
' "$log" 2>/dev/null || true)
it_diag "relay in the container: peak RSS ${rss:-?} MiB for 3 events"

# ------------------------------------------------------------------ (d)
printf 'not-the-password\n' >"$cdir/password"
log=$IT_TEST_DIR/wrong.log
run_relay "$log"
wait_run 40
it_check "(d) a wrong password in the mounted file: exit 77 (got $RC)" test "$RC" -eq 77
if grep -qF -- "$pw" "$log" "$IT_TEST_DIR/relay.log" || grep -qF -- not-the-password "$log"; then
	not_ok "(b)(d) no password in the container's log"
else
	ok "(b)(d) no password in the container's log"
fi

it_summary
