build-dev/obj/unit/check_http.o: tests/unit/check_http.c include/http.h \
 include/common.h include/health.h include/hist.h
include/http.h:
include/common.h:
include/health.h:
include/hist.h:
