build-dev/obj/w2j.o: src/w2j.c include/json_check.h include/common.h \
 include/w2j.h
include/json_check.h:
include/common.h:
include/w2j.h:
