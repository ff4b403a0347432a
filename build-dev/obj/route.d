build-dev/obj/route.o: src/route.c include/route.h include/common.h \
 include/w2j.h
include/route.h:
include/common.h:
include/w2j.h:
