build-dev/obj/unit/check_main.o: tests/unit/check_main.c
