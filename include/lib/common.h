/* SPDX-License-Identifier: Apache-2.0 */
/* common.h -- small shared definitions: LSN formatting, exit codes,
 * allocation wrappers that never return NULL. */
#ifndef RELAY_COMMON_H
#define RELAY_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define RELAY_VERSION "0.1.0"

#define RELAY_MUSTCHECK __attribute__((warn_unused_result))
#define RELAY_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* An LSN is a uint64_t, printed the way pg_replication_slots shows it. */
#define LSN_FMT "%X/%X"
#define LSN_ARGS(lsn) ((unsigned)((uint64_t)(lsn) >> 32)), ((unsigned)(lsn))
#define LSN_INVALID ((uint64_t)0)

/* One line of a timeline history file (TIMELINE_HISTORY): timeline tli
 * ended at switch_lsn, where its child branched off. A server on
 * timeline N lists every ancestor of N this way, oldest first; the WAL
 * of N below an ancestor's switch point is that ancestor's WAL. */
struct tli_switch {
	int tli;
	uint64_t switch_lsn;
};

/* Exit codes (sysexits.h values, so supervisors can tell them apart). */
#define RELAY_EXIT_OK 0
#define RELAY_EXIT_FAILURE 1   /* second signal, unexpected failure */
#define RELAY_EXIT_USAGE 64    /* EX_USAGE: bad command line */
#define RELAY_EXIT_DATAERR 65  /* EX_DATAERR: fail-stop on a poison event */
#define RELAY_EXIT_UNAVAILABLE 69 /* EX_UNAVAILABLE: slot missing/invalid */
#define RELAY_EXIT_SOFTWARE 70 /* EX_SOFTWARE: broken invariant */
#define RELAY_EXIT_NOPERM 77   /* EX_NOPERM: authentication/authorization */
#define RELAY_EXIT_CONFIG 78   /* EX_CONFIG: bad configuration */

/* Allocation failure is fatal: the slot replays whatever was not
 * confirmed, so aborting loses nothing. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t m);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

/* Reads what is left of f into a buffer the caller frees, its length in
 * *len (no terminator is added). Returns NULL when the read fails (errno
 * says why); f stays open. */
char *xread_stream(FILE *f, size_t *len);

/* Parses "X/X" into *out. Returns 0, or -1 when s is not an LSN. */
int lsn_parse(const char *s, size_t len, uint64_t *out) RELAY_MUSTCHECK;

/* Writes lsn as LSN_FMT prints it ("16/B374D28", upper-case hex, no
 * leading zeros) and a NUL into buf (LSN_STR_MAX bytes are enough);
 * returns the length. Per event, where snprintf() costs several times
 * more. */
#define LSN_STR_MAX 18
size_t lsn_format(char *buf, uint64_t lsn);

/* The same for a signed decimal ("-12", "7311"); 21 bytes are enough. */
#define I64_STR_MAX 21
size_t i64_format(char *buf, int64_t v);

/* Formats a message into err (errlen bytes, always NUL-terminated):
 * how every fallible function fills the caller's error buffer. */
void errbuf_set(char *err, size_t errlen, const char *fmt, ...)
	RELAY_PRINTF(3, 4);

/* Length of the well-formed UTF-8 sequence at s (n > 0 bytes left), or 0
 * (a stray byte, an overlong form, a surrogate, beyond U+10FFFF). Sets
 * *cp to its code point when cp is not NULL. */
size_t utf8_decode(const unsigned char *s, size_t n, unsigned *cp);

/* "512 B", "1.5 KiB", "1.2 GiB": one decimal, binary units. */
void fmt_bytes(char *buf, size_t len, double v);

/* Monotonic and wall clocks in microseconds. */
/* The first n (<= 8) bytes at p as a big-endian unsigned integer: the
 * byte order of the replication protocol and of pgoutput. */
static inline uint64_t be_uint(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v = v << 8 | b[i];
	return v;
}

int64_t now_mono_us(void);
int64_t now_wall_us(void);
/* CLOCK_MONOTONIC_COARSE: the last tick's time (a few ms of resolution),
 * read without the clock source. For per-event decisions on tens of ms. */
int64_t now_mono_coarse_us(void);

#endif
