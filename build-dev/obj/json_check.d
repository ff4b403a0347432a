build-dev/obj/json_check.o: src/json_check.c include/json_check.h \
 include/common.h
include/json_check.h:
include/common.h:
