build-dev/obj/publisher.o: src/publisher.c include/log.h include/common.h \
 include/publisher.h include/config.h include/route.h
include/log.h:
include/common.h:
include/publisher.h:
include/config.h:
include/route.h:
