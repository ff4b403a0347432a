build-dev/obj/unit/check_emit.o: tests/unit/check_emit.c include/config.h \
 include/common.h include/repl.h include/w2j.h include/w2j.h
include/config.h:
include/common.h:
include/repl.h:
include/w2j.h:
include/w2j.h:
