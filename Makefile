# outbox-relay -- plain Makefile, dependencies through pkg-config.
#
#   make             build build/outbox-relay
#   make check       install what is missing, then unit, boundaries,
#                    fuzz-regress and integration
#   make unit        unit tests only (needs the -dev packages, no apt)
#   make integration integration tests only (needs the servers, no apt),
#                    in IT_JOBS (2) shards at once, each its own servers
#   make integration-pgoutput  the same with slot.plugin = pgoutput
#   make check-pg-matrix  the pgoutput tests that depend on the server on
#                    PostgreSQL 16, 17 and 18 (tests/integration/matrix.sh;
#                    binaries fetched by tests/env/pgdist.sh), ~7 min
#   make check-kafka4  the core of the integration suite (KAFKA4_TESTS)
#                    against the newest Kafka 4.x broker (tests/kafka4/,
#                    fetched on first use)
#   make check-rdkafka  the relay, unit tests and test tools built against
#                    librdkafka 2.12.1 (tests/env/rdkafka.sh, from source
#                    into build/deps/) in build/rdk/, then the unit tests
#                    and KAFKA4_TESTS on Kafka 3.9.1 with that build
#   make check-eos   the tests whose faults exercise exactly-once's Kafka
#                    transactions (EOS_TESTS), every relay with
#                    delivery.guarantee = exactly-once
#   make check-kafka-cluster  t800: a three-node KRaft cluster (RF 3,
#                    min.insync.replicas 2), leaders killed under load
#   make check-kafka-cluster-eos  the same with delivery.guarantee =
#                    exactly-once (no duplicate read_committed)
#   make check-debezium  t850: the cutover from real Debezium to the relay
#                    and back under load (docs/migrating-from-debezium.md)
#   make boundaries  the module boundary rules (tests/lint/boundaries.sh)
#   make demo        install what is missing, run the relay end to end
#   make image       the container image (deploy/docker/), with buildah on a
#                    Debian 12 base bootstrapped here (no registry needed)
#   make check-image build the image and run it against throwaway servers
#                    (t610; CI runs it in lane B, .ci/run)
#   make check-deploy  validate deploy/: Kubernetes manifests, alert rules,
#                    the systemd unit, compose file, dashboard (make check)
#   make bench-smoke 100,000 events through the real stack, print figures
#                    (and 10,000 under exactly-once, counted once each)
#   make bench-decode  walsender CPU and decoder instructions per event,
#                    wal2json against pgoutput (docs/pgoutput.md)
#   make bench       the relay beside Debezium and the decode/producer
#                    ceilings, quick profile (~15 min), and exactly-once
#                    beside at-least-once (eos, ~6 min; BENCH_EOS_SWEEP=1
#                    adds the transaction knobs): docs/benchmarks.md
#   make bench-full  the same, every workload and rate (BENCH_PROFILE=full)
#   make build/kafka-mock   the mock Kafka cluster for fault tests (built by
#                    make integration; links rdkafka only, never the relay)
#   make build/tcp-proxy    the TCP fault proxy for network fault tests
#                    (built by make integration; libc only)
#   make fuzz        every libFuzzer harness for FUZZ_SECONDS (default 60)
#   make fuzz-regress  replay the seeds and kept crash inputs (make check)
#   make check-asan  unit tests and a short end-to-end run under ASan+UBSan
#   make check-valgrind  unit tests under valgrind: no error, no leak
#   make lint        cppcheck over src/ against tests/lint/cppcheck.supp
#   make WERROR=1 ...  any target with warnings as errors (CI)
#   make test-build  the relay and the unit tests with the test hooks, in
#                    build/test/ (make check, the integration targets)

PKGS     := libpq rdkafka jansson libmicrohttpd libcurl libsystemd
PREFIX   ?= /usr/local
BUILD    := build

STD      := -std=c11 -D_GNU_SOURCE
WARN     := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wno-unused-parameter
ifneq ($(WERROR),)
WARN     += -Werror
endif
OPT      ?= -O2 -g
# Test hooks (RELAY_TEST_STALL_MS, alert_set_backoff_for_tests): only in
# the test build, build/test/ (make test-build), which the unit and
# integration tests use. make, make install and the image never have them.
TEST_HOOKS ?= 0
TEST_BUILD ?= $(BUILD)/test
ifneq ($(TEST_HOOKS),0)
HOOKS    := -DOUTBOX_RELAY_TEST_HOOKS
endif
# Evaluated once, errors on stderr: a missing -dev package is named here
# rather than showing up later as a missing header.
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS))
PKG_LIBS   := $(shell pkg-config --libs $(PKGS))
FINAL_CFLAGS = $(STD) $(WARN) $(OPT) $(HOOKS) -Iinclude -MMD -MP $(PKG_CFLAGS) $(CFLAGS)
FINAL_LIBS   = $(PKG_LIBS) -lm -lpthread $(LIBS)

# One folder per part of the pipeline (docs/design.md): lib (common, log,
# config), decode (both decoders into one record), pg (replication, slot),
# kafka (producer, client settings, ledger), health (watchdog, rules,
# HTTP, alerts), relay (the loop and its LSN books), cli (the runbook).
SRC_DIRS := lib decode pg kafka health relay cli
LIB_SRCS := $(foreach d,$(SRC_DIRS),$(wildcard src/$(d)/*.c))
MAIN_SRC := src/main.c
LIB_OBJS := $(LIB_SRCS:src/%.c=$(BUILD)/obj/%.o)
MAIN_OBJ := $(BUILD)/obj/main.o

UNIT_SRCS := $(wildcard tests/unit/*.c)
UNIT_OBJS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/obj/unit/%.o)

.PHONY: all test-build deps check unit integration integration-pgoutput check-pg-matrix \
        check-kafka4 check-eos check-rdkafka rdkafka-build check-kafka-cluster check-kafka-cluster-eos check-debezium \
        debezium-deps boundaries demo bench-smoke \
        bench-decode bench bench-full bench-deps clean install \
        reliability reliability-eos soak image check-image check-deploy \
        fuzz fuzz-build fuzz-regress check-asan check-valgrind lint \
        asan-build ci-build examples examples-c examples-ts examples-if-node

all: $(BUILD)/outbox-relay

$(BUILD)/outbox-relay: $(LIB_OBJS) $(MAIN_OBJ)
	$(CC) $(FINAL_CFLAGS) -o $@ $^ $(FINAL_LIBS)

# Objects depend on the flags they were built with: switching CC, OPT or
# TEST_HOOKS rebuilds them instead of linking stale ones.
$(BUILD)/cflags: FORCE
	@mkdir -p $(BUILD)
	@echo '$(CC) $(FINAL_CFLAGS)' | cmp -s - $@ || echo '$(CC) $(FINAL_CFLAGS)' >$@

FORCE:

$(BUILD)/obj/%.o: src/%.c $(BUILD)/cflags
	@mkdir -p $(dir $@)
	$(CC) $(FINAL_CFLAGS) -c -o $@ $<

# The same sources again with the hooks on, in a folder of their own so
# that neither build ever links the other's objects.
test-build:
	@$(MAKE) --no-print-directory BUILD=$(TEST_BUILD) TEST_HOOKS=1 \
		$(TEST_BUILD)/outbox-relay $(TEST_BUILD)/unit-tests

$(BUILD)/obj/unit/%.o: tests/unit/%.c
	@mkdir -p $(dir $@)
	$(CC) $(FINAL_CFLAGS) $(shell pkg-config --cflags check) \
		-DFIXTURE_DIR='"tests/fixtures"' -c -o $@ $<

$(BUILD)/unit-tests: $(LIB_OBJS) $(UNIT_OBJS)
	$(CC) $(FINAL_CFLAGS) -o $@ $^ $(FINAL_LIBS) \
		$(shell pkg-config --libs check)

# Test tool, not part of the relay: librdkafka's mock cluster behind a
# line protocol on stdin/stdout (tests/integration/mock.sh drives it).
MOCK_LIBS = $(shell pkg-config --libs rdkafka) -lpthread $(LIBS)

$(BUILD)/kafka-mock: tests/mock/kafka_mock.c
	@mkdir -p $(dir $@)
	$(CC) $(FINAL_CFLAGS) -o $@ $< $(MOCK_LIBS)

# Test tool, not part of the relay: a TCP proxy whose faults (blackhole,
# reset, cut, delay, refuse, an injected PostgreSQL error) are switched by
# commands on stdin (tests/integration/proxy.sh drives it).
$(BUILD)/tcp-proxy: tests/proxy/tcp_proxy.c
	@mkdir -p $(dir $@)
	$(CC) $(STD) $(WARN) $(OPT) -MMD -MP $(CFLAGS) -o $@ $< $(LIBS)

# Bench tool, not part of the relay: both decoders on recorded WAL, for
# callgrind (tests/bench/decode_cost.sh).
$(BUILD)/decode-bench: tests/bench/decode_bench.c $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(FINAL_CFLAGS) -o $@ $(filter %.c %.o,$^) $(FINAL_LIBS)

# Installs Debian packages and the Kafka broker's jars when missing.
deps:
	@tests/env/deps.sh

unit: test-build
	$(TEST_BUILD)/unit-tests

# Two shards at once, each with its own servers (run.sh's IT_JOBS; ports
# IT_PGPORT + 0/50, IT_KAFKA_PORT + 0/30): about half the serial time.
IT_JOBS ?= 2
integration: all $(BUILD)/kafka-mock $(BUILD)/tcp-proxy
	IT_JOBS=$(IT_JOBS) tests/integration/run.sh

# The same suite with every relay and slot on pgoutput (a publication
# made before each slot); tests that only mean something with wal2json
# skip with the reason printed. Not part of make check: it doubles the
# suite's time.
integration-pgoutput: all $(BUILD)/kafka-mock $(BUILD)/tcp-proxy
	IT_JOBS=$(IT_JOBS) RELAY_PLUGIN=pgoutput tests/integration/run.sh

# The version matrix: make check stays on Debian's PostgreSQL 15; this
# runs the pgoutput tests that depend on the server (streaming, resume,
# the back-in-time guard, runbook actions, slot checks, watchdog, health,
# heartbeats) on each other pinned major (tests/env/pgdist.sh --list).
check-pg-matrix: deps
	$(MAKE) all test-build $(BUILD)/kafka-mock $(BUILD)/tcp-proxy
	tests/integration/matrix.sh

# The tests that exercise the broker's protocol, against Apache Kafka 4.x
# (tests/kafka4/pom.xml; its jars fetched by deps.sh kafka4 when missing,
# never by make check): delivery and order, the broker killed, relay
# kill -9 loops, the slot ledger, broker refusals, the dead-letter
# topic, topics created on first use (by the broker, and by the relay
# through the admin API), health, the runbook's commands and --check.
# About 4 to 5 min on 2 CPUs. make check runs the whole suite on 3.9.1.
KAFKA4_TESTS := t000 t100 t120 t130 t185 t205 t250 t265 t267 t300 t420
check-kafka4:
	@tests/env/deps.sh kafka4
	$(MAKE) all test-build $(BUILD)/kafka-mock $(BUILD)/tcp-proxy
	KAFKA_JARS=$(CURDIR)/tests/kafka4/target/dependency tests/integration/run.sh $(KAFKA4_TESTS)

# The relay against a current librdkafka: make check links Debian's
# 2.0.2; this builds 2.12.1 from source (tests/env/rdkafka.sh, first time
# about 1.5 min) and the test build (hooks on), the unit tests, kafka-mock
# and tcp-proxy against it in RDK_BUILD, a folder of its own like
# build/asan: its cflags name the other headers, so nothing there is ever
# linked with objects built against 2.0.2. The rpath makes the binaries
# load 2.12.1 from build/deps/ at run time, not Debian's librdkafka.so.1
# (same soname); the recipe checks that they do before any test runs.
# -isystem: the headers are a system library's, as Debian's are from
# /usr/include (GCC then drops pkg-config's -I for that folder); 2.12.1's
# rdkafka.h trips -Wextra's -Wignored-qualifiers, which WERROR=1 would
# make an error in every file that includes it.
# Then the unit tests and the same protocol subset as check-kafka4
# (KAFKA4_TESTS) on the default broker, Kafka 3.9.1, and t266 (new topics
# on a broker that has just started): 2.12.1 is the release the relay
# keeps five requests in flight from (kafka_conf.c).
RDK_BUILD := $(BUILD)/rdk
RDKAFKA_TESTS := $(KAFKA4_TESTS) t266
rdkafka-build:
	@prefix=$$(tests/env/rdkafka.sh --prefix) && \
	pcdir=$$(tests/env/rdkafka.sh) && \
	PKG_CONFIG_PATH=$$pcdir$${PKG_CONFIG_PATH:+:$$PKG_CONFIG_PATH} \
	$(MAKE) --no-print-directory BUILD=$(RDK_BUILD) TEST_HOOKS=1 \
		CFLAGS="$(CFLAGS) -isystem $$prefix/include" \
		LIBS="$(LIBS) -Wl,-rpath,$$prefix/lib" \
		$(RDK_BUILD)/outbox-relay $(RDK_BUILD)/unit-tests \
		$(RDK_BUILD)/kafka-mock $(RDK_BUILD)/tcp-proxy
	@prefix=$$(tests/env/rdkafka.sh --prefix) && \
	want=$$($$prefix/bin/rdkafka-version) && \
	for b in outbox-relay unit-tests kafka-mock; do \
		lib=$$(ldd $(RDK_BUILD)/$$b | awk '$$1 == "librdkafka.so.1" {print $$3}'); \
		echo "check-rdkafka: $(RDK_BUILD)/$$b loads $$lib"; \
		[ "$$lib" = "$$prefix/lib/librdkafka.so.1" ] || \
			{ echo "check-rdkafka: $$b does not load $$prefix/lib/librdkafka.so.1" >&2; exit 1; }; \
	done && \
	v=$$($(RDK_BUILD)/outbox-relay --version) && echo "check-rdkafka: $$v" && \
	case "$$v" in *"(librdkafka $$want,"*) ;; \
	*) echo "check-rdkafka: the relay does not run on librdkafka $$want" >&2; exit 1 ;; esac

check-rdkafka: deps
	$(MAKE) rdkafka-build
	$(RDK_BUILD)/unit-tests
	RELAY_BIN=$(CURDIR)/$(RDK_BUILD)/outbox-relay MOCK_BIN=$(CURDIR)/$(RDK_BUILD)/kafka-mock \
		PROXY_BIN=$(CURDIR)/$(RDK_BUILD)/tcp-proxy tests/integration/run.sh $(RDKAFKA_TESTS)

# t800 on its own: three more brokers (a replicated KRaft cluster on
# loopback) and their leaders killed under load, about 2.5 min on 2 CPUs
# (134 to 158 s measured), so not part of make check (one SKIP there).
# KAFKA_JARS=$(CURDIR)/tests/kafka4/target/dependency runs it on 4.x.
# Exactly-once (delivery.guarantee = exactly-once, src/relay/txn.c): the
# same tests with every relay configuration lib.sh writes switched by
# RELAY_DELIVERY, so each checks exactly-once against its own faults
# (kcat reads committed: the checkers see what a read_committed
# consumer sees). t527 is a primary failover on PostgreSQL 17 with a
# failover slot that lags Kafka (the ledger's skip covers it) and t255 a
# stuck event whose Kafka transaction cannot commit: both first run under
# exactly-once by make reliability-eos, which found them written for
# at-least-once only.
EOS_TESTS := t100 t130 t140 t160 t200 t205 t255 t527
check-eos: deps
	$(MAKE) all test-build $(BUILD)/kafka-mock $(BUILD)/tcp-proxy
	RELAY_DELIVERY=exactly-once tests/integration/run.sh $(EOS_TESTS)

check-kafka-cluster: deps
	$(MAKE) all test-build
	IT_KAFKA_CLUSTER=1 tests/integration/run.sh t800

# t800 with delivery.guarantee = exactly-once: transactions on the cluster
# (transaction.state.log RF 3, min.isr 2), the checker with --no-dups and
# the read_uncommitted figures beside it.
check-kafka-cluster-eos: deps
	$(MAKE) all test-build
	RELAY_DELIVERY=exactly-once IT_KAFKA_CLUSTER=1 tests/integration/run.sh t800

# t850 on its own: the cutover from Debezium to the relay and back, with
# real Debezium (3.6.1.Final on a Kafka Connect 4.3.0 worker, the jars of
# make bench, fetched by debezium-deps) under load; about 2 min, so not
# part of make check (one SKIP there). CI: lane B.
debezium-deps:
	@tests/env/debezium_deps.sh

check-debezium: deps debezium-deps
	$(MAKE) all test-build
	IT_DEBEZIUM=1 tests/integration/run.sh t850

# One copy of each rule: who may call whom (docs/design.md), by grep.
boundaries: all
	tests/lint/boundaries.sh

check: deps
	$(MAKE) all test-build
	$(MAKE) unit
	$(MAKE) boundaries
	$(MAKE) fuzz-regress
	$(MAKE) check-deploy
	$(MAKE) examples-if-node
	$(MAKE) integration

# Kubernetes manifests (kubernetes-validate), alert rules (promtool), the
# systemd unit (systemd-analyze), compose file and dashboard: no cluster,
# Prometheus or Docker engine needed (tests/deploy/check.sh).
check-deploy: all
	tests/deploy/check.sh

# The picture in README.md, from its Graphviz source (committed both).
docs/architecture.svg: docs/architecture.dot
	dot -Tsvg $< -o $@

# The image, localhost/outbox-relay:dev in buildah's store under
# /var/tmp/outbox-relay-image (IMAGE_NAME, IMAGE_STORE, IMAGE_BASE:
# deploy/docker/build-image.sh). Needs root.
image: deps
	deploy/docker/build-image.sh

# The image test (t610) on its own: it builds the image (on 2 CPUs about
# 1 min with the base cached, 2 min without, up to 4.5 min when the
# machine is busy), too long to add to every make check. It
# skips, saying why, where images cannot be built (build-image.sh exit 2).
check-image: deps
	$(MAKE) all test-build
	IT_IMAGE=1 tests/integration/run.sh t610

# ---- the application examples (examples/README.md)
# examples: the TypeScript pair (npm ci from its package-lock.json, prisma
# generate, tsc) and the C consumer, for t470 and the demo.
# examples-if-node: the same when Node.js >= 20.19 is there (make check;
# without it t470 skips and says why, unless EXAMPLES_REQUIRED is set).
EX_TS := examples/typescript

examples: examples-c examples-ts

examples-c: deps
	$(MAKE) -C examples/c

$(EX_TS)/node_modules/.package-lock.json: $(EX_TS)/package-lock.json $(EX_TS)/package.json
	tests/env/node.sh
	cd $(EX_TS) && npm ci --loglevel=error

examples-ts: $(EX_TS)/node_modules/.package-lock.json
	cd $(EX_TS) && npm run --silent build

examples-if-node:
	@if tests/env/node.sh; then $(MAKE) examples; \
	else echo "examples: not built, t470 will skip (see above)"; $(MAKE) examples-c; fi

demo: deps
	$(MAKE) all examples-if-node
	tests/env/demo.sh

# The fault matrix (docs/reliability.md): one row per scenario.
reliability: deps
	$(MAKE) all test-build $(BUILD)/kafka-mock $(BUILD)/tcp-proxy
	tests/reliability/run.sh

# The matrix with delivery.guarantee = exactly-once (RELAY_DELIVERY): no
# duplicate for a read_committed consumer, the read_uncommitted copies
# in their own column.
reliability-eos: deps
	$(MAKE) all test-build $(BUILD)/kafka-mock $(BUILD)/tcp-proxy
	RELAY_DELIVERY=exactly-once tests/reliability/run.sh

# The same with more rounds (F1 100 kills, a 300 s crash loop).
soak: deps
	$(MAKE) all test-build $(BUILD)/kafka-mock $(BUILD)/tcp-proxy
	SOAK=1 tests/reliability/run.sh

bench-smoke: deps
	$(MAKE) all
	tests/bench/smoke.sh

# wal2json v2 against pgoutput: walsender CPU per event and the decoders'
# instructions per event under callgrind (docs/pgoutput.md).
bench-decode: deps
	$(MAKE) $(BUILD)/decode-bench
	tests/bench/decode_cost.sh
# Test tool, not part of the relay: end offsets and /proc sampler, latency
# consumer and producer ceiling of make bench (tests/bench/bench_tool.c).
$(BUILD)/bench-tool: tests/bench/bench_tool.c
	@mkdir -p $(dir $@)
	$(CC) $(FINAL_CFLAGS) -o $@ $< $(MOCK_LIBS)

# What make bench needs beyond make deps: matplotlib, Debezium and a
# Kafka Connect worker (tests/bench/connect/pom.xml).
bench-deps: deps
	@tests/bench/deps.sh

# The relay beside Debezium on the same WAL, the decode ceilings and the
# producer ceiling: figures and plots in docs/benchmarks.md (never
# asserted). BENCH_PROFILE=quick (default, ~15 min) or full.
bench: bench-deps
	$(MAKE) all $(BUILD)/bench-tool
	tests/bench/run.sh

bench-full: bench-deps
	$(MAKE) all $(BUILD)/bench-tool
	BENCH_PROFILE=full tests/bench/run.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0755 $(BUILD)/outbox-relay $(DESTDIR)$(PREFIX)/bin/outbox-relay
	install -m 0644 docs/outbox-relay.1 $(DESTDIR)$(PREFIX)/share/man/man1/outbox-relay.1

clean:
	rm -rf $(BUILD)

# ---- fuzzing, sanitizers, valgrind, lint (tests/fuzz/README.md)

# libFuzzer harnesses, tests/fuzz/fuzz_NAME.c, each linked with every
# library object built again for it (coverage, ASan, UBSan) by clang.
FUZZERS      := w2j repl lsn config http pgo relay
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_DIR     := $(BUILD)/fuzz
SAN_FLAGS    := -fsanitize=address,undefined -fno-sanitize-recover=all \
                -fno-omit-frame-pointer
FUZZ_CFLAGS   = $(STD) $(WARN) $(HOOKS) -g -O1 $(SAN_FLAGS) -Iinclude -MMD -MP \
                $(PKG_CFLAGS) $(CFLAGS)
FUZZ_OBJS    := $(LIB_SRCS:src/%.c=$(FUZZ_DIR)/obj/%.o)
FUZZ_BINS    := $(FUZZERS:%=$(FUZZ_DIR)/fuzz_%)
REPLAY_BINS  := $(FUZZERS:%=$(BUILD)/fuzz-replay/fuzz_%)

$(FUZZ_DIR)/obj/%.o: src/%.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

# Sources and objects only: -MMD adds the headers a harness includes to
# its prerequisites on the next run, and clang must not be handed those.
$(FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_OBJS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $(filter %.c %.o,$^) $(FINAL_LIBS)

# fuzz_relay drives the loop through the Kafka seam with the unit tests'
# fake producer.
$(FUZZ_DIR)/fuzz_relay $(BUILD)/fuzz-replay/fuzz_relay: tests/unit/fake_kafka.c

# The same harnesses without libFuzzer: a main() that runs each file once,
# built like everything else ($(CC), $(OPT), no sanitizer unless asked).
$(BUILD)/fuzz-replay/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(FINAL_CFLAGS) -o $@ $(filter %.c %.o,$^) $(FINAL_LIBS)

fuzz-build: $(FUZZ_BINS)

# Kept between runs, though only harnesses name them.
.SECONDARY: $(FUZZ_OBJS)

# Each harness for FUZZ_SECONDS from its corpus (build/fuzz/corpus/NAME,
# kept between runs, seeded from tests/fuzz/seeds.py and the fixtures);
# a crash leaves its input in build/fuzz/crashes/ and fails the target.
fuzz: deps
	$(MAKE) fuzz-build
	tests/fuzz/run.sh $(FUZZ_DIR) $(FUZZ_SECONDS) $(FUZZERS)

# Seeds and every input that once crashed a harness (tests/fuzz/regress/)
# through each harness once.
fuzz-regress: $(REPLAY_BINS)
	tests/fuzz/replay.sh $(BUILD) $(FUZZERS)

# Unit tests, the fuzz regression inputs and a short end-to-end run of the
# relay (tests/sanitize/e2e.sh), all built by clang with ASan and UBSan.
# Leaks in third-party frames only: tests/sanitize/lsan.supp. Check's
# per-test timeouts are stretched by 4: the sanitizers slow code 2-3x.
ASAN_BUILD := $(BUILD)/asan
SAN_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1 \
          LSAN_OPTIONS=suppressions=$(CURDIR)/tests/sanitize/lsan.supp:print_suppressions=0 \
          UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
asan-build:
	$(MAKE) BUILD=$(ASAN_BUILD) CC=$(FUZZ_CC) OPT="-O1 -g $(SAN_FLAGS)" TEST_HOOKS=1 \
		all $(ASAN_BUILD)/unit-tests $(FUZZERS:%=$(ASAN_BUILD)/fuzz-replay/fuzz_%)

check-asan: deps
	$(MAKE) asan-build
	$(SAN_ENV) CK_TIMEOUT_MULTIPLIER=4 $(ASAN_BUILD)/unit-tests
	$(SAN_ENV) tests/fuzz/replay.sh $(ASAN_BUILD) $(FUZZERS)
	$(SAN_ENV) RELAY_BIN=$(CURDIR)/$(ASAN_BUILD)/outbox-relay tests/sanitize/e2e.sh

# Unit tests in one process under memcheck: any error or definite or
# indirect leak fails (one process: CK_FORK=no, so no per-test timeout).
# The property and mutation tests run a tenth of their rounds
# (UNIT_PROPERTY_SCALE; the default run keeps them all), and the producer
# suite allows for valgrind's pace where it times a nudge (UNIT_SLOW).
VALGRIND_FLAGS := --error-exitcode=99 --leak-check=full \
                  --show-leak-kinds=definite,indirect \
                  --errors-for-leak-kinds=definite,indirect \
                  --suppressions=tests/sanitize/valgrind.supp --num-callers=30
check-valgrind: deps
	$(MAKE) test-build
	CK_FORK=no UNIT_PROPERTY_SCALE=10 UNIT_SLOW=1 \
		valgrind $(VALGRIND_FLAGS) $(TEST_BUILD)/unit-tests

# Everything CI's steps build, in one make (make -j2 ci-build in .ci/run
# before its lanes start), so that steps running at once never build in
# the same directory: the relay and test tools (build/), the test build
# (build/test: relay and unit tests with the hooks), the replay harnesses
# (build/fuzz-replay), libFuzzer harnesses (build/fuzz) and the sanitizer
# build (build/asan); the last two are makes of their own (BUILD set).
ci-build: all $(BUILD)/kafka-mock $(BUILD)/tcp-proxy $(REPLAY_BINS) $(FUZZ_BINS)
	$(MAKE) test-build
	$(MAKE) asan-build

# cppcheck over src/: clean but for tests/lint/cppcheck.supp, where each
# suppression says why. tests/lint/pipes.sh: no early-exit reader in a
# pipeline of the scripts (a SIGPIPE flake under pipefail).
lint: deps
	cppcheck --quiet --error-exitcode=1 --std=c11 -D_GNU_SOURCE -DOUTBOX_RELAY_TEST_HOOKS -Iinclude \
		--enable=warning,style,performance,portability --inline-suppr \
		--suppressions-list=tests/lint/cppcheck.supp src/
	bash tests/lint/pipes.sh

-include $(wildcard $(BUILD)/obj/*.d $(BUILD)/obj/*/*.d $(BUILD)/*.d \
                    $(FUZZ_DIR)/obj/*.d $(FUZZ_DIR)/obj/*/*.d $(FUZZ_DIR)/*.d $(BUILD)/fuzz-replay/*.d)
