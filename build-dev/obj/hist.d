build-dev/obj/hist.o: src/hist.c include/hist.h
include/hist.h:
