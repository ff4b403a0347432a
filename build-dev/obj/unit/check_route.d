build-dev/obj/unit/check_route.o: tests/unit/check_route.c \
 include/route.h include/common.h include/w2j.h
include/route.h:
include/common.h:
include/w2j.h:
