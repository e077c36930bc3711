/* A growable byte buffer with a hard cap (curl's dynbuf idea): adding past
 * the cap fails cleanly instead of growing without bound. Data is always
 * NUL-terminated so text can be handed to json-c, but may contain NULs. */
#ifndef MCPSBX_BUF_H
#define MCPSBX_BUF_H

#include "base/util.h"

struct buf {
    char *data;
    size_t len;
    size_t cap;
    size_t max; /* hard cap on len */
};

void buf_init(struct buf *b, size_t max);

/* Appends all n bytes, or nothing and returns -1 when that would pass max. */
int buf_add(struct buf *b, const void *p, size_t n) ATTR_WARN_UNUSED;

/* Appends as much as fits under max; returns the number of bytes added. */
size_t buf_add_upto(struct buf *b, const void *p, size_t n);

int buf_addf(struct buf *b, const char *fmt, ...) ATTR_PRINTF(2, 3) ATTR_WARN_UNUSED;

/* Drops the first n bytes. */
void buf_consume(struct buf *b, size_t n);

void buf_reset(struct buf *b);
void buf_free(struct buf *b);

/* Never NULL; valid until the next change. */
const char *buf_cstr(struct buf *b);

/* Hands the data to the caller (caller frees) and resets b. */
char *buf_take(struct buf *b, size_t *len);

#endif
