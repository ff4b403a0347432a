build-dev/obj/monitor.o: src/monitor.c include/alert.h include/common.h \
 include/health.h include/hist.h include/http.h include/log.h \
 include/monitor.h include/config.h include/watchdog.h
include/alert.h:
include/common.h:
include/health.h:
include/hist.h:
include/http.h:
include/log.h:
include/monitor.h:
include/config.h:
include/watchdog.h:
