build-dev/obj/alert.o: src/alert.c include/alert.h include/common.h \
 include/health.h include/hist.h include/log.h
include/alert.h:
include/common.h:
include/health.h:
include/hist.h:
include/log.h:
