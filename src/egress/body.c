#include "egress/body.h"

#include <string.h>

enum {
    ST_DONE,
    ST_LENGTH,  /* counting Content-Length down */
    ST_SIZE,    /* a chunk size's hex digits */
    ST_EXT,     /* after ';': extensions, up to CR */
    ST_SIZE_LF, /* the LF after a size line's CR */
    ST_DATA,    /* a chunk's data */
    ST_DATA_CR, /* the CRLF after a chunk's data */
    ST_DATA_LF,
    ST_TRAILER, /* a trailer line, or the empty line that ends the body */
    ST_TRAILER_LF,
    ST_ERROR,
};

void egress_body_init(struct egress_body *b, enum egress_body_kind kind, unsigned long long length)
{
    memset(b, 0, sizeof(*b));
    b->kind = kind;
    switch (kind) {
    case EGRESS_BODY_NONE:
        b->state = ST_DONE;
        break;
    case EGRESS_BODY_LENGTH:
        b->left = length;
        b->state = length ? ST_LENGTH : ST_DONE;
        break;
    case EGRESS_BODY_CHUNKED:
        b->state = ST_SIZE;
        break;
    }
}

static int hex(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static bool text_byte(char c)
{
    unsigned char u = (unsigned char)c;
    return u == '\t' || (u >= 0x20 && u < 0x7f);
}

static int fail(struct egress_body *b, const char *why)
{
    b->state = ST_ERROR;
    b->error = why;
    return ST_ERROR;
}

/* A size line's byte. */
static int size_byte(struct egress_body *b, char c)
{
    if (++b->line > EGRESS_CHUNK_LINE_MAX)
        return fail(b, "a chunk-size line is longer than 4 KiB");
    if (b->state == ST_EXT) {
        if (c == '\r')
            return ST_SIZE_LF;
        return text_byte(c) ? ST_EXT : fail(b, "a chunk extension holds a control byte");
    }
    int v = hex(c);
    if (v >= 0) {
        if (++b->digits > EGRESS_CHUNK_DIGITS_MAX)
            return fail(b, "a chunk size has more than 15 hex digits");
        b->left = b->left * 16 + (unsigned)v;
        return ST_SIZE;
    }
    if (b->digits == 0)
        return fail(b, "a chunk-size line does not begin with a hex digit");
    if (c == ';')
        return ST_EXT;
    if (c == '\r')
        return ST_SIZE_LF;
    return fail(b, "a chunk size is followed by something other than ';' or CRLF");
}

/* After a size line's LF: the chunk's data, or the trailer section. */
static int size_done(struct egress_body *b)
{
    b->line = 0;
    b->digits = 0;
    return b->left ? ST_DATA : ST_TRAILER;
}

static int trailer_byte(struct egress_body *b, char c)
{
    if (c == '\r')
        return ST_TRAILER_LF;
    if (++b->line > EGRESS_CHUNK_LINE_MAX || ++b->trailer > EGRESS_TRAILER_MAX)
        return fail(b, "the chunked body's trailer section is too long");
    return text_byte(c) ? ST_TRAILER : fail(b, "a trailer line holds a control byte");
}

/* One byte of a chunked body's framing (not of a chunk's data). */
static int step(struct egress_body *b, char c)
{
    switch (b->state) {
    case ST_SIZE:
    case ST_EXT:
        return size_byte(b, c);
    case ST_SIZE_LF:
        return c == '\n' ? size_done(b) : fail(b, "a chunk-size line's CR without LF");
    case ST_DATA_CR:
        return c == '\r' ? ST_DATA_LF : fail(b, "a chunk's data is not followed by CRLF");
    case ST_DATA_LF:
        return c == '\n' ? ST_SIZE : fail(b, "a chunk's data is not followed by CRLF");
    case ST_TRAILER:
        return trailer_byte(b, c);
    case ST_TRAILER_LF:
        if (c != '\n')
            return fail(b, "a trailer line's CR without LF");
        if (b->line == 0)
            return ST_DONE;
        b->line = 0;
        return ST_TRAILER;
    default:
        return b->state;
    }
}

size_t egress_body_take(struct egress_body *b, const char *p, size_t n)
{
    size_t i = 0;
    while (i < n && b->state != ST_DONE && b->state != ST_ERROR) {
        if (b->state == ST_LENGTH || b->state == ST_DATA) {
            size_t k = n - i;
            if (k > b->left)
                k = (size_t)b->left;
            i += k;
            b->left -= k;
            if (b->left == 0)
                b->state = b->state == ST_LENGTH ? ST_DONE : ST_DATA_CR;
            continue;
        }
        b->state = step(b, p[i]);
        if (b->state != ST_ERROR)
            i++;
    }
    return i;
}

bool egress_body_done(const struct egress_body *b)
{
    return b->state == ST_DONE;
}

const char *egress_body_error(const struct egress_body *b)
{
    return b->state == ST_ERROR ? b->error : NULL;
}
