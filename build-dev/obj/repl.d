build-dev/obj/repl.o: src/repl.c /usr/include/postgresql/libpq-fe.h \
 /usr/include/postgresql/postgres_ext.h \
 /usr/include/postgresql/pg_config_ext.h include/log.h include/common.h \
 include/repl.h include/w2j.h
/usr/include/postgresql/libpq-fe.h:
/usr/include/postgresql/postgres_ext.h:
/usr/include/postgresql/pg_config_ext.h:
include/log.h:
include/common.h:
include/repl.h:
include/w2j.h:
