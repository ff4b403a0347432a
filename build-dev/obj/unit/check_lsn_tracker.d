build-dev/obj/unit/check_lsn_tracker.o: tests/unit/check_lsn_tracker.c \
 include/lsn_tracker.h include/common.h
include/lsn_tracker.h:
include/common.h:
