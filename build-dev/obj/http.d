build-dev/obj/http.o: src/http.c include/http.h include/common.h \
 include/health.h include/hist.h include/log.h
include/http.h:
include/common.h:
include/health.h:
include/hist.h:
include/log.h:
