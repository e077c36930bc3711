/* Where a request's body ends, found as its bytes go by unchanged: a
 * Content-Length counted down, or a chunked body (RFC 9112 section 7.1)
 * scanned to the end of its last chunk and trailer section.
 *
 * The gateway forwards exactly the body and nothing after it: bytes past
 * a body's end would reach the upstream as a second request the gateway
 * never judged (its Host could name any site behind the same address).
 * The chunked scanner is strict where a lenient upstream and a strict one
 * could read the framing differently: lines end in CRLF (a bare LF is
 * refused), a chunk size is 1 to 15 hex digits followed directly by ';'
 * or the CRLF, and extensions and trailer lines hold only printable
 * ASCII and tabs. Pure: no I/O, no allocation. */
#ifndef MCPSBX_EGRESS_BODY_H
#define MCPSBX_EGRESS_BODY_H

#include <stdbool.h>
#include <stddef.h>

/* The longest chunk-size line (extensions included) and trailer line. */
#define EGRESS_CHUNK_LINE_MAX 4096
/* The most bytes of trailer lines one body may carry. */
#define EGRESS_TRAILER_MAX (16 * 1024)
/* The most hex digits of a chunk size (below 2^60). */
#define EGRESS_CHUNK_DIGITS_MAX 15

enum egress_body_kind {
    EGRESS_BODY_NONE,    /* no body: done at once */
    EGRESS_BODY_LENGTH,  /* Content-Length bytes */
    EGRESS_BODY_CHUNKED, /* Transfer-Encoding: chunked */
};

/* Private to body.c. */
struct egress_body {
    enum egress_body_kind kind;
    int state;
    unsigned long long left; /* bytes to go: of the body, or of the chunk */
    unsigned digits;         /* of the chunk size read */
    size_t line;             /* bytes of the current size or trailer line */
    size_t trailer;          /* bytes of trailer lines */
    const char *error;
};

void egress_body_init(struct egress_body *b, enum egress_body_kind kind, unsigned long long length);

/* Of the next n bytes of the client's stream, how many belong to the body
 * (all of them, until it ends). After an error it takes nothing more. */
size_t egress_body_take(struct egress_body *b, const char *p, size_t n);

bool egress_body_done(const struct egress_body *b);

/* Why the chunked framing was refused (a constant sentence), or NULL. */
const char *egress_body_error(const struct egress_body *b);

#endif
