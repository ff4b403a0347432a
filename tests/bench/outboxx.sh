#!/usr/bin/env bash
# tests/bench/outboxx.sh -- builds Outboxx (a Zig CDC relay, PostgreSQL
# pgoutput -> Kafka, that `make bench` can measure beside the relay as the
# W1 system "outboxx") from a checkout you made, with the Zig compiler of
# the ziglang package on PyPI, installed into a venv under build/outboxx.
# The manual step of docs/benchmarks.md ("Outboxx as a peer"): nothing of
# Outboxx is kept in this repository and this script downloads no source;
# it installs only the ziglang wheel, with pip.
#
#   OUTBOXX_SRC=DIR     Outboxx's source tree (tag v0.3.0-zig0.16 was
#                       measured; its build.zig.zon asks for Zig 0.16.0)
#   OUTBOXX_ZIG=VER     ziglang version (default: DIR's build.zig.zon
#                       minimum_zig_version)
#   OUTBOXX_DEPS=DIR    optional: the Zig packages Outboxx depends on, each
#                       as a directory or a tarball of the pinned commit,
#                       put into the package cache with `zig fetch` (their
#                       hashes must match the build.zig.zon files'). Without
#                       it, `zig build` downloads them from where
#                       build.zig.zon says, which needs that host.
#   OUTBOXX_NO_PROTOC=1 for a machine without that access: zig-protobuf
#                       (a dependency of opentelemetry-zig) asks for
#                       a protoc release archive in its build script for its
#                       own bootstrap step, which Outboxx does not use; this
#                       replaces that one line in the fetched copy
#                       (zig-pkg/protobuf-*/build.zig) before the build.
#
# Result: build/outboxx/bin/outboxx. Then, e.g.:
#   OUTBOXX_BIN=$PWD/build/outboxx/bin/outboxx BENCH_ONLY=w1 \
#       BENCH_W1_SYSTEMS="ceil-pgo relay-pgo outboxx" make bench
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
SRC=${OUTBOXX_SRC:?OUTBOXX_SRC=DIR: a checkout of Outboxx (see docs/benchmarks.md)}
SRC=$(cd "$SRC" && pwd)
[[ -f $SRC/build.zig.zon ]] || {
	echo "outboxx: $SRC/build.zig.zon missing: not an Outboxx checkout" >&2
	exit 2
}
OUT=$REPO/build/outboxx
ZIGVER=${OUTBOXX_ZIG:-$(sed -n 's/^ *\.minimum_zig_version = "\(.*\)",/\1/p' "$SRC/build.zig.zon")}
[[ -n $ZIGVER ]] || {
	echo "outboxx: no minimum_zig_version in build.zig.zon: set OUTBOXX_ZIG" >&2
	exit 2
}
log() { printf 'outboxx: %s\n' "$*" >&2; }

mkdir -p "$OUT"
if [[ $("$OUT/venv/bin/python" -m ziglang version 2>/dev/null) != "$ZIGVER" ]]; then
	log "installing ziglang==$ZIGVER (PyPI) into $OUT/venv"
	python3 -m venv "$OUT/venv"
	"$OUT/venv/bin/pip" install -q "ziglang==$ZIGVER"
fi
# The package cache stays under build/outboxx, not in the user's home.
export ZIG_GLOBAL_CACHE_DIR=$OUT/zig-cache
zig() { (cd "$SRC" && "$OUT/venv/bin/python" -m ziglang "$@"); }

if [[ -n ${OUTBOXX_DEPS:-} ]]; then
	for d in "$OUTBOXX_DEPS"/*; do
		[[ -d $d || $d == *.tar.gz || $d == *.tar || $d == *.tgz ]] || continue
		if [[ -d $d ]]; then
			# zig fetch takes a directory as a path too, but a tarball
			# of it is what its cache keeps.
			tar -czf "$OUT/dep.tar.gz" -C "$d" .
			log "zig fetch $(basename "$d"): $(zig fetch "$OUT/dep.tar.gz")"
			rm -f "$OUT/dep.tar.gz"
		else
			log "zig fetch $(basename "$d"): $(zig fetch "$d")"
		fi
	done
fi

if [[ -n ${OUTBOXX_NO_PROTOC:-} ]]; then
	# Unpacks the dependencies into zig-pkg/, then stops at the protoc
	# archive, which is what the edit below removes.
	zig build --help >/dev/null 2>&1 || true
	for f in "$SRC"/zig-pkg/protobuf-*/build.zig; do
		[[ -f $f ]] || continue
		if grep -q 'getProtocDependency(b)) |protoc| protoc.path("include")' "$f"; then
			sed -i 's#const include = if (try build_util.getProtocDependency(b)) |protoc| protoc.path("include") else b.path("");#const include = b.path(""); // outbox-relay tests/bench/outboxx.sh: no protoc (bootstrap step only)#' "$f"
			log "zig-protobuf's bootstrap step no longer asks for protoc ($f)"
		fi
	done
fi

log "zig $ZIGVER build -Doptimize=ReleaseFast in $SRC"
zig build -Doptimize=ReleaseFast --prefix "$OUT"
log "built $OUT/bin/outboxx ($("$OUT/bin/outboxx" --version 2>&1 | head -1 || true))"
