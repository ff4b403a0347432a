build-dev/obj/unit/check_w2j.o: tests/unit/check_w2j.c include/w2j.h \
 include/common.h
include/w2j.h:
include/common.h:
