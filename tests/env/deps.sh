#!/usr/bin/env bash
# tests/env/deps.sh -- installs what building and testing outbox-relay needs,
# and only what is missing: a fresh CI machine has none of it, a developer's
# machine usually all of it (then this prints nothing). Run by `make deps`,
# which `make check`, `make demo` and `make bench-smoke` depend on.
#
#   1. Debian packages: checked one by one with dpkg-query; if any is
#      missing, one `apt-get update` and one `apt-get install` of those.
#   2. The Kafka broker's jars (for the throwaway test broker), fetched with
#      Maven from tests/kafka/pom.xml when absent.
#   2b. With the argument kafka4 (make check-kafka4) also the Kafka 4.x
#      broker's jars, from tests/kafka4/pom.xml when absent: make check
#      never fetches them.
#   3. The deployment checks' tools (make check-deploy), under .tmp/tools:
#      promtool, unpacked from Debian's prometheus package (installing it
#      would also start a Prometheus server wherever services start on
#      install), and kubernetes-validate (with the Kubernetes schemas it
#      ships) and PyYAML from PyPI in a venv.
set -euo pipefail

cd "$(dirname "$0")/../.."

# Build: compiler, pkg-config and the client libraries' headers.
# Tests: PostgreSQL 15 with the wal2json plugin, kcat, the Check framework.
# libmicrohttpd/libcurl: the relay's health endpoint and its tests.
# libsystemd-dev: sd_notify() (Type=notify, src/health/notify.c).
# clang + libclang-rt-14-dev: libFuzzer and the sanitizers (make fuzz,
# make check-asan); llvm: llvm-symbolizer for their stack traces;
# valgrind (make check-valgrind); cppcheck (make lint).
# buildah + debootstrap: the container image (make image, t610), built on
# a base bootstrapped from Debian's archive: no registry needed.
# systemd: systemd-analyze, which verifies the unit (make check-deploy);
# installing it starts nothing where systemd is not PID 1.
packages=(
	gcc
	pkg-config
	libpq-dev
	librdkafka-dev
	libjansson-dev
	libmicrohttpd-dev
	libcurl4-openssl-dev
	libsystemd-dev
	check
	postgresql-15
	postgresql-15-wal2json
	kcat
	curl
	clang
	libclang-rt-14-dev
	llvm
	valgrind
	cppcheck
	buildah
	debootstrap
	systemd
)

# Tools that may come from elsewhere than a Debian package (a JDK in /opt,
# a Maven from a tarball): only installed when the command is not found.
command -v java >/dev/null 2>&1 || packages+=(default-jre-headless)
command -v mvn >/dev/null 2>&1 || packages+=(maven)
command -v ps >/dev/null 2>&1 || packages+=(procps)
command -v python3 >/dev/null 2>&1 || packages+=(python3)
# npm: tests/env/pgdist.sh fetches PostgreSQL 16-18 for make check-pg-matrix.
command -v npm >/dev/null 2>&1 || packages+=(npm)

# shellcheck source=apt.sh
source tests/env/apt.sh
apt_ensure deps "${packages[@]}"

sudo=()
if [[ $EUID -ne 0 ]]; then
	sudo=(sudo)
fi

# The broker jars; the pom copies its dependencies into target/dependency.
fetch_kafka() { # DIR: tests/kafka (3.9.1) or tests/kafka4
	local dir=$1 mvn_log
	if compgen -G "$dir/target/dependency/kafka_2.13-*.jar" >/dev/null; then
		return 0
	fi
	echo "deps: fetching the Kafka broker jars ($dir/pom.xml)"
	# Maven's output (ANSI resets even with -q) is shown only on failure.
	mvn_log=$(mktemp)
	if ! mvn -B -q -f "$dir/pom.xml" dependency:copy-dependencies \
		>"$mvn_log" 2>&1; then
		cat "$mvn_log" >&2
		rm -f "$mvn_log"
		echo "deps: Maven could not fetch the Kafka jars of $dir" >&2
		exit 1
	fi
	rm -f "$mvn_log"
	if ! compgen -G "$dir/target/dependency/kafka_2.13-*.jar" >/dev/null; then
		echo "deps: Maven ran but $dir/target/dependency has no kafka_2.13 jar" >&2
		exit 1
	fi
}
fetch_kafka tests/kafka
if [[ ${1:-} == kafka4 ]]; then
	fetch_kafka tests/kafka4
fi

# The deployment checks' tools (tests/deploy/check.sh).
tools=.tmp/tools
if [[ ! -x $tools/prometheus/usr/bin/promtool ]]; then
	echo "deps: unpacking promtool from Debian's prometheus package"
	dl=$(mktemp -d)
	chmod 777 "$dl" # apt downloads as its own user
	if ! (cd "$dl" && apt-get download -q prometheus >/dev/null 2>&1); then
		"${sudo[@]}" apt-get update -q >/dev/null
		(cd "$dl" && apt-get download -q prometheus >/dev/null)
	fi
	mkdir -p "$tools"
	dpkg-deb -x "$dl"/prometheus_*.deb "$tools/prometheus"
	rm -rf "$dl"
	"$tools/prometheus/usr/bin/promtool" --version >/dev/null
fi
venv_want="kubernetes-validate==1.37.0 PyYAML==6.0.4"
if [[ $(cat "$tools/venv/.deps" 2>/dev/null) != "$venv_want" ]]; then
	echo "deps: installing $venv_want into $tools/venv"
	rm -rf "$tools/venv"
	mkdir -p "$tools"
	python3 -m venv "$tools/venv"
	# shellcheck disable=SC2086 # one word per requirement
	"$tools/venv/bin/pip" install -q --disable-pip-version-check $venv_want
	echo "$venv_want" >"$tools/venv/.deps"
fi
