build-dev/obj/unit/check_json_check.o: tests/unit/check_json_check.c \
 include/json_check.h include/common.h
include/json_check.h:
include/common.h:
