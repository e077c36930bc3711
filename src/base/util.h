/* Small helpers shared by every module: allocation that never returns NULL,
 * scoped cleanup, and array sizing. */
#ifndef MCPSBX_UTIL_H
#define MCPSBX_UTIL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#define ATTR_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define ATTR_WARN_UNUSED  __attribute__((warn_unused_result))

/* Allocation failure in a daemon that caps every buffer means the host is
 * out of memory; aborting is the only honest answer (as crun does). */
void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t n);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* n bytes (NULs among them), plus a NUL. */
char *xmemdup(const void *p, size_t n);
char *xasprintf(const char *fmt, ...) ATTR_PRINTF(1, 2);
char *xvasprintf(const char *fmt, va_list ap) ATTR_PRINTF(1, 0);

static inline void util_freep(void *p)
{
    free(*(void **)p);
}

#define cleanup_free __attribute__((cleanup(util_freep)))

/* Monotonic clock in milliseconds, for deadlines and durations. */
double util_now_ms(void);

/* The wall clock in milliseconds since the Unix epoch, for times shown to
 * people (never for deadlines: it can jump). */
long long util_wall_ms(void);

/* Room for util_rfc3339_ms's text and its NUL. */
#define UTIL_RFC3339_CAP 32

/* wall_ms as RFC 3339 UTC with milliseconds, "2026-11-27T09:15:00.123Z",
 * in buf. Returns its length, or -1 (buf "") for a time before 1970 or
 * after 9999. */
int util_rfc3339_ms(char buf[UTIL_RFC3339_CAP], long long wall_ms);

/* A condition variable timed on the monotonic clock (util_now_ms's). */
void util_cond_init_monotonic(pthread_cond_t *cond);

/* Waits on cond (lock held) for at most ms milliseconds. */
void util_cond_wait_ms(pthread_cond_t *cond, pthread_mutex_t *lock, double ms);

/* Whether fd is readable now, without waiting: a stop descriptor (an
 * eventfd or a pipe) that was signalled. -1 is never. */
bool util_fd_signalled(int fd);

/* Fills buf with n cryptographically random bytes; returns 0 or -1. */
int util_random_bytes(void *buf, size_t n);

/* Writes 2*n lowercase hex digits plus NUL into out. */
void util_hex(const unsigned char *in, size_t n, char *out);

/* Writes all of buf to fd, retrying on EINTR and short writes. */
int util_write_all(int fd, const void *buf, size_t n);

/* Writes buf and a newline to fd in one system call where it can, so a
 * reader sees the whole line at once; otherwise as util_write_all. */
int util_write_line(int fd, const void *buf, size_t n);

/* util_own_dir's answer for a directory that is there but will not do. */
#define UTIL_DIR_NOT_OURS (-2)

/* Makes dir with mode unless it is there, then checks that it is a
 * directory (not a link to one) of this process's uid that no one else
 * may write: what another user could put there is what the engine would
 * read. Returns 0 (*st, if not NULL, is what lstat found); UTIL_DIR_NOT_OURS
 * when it is not; -1 with errno when it cannot be made or looked at. */
int util_own_dir(const char *dir, mode_t mode, struct stat *st);

/* s[0..n) as a decimal number: 1 to 20 digits and nothing else, at most
 * max. False, *out untouched, otherwise. */
bool util_parse_decimal(const char *s, size_t n, unsigned long long max, unsigned long long *out);

/* True when s is valid UTF-8 of exactly n bytes. */
int util_utf8_valid(const char *s, size_t n);

/* The length of the longest prefix of s (NUL-terminated) that is at most
 * max bytes and does not split a UTF-8 sequence: for cutting text that
 * goes back to a client ("%.*s") without making it invalid. */
int util_utf8_prefix(const char *s, size_t max);

/* Copies src[0..n) into dst[cap], cut to cap - 1 bytes, as printable
 * ASCII, NUL-terminated: every other byte (a NUL among them), and a space
 * unless keep_space, becomes '?'. For identifiers and log-line fields that
 * came from outside. Returns the length written. */
size_t util_printable_ascii(char *dst, size_t cap, const char *src, size_t n, bool keep_space);

/* The entry "NAME=value" for name in envp (NULL-terminated, may be NULL),
 * the first one as getenv(3) would pick, or NULL. */
const char *util_env_entry(char *const *envp, const char *name);

/* Returns an allocated copy of s[0..n) that is valid UTF-8: each invalid
 * byte becomes U+FFFD. *out_len gets the length (the copy is also
 * NUL-terminated but may contain NULs). */
char *util_utf8_sanitize(const char *s, size_t n, size_t *out_len);

/* The most util_escape makes of one byte of input ("\xff"). */
#define UTIL_ESCAPE_GROWTH 4

/* Text from outside (a client, a sandbox) made safe to show in a log line
 * or a result: newline, CR and tab as \n \r \t; the other C0 controls,
 * DEL and each byte that is not valid UTF-8 as \xHH; the C1 controls,
 * U+2028, U+2029 and the bidirectional embeddings, overrides and isolates
 * (U+202A..U+202E, U+2066..U+2069) as \uHHHH; everything else as is (a
 * backslash too: the escapes only keep text from forging or hiding a line,
 * they are not meant to be undone). Writes at most cap - 1 bytes and a NUL
 * into dst, never cutting an escape or a character; text that did not fit
 * ends in "...". Returns the length written. */
size_t util_escape(char *dst, size_t cap, const char *src, size_t n);

/* Whether s[0..n) is 1 to max bytes, each printable ASCII other than a
 * space: for names and identifiers that leave no room for tricks. */
bool util_ascii_word(const char *s, size_t n, size_t max);

/* Whether s is one of the n names. */
bool util_one_of(const char *s, const char *const *names, size_t n);

#endif
