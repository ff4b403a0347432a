build-dev/obj/watchdog.o: src/watchdog.c \
 /usr/include/postgresql/libpq-fe.h \
 /usr/include/postgresql/postgres_ext.h \
 /usr/include/postgresql/pg_config_ext.h include/log.h include/common.h \
 include/watchdog.h include/health.h include/hist.h
/usr/include/postgresql/libpq-fe.h:
/usr/include/postgresql/postgres_ext.h:
/usr/include/postgresql/pg_config_ext.h:
include/log.h:
include/common.h:
include/watchdog.h:
include/health.h:
include/hist.h:
