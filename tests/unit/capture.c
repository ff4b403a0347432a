/* SPDX-License-Identifier: Apache-2.0 */
/* capture.c -- fd 2 to a temporary file and back (capture.h). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture.h"

static int saved_stderr = -1;
static FILE *capture_file;

void capture_reset(void)
{
	if (saved_stderr >= 0) {
		dup2(saved_stderr, 2);
		close(saved_stderr);
		saved_stderr = -1;
		fclose(capture_file);
	}
}

void capture_begin(void)
{
	capture_file = tmpfile();
	ck_assert_ptr_nonnull(capture_file);
	fflush(stderr);
	saved_stderr = dup(2);
	dup2(fileno(capture_file), 2);
}

char *capture_end(void)
{
	struct stat st;
	char *out;

	fflush(stderr);
	dup2(saved_stderr, 2);
	close(saved_stderr);
	saved_stderr = -1;
	ck_assert_int_eq(fstat(fileno(capture_file), &st), 0);
	out = calloc(1, (size_t)st.st_size + 1);
	ck_assert_int_eq(pread(fileno(capture_file), out, (size_t)st.st_size, 0),
	                 st.st_size);
	fclose(capture_file);
	return out;
}
