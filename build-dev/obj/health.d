build-dev/obj/health.o: src/health.c include/health.h include/common.h \
 include/hist.h
include/health.h:
include/common.h:
include/hist.h:
