build-dev/obj/main.o: src/main.c /usr/include/postgresql/libpq-fe.h \
 /usr/include/postgresql/postgres_ext.h \
 /usr/include/postgresql/pg_config_ext.h include/config.h \
 include/common.h include/log.h include/relay.h include/config.h \
 include/cli.h
/usr/include/postgresql/libpq-fe.h:
/usr/include/postgresql/postgres_ext.h:
/usr/include/postgresql/pg_config_ext.h:
include/config.h:
include/common.h:
include/log.h:
include/relay.h:
include/config.h:
include/cli.h:
