build-dev/obj/relay.o: src/relay.c include/hist.h include/log.h \
 include/common.h include/lsn_tracker.h include/monitor.h \
 include/config.h include/health.h include/hist.h include/publisher.h \
 include/route.h include/relay.h include/repl.h include/w2j.h \
 include/route.h include/w2j.h
include/hist.h:
include/log.h:
include/common.h:
include/lsn_tracker.h:
include/monitor.h:
include/config.h:
include/health.h:
include/hist.h:
include/publisher.h:
include/route.h:
include/relay.h:
include/repl.h:
include/w2j.h:
include/route.h:
include/w2j.h:
