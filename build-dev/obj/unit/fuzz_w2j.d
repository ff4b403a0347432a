build-dev/obj/unit/fuzz_w2j.o: tests/unit/fuzz_w2j.c
