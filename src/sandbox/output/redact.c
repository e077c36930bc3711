#include "sandbox/output/redact.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/util.h"
#include "sandbox/output/redact_forms.h"

/* ---- the automaton ---------------------------------------------------------- */

/* A node of the trie of every form; 0 is the root. */
struct node {
    int child;   /* first child, 0: none */
    int sibling; /* next child of the same parent, 0: none */
    int fail;    /* the longest proper suffix that is a node */
    unsigned char byte;
    bool end;         /* a form ends here */
    size_t depth;     /* its string's length */
    size_t out_len;   /* the longest form that is a suffix of its string; 0: none */
    const char *mark; /* that form's mark */
};

struct redactor {
    struct node *nodes;
    size_t n, cap;
    int root[256];           /* the root's children by byte */
    size_t max_len, min_len; /* of the forms */
    char **marks;
    size_t n_marks;
    size_t max_mark; /* the longest mark's length */
};

static int child_of(const struct redactor *r, int s, unsigned char b)
{
    if (s == 0)
        return r->root[b];
    for (int c = r->nodes[s].child; c; c = r->nodes[c].sibling)
        if (r->nodes[c].byte == b)
            return c;
    return 0;
}

/* The automaton's next state from s on byte b. */
static int step(const struct redactor *r, int s, unsigned char b)
{
    for (;;) {
        int c = child_of(r, s, b);
        if (c || s == 0)
            return c;
        s = r->nodes[s].fail;
    }
}

static int new_node(struct redactor *r, int parent, unsigned char b)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 256;
        r->nodes = xrealloc(r->nodes, r->cap * sizeof(*r->nodes));
    }
    int id = (int)r->n++;
    r->nodes[id] = (struct node){.byte = b, .depth = r->nodes[parent].depth + 1};
    if (parent == 0) {
        r->root[b] = id;
    } else {
        r->nodes[id].sibling = r->nodes[parent].child;
        r->nodes[parent].child = id;
    }
    return id;
}

/* Adds a form (the first value to claim a text keeps it). */
static void add(struct redactor *r, const struct buf *form, const char *mark)
{
    if (form->len == 0)
        return;
    int s = 0;
    for (size_t i = 0; i < form->len; i++) {
        unsigned char b = (unsigned char)form->data[i];
        int c = child_of(r, s, b);
        s = c ? c : new_node(r, s, b);
    }
    if (!r->nodes[s].end) {
        r->nodes[s].end = true;
        r->nodes[s].mark = mark;
    }
    if (form->len > r->max_len)
        r->max_len = form->len;
    if (r->min_len == 0 || form->len < r->min_len)
        r->min_len = form->len;
}

struct add_ctx {
    struct redactor *r;
    const char *mark;
};

static void add_form(void *ctx, const char *form, size_t len)
{
    struct add_ctx *a = ctx;
    struct buf b = {.data = (char *)(uintptr_t)form, .len = len, .cap = len, .max = len};
    add(a->r, &b, a->mark);
}

static int add_forms(struct redactor *r, const unsigned char *v, size_t n, const char *mark,
                     struct err *err)
{
    struct add_ctx a = {.r = r, .mark = mark};
    return redact_forms(v, n, add_form, &a, err);
}

/* Failure links and, for each node, the longest form ending there:
 * breadth first, so every shorter node is done before it is needed. */
static void build_links(struct redactor *r)
{
    int *queue = xmalloc(r->n * sizeof(int));
    size_t head = 0, tail = 0;
    for (int b = 0; b < 256; b++)
        if (r->root[b])
            queue[tail++] = r->root[b];
    while (head < tail) {
        int u = queue[head++];
        struct node *nu = &r->nodes[u];
        if (nu->end) {
            nu->out_len = nu->depth;
        } else {
            nu->out_len = r->nodes[nu->fail].out_len;
            nu->mark = r->nodes[nu->fail].mark;
        }
        for (int c = nu->child; c; c = r->nodes[c].sibling) {
            r->nodes[c].fail = step(r, r->nodes[u].fail, r->nodes[c].byte);
            queue[tail++] = c;
        }
    }
    free(queue);
}

int redactor_new(const char *const *names, const char *const *values, size_t n,
                 struct redactor **out, struct err *err)
{
    *out = NULL;
    struct redactor *r = xcalloc(1, sizeof(*r));
    r->marks = xcalloc(n ? n : 1, sizeof(char *));
    r->cap = 256;
    r->nodes = xcalloc(r->cap, sizeof(*r->nodes));
    r->n = 1; /* the root */
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(values[i]);
        if (len < REDACT_MIN_LEN)
            continue;
        char *mark = xasprintf("[REDACTED:%s]", names[i]);
        r->marks[r->n_marks++] = mark;
        if (strlen(mark) > r->max_mark)
            r->max_mark = strlen(mark);
        if (add_forms(r, (const unsigned char *)values[i], len, mark, err) < 0) {
            redactor_free(r);
            return err_wrap(err, "the forms of %s's value", names[i]);
        }
    }
    if (r->n_marks == 0) {
        redactor_free(r);
        return 0;
    }
    build_links(r);
    *out = r;
    return 0;
}

void redactor_free(struct redactor *r)
{
    if (!r)
        return;
    explicit_bzero(r->nodes, r->cap * sizeof(*r->nodes));
    free(r->nodes);
    for (size_t i = 0; i < r->n_marks; i++)
        free(r->marks[i]);
    free(r->marks);
    free(r);
}

/* ---- a stream -----------------------------------------------------------------
 *
 * Positions count the stream's bytes from 0. After byte pos-1 the state's
 * string (depth bytes) is the longest tail that may begin a form, so no
 * later occurrence starts before pos - depth: every byte before that is
 * settled, either passed on or inside a span (a run of bytes covered by
 * occurrences) whose mark goes out once the span can grow no more. Spans
 * are kept in order, disjoint; an occurrence overlapping the last ones
 * merges with them. Unsettled bytes are at most the longest form's
 * length; the ring keeps them between feeds. */

struct span {
    uint64_t start, end; /* [start, end) */
    size_t len;          /* the longest occurrence in it: its mark is the span's */
    const char *mark;
};

struct redact_held {
    int state;
    uint64_t pos;  /* bytes fed */
    uint64_t base; /* bytes passed on or dropped for a mark */
    char *ring;    /* byte p at ring[p & ring_mask] */
    size_t ring_mask;
    struct span *spans; /* a ring of span_cap, from span_first */
    size_t span_cap, span_first, span_n;
};

static struct redact_held *held_new(const struct redactor *r)
{
    struct redact_held *h = xcalloc(1, sizeof(*h));
    size_t size = 64;
    while (size < r->max_len + 1)
        size *= 2;
    h->ring = xcalloc(size, 1);
    h->ring_mask = size - 1;
    /* One pending span that began before the settled point, then at most
     * one per unsettled byte, and the one being added. */
    h->span_cap = r->max_len + 3;
    h->spans = xcalloc(h->span_cap, sizeof(*h->spans));
    return h;
}

static void held_free(struct redact_held *h)
{
    if (!h)
        return;
    explicit_bzero(h->ring, h->ring_mask + 1);
    free(h->ring);
    free(h->spans);
    free(h);
}

static struct span *span_at(struct redact_held *h, size_t i)
{
    return &h->spans[(h->span_first + i) % h->span_cap];
}

/* An occurrence [start, end), end at or past every span's. */
static void add_span(struct redact_held *h, uint64_t start, uint64_t end, size_t len,
                     const char *mark)
{
    struct span s = {.start = start, .end = end, .len = len, .mark = mark};
    while (h->span_n) {
        struct span *last = span_at(h, h->span_n - 1);
        if (start >= last->end)
            break;
        if (last->start < s.start)
            s.start = last->start;
        if (last->end > s.end)
            s.end = last->end;
        if (last->len >= s.len) {
            s.len = last->len;
            s.mark = last->mark;
        }
        h->span_n--;
    }
    if (h->span_n == h->span_cap)
        abort(); /* cannot happen: see span_cap */
    *span_at(h, h->span_n++) = s;
}

/* Bytes [from, to) to sink: those before data_pos from the ring, the rest
 * from data (which starts at data_pos). */
static int pass_on(struct redact_held *h, uint64_t from, uint64_t to, const char *data,
                   uint64_t data_pos, redact_sink sink, void *ctx)
{
    int rc = 0;
    while (from < to && from < data_pos && rc == 0) {
        size_t at = (size_t)(from & h->ring_mask);
        uint64_t end = to < data_pos ? to : data_pos;
        size_t n = (size_t)(end - from);
        if (n > h->ring_mask + 1 - at)
            n = h->ring_mask + 1 - at;
        rc = sink(ctx, h->ring + at, n);
        from += n;
    }
    if (rc == 0 && from < to)
        rc = sink(ctx, data + (from - data_pos), (size_t)(to - from));
    return rc;
}

/* Everything before settled goes out: plain bytes, and the marks of the
 * spans that end by then. */
static int settle(struct redact_held *h, uint64_t settled, const char *data, uint64_t data_pos,
                  redact_sink sink, void *ctx)
{
    int rc = 0;
    while (h->base < settled && rc == 0) {
        struct span *sp = h->span_n ? span_at(h, 0) : NULL;
        uint64_t plain_end = sp && sp->start < settled ? sp->start : settled;
        if (h->base < plain_end) {
            rc = pass_on(h, h->base, plain_end, data, data_pos, sink, ctx);
            h->base = plain_end;
        }
        if (rc != 0 || !sp || sp->start >= settled || sp->end > settled)
            break;
        rc = sink(ctx, sp->mark, strlen(sp->mark));
        h->base = sp->end;
        h->span_first = (h->span_first + 1) % h->span_cap;
        h->span_n--;
    }
    return rc;
}

static uint64_t settled_point(const struct redactor *r, const struct redact_held *h)
{
    return h->pos - r->nodes[h->state].depth;
}

static int feed(const struct redactor *r, struct redact_held *h, const char *data, size_t len,
                redact_sink sink, void *ctx)
{
    uint64_t data_pos = h->pos;
    int rc = 0;
    for (size_t i = 0; i < len && rc == 0; i++) {
        h->state = step(r, h->state, (unsigned char)data[i]);
        h->pos++;
        const struct node *nd = &r->nodes[h->state];
        if (nd->out_len) {
            add_span(h, h->pos - nd->out_len, h->pos, nd->out_len, nd->mark);
            rc = settle(h, settled_point(r, h), data, data_pos, sink, ctx);
        }
    }
    if (rc == 0)
        rc = settle(h, settled_point(r, h), data, data_pos, sink, ctx);
    /* What is not settled stays in the ring for the next feed. */
    uint64_t keep = settled_point(r, h);
    if (keep < data_pos)
        keep = data_pos;
    for (uint64_t p = keep; p < h->pos; p++)
        h->ring[p & h->ring_mask] = data[p - data_pos];
    return rc;
}

static int flush(struct redact_stream *s, redact_sink sink, void *ctx)
{
    struct redact_held *h = s->held;
    if (!h)
        return 0;
    int rc = settle(h, h->pos, NULL, h->pos, sink, ctx);
    held_free(h);
    s->held = NULL;
    return rc;
}

int redact_feed(const struct redactor *r, struct redact_stream *s, const char *data, size_t len,
                redact_sink sink, void *ctx)
{
    if (!r)
        return len ? sink(ctx, data, len) : 0;
    if (!len)
        return 0;
    if (!s->held)
        s->held = held_new(r);
    return feed(r, s->held, data, len, sink, ctx);
}

int redact_flush(const struct redactor *r, struct redact_stream *s, redact_sink sink, void *ctx)
{
    return r ? flush(s, sink, ctx) : 0;
}

void redact_stream_free(struct redact_stream *s)
{
    held_free(s->held);
    s->held = NULL;
}

/* ---- two streams ---------------------------------------------------------------- */

/* Where the bytes a holds back, followed by next[0..n), make a form that
 * begins in a's bytes: that occurrence's part in a becomes a span (the
 * one that begins first, if several). a's state is its held bytes'. */
static void join(const struct redactor *r, struct redact_held *a, const char *next, size_t n)
{
    size_t held = r->nodes[a->state].depth;
    if (!held)
        return;
    if (n > r->max_len)
        n = r->max_len;
    int s = a->state;
    struct span best = {0};
    for (size_t j = 0; j < n; j++) {
        s = step(r, s, (unsigned char)next[j]);
        const struct node *nd = &r->nodes[s];
        if (nd->depth <= j + 1)
            break; /* nothing from here on reaches back into a */
        if (nd->out_len > j + 1) {
            /* It covers all j + 1 bytes of next and the rest in a. */
            uint64_t start = a->pos + (j + 1) - nd->out_len;
            if (!best.mark || start < best.start)
                best = (struct span){.start = start, .len = nd->out_len, .mark = nd->mark};
        }
    }
    if (best.mark)
        add_span(a, best.start, a->pos, best.len, best.mark);
}

struct recording {
    const struct redactor *r;
    struct redact_pair *p;
    int stream;
    redact_sink sink;
    void *ctx;
};

/* Keeps the stream's first bytes (for the join at the end), then on. */
static int record(void *arg, const char *data, size_t len)
{
    struct recording *rec = arg;
    struct redact_pair *p = rec->p;
    size_t have = p->head_len[rec->stream];
    if (have < rec->r->max_len) {
        if (!p->head[rec->stream])
            p->head[rec->stream] = xmalloc(rec->r->max_len);
        size_t take = rec->r->max_len - have < len ? rec->r->max_len - have : len;
        memcpy(p->head[rec->stream] + have, data, take);
        p->head_len[rec->stream] += take;
    }
    return rec->sink(rec->ctx, data, len);
}

int redact_pair_feed(const struct redactor *r, struct redact_pair *p, int stream, const char *data,
                     size_t len, redact_sink sink, void *ctx)
{
    if (!r)
        return len ? sink(ctx, data, len) : 0;
    if (!len)
        return 0;
    int other = 1 - stream;
    if (p->last == other + 1 && p->s[other].held)
        join(r, p->s[other].held, data, len);
    p->last = stream + 1;
    struct redact_stream *s = &p->s[stream];
    if (!s->held)
        s->held = held_new(r);
    struct recording rec = {.r = r, .p = p, .stream = stream, .sink = sink, .ctx = ctx};
    return feed(r, s->held, data, len, record, &rec);
}

/* What stream i shows first: its first bytes passed on, then the bytes it
 * still holds (as they are: at worst a mark too many). */
static size_t shown_head(const struct redactor *r, const struct redact_pair *p, int i, char *out)
{
    size_t n = p->head_len[i];
    if (n)
        memcpy(out, p->head[i], n);
    const struct redact_held *h = p->s[i].held;
    if (h) {
        for (uint64_t q = settled_point(r, h); q < h->pos && n < r->max_len; q++)
            out[n++] = h->ring[q & h->ring_mask];
    }
    return n;
}

int redact_pair_flush(const struct redactor *r, struct redact_pair *p, redact_sink sink0,
                      redact_sink sink1, void *ctx)
{
    if (!r)
        return 0;
    char *heads[2] = {xmalloc(r->max_len + 1), xmalloc(r->max_len + 1)};
    size_t lens[2];
    for (int i = 0; i < 2; i++)
        lens[i] = shown_head(r, p, i, heads[i]);
    for (int i = 0; i < 2; i++)
        if (p->s[i].held)
            join(r, p->s[i].held, heads[1 - i], lens[1 - i]);
    for (int i = 0; i < 2; i++) {
        explicit_bzero(heads[i], r->max_len + 1);
        free(heads[i]);
    }
    int rc = flush(&p->s[0], sink0, ctx);
    if (rc == 0)
        rc = flush(&p->s[1], sink1, ctx);
    return rc;
}

void redact_pair_free(struct redact_pair *p)
{
    for (int i = 0; i < 2; i++) {
        redact_stream_free(&p->s[i]);
        if (p->head[i])
            explicit_bzero(p->head[i], p->head_len[i]);
        free(p->head[i]);
    }
    *p = (struct redact_pair){0};
}

/* ---- whole texts --------------------------------------------------------------- */

static int to_buf(void *ctx, const char *data, size_t len)
{
    return buf_add(ctx, data, len) < 0 ? -1 : 0;
}

/* What n bytes can become: each run of bytes replaced by a mark is at
 * least the shortest form long, so there are at most n / min_len marks. */
static size_t redacted_max(const struct redactor *r, size_t n)
{
    if (!r)
        return n;
    return n + (n / r->min_len + 1) * r->max_mark;
}

char *redact_bytes(const struct redactor *r, const char *s, size_t n, size_t *out_len)
{
    struct buf b;
    buf_init(&b, redacted_max(r, n));
    struct redact_stream rs = {0};
    /* Under that cap neither fails; if one did, the text would end there:
     * cut short, never a byte of a form let through. */
    if (redact_feed(r, &rs, s, n, to_buf, &b) == 0)
        (void)redact_flush(r, &rs, to_buf, &b);
    redact_stream_free(&rs);
    return buf_take(&b, out_len);
}

char *redact_text(const struct redactor *r, const char *s, size_t n, size_t max)
{
    size_t len = 0;
    char *once = redact_bytes(r, s, n, &len);
    size_t cap = len * UTIL_ESCAPE_GROWTH + 1;
    char *shown = xmalloc(cap);
    size_t shown_len = util_escape(shown, cap, once, len);
    free(once);
    char *twice = redact_bytes(r, shown, shown_len, &len);
    free(shown);
    if (len > max && max >= 4) {
        /* Cut at a character, with "..." as util_escape cuts. */
        size_t cut = max - 3;
        while (cut > 0 && ((unsigned char)twice[cut] & 0xC0) == 0x80)
            cut--;
        memcpy(twice + cut, "...", 4);
    }
    return twice;
}
