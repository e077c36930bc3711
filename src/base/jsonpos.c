#include "base/jsonpos.h"

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

enum node_type { NODE_SCALAR, NODE_OBJECT, NODE_ARRAY };

struct node {
    size_t parent;
    size_t first, last, next; /* children, in order; the next sibling */
    size_t count;             /* children */
    enum node_type type;
    const char *key; /* a member's key, decoded: into the text, or owned */
    size_t key_len;
    char *owned; /* a key with escapes, decoded */
    int line;
};

struct jsonpos {
    struct node *v;
    size_t n, cap;
};

/* The walk over the text: where it is, and the member key it has read
 * whose value comes next. */
struct scan {
    const char *text;
    size_t len, i;
    int line;
    struct jsonpos *p;
    size_t open; /* the innermost object or array not closed yet */
    bool want_key;
    const char *key;
    size_t key_len;
    bool key_escaped;
    int key_line;
};

/* A key with escapes, as json-c decodes it (raw[0..n) is the quoted
 * string); NULL when it does not decode. */
static char *decode_key(const char *raw, size_t n, size_t *out_len)
{
    if (n > (size_t)INT32_MAX)
        return NULL;
    json_tokener *tok = json_tokener_new();
    if (!tok)
        return NULL;
    json_object *o = json_tokener_parse_ex(tok, raw, (int)n);
    json_tokener_free(tok);
    char *out = NULL;
    if (o && json_object_is_type(o, json_type_string)) {
        *out_len = (size_t)json_object_get_string_len(o);
        out = xmalloc(*out_len + 1);
        memcpy(out, json_object_get_string(o), *out_len + 1);
    }
    json_object_put(o);
    return out;
}

static size_t add_node(struct scan *s, enum node_type type)
{
    struct jsonpos *p = s->p;
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 64;
        p->v = xrealloc(p->v, p->cap * sizeof(*p->v));
    }
    size_t id = p->n++;
    struct node *nd = &p->v[id];
    *nd = (struct node){.parent = s->open,
                        .first = JSONPOS_NONE,
                        .last = JSONPOS_NONE,
                        .next = JSONPOS_NONE,
                        .type = type,
                        .line = s->line};
    if (s->open == JSONPOS_NONE)
        return id;
    struct node *parent = &p->v[s->open];
    if (parent->type == NODE_OBJECT && s->key) {
        nd->line = s->key_line;
        nd->key = s->key;
        nd->key_len = s->key_len;
        if (s->key_escaped) {
            size_t n = 0;
            nd->owned = decode_key(s->key - 1, s->key_len + 2, &n);
            if (nd->owned) {
                nd->key = nd->owned;
                nd->key_len = n;
            }
        }
        s->key = NULL;
    }
    if (parent->last == JSONPOS_NONE)
        parent->first = id;
    else
        p->v[parent->last].next = id;
    parent->last = id;
    parent->count++;
    return id;
}

/* Past the string that starts at s->i (its opening quote); false when the
 * text ends inside it. Counts the lines a lenient parse let it hold. */
static bool skip_string(struct scan *s, bool *escaped)
{
    *escaped = false;
    for (size_t i = s->i + 1; i < s->len; i++) {
        if (s->text[i] == '\\') {
            *escaped = true;
            i++;
        } else if (s->text[i] == '\n') {
            s->line++;
        } else if (s->text[i] == '"') {
            s->i = i + 1;
            return true;
        }
    }
    return false;
}

/* One step of the walk at s->i; false once the text holds no more of the
 * value (its end, or what json-c accepted and the walk does not know). */
static bool step(struct scan *s)
{
    char c = s->text[s->i];
    bool in_object = s->open != JSONPOS_NONE && s->p->v[s->open].type == NODE_OBJECT;
    if (s->open == JSONPOS_NONE && s->p->n > 0)
        return false; /* the root value has ended */
    if (c == '\n' || c == ' ' || c == '\t' || c == '\r' || c == ':') {
        s->line += c == '\n';
        s->i++;
    } else if (c == '"') {
        size_t start = s->i;
        int line = s->line;
        bool escaped = false;
        if (!skip_string(s, &escaped))
            return false;
        if (in_object && s->want_key) {
            s->want_key = false;
            s->key = s->text + start + 1;
            s->key_len = s->i - start - 2;
            s->key_escaped = escaped;
            s->key_line = line;
        } else {
            int after = s->line;
            s->line = line;
            add_node(s, NODE_SCALAR);
            s->line = after;
        }
    } else if (c == ',') {
        s->want_key = in_object;
        s->i++;
    } else if (c == '{' || c == '[') {
        s->open = add_node(s, c == '{' ? NODE_OBJECT : NODE_ARRAY);
        s->want_key = c == '{';
        s->i++;
    } else if (c == '}' || c == ']') {
        if (s->open == JSONPOS_NONE)
            return false;
        s->open = s->p->v[s->open].parent;
        s->want_key = false;
        s->i++;
    } else if (c == '-' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z')) {
        add_node(s, NODE_SCALAR);
        while (s->i < s->len && !strchr(",:]} \t\r\n", s->text[s->i]) && s->text[s->i] != '\0')
            s->i++;
    } else {
        return false;
    }
    return true;
}

struct jsonpos *jsonpos_scan(const char *text, size_t len)
{
    struct jsonpos *p = xcalloc(1, sizeof(*p));
    struct scan s = {
        .text = text ? text : "", .len = text ? len : 0, .line = 1, .p = p, .open = JSONPOS_NONE};
    while (s.i < s.len && step(&s)) {
    }
    return p;
}

void jsonpos_free(struct jsonpos *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++)
        free(p->v[i].owned);
    free(p->v);
    free(p);
}

static const struct node *node_at(const struct jsonpos *p, size_t id)
{
    return p && id < p->n ? &p->v[id] : NULL;
}

size_t jsonpos_member(const struct jsonpos *p, size_t object, const char *key)
{
    const struct node *o = node_at(p, object);
    if (!o || o->type != NODE_OBJECT || !key)
        return JSONPOS_NONE;
    size_t n = strlen(key);
    for (size_t c = o->first; c != JSONPOS_NONE; c = p->v[c].next)
        if (p->v[c].key_len == n && memcmp(p->v[c].key, key, n) == 0)
            return c;
    return JSONPOS_NONE;
}

size_t jsonpos_element(const struct jsonpos *p, size_t array, size_t i)
{
    const struct node *a = node_at(p, array);
    if (!a || a->type != NODE_ARRAY || i >= a->count)
        return JSONPOS_NONE;
    size_t c = a->first;
    while (i-- > 0)
        c = p->v[c].next;
    return c;
}

size_t jsonpos_count(const struct jsonpos *p, size_t node)
{
    const struct node *nd = node_at(p, node);
    return nd ? nd->count : 0;
}

struct keyed {
    const char *key;
    size_t len;
    size_t id; /* ids grow in the text's order */
};

static int by_key_then_place(const void *a, const void *b)
{
    const struct keyed *x = a;
    const struct keyed *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->key, y->key, n);
    if (c == 0 && x->len != y->len)
        c = x->len < y->len ? -1 : 1;
    if (c == 0 && x->id != y->id)
        c = x->id < y->id ? -1 : 1;
    return c;
}

/* Sorted by key, each repeated key's second place is where it first
 * repeats; the earliest of those is the answer (n log n: an object may
 * hold every member of a large file). */
size_t jsonpos_repeated(const struct jsonpos *p, size_t object)
{
    const struct node *o = node_at(p, object);
    if (!o || o->type != NODE_OBJECT || o->count < 2)
        return JSONPOS_NONE;
    struct keyed *k = xcalloc(o->count, sizeof(*k));
    size_t n = 0;
    for (size_t c = o->first; c != JSONPOS_NONE; c = p->v[c].next)
        k[n++] = (struct keyed){.key = p->v[c].key, .len = p->v[c].key_len, .id = c};
    qsort(k, n, sizeof(*k), by_key_then_place);
    size_t first = JSONPOS_NONE;
    for (size_t i = 1; i < n; i++) {
        bool same = k[i].len == k[i - 1].len && memcmp(k[i].key, k[i - 1].key, k[i].len) == 0;
        bool second = same && (i < 2 || k[i - 2].len != k[i].len ||
                               memcmp(k[i - 2].key, k[i].key, k[i].len) != 0);
        if (second && (first == JSONPOS_NONE || k[i].id < first))
            first = k[i].id;
    }
    free(k);
    return first;
}

int jsonpos_line(const struct jsonpos *p, size_t node)
{
    const struct node *nd = node_at(p, node);
    return nd ? nd->line : 0;
}

void jsonpos_where(const char *text, size_t len, size_t offset, int *line, int *column)
{
    int l = 1;
    int c = 1;
    for (size_t i = 0; text && i < offset && i < len; i++) {
        c++;
        if (text[i] == '\n') {
            l++;
            c = 1;
        }
    }
    if (line)
        *line = l;
    if (column)
        *column = c;
}
