build-dev/obj/log.o: src/log.c include/log.h include/common.h
include/log.h:
include/common.h:
