build-dev/obj/unit/check_health.o: tests/unit/check_health.c \
 include/health.h include/common.h include/hist.h
include/health.h:
include/common.h:
include/hist.h:
