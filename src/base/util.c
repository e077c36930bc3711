#include "base/util.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <stdint.h>
#include <sys/random.h>
#include <sys/uio.h>
#include <time.h>

static void oom(void)
{
    static const char msg[] = "mcp-sandboxd: out of memory\n";
    ssize_t r = write(STDERR_FILENO, msg, sizeof(msg) - 1);
    (void)r;
    abort();
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom();
    return p;
}

void *xcalloc(size_t count, size_t n)
{
    void *p = calloc(count ? count : 1, n ? n : 1);
    if (!p)
        oom();
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        oom();
    return q;
}

char *xstrdup(const char *s)
{
    char *p = strdup(s);
    if (!p)
        oom();
    return p;
}

char *xstrndup(const char *s, size_t n)
{
    char *p = strndup(s, n);
    if (!p)
        oom();
    return p;
}

char *xmemdup(const void *p, size_t n)
{
    char *d = xmalloc(n + 1);
    if (n)
        memcpy(d, p, n);
    d[n] = '\0';
    return d;
}

char *xvasprintf(const char *fmt, va_list ap)
{
    char *p = NULL;
    if (vasprintf(&p, fmt, ap) < 0)
        oom();
    return p;
}

char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *p = xvasprintf(fmt, ap);
    va_end(ap);
    return p;
}

double util_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

long long util_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* 9999-12-31T23:59:59.999Z, the last time four digits of year can show. */
#define RFC3339_LAST_MS 253402300799999LL

int util_rfc3339_ms(char buf[UTIL_RFC3339_CAP], long long wall_ms)
{
    buf[0] = '\0';
    if (wall_ms < 0 || wall_ms > RFC3339_LAST_MS)
        return -1;
    time_t secs = (time_t)(wall_ms / 1000);
    struct tm tm;
    if (!gmtime_r(&secs, &tm))
        return -1;
    /* The ranges are spelled out so the compiler can see the text fits. */
    int n = snprintf(buf, UTIL_RFC3339_CAP, "%04u-%02u-%02uT%02u:%02u:%02u.%03uZ",
                     (unsigned)(tm.tm_year + 1900) % 10000u, (unsigned)(tm.tm_mon + 1) % 100u,
                     (unsigned)tm.tm_mday % 100u, (unsigned)tm.tm_hour % 100u,
                     (unsigned)tm.tm_min % 100u, (unsigned)tm.tm_sec % 100u,
                     (unsigned)((unsigned long long)wall_ms % 1000u));
    if (n < 0 || n >= UTIL_RFC3339_CAP) {
        buf[0] = '\0';
        return -1;
    }
    return n;
}

void util_cond_init_monotonic(pthread_cond_t *cond)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(cond, &attr);
    pthread_condattr_destroy(&attr);
}

void util_cond_wait_ms(pthread_cond_t *cond, pthread_mutex_t *lock, double ms)
{
    if (ms < 0)
        ms = 0;
    if (ms > 3600e3)
        ms = 3600e3;
    long whole = (long)ms;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += whole / 1000;
    ts.tv_nsec += (whole % 1000) * 1000000L + (long)((ms - (double)whole) * 1e6);
    while (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(cond, lock, &ts);
}

bool util_fd_signalled(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return fd >= 0 && poll(&p, 1, 0) > 0;
}

int util_random_bytes(void *buf, size_t n)
{
    unsigned char *p = buf;
    while (n > 0) {
        ssize_t r = getrandom(p, n, 0);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

void util_hex(const unsigned char *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 0xf];
    }
    out[2 * n] = '\0';
}

/* Writes every byte of the cnt buffers at v (which it advances), retrying
 * on EINTR and short writes. */
static int writev_all(int fd, struct iovec *v, int cnt)
{
    while (cnt > 0) {
        ssize_t w = writev(fd, v, cnt);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        size_t left = (size_t)w;
        while (cnt > 0 && left >= v->iov_len) {
            left -= v->iov_len;
            v++;
            cnt--;
        }
        if (cnt > 0) {
            v->iov_base = (char *)v->iov_base + left;
            v->iov_len -= left;
        }
    }
    return 0;
}

int util_write_all(int fd, const void *buf, size_t n)
{
    struct iovec iov = {.iov_base = (void *)(uintptr_t)buf, .iov_len = n};
    return writev_all(fd, &iov, 1);
}

int util_write_line(int fd, const void *buf, size_t n)
{
    struct iovec iov[2] = {{.iov_base = (void *)(uintptr_t)buf, .iov_len = n},
                           {.iov_base = (void *)(uintptr_t) "\n", .iov_len = 1}};
    return writev_all(fd, iov, 2);
}

int util_own_dir(const char *dir, mode_t mode, struct stat *st)
{
    if (mkdir(dir, mode) < 0 && errno != EEXIST)
        return -1;
    struct stat found;
    if (lstat(dir, &found) < 0)
        return -1;
    if (!S_ISDIR(found.st_mode) || found.st_uid != geteuid() || (found.st_mode & 022))
        return UTIL_DIR_NOT_OURS;
    if (st)
        *st = found;
    return 0;
}

bool util_parse_decimal(const char *s, size_t n, unsigned long long max, unsigned long long *out)
{
    if (n == 0 || n > 20)
        return false;
    unsigned long long v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (ULLONG_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    if (v > max)
        return false;
    *out = v;
    return true;
}

/* Length of the valid UTF-8 sequence at p (1..4), or 0 if invalid. */
static size_t utf8_seq_len(const unsigned char *p, size_t avail)
{
    unsigned char c = p[0];
    if (c < 0x80)
        return 1;
    size_t len;
    uint32_t cp;
    if ((c & 0xe0) == 0xc0) {
        len = 2;
        cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
        len = 3;
        cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
        len = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (avail < len)
        return 0;
    for (size_t k = 1; k < len; k++) {
        if ((p[k] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[k] & 0x3f);
    }
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

char *util_utf8_sanitize(const char *s, size_t n, size_t *out_len)
{
    /* Worst case every byte becomes the 3-byte replacement character. */
    char *out = xmalloc(n * 3 + 1);
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, k = 0;
    while (i < n) {
        size_t len = utf8_seq_len(p + i, n - i);
        if (len == 0) {
            memcpy(out + k, "\xef\xbf\xbd", 3);
            k += 3;
            i++;
        } else {
            memcpy(out + k, p + i, len);
            k += len;
            i += len;
        }
    }
    out[k] = '\0';
    if (out_len)
        *out_len = k;
    return out;
}

int util_utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        size_t len = utf8_seq_len(p + i, n - i);
        if (len == 0)
            return 0;
        i += len;
    }
    return 1;
}

int util_utf8_prefix(const char *s, size_t max)
{
    size_t n = strnlen(s, max);
    if (n > INT_MAX)
        n = INT_MAX;
    if (n == max && s[n] != '\0') {
        /* Back off over continuation bytes to the start of the cut
         * sequence, then drop that start byte too. */
        size_t i = n;
        while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80)
            i--;
        n = i;
    }
    return (int)n;
}

const char *util_env_entry(char *const *envp, const char *name)
{
    size_t n = strlen(name);
    for (char *const *e = envp; e && *e; e++)
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
            return *e;
    return NULL;
}

size_t util_printable_ascii(char *dst, size_t cap, const char *src, size_t n, bool keep_space)
{
    size_t i = 0;
    if (cap == 0)
        return 0;
    for (; src && i < n && i + 1 < cap; i++) {
        unsigned char ch = (unsigned char)src[i];
        bool ok = (ch > 0x20 && ch < 0x7f) || (keep_space && ch == ' ');
        dst[i] = ok ? (char)ch : '?';
    }
    dst[i] = '\0';
    return i;
}

/* Code points shown as an escape though valid: the C1 controls, and those
 * that break or reorder a line where text is shown (a terminal, a journal
 * viewer, an editor). */
static bool escaped_code_point(uint32_t cp)
{
    return (cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029 ||
           (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

#define ESCAPE_PIECE_MAX 16

/* The escape or the bytes for the character at p (len bytes from
 * utf8_seq_len, 0: an invalid byte) into piece; returns its length. */
static size_t escape_piece(const unsigned char *p, size_t len, char piece[ESCAPE_PIECE_MAX])
{
    if (len == 0)
        return (size_t)snprintf(piece, ESCAPE_PIECE_MAX, "\\x%02x", p[0]);
    if (len == 1) {
        switch (p[0]) {
        case '\n':
            return (size_t)snprintf(piece, ESCAPE_PIECE_MAX, "\\n");
        case '\r':
            return (size_t)snprintf(piece, ESCAPE_PIECE_MAX, "\\r");
        case '\t':
            return (size_t)snprintf(piece, ESCAPE_PIECE_MAX, "\\t");
        default:
            if (p[0] < 0x20 || p[0] == 0x7f)
                return (size_t)snprintf(piece, ESCAPE_PIECE_MAX, "\\x%02x", p[0]);
            piece[0] = (char)p[0];
            return 1;
        }
    }
    uint32_t cp = p[0] & (len == 2 ? 0x1f : len == 3 ? 0x0f : 0x07);
    for (size_t k = 1; k < len; k++)
        cp = (cp << 6) | (p[k] & 0x3f);
    if (escaped_code_point(cp))
        return (size_t)snprintf(piece, ESCAPE_PIECE_MAX, "\\u%04x", (unsigned)(cp & 0xffff));
    memcpy(piece, p, len);
    return len;
}

size_t util_escape(char *dst, size_t cap, const char *src, size_t n)
{
    if (cap == 0)
        return 0;
    const unsigned char *p = (const unsigned char *)src;
    size_t limit = cap - 1;
    size_t k = 0;
    size_t safe = 0; /* the length to cut back to, with room for "..." */
    for (size_t i = 0; i < n;) {
        size_t len = utf8_seq_len(p + i, n - i);
        char piece[ESCAPE_PIECE_MAX];
        size_t m = escape_piece(p + i, len, piece);
        i += len ? len : 1;
        if (k + m > limit) {
            k = safe;
            size_t dots = limit - k < 3 ? limit - k : 3;
            memcpy(dst + k, "...", dots);
            k += dots;
            break;
        }
        memcpy(dst + k, piece, m);
        k += m;
        if (k + 3 <= limit)
            safe = k;
    }
    dst[k] = '\0';
    return k;
}

bool util_ascii_word(const char *s, size_t n, size_t max)
{
    if (n == 0 || n > max)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] <= ' ' || s[i] > '~')
            return false;
    return true;
}

bool util_one_of(const char *s, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], s) == 0)
            return true;
    return false;
}
