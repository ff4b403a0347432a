build-dev/obj/unit/check_alert.o: tests/unit/check_alert.c \
 include/alert.h include/common.h include/health.h include/hist.h
include/alert.h:
include/common.h:
include/health.h:
include/hist.h:
