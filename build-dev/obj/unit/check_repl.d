build-dev/obj/unit/check_repl.o: tests/unit/check_repl.c include/repl.h \
 include/common.h include/w2j.h
include/repl.h:
include/common.h:
include/w2j.h:
