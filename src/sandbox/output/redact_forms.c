#include "sandbox/output/redact_forms.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/codec.h"
#include "base/err.h"
#include "base/util.h"

static const char HEX_LOWER[] = "0123456789abcdef";
static const char HEX_UPPER[] = "0123456789ABCDEF";

/* A form under construction, capped at REDACT_FORM_MAX of its value's
 * length; over says a byte did not fit (the cap is above every form's
 * length, so it would be a bug here, reported rather than a form cut). */
struct form {
    struct buf b;
    bool over;
};

/* Its bytes are zeroed before they are freed. */
static void form_free(struct form *f)
{
    if (f->b.data)
        explicit_bzero(f->b.data, f->b.cap);
    buf_free(&f->b);
}

static void put(struct form *f, const void *p, size_t n)
{
    if (!f->over && buf_add(&f->b, p, n) < 0)
        f->over = true;
}

static void hex(const unsigned char *v, size_t n, const char *digits, struct form *out)
{
    for (size_t i = 0; i < n; i++) {
        char two[2] = {digits[v[i] >> 4], digits[v[i] & 15]};
        put(out, two, 2);
    }
}

/* The base64 characters of v when it starts `offset` bytes (0..2) into a
 * group of three: from the first one only v's bits decide, to the last
 * one only v's bits decide or, with at_end, to the last one with any of
 * them (the encoded text ends there: zero bits and padding follow). */
static void base64_at(const unsigned char *v, size_t n, unsigned offset, bool url, bool at_end,
                      struct form *out)
{
    unsigned char *in = xcalloc(n + 3, 1);
    memcpy(in + offset, v, n);
    struct form all = {0};
    buf_init(&all.b, CODEC_BASE64_LEN(offset + n));
    if (codec_base64_encode_as(in, offset + n, url ? CODEC_BASE64URL : CODEC_BASE64, false,
                               &all.b) < 0)
        out->over = true;
    size_t first_bit = 8 * (size_t)offset;
    size_t end_bit = first_bit + 8 * n;
    size_t from = (first_bit + 5) / 6;
    size_t to = at_end ? (end_bit + 5) / 6 : end_bit / 6;
    if (to > all.b.len)
        to = all.b.len;
    if (to > from)
        put(out, all.b.data + from, to - from);
    explicit_bzero(in, n + 3);
    free(in);
    form_free(&all);
}

/* Percent-encoding: bytes outside [A-Za-z0-9] and keep as %XX in digits'
 * case, a space as '+' with plus (quote_plus), every byte with all. */
static void percent(const unsigned char *v, size_t n, const char *keep, bool plus, bool all,
                    const char *digits, struct form *out)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = v[i];
        bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        if (!all && c && (alnum || strchr(keep, c))) {
            put(out, &c, 1);
        } else if (!all && plus && c == ' ') {
            put(out, "+", 1);
        } else {
            char three[3] = {'%', digits[c >> 4], digits[c & 15]};
            put(out, three, 3);
        }
    }
}

/* The code point of the UTF-8 sequence at v[i..n) and its length, or
 * -1 (length 1) when it is not one. */
static long utf8_at(const unsigned char *v, size_t n, size_t i, size_t *len)
{
    unsigned char c = v[i];
    size_t need = c < 0x80             ? 1
                  : (c & 0xe0) == 0xc0 ? 2
                  : (c & 0xf0) == 0xe0 ? 3
                  : (c & 0xf8) == 0xf0 ? 4
                                       : 0;
    *len = 1;
    if (need == 0 || i + need > n)
        return -1;
    if (need == 1)
        return c;
    long cp = c & (0x3f >> (need - 1));
    for (size_t k = 1; k < need; k++) {
        if ((v[i + k] & 0xc0) != 0x80)
            return -1;
        cp = (cp << 6) | (v[i + k] & 0x3f);
    }
    static const long least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < least[need] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return -1;
    *len = need;
    return cp;
}

static void put_u(struct form *out, const char *prefix, unsigned long cp, int digits)
{
    put(out, prefix, strlen(prefix));
    for (int d = digits - 1; d >= 0; d--)
        put(out, &HEX_LOWER[(cp >> (4 * d)) & 15], 1);
}

/* Inside a JSON string, as json.dumps (ascii: ensure_ascii, the default)
 * and JSON.stringify (not ascii) write it. */
static void json_string(const unsigned char *v, size_t n, bool ascii, struct form *out)
{
    for (size_t i = 0; i < n;) {
        size_t len = 1;
        long cp = utf8_at(v, n, i, &len);
        const char *esc = cp == '"'    ? "\\\""
                          : cp == '\\' ? "\\\\"
                          : cp == '\n' ? "\\n"
                          : cp == '\r' ? "\\r"
                          : cp == '\t' ? "\\t"
                          : cp == '\b' ? "\\b"
                          : cp == '\f' ? "\\f"
                                       : NULL;
        if (esc)
            put(out, esc, strlen(esc));
        else if ((cp >= 0 && cp < 0x20) || (cp >= 0x80 && ascii && cp < 0x10000))
            put_u(out, "\\u", (unsigned long)cp, 4);
        else if (cp >= 0x10000 && ascii) {
            unsigned long c = (unsigned long)cp - 0x10000;
            put_u(out, "\\u", 0xd800 + (c >> 10), 4);
            put_u(out, "\\u", 0xdc00 + (c & 0x3ff), 4);
        } else
            put(out, v + i, len);
        i += len;
    }
}

/* Inside a Python repr() of a str (quote: the quote character it escapes,
 * or 0 when it uses the other one), for the characters its output keeps
 * as they are: printable ASCII and non-ASCII letters (an approximation of
 * str.isprintable that covers what secrets hold). */
static void py_repr(const unsigned char *v, size_t n, char quote, struct form *out)
{
    for (size_t i = 0; i < n;) {
        size_t len = 1;
        long cp = utf8_at(v, n, i, &len);
        if (cp == '\\')
            put(out, "\\\\", 2);
        else if (quote && cp == quote) {
            char two[2] = {'\\', quote};
            put(out, two, 2);
        } else if (cp == '\n')
            put(out, "\\n", 2);
        else if (cp == '\r')
            put(out, "\\r", 2);
        else if (cp == '\t')
            put(out, "\\t", 2);
        else if ((cp >= 0 && cp < 0x20) || (cp >= 0x7f && cp < 0xa0))
            put_u(out, "\\x", (unsigned long)cp, 2);
        else
            put(out, v + i, len);
        i += len;
    }
}

typedef void (*add_fn)(void *ctx, const char *form, size_t len);

/* Hands the form to add and empties it; -1 (err set) when it overflowed. */
static int give(struct form *f, add_fn add, void *ctx, struct err *err)
{
    if (f->over)
        return err_set(err, ERR_INTERNAL, "a redaction form passed its cap of %zu bytes", f->b.max);
    add(ctx, f->b.data ? f->b.data : "", f->b.len);
    if (f->b.data)
        explicit_bzero(f->b.data, f->b.cap);
    buf_reset(&f->b);
    return 0;
}

int redact_forms(const unsigned char *v, size_t n, add_fn add, void *ctx, struct err *err)
{
    struct form f = {0};
    buf_init(&f.b, REDACT_FORM_MAX(n));
    int rc = -1;
    put(&f, v, n);
    if (give(&f, add, ctx, err) < 0)
        goto out;
    for (int upper = 0; upper < 2; upper++) {
        const char *digits = upper ? HEX_UPPER : HEX_LOWER;
        hex(v, n, digits, &f);
        if (give(&f, add, ctx, err) < 0)
            goto out;
        static const struct {
            const char *keep;
            bool plus, all;
        } pct[] = {{"-._~", false, false},
                   {"-._~/", false, false},
                   {"-._~", true, false},
                   {"-._~!'()*", false, false},
                   {"", false, true}};
        for (size_t k = 0; k < ARRAY_SIZE(pct); k++) {
            percent(v, n, pct[k].keep, pct[k].plus, pct[k].all, digits, &f);
            if (give(&f, add, ctx, err) < 0)
                goto out;
        }
    }
    for (unsigned offset = 0; offset < 3; offset++) {
        for (int url = 0; url < 2; url++) {
            for (int at_end = 0; at_end < 2; at_end++) {
                base64_at(v, n, offset, url, at_end, &f);
                if (give(&f, add, ctx, err) < 0)
                    goto out;
            }
        }
    }
    for (int ascii = 0; ascii < 2; ascii++) {
        json_string(v, n, ascii, &f);
        if (give(&f, add, ctx, err) < 0)
            goto out;
    }
    static const char quotes[] = {'\'', '"', 0};
    for (size_t k = 0; k < ARRAY_SIZE(quotes); k++) {
        py_repr(v, n, quotes[k], &f);
        if (give(&f, add, ctx, err) < 0)
            goto out;
    }
    /* As a log line or a result shows it. */
    char *shown = xmalloc(n * UTIL_ESCAPE_GROWTH + 1);
    size_t shown_len = util_escape(shown, n * UTIL_ESCAPE_GROWTH + 1, (const char *)v, n);
    add(ctx, shown, shown_len);
    explicit_bzero(shown, n * UTIL_ESCAPE_GROWTH + 1);
    free(shown);
    rc = 0;
out:
    form_free(&f);
    return rc;
}
