build-dev/obj/cli.o: src/cli.c /usr/include/postgresql/libpq-fe.h \
 /usr/include/postgresql/postgres_ext.h \
 /usr/include/postgresql/pg_config_ext.h include/cli.h include/config.h \
 include/common.h include/health.h include/hist.h include/repl.h \
 include/w2j.h include/route.h include/w2j.h include/watchdog.h \
 include/health.h
/usr/include/postgresql/libpq-fe.h:
/usr/include/postgresql/postgres_ext.h:
/usr/include/postgresql/pg_config_ext.h:
include/cli.h:
include/config.h:
include/common.h:
include/health.h:
include/hist.h:
include/repl.h:
include/w2j.h:
include/route.h:
include/w2j.h:
include/watchdog.h:
include/health.h:
