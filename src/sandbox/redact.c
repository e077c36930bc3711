#include "sandbox/redact.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/codec.h"
#include "base/util.h"

struct pattern {
    char *text;
    size_t len;
    const char *mark; /* "[REDACTED:NAME]", shared by a value's forms */
};

struct redactor {
    struct pattern *pats; /* longest first, so a longer form wins */
    size_t n, cap;
    char **marks;
    size_t n_marks;
    size_t max_len;
    bool first[256]; /* bytes a pattern starts with */
};

static const char HEX_LOWER[] = "0123456789abcdef";
static const char HEX_UPPER[] = "0123456789ABCDEF";

static char *hex(const unsigned char *v, size_t n, const char *digits)
{
    char *out = xmalloc(2 * n + 1);
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[v[i] >> 4];
        out[2 * i + 1] = digits[v[i] & 15];
    }
    out[2 * n] = '\0';
    return out;
}

/* Without '=' padding: the same value in a longer text may have none. */
static char *base64(const unsigned char *v, size_t n, bool url)
{
    struct buf b;
    buf_init(&b, (size_t)-1);
    if (codec_base64_encode_as(v, n, url ? CODEC_BASE64URL : CODEC_BASE64, false, &b) < 0)
        abort(); /* no cap */
    return buf_take(&b, NULL);
}

/* Percent-encoding of everything but RFC 3986's unreserved characters. */
static char *url_encoded(const unsigned char *v, size_t n)
{
    struct buf b;
    buf_init(&b, (size_t)-1);
    if (codec_percent_encode(v, n, "", &b) < 0)
        abort(); /* no cap */
    return buf_take(&b, NULL);
}

static void add(struct redactor *r, char *text, const char *mark)
{
    size_t len = strlen(text);
    for (size_t i = 0; i < r->n; i++) {
        if (r->pats[i].len == len && memcmp(r->pats[i].text, text, len) == 0) {
            explicit_bzero(text, len);
            free(text);
            return;
        }
    }
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 8;
        r->pats = xrealloc(r->pats, r->cap * sizeof(*r->pats));
    }
    r->pats[r->n++] = (struct pattern){.text = text, .len = len, .mark = mark};
    r->first[(unsigned char)text[0]] = true;
    if (len > r->max_len)
        r->max_len = len;
}

static int by_length_desc(const void *a, const void *b)
{
    size_t la = ((const struct pattern *)a)->len, lb = ((const struct pattern *)b)->len;
    return la < lb ? 1 : la > lb ? -1 : 0;
}

struct redactor *redactor_new(const char *const *names, const char *const *values, size_t n)
{
    struct redactor *r = xcalloc(1, sizeof(*r));
    r->marks = xcalloc(n ? n : 1, sizeof(char *));
    for (size_t i = 0; i < n; i++) {
        const unsigned char *v = (const unsigned char *)values[i];
        size_t len = strlen(values[i]);
        if (len < REDACT_MIN_LEN)
            continue;
        char *mark = xasprintf("[REDACTED:%s]", names[i]);
        r->marks[r->n_marks++] = mark;
        add(r, xstrdup(values[i]), mark);
        add(r, base64(v, len, false), mark);
        add(r, base64(v, len, true), mark);
        add(r, hex(v, len, HEX_LOWER), mark);
        add(r, hex(v, len, HEX_UPPER), mark);
        add(r, url_encoded(v, len), mark);
    }
    if (r->n == 0) {
        redactor_free(r);
        return NULL;
    }
    qsort(r->pats, r->n, sizeof(*r->pats), by_length_desc);
    return r;
}

void redactor_free(struct redactor *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        explicit_bzero(r->pats[i].text, r->pats[i].len);
        free(r->pats[i].text);
    }
    for (size_t i = 0; i < r->n_marks; i++)
        free(r->marks[i]);
    free(r->marks);
    free(r->pats);
    free(r);
}

/* At data[i]: the pattern matching whole, else NULL with *partial set when
 * the bytes left (fewer than a pattern) could still become one. */
static const struct pattern *match_at(const struct redactor *r, const char *data, size_t n,
                                      size_t i, bool *partial)
{
    *partial = false;
    if (!r->first[(unsigned char)data[i]])
        return NULL;
    size_t left = n - i;
    for (size_t k = 0; k < r->n; k++) {
        const struct pattern *p = &r->pats[k];
        if (p->len <= left) {
            if (memcmp(data + i, p->text, p->len) == 0)
                return p;
        } else if (memcmp(data + i, p->text, left) == 0) {
            *partial = true;
        }
    }
    return NULL;
}

/* Scans data; at_end: nothing follows, so a partial match is just bytes.
 * Returns the sink's stop value, or 0 with *keep bytes at the end to hold. */
static int scan(const struct redactor *r, const char *data, size_t n, bool at_end, redact_sink sink,
                void *ctx, size_t *keep)
{
    size_t from = 0; /* start of plain bytes not yet passed on */
    size_t i = 0;
    int rc = 0;
    *keep = 0;
    while (i < n) {
        bool partial = false;
        const struct pattern *p = match_at(r, data, n, i, &partial);
        if (p) {
            if (i > from && (rc = sink(ctx, data + from, i - from)) != 0)
                return rc;
            if ((rc = sink(ctx, p->mark, strlen(p->mark))) != 0)
                return rc;
            i += p->len;
            from = i;
        } else if (partial && !at_end) {
            *keep = n - i;
            break;
        } else {
            i++;
        }
    }
    size_t end = n - *keep;
    if (end > from)
        rc = sink(ctx, data + from, end - from);
    return rc;
}

static int process(const struct redactor *r, struct redact_stream *s, const char *data, size_t len,
                   bool at_end, redact_sink sink, void *ctx)
{
    const char *work = data;
    size_t n = len;
    char *joined = NULL;
    if (s->held_len) {
        n = s->held_len + len;
        joined = xmalloc(n ? n : 1);
        memcpy(joined, s->held, s->held_len);
        if (len)
            memcpy(joined + s->held_len, data, len);
        work = joined;
        explicit_bzero(s->held, s->held_len);
        s->held_len = 0;
    }
    size_t keep = 0;
    int rc = scan(r, work, n, at_end, sink, ctx, &keep);
    if (rc == 0 && keep) {
        /* keep < the longest pattern: held is never larger than that. */
        if (!s->held)
            s->held = xmalloc(r->max_len);
        memcpy(s->held, work + n - keep, keep);
        s->held_len = keep;
    }
    if (joined) {
        explicit_bzero(joined, n);
        free(joined);
    }
    return rc;
}

int redact_feed(const struct redactor *r, struct redact_stream *s, const char *data, size_t len,
                redact_sink sink, void *ctx)
{
    if (!r)
        return len ? sink(ctx, data, len) : 0;
    return process(r, s, data, len, false, sink, ctx);
}

int redact_flush(const struct redactor *r, struct redact_stream *s, redact_sink sink, void *ctx)
{
    if (!r || !s->held_len)
        return 0;
    return process(r, s, "", 0, true, sink, ctx);
}

void redact_stream_free(struct redact_stream *s)
{
    if (s->held) {
        explicit_bzero(s->held, s->held_len);
        free(s->held);
    }
    *s = (struct redact_stream){0};
}
