build-dev/obj/unit/check_hist.o: tests/unit/check_hist.c include/hist.h
include/hist.h:
