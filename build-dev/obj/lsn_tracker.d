build-dev/obj/lsn_tracker.o: src/lsn_tracker.c include/lsn_tracker.h \
 include/common.h
include/lsn_tracker.h:
include/common.h:
