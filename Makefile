# outbox-relay -- plain Makefile, dependencies through pkg-config.
#
#   make             build build/outbox-relay
#   make check       install what is missing, unit + integration tests
#   make demo        install what is missing, run the relay end to end
#   make bench-smoke 100,000 events through the real stack, print figures
#   make build/kafka-mock   the mock Kafka cluster for fault tests (built by
#                    make integration; links rdkafka only, never the relay)

PKGS     := libpq rdkafka jansson libmicrohttpd libcurl
PREFIX   ?= /usr/local
BUILD    := build

STD      := -std=c11 -D_GNU_SOURCE
WARN     := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wno-unused-parameter
OPT      ?= -O2 -g
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
FINAL_CFLAGS = $(STD) $(WARN) $(OPT) -Iinclude -MMD -MP $(PKG_CFLAGS) $(CFLAGS)
FINAL_LIBS   = $(PKG_LIBS) -lm -lpthread $(LIBS)

LIB_SRCS := src/common.c src/log.c src/config.c src/json_check.c src/w2j.c \
            src/route.c \
            src/lsn_tracker.c src/repl.c src/publisher.c src/relay.c \
            src/watchdog.c src/monitor.c src/health.c src/http.c src/alert.c \
            src/hist.c src/ledger.c src/cli.c
MAIN_SRC := src/main.c
LIB_OBJS := $(LIB_SRCS:src/%.c=$(BUILD)/obj/%.o)
MAIN_OBJ := $(BUILD)/obj/main.o

UNIT_SRCS := $(wildcard tests/unit/*.c)
UNIT_OBJS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/obj/unit/%.o)

.PHONY: all deps check unit integration demo bench-smoke clean install \
        reliability soak

all: $(BUILD)/outbox-relay

$(BUILD)/outbox-relay: $(LIB_OBJS) $(MAIN_OBJ)
	$(CC) $(FINAL_CFLAGS) -o $@ $^ $(FINAL_LIBS)

$(BUILD)/obj/%.o: src/%.c
	@mkdir -p $(dir $@)
	$(CC) $(FINAL_CFLAGS) -c -o $@ $<

$(BUILD)/obj/unit/%.o: tests/unit/%.c
	@mkdir -p $(dir $@)
	$(CC) $(FINAL_CFLAGS) $(shell pkg-config --cflags check 2>/dev/null) \
		-DFIXTURE_DIR='"tests/fixtures"' -c -o $@ $<

$(BUILD)/unit-tests: $(LIB_OBJS) $(UNIT_OBJS)
	$(CC) $(FINAL_CFLAGS) -o $@ $^ $(FINAL_LIBS) \
		$(shell pkg-config --libs check 2>/dev/null)

# Test tool, not part of the relay: librdkafka's mock cluster behind a
# line protocol on stdin/stdout (tests/integration/mock.sh drives it).
MOCK_LIBS = $(shell pkg-config --libs rdkafka 2>/dev/null) -lpthread $(LIBS)

$(BUILD)/kafka-mock: tests/mock/kafka_mock.c
	@mkdir -p $(dir $@)
	$(CC) $(FINAL_CFLAGS) -o $@ $< $(MOCK_LIBS)

# Installs Debian packages and the Kafka broker's jars when missing.
deps:
	@tests/env/deps.sh

unit: $(BUILD)/unit-tests
	$(BUILD)/unit-tests

integration: all $(BUILD)/kafka-mock
	tests/integration/run.sh

check: deps
	$(MAKE) all $(BUILD)/unit-tests
	$(MAKE) unit
	$(MAKE) integration

demo: deps
	$(MAKE) all
	tests/env/demo.sh

# The fault matrix (docs/reliability.md): one row per scenario.
reliability: deps
	$(MAKE) all $(BUILD)/kafka-mock
	tests/reliability/run.sh

# The same with more rounds (F1 100 kills, a 300 s crash loop).
soak: deps
	$(MAKE) all $(BUILD)/kafka-mock
	SOAK=1 tests/reliability/run.sh

bench-smoke: deps
	$(MAKE) all
	tests/bench/smoke.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0755 $(BUILD)/outbox-relay $(DESTDIR)$(PREFIX)/bin/outbox-relay
	install -m 0644 docs/outbox-relay.1 $(DESTDIR)$(PREFIX)/share/man/man1/outbox-relay.1

clean:
	rm -rf $(BUILD)

-include $(wildcard $(BUILD)/obj/*.d $(BUILD)/obj/unit/*.d $(BUILD)/*.d)
