/* libFuzzer harness for the redaction of secrets in program output (the
 * program controls every byte). Input: byte 0's low four bits say how many
 * piece bytes follow (0..15); each piece byte gives the size of the next
 * piece (its low seven bits) and the stream it goes to in the two-stream
 * run (its high bit: stderr); the rest is the output, fed in those pieces.
 *
 * Checks src/sandbox/output/redact.h's contract for three fixed secrets against a
 * reference model written here from the header's words alone: its own
 * list of every form (hex, base64 at the three offsets in both alphabets,
 * the percent-encodings, the escaped form, inside a JSON string and a
 * Python repr) and a plain quadratic redactor
 * (every occurrence of every form, overlapping runs merged, one mark per
 * run: the longest occurrence's).
 *   - one stream, however it is cut into pieces, comes out exactly as the
 *     model redacts it;
 *   - so no form is left in it, and a stream without a byte a form starts
 *     with comes out unchanged;
 *   - the pieces sent to stdout and stderr through a redact_pair leave no
 *     form in either stream, nor in stdout + stderr, nor in stderr +
 *     stdout.
 *
 * Replay one input: build/fuzz/fuzz_redact FILE */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "sandbox/output/redact.h"

#define N_SECRETS 3
static const char *const NAMES[N_SECRETS] = {"A", "B", "C"};
static const char *const VALUES[N_SECRETS] = {"ab/c+d=e", "zz\"z\\z'", "k y!\t~"};
static const char *const MARKS[N_SECRETS] = {"[REDACTED:A]", "[REDACTED:B]", "[REDACTED:C]"};

/* ---- the model's forms ---------------------------------------------------------- */

#define MAX_FORMS 128
#define FORM_MAX  64

struct form {
    char text[FORM_MAX];
    size_t len;
    int secret;
};
static struct form forms[MAX_FORMS];
static size_t n_forms;

static void add_form(const char *text, size_t len, int secret)
{
    if (len == 0)
        return;
    for (size_t i = 0; i < n_forms; i++)
        if (forms[i].len == len && memcmp(forms[i].text, text, len) == 0)
            return; /* the first secret to have a text keeps it */
    CHECK(n_forms < MAX_FORMS && len < FORM_MAX);
    memcpy(forms[n_forms].text, text, len);
    forms[n_forms].len = len;
    forms[n_forms].secret = secret;
    n_forms++;
}

/* Base64 of `offset` zero bytes then v, kept from the first character
 * made of v's bits alone to the last one (full) or to the last one that
 * holds any of them (at_end: the text ends there). */
static void base64_form(const unsigned char *v, size_t n, int offset, bool url, bool at_end,
                        int secret)
{
    const char *abc = url ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
                          : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    unsigned char bits[8 * 40] = {0};
    size_t nbits = 8 * ((size_t)offset + n);
    for (size_t i = 0; i < n; i++)
        for (int b = 0; b < 8; b++)
            bits[8 * ((size_t)offset + i) + (size_t)b] = (v[i] >> (7 - b)) & 1;
    char out[FORM_MAX];
    size_t k = 0;
    for (size_t c = 0; 6 * c < nbits; c++) {
        size_t first = 6 * c, last = 6 * c + 5;
        if (first < 8 * (size_t)offset || (last >= nbits && !at_end))
            continue;
        int x = 0;
        for (size_t b = first; b <= last; b++)
            x = 2 * x + (b < nbits ? bits[b] : 0);
        out[k++] = abc[x];
    }
    add_form(out, k, secret);
}

static void percent_form(const unsigned char *v, size_t n, const char *keep, bool plus, bool all,
                         bool upper, int secret)
{
    char out[FORM_MAX];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = v[i];
        bool unreserved = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                          (c >= '0' && c <= '9') || strchr(keep, c);
        if (!all && unreserved) {
            out[k++] = (char)c;
        } else if (!all && plus && c == ' ') {
            out[k++] = '+';
        } else {
            k += (size_t)snprintf(out + k, 4, upper ? "%%%02X" : "%%%02x", c);
        }
    }
    add_form(out, k, secret);
}

/* v with its tabs shown as \t; quoted, also with a backslash before
 * every backslash and every quote (0: none). */
static void escaped_form(const unsigned char *v, size_t n, bool quoted, char quote, int s)
{
    char out[FORM_MAX];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (quoted && (v[i] == '\\' || (quote && v[i] == quote)))
            out[k++] = '\\';
        if (v[i] == '\t') {
            out[k++] = '\\';
            out[k++] = 't';
        } else {
            out[k++] = (char)v[i];
        }
    }
    add_form(out, k, s);
}

static void model_forms(void)
{
    for (int s = 0; s < N_SECRETS; s++) {
        const unsigned char *v = (const unsigned char *)VALUES[s];
        size_t n = strlen(VALUES[s]);
        add_form((const char *)v, n, s);
        char out[FORM_MAX];
        for (int upper = 0; upper < 2; upper++) {
            for (size_t i = 0; i < n; i++)
                snprintf(out + 2 * i, 3, upper ? "%02X" : "%02x", v[i]);
            add_form(out, 2 * n, s);
            percent_form(v, n, "-._~", false, false, upper, s);      /* RFC 3986 */
            percent_form(v, n, "-._~/", false, false, upper, s);     /* quote() */
            percent_form(v, n, "-._~", true, false, upper, s);       /* quote_plus() */
            percent_form(v, n, "-._~!'()*", false, false, upper, s); /* encodeURIComponent() */
            percent_form(v, n, "", false, true, upper, s);           /* every byte */
        }
        for (int offset = 0; offset < 3; offset++)
            for (int url = 0; url < 2; url++)
                for (int at_end = 0; at_end < 2; at_end++)
                    base64_form(v, n, offset, url, at_end, s);
        /* As shown escaped: these values' only control character is a tab. */
        escaped_form(v, n, false, 0, s);
        /* Inside a Python repr() with either quote escaped or none, and
         * inside a JSON string, which for these values (ASCII, their one
         * control character a tab) is the repr escaping '"'. */
        escaped_form(v, n, true, '\'', s);
        escaped_form(v, n, true, '"', s);
        escaped_form(v, n, true, 0, s);
    }
}

/* ---- the model's redactor ---------------------------------------------------------- */

struct out {
    char *bytes;
    size_t len, cap;
};

static int sink(void *ctx, const char *p, size_t n)
{
    struct out *o = ctx;
    if (o->len + n > o->cap) {
        o->cap = 2 * (o->len + n) + 64;
        o->bytes = realloc(o->bytes, o->cap);
        CHECK(o->bytes != NULL);
    }
    if (n)
        memcpy(o->bytes + o->len, p, n);
    o->len += n;
    return 0;
}

/* Every occurrence, by its end: the longest form ending there covers the
 * others; runs that overlap merge, keeping the longest occurrence's mark
 * (the earlier run's on a tie). */
static void model_redact(const uint8_t *d, size_t n, struct out *o)
{
    size_t *start = malloc((n + 1) * sizeof(size_t));
    size_t *end = malloc((n + 1) * sizeof(size_t));
    size_t *len = malloc((n + 1) * sizeof(size_t));
    int *secret = malloc((n + 1) * sizeof(int));
    size_t runs = 0;
    CHECK(start && end && len && secret);
    for (size_t e = 1; e <= n; e++) {
        const struct form *best = NULL;
        for (size_t f = 0; f < n_forms; f++)
            if (forms[f].len <= e &&
                memcmp(d + e - forms[f].len, forms[f].text, forms[f].len) == 0 &&
                (!best || forms[f].len > best->len))
                best = &forms[f];
        if (!best)
            continue;
        size_t s = e - best->len, l = best->len;
        int who = best->secret;
        while (runs && s < end[runs - 1]) {
            runs--;
            if (start[runs] < s)
                s = start[runs];
            if (len[runs] >= l) {
                l = len[runs];
                who = secret[runs];
            }
        }
        start[runs] = s;
        end[runs] = e;
        len[runs] = l;
        secret[runs] = who;
        runs++;
    }
    size_t at = 0;
    for (size_t i = 0; i < runs; i++) {
        sink(o, (const char *)d + at, start[i] - at);
        sink(o, MARKS[secret[i]], strlen(MARKS[secret[i]]));
        at = end[i];
    }
    sink(o, (const char *)d + at, n - at);
    free(start);
    free(end);
    free(len);
    free(secret);
}

static bool has_form(const char *bytes, size_t len)
{
    for (size_t f = 0; f < n_forms; f++)
        if (len && memmem(bytes, len, forms[f].text, forms[f].len))
            return true;
    return false;
}

/* ---- the runs ------------------------------------------------------------------------ */

static void feed(const struct redactor *r, const uint8_t *data, size_t size, const uint8_t *cuts,
                 size_t ncuts, struct out *o)
{
    struct redact_stream s = {0};
    size_t off = 0;
    for (size_t i = 0; i <= ncuts; i++) {
        size_t n = cuts && i < ncuts ? (size_t)(cuts[i] & 0x7f) : size - off;
        if (n > size - off)
            n = size - off;
        CHECK(redact_feed(r, &s, (const char *)data + off, n, sink, o) == 0);
        off += n;
    }
    CHECK(redact_flush(r, &s, sink, o) == 0);
    redact_stream_free(&s);
}

static int sink_out(void *ctx, const char *p, size_t n)
{
    return sink(ctx, p, n);
}

static int sink_err(void *ctx, const char *p, size_t n)
{
    return sink((struct out *)ctx + 1, p, n);
}

/* Piece i to stdout or stderr by its byte's high bit; the rest to stdout. */
static void feed_pair(const struct redactor *r, const uint8_t *data, size_t size,
                      const uint8_t *cuts, size_t ncuts, struct out two[2])
{
    struct redact_pair p = {0};
    size_t off = 0;
    for (size_t i = 0; i <= ncuts; i++) {
        size_t n = i < ncuts ? (size_t)(cuts[i] & 0x7f) : size - off;
        int stream = i < ncuts ? cuts[i] >> 7 : 0;
        if (n > size - off)
            n = size - off;
        CHECK(redact_pair_feed(r, &p, stream, (const char *)data + off, n, sink, &two[stream]) ==
              0);
        off += n;
    }
    CHECK(redact_pair_flush(r, &p, sink_out, sink_err, two) == 0);
    redact_pair_free(&p);
}

static void check_joined(const struct out *a, const struct out *b)
{
    char *j = malloc(a->len + b->len + 1);
    CHECK(j != NULL);
    if (a->len)
        memcpy(j, a->bytes, a->len);
    if (b->len)
        memcpy(j + a->len, b->bytes, b->len);
    CHECK(!has_form(j, a->len + b->len));
    free(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct redactor *r;
    if (!r) {
        CHECK(redactor_new(NAMES, VALUES, N_SECRETS, &r, NULL) == 0);
        CHECK(r != NULL);
        model_forms();
    }
    if (size == 0)
        return 0;
    size_t ncuts = data[0] & 15;
    if (size < 1 + ncuts)
        return 0;
    const uint8_t *cuts = data + 1;
    const uint8_t *stream = data + 1 + ncuts;
    size_t n = size - 1 - ncuts;

    struct out whole = {0}, pieces = {0}, model = {0};
    feed(r, stream, n, NULL, 0, &whole);
    feed(r, stream, n, cuts, ncuts, &pieces);
    model_redact(stream, n, &model);
    CHECK(whole.len == model.len);
    CHECK(whole.len == 0 || memcmp(whole.bytes, model.bytes, whole.len) == 0);
    CHECK(pieces.len == model.len);
    CHECK(pieces.len == 0 || memcmp(pieces.bytes, model.bytes, pieces.len) == 0);
    CHECK(!has_form(whole.bytes, whole.len));
    bool starts = false;
    for (size_t f = 0; f < n_forms && !starts; f++)
        starts = memchr(stream, forms[f].text[0], n) != NULL;
    if (!starts) {
        CHECK(whole.len == n);
        CHECK(n == 0 || memcmp(whole.bytes, stream, n) == 0);
    }

    struct out two[2] = {{0}, {0}};
    feed_pair(r, stream, n, cuts, ncuts, two);
    CHECK(!has_form(two[0].bytes, two[0].len));
    CHECK(!has_form(two[1].bytes, two[1].len));
    check_joined(&two[0], &two[1]);
    check_joined(&two[1], &two[0]);

    free(whole.bytes);
    free(pieces.bytes);
    free(model.bytes);
    free(two[0].bytes);
    free(two[1].bytes);
    return 0;
}
