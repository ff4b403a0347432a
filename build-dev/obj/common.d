build-dev/obj/common.o: src/common.c include/common.h
include/common.h:
