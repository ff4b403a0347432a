build-dev/obj/w2j.o: src/w2j.c include/w2j.h include/common.h
include/w2j.h:
include/common.h:
