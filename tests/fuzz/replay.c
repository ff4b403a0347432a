/* SPDX-License-Identifier: Apache-2.0 */
/* replay.c -- runs a libFuzzer harness over files, without libFuzzer.
 *
 * Linked with one tests/fuzz/fuzz_*.c into a plain program (any
 * compiler, any sanitizer or none), so `make check` replays the seed
 * corpora and every input that once crashed a harness
 * (tests/fuzz/regress/). Arguments are files or directories (their
 * regular files, in name order); each is read whole and handed to
 * LLVMFuzzerTestOneInput() once. A failed property aborts, as under
 * libFuzzer. Prints "replay: N inputs" at the end. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static unsigned long replayed;

/* Reads path whole and runs it; 0, or -1 when it cannot be read. */
static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (f == NULL) {
		perror(path);
		return -1;
	}
	do {
		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 65536;
			buf = realloc(buf, cap);
			if (buf == NULL) {
				fclose(f);
				fprintf(stderr, "%s: out of memory\n", path);
				return -1;
			}
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
	} while (n > 0);
	if (ferror(f)) {
		perror(path);
		fclose(f);
		free(buf);
		return -1;
	}
	fclose(f);
	/* A copy of exactly len bytes, as libFuzzer hands it over, so a
	 * sanitizer sees a read past the input. */
	{
		uint8_t *in = malloc(len ? len : 1);
		if (in == NULL) {
			free(buf);
			return -1;
		}
		memcpy(in, buf, len);
		free(buf);
		(void)LLVMFuzzerTestOneInput(in, len);
		free(in);
	}
	replayed++;
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int replay_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;

	if (d == NULL) {
		perror(dir);
		return -1;
	}
	while ((e = readdir(d)) != NULL) {
		char path[4096];
		struct stat st;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			names = realloc(names, cap * sizeof(*names));
			if (names == NULL) {
				closedir(d);
				return -1;
			}
		}
		names[n++] = strdup(path);
	}
	closedir(d);
	qsort(names, n, sizeof(*names), by_name);
	for (size_t i = 0; i < n; i++) {
		if (names[i] == NULL || replay_file(names[i]) != 0)
			rc = -1;
		free(names[i]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	int rc = 0;

	if (LLVMFuzzerInitialize != NULL)
		LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++) {
		struct stat st;

		if (stat(argv[i], &st) != 0) {
			perror(argv[i]);
			rc = 1;
		} else if (S_ISDIR(st.st_mode) ? replay_dir(argv[i]) != 0
		                               : replay_file(argv[i]) != 0) {
			rc = 1;
		}
	}
	printf("replay: %lu inputs\n", replayed);
	return rc;
}
