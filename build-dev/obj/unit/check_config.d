build-dev/obj/unit/check_config.o: tests/unit/check_config.c \
 include/config.h include/common.h
include/config.h:
include/common.h:
