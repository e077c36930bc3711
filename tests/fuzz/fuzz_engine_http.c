/* libFuzzer harness for what the daemon reads back from the engine on an
 * attach upgrade: the response head (engine_http_parse_head), a chunked
 * refusal body (engine_http_dechunk) and the message in it
 * (engine_http_message). The input is used as the engine's answer: the head
 * up to the first blank line, the rest as the body; then whole, as a head
 * and as a chunked body; then as the payload of a well-formed chunked body
 * and response head built here.
 *
 * Checks: parse_head and dechunk agree with plain reference parsers
 * written here from the formats; a parse failure is ERR_PROTOCOL with a
 * message; dechunk never grows its input and gives back exactly what a
 * well-formed encoding carried, however it was cut into chunks; heads built
 * from known values parse back to them; a message is non-empty,
 * control-free and capped.
 *
 * Replay one input: build/fuzz/fuzz_engine_http FILE */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "backend/docker/engine_http.h"

/* engine_http.c's caps: chunk-size digits stop accumulating at
 * ENGINE_HTTP_MAX_ERROR_BODY; a message is at most ENGINE_HTTP_MAX_MESSAGE
 * bytes. */
#define REF_MAX_CHUNK   (64u * 1024u)
#define REF_MAX_MESSAGE 300u

static uint32_t next_rand(uint32_t *x)
{
    /* xorshift32: any seed but 0 */
    *x ^= *x << 13;
    *x ^= *x >> 17;
    *x ^= *x << 5;
    return *x;
}

/* Index of the first CRLF at or after from, or n when there is none. */
static size_t ref_crlf(const unsigned char *s, size_t n, size_t from)
{
    for (size_t i = from; i + 1 < n; i++)
        if (s[i] == '\r' && s[i + 1] == '\n')
            return i;
    return n;
}

/* line[0..len) is "<name>:<value>", name matched ignoring case; the value
 * without surrounding SP/HT. */
static bool ref_header(const unsigned char *line, size_t len, const char *name, size_t *vstart,
                       size_t *vend)
{
    size_t nl = strlen(name);
    if (len <= nl || line[nl] != ':')
        return false;
    for (size_t i = 0; i < nl; i++)
        if (tolower(line[i]) != name[i])
            return false;
    size_t a = nl + 1;
    size_t b = len;
    while (a < b && (line[a] == ' ' || line[a] == '\t'))
        a++;
    while (b > a && (line[b - 1] == ' ' || line[b - 1] == '\t'))
        b--;
    *vstart = a;
    *vend = b;
    return true;
}

/* The head format: "HTTP/1.x NNN[ reason]" CRLF, then header lines up to
 * an empty one or the last CRLF; the last Content-Length and
 * Transfer-Encoding win; a Content-Length must be digits (not too many). */
static int ref_parse_head(const unsigned char *s, size_t n, long *status, long long *cl,
                          bool *chunked)
{
    size_t l0 = ref_crlf(s, n, 0);
    if (l0 == n || l0 < 12 || memcmp(s, "HTTP/1.", 7) != 0 || s[8] != ' ' || !isdigit(s[9]) ||
        !isdigit(s[10]) || !isdigit(s[11]) || (l0 > 12 && s[12] != ' '))
        return -1;
    *status = (s[9] - '0') * 100 + (s[10] - '0') * 10 + (s[11] - '0');
    *cl = -1;
    *chunked = false;
    for (size_t p = l0 + 2;;) {
        size_t e = ref_crlf(s, n, p);
        if (e == n || e == p)
            break;
        size_t a = 0;
        size_t b = 0;
        if (ref_header(s + p, e - p, "content-length", &a, &b)) {
            long long v = 0;
            for (size_t i = a; i < b; i++) {
                if (!isdigit(s[p + i]) || v > (1LL << 40))
                    return -1;
                v = v * 10 + (s[p + i] - '0');
            }
            *cl = v;
        } else if (ref_header(s + p, e - p, "transfer-encoding", &a, &b)) {
            *chunked = b - a == 7 && strncasecmp((const char *)s + p + a, "chunked", 7) == 0;
        }
        p = e + 2;
    }
    return 0;
}

static int hexval(unsigned char c)
{
    return c <= '9' ? c - '0' : tolower(c) - 'a' + 10;
}

/* Chunks "<hex>[ext] CRLF <data> CRLF" until a zero or unreadable size;
 * a short last chunk gives what is there. */
static size_t ref_dechunk(const unsigned char *s, size_t n, unsigned char *out)
{
    size_t pos = 0;
    size_t o = 0;
    while (pos < n) {
        size_t i = pos;
        size_t sz = 0;
        while (i < n && isxdigit(s[i]) && sz < REF_MAX_CHUNK)
            sz = sz * 16 + (size_t)hexval(s[i++]);
        size_t e = ref_crlf(s, n, i);
        if (i == pos || e == n || sz == 0)
            break;
        size_t start = e + 2;
        size_t take = sz < n - start ? sz : n - start;
        memcpy(out + o, s + start, take);
        o += take;
        pos = start + take + 2;
    }
    return o;
}

static void check_head(const unsigned char *s, size_t n)
{
    long status = -1;
    long long cl = -2;
    bool chunked = false;
    struct err err = ERR_INIT;
    int rc = engine_http_parse_head((const char *)s, n, &status, &cl, &chunked, &err);
    long ref_status = -1;
    long long ref_cl = -2;
    bool ref_chunked = false;
    int ref_rc = ref_parse_head(s, n, &ref_status, &ref_cl, &ref_chunked);
    CHECK(rc == ref_rc);
    if (rc < 0) {
        CHECK(err.code == ERR_PROTOCOL && err.msg != NULL);
        err_clear(&err);
        return;
    }
    CHECK(err.msg == NULL);
    CHECK(status == ref_status && status >= 0 && status <= 999);
    CHECK(cl == ref_cl && cl >= -1);
    CHECK(chunked == ref_chunked);
}

static void check_dechunk(const unsigned char *s, size_t n)
{
    unsigned char *b = malloc(n ? n : 1);
    unsigned char *ref = malloc(n ? n : 1);
    if (n)
        memcpy(b, s, n);
    size_t got = engine_http_dechunk((char *)b, n);
    size_t want = ref_dechunk(s, n, ref);
    CHECK(got <= n);
    CHECK(got == want);
    CHECK(got == 0 || memcmp(b, ref, got) == 0);
    free(b);
    free(ref);
}

static void check_message(const unsigned char *s, size_t n)
{
    char *m = engine_http_message((const char *)s, n);
    if (!m)
        return;
    size_t len = strlen(m);
    CHECK(len > 0 && len <= REF_MAX_MESSAGE);
    for (size_t i = 0; i < len; i++)
        CHECK((unsigned char)m[i] >= 0x20 && (unsigned char)m[i] != 0x7f);
    free(m);
}

/* Encodes s[0..n) as a chunked body cut at random, in random hex case,
 * some sizes with leading zeros or an extension; decoding must give s. */
static void check_chunked_round_trip(const unsigned char *s, size_t n, uint32_t seed)
{
    size_t cap = n * 2 + (n + 1) * 24 + 16;
    char *enc = malloc(cap);
    size_t len = 0;
    size_t off = 0;
    while (off < n) {
        uint32_t r = next_rand(&seed);
        size_t k = 1 + (size_t)(r >> 8) % 4096;
        if (k > n - off)
            k = n - off;
        len += (size_t)snprintf(enc + len, cap - len, r & 1 ? "%s%zx%s\r\n" : "%s%zX%s\r\n",
                                r & 2 ? "00" : "", k, r & 4 ? ";ext=1" : "");
        memcpy(enc + len, s + off, k);
        len += k;
        memcpy(enc + len, "\r\n", 2);
        len += 2;
        off += k;
    }
    memcpy(enc + len, "0\r\n\r\n", 5);
    len += 5;
    CHECK(len <= cap);
    CHECK(engine_http_dechunk(enc, len) == n);
    CHECK(n == 0 || memcmp(enc, s, n) == 0);
    free(enc);
}

/* A head built from known values (names in random case, blanks around
 * values) must parse back to them. */
static void check_head_round_trip(uint32_t seed)
{
    uint32_t r = next_rand(&seed);
    long status = (long)(r % 1000);
    long long cl = r & 1 ? (long long)(next_rand(&seed) % 1000000) : -1;
    bool chunked = r & 2;
    char head[256];
    int n = snprintf(head, sizeof(head), "HTTP/1.%u %03ld%s\r\nServer: fuzz\r\n", (r >> 4) % 2,
                     status, r & 8 ? " Reason Phrase" : "");
    if (cl >= 0)
        n += snprintf(head + n, sizeof(head) - (size_t)n, "%s:%s%lld \r\n",
                      r & 16 ? "CONTENT-length" : "Content-Length", r & 32 ? "\t" : " ", cl);
    n += snprintf(head + n, sizeof(head) - (size_t)n, "Transfer-Encoding: %s\r\n\r\n",
                  chunked ? (r & 64 ? "Chunked" : "chunked") : "identity");
    CHECK(n > 0 && (size_t)n < sizeof(head));
    long got_status = -1;
    long long got_cl = -2;
    bool got_chunked = !chunked;
    struct err err = ERR_INIT;
    CHECK(engine_http_parse_head(head, (size_t)n, &got_status, &got_cl, &got_chunked, &err) == 0);
    CHECK(got_status == status && got_cl == cl && got_chunked == chunked);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Exact-size copies, so reading past the end is caught. */
    unsigned char *s = malloc(size ? size : 1);
    if (size)
        memcpy(s, data, size);

    /* As the daemon reads an answer: head through the blank line, then
     * the body (chunked or not) and the message in it. */
    const unsigned char *blank = size >= 4 ? memmem(s, size, "\r\n\r\n", 4) : NULL;
    if (blank) {
        size_t head_len = (size_t)(blank - s) + 4;
        check_head(s, head_len);
        check_dechunk(s + head_len, size - head_len);
        check_message(s + head_len, size - head_len);
    }
    check_head(s, size);
    check_dechunk(s, size);
    check_message(s, size);

    uint32_t seed = 1;
    for (size_t i = 0; i < size && i < 4; i++)
        seed = seed * 31 + data[i];
    if (seed == 0)
        seed = 1;
    check_chunked_round_trip(s, size, seed);
    check_head_round_trip(seed);
    free(s);
    return 0;
}
