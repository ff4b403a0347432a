/* SPDX-License-Identifier: Apache-2.0 */
/* capture.h -- what the code under test logs, for a test to read.
 *
 * log.c writes to fd 2; capture_begin() points fd 2 at a temporary file
 * and capture_end() points it back and returns what was written. One
 * copy for every suite that checks a log line (check_alert.c and
 * check_http.c had one each). Not thread-safe and not nestable: one
 * capture at a time, which is how Check runs a test (a process each). */
#ifndef RELAY_TEST_CAPTURE_H
#define RELAY_TEST_CAPTURE_H

/* Redirects fd 2 until capture_end() or capture_reset(). */
void capture_begin(void);

/* fd 2 back; what was logged since capture_begin(), NUL-terminated
 * (caller frees). */
char *capture_end(void);

/* For a teardown after a test that failed mid-capture: fd 2 back and
 * the file closed; nothing when no capture is open. */
void capture_reset(void);

#endif
