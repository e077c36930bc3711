/* The head of one request as a forward proxy receives it from a client it
 * does not trust, parsed as the bytes arrive.
 *
 * Served: "CONNECT host:port HTTP/1.x" (authority form, port required)
 * and "METHOD http://host[:port]/path?query HTTP/1.x" (absolute form, port
 * 80 by default) for GET, HEAD, POST, PUT, PATCH, DELETE and OPTIONS.
 * Refused: https:// in absolute form (clients tunnel it with CONNECT),
 * origin form ("/path") and asterisk form, userinfo ("http://user@host/"),
 * a fragment, any byte in the target outside printable ASCII, and hosts
 * that are not a DNS name or an IP literal (egress/pattern.h's rules).
 *
 * Lines end in CRLF; a bare LF is taken too, as most servers do (a CR
 * anywhere else is refused). That is safe because nothing forwards these
 * bytes: the gateway writes the upstream head itself from the parsed
 * fields, so no next hop can read the lines differently. Field lines are
 * "name: value" with a token name and no blank before the colon; the value
 * loses its surrounding blanks and may hold any byte but NUL, CR, LF and
 * the other controls (tab excepted). Continuation lines (obs-fold), empty
 * lines before the request line, and a NUL anywhere are refused.
 *
 * Framing, checked against request smuggling: Content-Length must be
 * digits only, and a repeated one must repeat the same number;
 * Transfer-Encoding must be exactly "chunked" (anything else is 501),
 * appear once, not with Content-Length and not in HTTP/1.0; a CONNECT
 * carries no body. More than one Host field is refused; a missing one is
 * not (the gateway sends upstream a Host of its own from host and port).
 *
 * Caps: PROXY_REQ_HEAD_MAX for the whole head, PROXY_REQ_LINE_MAX for the
 * request line (414 past it), PROXY_REQ_FIELDS_MAX fields (431 past it).
 * A struct proxy_req holds everything in fixed arrays: no allocation.
 *
 * Origin mode (proxy_req_init_origin) reads the heads of the requests a
 * client sends inside a tunnel whose TLS the gateway terminates: there
 * the host and port are the tunnel's, so the target must be origin form
 * ("/path?query", printable ASCII, no fragment) and CONNECT is refused
 * (405); every other rule and cap above holds the same. */
#ifndef MCPSBX_EGRESS_PROXY_REQ_H
#define MCPSBX_EGRESS_PROXY_REQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "egress/pattern.h"

#define PROXY_REQ_HEAD_MAX   (16 * 1024)
#define PROXY_REQ_LINE_MAX   (8 * 1024)
#define PROXY_REQ_FIELDS_MAX 64
/* The largest Content-Length taken (2^53, well past any body a run sends). */
#define PROXY_REQ_CONTENT_LENGTH_MAX (1ULL << 53)

enum proxy_req_state {
    PROXY_REQ_MORE,  /* the head is not complete: feed more */
    PROXY_REQ_DONE,  /* the head is complete */
    PROXY_REQ_ERROR, /* refused: answer proxy_req_status() and close */
};

enum proxy_method {
    PROXY_CONNECT,
    PROXY_GET,
    PROXY_HEAD,
    PROXY_POST,
    PROXY_PUT,
    PROXY_PATCH,
    PROXY_DELETE,
    PROXY_OPTIONS,
};

/* One field line: offsets into the request's copy of the head. */
struct proxy_req_field {
    uint32_t name;
    uint32_t name_len;
    uint32_t value;
    uint32_t value_len;
};

/* Everything is private to proxy_req.c; read it through the functions
 * below. Large (about 26 KiB): allocate it, do not put it on a stack. */
struct proxy_req {
    enum proxy_req_state state;
    int status;
    const char *reason;
    size_t len;        /* bytes of head held */
    size_t line_start; /* where the line being read begins */
    bool origin;       /* origin mode: host and port given, "/path" targets */
    bool have_line;    /* the request line is parsed */
    enum proxy_method method;
    int minor; /* HTTP/1.<minor> */
    struct egress_host host;
    unsigned port;
    size_t target_len;
    size_t nfields;
    bool have_host_field;
    bool have_content_length;
    bool have_transfer_encoding;
    bool chunked;
    unsigned long long content_length;
    struct proxy_req_field fields[PROXY_REQ_FIELDS_MAX];
    char target[PROXY_REQ_LINE_MAX + 2];
    char head[PROXY_REQ_HEAD_MAX];
};

void proxy_req_init(struct proxy_req *r);

/* For origin mode: host and port are the tunnel's (what proxy_req_host
 * and proxy_req_port give back). */
void proxy_req_init_origin(struct proxy_req *r, const struct egress_host *host, unsigned port);

/* Takes the next n bytes from the client. *consumed gets how many of them
 * belong to the head: all of them while it says PROXY_REQ_MORE; up to and
 * including the empty line that ends the head when it says PROXY_REQ_DONE
 * (the rest are the body or the tunnel's first bytes). Once DONE or ERROR
 * it stays so, taking nothing more. */
enum proxy_req_state proxy_req_feed(struct proxy_req *r, const void *data, size_t n,
                                    size_t *consumed);

/* On PROXY_REQ_ERROR: the status to answer (400, 405, 414, 431, 501, 505)
 * and why, a constant sentence with nothing of the client's in it. 0 and
 * NULL otherwise. */
int proxy_req_status(const struct proxy_req *r);
const char *proxy_req_reason(const struct proxy_req *r);

/* The rest answer only once DONE. */
enum proxy_method proxy_req_method(const struct proxy_req *r);
const char *proxy_method_name(enum proxy_method m);
/* 0 or 1: HTTP/1.0 or HTTP/1.1. */
int proxy_req_minor(const struct proxy_req *r);
/* Normal form (egress_host_parse): lower-cased name, or literal without
 * brackets. */
const struct egress_host *proxy_req_host(const struct proxy_req *r);
unsigned proxy_req_port(const struct proxy_req *r);
/* The origin form to send upstream, "/path?query" (NUL-terminated; "/"
 * when the URL had no path); "" for CONNECT. */
const char *proxy_req_target(const struct proxy_req *r, size_t *len);
size_t proxy_req_field_count(const struct proxy_req *r);
/* Field i's name and value (not NUL-terminated). */
void proxy_req_field(const struct proxy_req *r, size_t i, const char **name, size_t *name_len,
                     const char **value, size_t *value_len);
/* Whether field i is the client's business with this hop alone and is
 * never sent upstream: Connection, Keep-Alive, Proxy-Authenticate,
 * Proxy-Authorization, Proxy-Connection, TE, Trailer, Transfer-Encoding,
 * Upgrade, and any field a Connection field names. Host is not among
 * them, but the gateway writes its own. */
bool proxy_req_field_hop_by_hop(const struct proxy_req *r, size_t i);
bool proxy_req_has_content_length(const struct proxy_req *r);
unsigned long long proxy_req_content_length(const struct proxy_req *r);
bool proxy_req_chunked(const struct proxy_req *r);
/* Whether the client asked to end the connection after this request:
 * HTTP/1.0, or a Connection field that lists "close". */
bool proxy_req_wants_close(const struct proxy_req *r);
/* Writes to out (cap bytes) the head to send upstream: "METHOD target
 * HTTP/1.x", "Host: " host[0..host_len), the client's fields but the
 * hop-by-hop ones, Host and any Proxy-*, "Transfer-Encoding: chunked"
 * for a chunked body, "Connection: close" when close, and the empty
 * line. Its length, or 0 when it does not fit. */
size_t proxy_req_upstream_head(const struct proxy_req *r, const char *host, size_t host_len,
                               bool close, char *out, size_t cap);
/* The head's length (all the bytes fed that belong to it). */
size_t proxy_req_head_len(const struct proxy_req *r);

#endif
