#!/usr/bin/env bash
# tests/env/rdkafka.sh -- a current librdkafka 2.x, built from source into
# build/deps/, for make check-rdkafka (the relay built and tested against
# it). make check stays on Debian 12's librdkafka 2.0.2 (librdkafka-dev).
#
#   tests/env/rdkafka.sh          build (first time), verify, print the
#                                 pkg-config directory to put first in
#                                 PKG_CONFIG_PATH
#   tests/env/rdkafka.sh --prefix print the install prefix only (no build)
#
# Where the source comes from: Debian packages no newer librdkafka, and the
# only registries this project's machines reach are package registries. The
# Rust crate rdkafka-sys vendors librdkafka's whole source tree (its version
# says which: 4.10.0+2.12.1 carries 2.12.1), so a throwaway Cargo project
# that depends on exactly that crate lets `cargo vendor` fetch it with the
# checksum check Cargo does anyway; the crate's checksum is also pinned
# below, as pgdist.sh pins its tarballs. None of the crate's Rust code is
# built or run: only its librdkafka/ directory is copied out.
#
# The build: librdkafka's own ./configure (mklove), never --install-deps
# (it would download OpenSSL, zstd, ... sources, which this machine cannot),
# against Debian's OpenSSL, Cyrus SASL, zstd, lz4 and zlib -- the same
# libraries Debian's 2.0.2 links, so the two builds differ by version and
# not by features. libcurl is left out as Debian's build leaves it out: it
# only serves OIDC token fetching and AWS/HTTP extras that the relay does
# not use. Only the C library (src/) is built; the C++ wrapper is not
# needed. Installed into build/deps/librdkafka-VERSION, which a second call
# finds (the library there reports VERSION) and only prints the path.
#
# Time on 2 CPUs (make -j2), the download included: 36 s idle, 81 s at
# load 2 (README, "librdkafka versions").
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
# The crate's version; what follows + is the librdkafka version it vendors.
RDKAFKA_CRATE=4.10.0+2.12.1
# sha256 of rdkafka-sys-$RDKAFKA_CRATE.crate (the registry index's checksum,
# as Cargo.lock records it).
RDKAFKA_CRATE_SHA256=e234cf318915c1059d4921ef7f75616b5219b10b46e9f3a511a15eb4b56a3f77
crate_ver=${RDKAFKA_CRATE%%+*}
version=${RDKAFKA_CRATE#*+}
DEPS=${RDKAFKA_DEPS_DIR:-$ROOT/build/deps}
prefix=$DEPS/librdkafka-$version
pcdir=$prefix/lib/pkgconfig
# A tiny program built beside the library: prints rd_kafka_version_str()
# as the dynamic loader resolves it (rpath to $prefix/lib), so "installed"
# means "loads and reports $version", not just "a file is there".
probe=$prefix/bin/rdkafka-version

die() {
	echo "rdkafka: $*" >&2
	exit 1
}

if [[ ${1:-} == --prefix ]]; then
	echo "$prefix"
	exit 0
fi
(($# == 0)) || die "usage: $0 [--prefix]"

installed_ok() {
	[[ -x $probe && -f $pcdir/rdkafka.pc ]] &&
		[[ $("$probe" 2>/dev/null) == "$version" ]] &&
		[[ $(PKG_CONFIG_PATH=$pcdir pkg-config --modversion rdkafka 2>/dev/null) == "$version" ]]
}
if installed_ok; then
	echo "$pcdir"
	exit 0
fi

# Build tools and the -dev packages of the libraries linked, installed when
# missing the way tests/env/deps.sh does it (one apt-get update, one
# install). mklove's configure insists on a C++ compiler even when only the
# C library is built: clang++ (make deps' clang) or g++ will do.
packages=(gcc make pkg-config python3 libssl-dev libsasl2-dev libzstd-dev
	liblz4-dev zlib1g-dev)
if ! command -v g++ >/dev/null 2>&1 && ! command -v clang++ >/dev/null 2>&1 &&
	! command -v c++ >/dev/null 2>&1; then
	packages+=(g++)
fi
# shellcheck source=apt.sh
source "$ROOT/tests/env/apt.sh"
apt_ensure rdkafka "${packages[@]}"
# Cargo is not a Debian package here (Debian 12's is too old for the
# registry's sparse index): it comes with the machine.
command -v cargo >/dev/null 2>&1 || die "cargo not found (needed to fetch the rdkafka-sys crate)"

mkdir -p "$DEPS"
tmp=$(mktemp -d "$DEPS/fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
t0=$SECONDS

# ---- the source: rdkafka-sys =$crate_ver through a throwaway project.
# default-features = false: the crate's default feature pulls in a Rust
# zlib crate that is not needed to read its files.
echo "rdkafka: fetching the rdkafka-sys $RDKAFKA_CRATE crate (librdkafka $version)" >&2
mkdir -p "$tmp/proj/src"
: >"$tmp/proj/src/lib.rs"
cat >"$tmp/proj/Cargo.toml" <<EOF
[package]
name = "outbox-relay-rdkafka-source"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
rdkafka-sys = { version = "=$crate_ver", default-features = false }
EOF
# The project's own target dir, so a CARGO_TARGET_DIR set elsewhere is not
# touched; the crates land in Cargo's usual cache (CARGO_HOME).
export CARGO_TARGET_DIR=$tmp/target
if ! (cd "$tmp/proj" && cargo generate-lockfile --quiet >"$tmp/cargo.log" 2>&1 &&
	cargo vendor --quiet --versioned-dirs "$tmp/vendor" >>"$tmp/cargo.log" 2>&1); then
	cat "$tmp/cargo.log" >&2
	die "cargo could not fetch rdkafka-sys $crate_ver"
fi
# The lock file names the version resolved and the checksum Cargo verified.
locked=$(awk -v name=rdkafka-sys '
	$1 == "name" { inpkg = ($3 == "\"" name "\"") }
	inpkg && $1 == "version" { gsub(/"/, "", $3); v = $3 }
	inpkg && $1 == "checksum" { gsub(/"/, "", $3); print v, $3; inpkg = 0 }
' "$tmp/proj/Cargo.lock")
[[ $locked == "$RDKAFKA_CRATE $RDKAFKA_CRATE_SHA256" ]] ||
	die "resolved rdkafka-sys '$locked', pinned '$RDKAFKA_CRATE $RDKAFKA_CRATE_SHA256'"
src=$tmp/vendor/rdkafka-sys-$RDKAFKA_CRATE/librdkafka
[[ -f $src/configure && -f $src/src/rdkafka.h ]] || die "no librdkafka source tree in the vendored crate ($src)"
# The version the header declares (RD_KAFKA_VERSION 0xMMmmrrpp).
hex=$(awk '$1 == "#define" && $2 == "RD_KAFKA_VERSION" { print $3 }' "$src/src/rdkafka.h")
hdr=$(printf '%d.%d.%d' $((hex >> 24 & 0xff)) $((hex >> 16 & 0xff)) $((hex >> 8 & 0xff)))
[[ $hdr == "$version" ]] || die "the crate's rdkafka.h says $hdr, expected $version"

# ---- build: a fresh copy each time (configure and make write into the tree)
build=$DEPS/librdkafka-$version-src
rm -rf "$build" "$prefix"
cp -a "$src" "$build"
chmod -R u+w "$build"
echo "rdkafka: configuring librdkafka $version into $prefix" >&2
(
	cd "$build"
	./configure --prefix="$prefix" \
		--enable-ssl --enable-gssapi --enable-zstd --enable-zlib --enable-lz4-ext \
		--disable-curl >"$tmp/configure.log" 2>&1
) || {
	cat "$tmp/configure.log" >&2
	[[ ! -f $build/config.log ]] || tail -n 60 "$build/config.log" >&2
	die "configure failed"
}
echo "rdkafka: building (make -j2 -C src)" >&2
if ! make -C "$build/src" -j2 >"$tmp/make.log" 2>&1 ||
	! make -C "$build/src" install >>"$tmp/make.log" 2>&1; then
	tail -n 80 "$tmp/make.log" >&2
	die "make failed"
fi
[[ -f $pcdir/rdkafka.pc ]] || die "make install left no $pcdir/rdkafka.pc"

# ---- the probe, linked through the installed pkg-config file
mkdir -p "$(dirname "$probe")"
cat >"$tmp/probe.c" <<'EOF'
#include <stdio.h>
#include <librdkafka/rdkafka.h>

int main(void)
{
	puts(rd_kafka_version_str());
	return 0;
}
EOF
# shellcheck disable=SC2046 # pkg-config's words
gcc -o "$probe" "$tmp/probe.c" $(PKG_CONFIG_PATH=$pcdir pkg-config --cflags --libs rdkafka) \
	-Wl,-rpath,"$prefix/lib"
installed_ok || die "installed, but the library does not report $version (probe: $("$probe" 2>&1 || true))"
rm -rf "$build"
echo "rdkafka: librdkafka $version in $prefix ($((SECONDS - t0)) s)" >&2
echo "$pcdir"
