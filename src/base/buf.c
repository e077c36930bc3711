#include "base/buf.h"

#include <stdio.h>
#include <string.h>

void buf_init(struct buf *b, size_t max)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max;
}

static void reserve(struct buf *b, size_t need)
{
    if (need + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need + 1)
        cap *= 2;
    b->data = xrealloc(b->data, cap);
    b->cap = cap;
}

int buf_add(struct buf *b, const void *p, size_t n)
{
    if (n > b->max - b->len)
        return -1;
    if (n == 0 && b->data)
        return 0;
    reserve(b, b->len + n);
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

size_t buf_add_upto(struct buf *b, const void *p, size_t n)
{
    size_t room = b->max - b->len;
    if (n > room)
        n = room;
    if (buf_add(b, p, n) < 0)
        return 0;
    return n;
}

int buf_addf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = xvasprintf(fmt, ap);
    va_end(ap);
    int rc = buf_add(b, s, strlen(s));
    free(s);
    return rc;
}

void buf_consume(struct buf *b, size_t n)
{
    if (n >= b->len) {
        buf_reset(b);
        return;
    }
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
    b->data[b->len] = '\0';
}

void buf_reset(struct buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

void buf_free(struct buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

const char *buf_cstr(struct buf *b)
{
    if (!b->data)
        return "";
    return b->data;
}

char *buf_take(struct buf *b, size_t *len)
{
    if (!b->data)
        reserve(b, 0), b->data[0] = '\0';
    char *p = b->data;
    if (len)
        *len = b->len;
    b->data = NULL;
    b->len = b->cap = 0;
    return p;
}
