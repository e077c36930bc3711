#include "egress/proxy_req.h"

#include <stddef.h>
#include <string.h>
#include <strings.h>

static const char *const method_names[] = {
    [PROXY_CONNECT] = "CONNECT", [PROXY_GET] = "GET",         [PROXY_HEAD] = "HEAD",
    [PROXY_POST] = "POST",       [PROXY_PUT] = "PUT",         [PROXY_PATCH] = "PATCH",
    [PROXY_DELETE] = "DELETE",   [PROXY_OPTIONS] = "OPTIONS",
};

/* RFC 9110 section 7.6.1, and the proxies' own. */
static const char *const hop_by_hop[] = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
};

static enum proxy_req_state fail(struct proxy_req *r, int status, const char *reason)
{
    r->state = PROXY_REQ_ERROR;
    r->status = status;
    r->reason = reason;
    return r->state;
}

/* RFC 9110's tchar. */
static bool tchar(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool token(const char *s, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!tchar((unsigned char)s[i]))
            return false;
    return true;
}

static bool same_word(const char *s, size_t n, const char *word)
{
    return n == strlen(word) && strncasecmp(s, word, n) == 0;
}

void proxy_req_init(struct proxy_req *r)
{
    memset(r, 0, offsetof(struct proxy_req, fields));
    r->target[0] = '\0';
}

void proxy_req_init_origin(struct proxy_req *r, const struct egress_host *host, unsigned port)
{
    proxy_req_init(r);
    r->origin = true;
    r->host = *host;
    r->port = port;
}

/* host[:port] or [v6][:port], no userinfo. */
static enum proxy_req_state authority(struct proxy_req *r, const char *s, size_t n,
                                      bool port_required)
{
    if (memchr(s, '@', n))
        return fail(r, 400, "userinfo (user@host) in the target is refused");
    size_t host_len = n;
    const char *colon = NULL;
    if (n && s[0] == '[') {
        const char *close = memchr(s, ']', n);
        if (!close)
            return fail(r, 400, "an IPv6 address in the target has no closing ']'");
        host_len = (size_t)(close - s) + 1;
        if (host_len < n && s[host_len] != ':')
            return fail(r, 400, "only :PORT may follow the host in the target");
        colon = host_len < n ? s + host_len : NULL;
    } else {
        colon = memchr(s, ':', n);
        if (colon && memchr(colon + 1, ':', n - (size_t)(colon - s) - 1))
            return fail(r, 400,
                        "the target's authority is not host:port (an IPv6 address goes in "
                        "brackets)");
        if (colon)
            host_len = (size_t)(colon - s);
    }
    if (host_len == 0)
        return fail(r, 400, "the target names no host");
    if (!egress_host_parse(s, host_len, &r->host))
        return fail(r, 400, "the target's host is not a DNS name or an IP address");
    if (!colon) {
        if (port_required)
            return fail(r, 400, "CONNECT needs host:port");
        r->port = EGRESS_PORT_HTTP;
        return PROXY_REQ_MORE;
    }
    unsigned long long port = 0;
    if (!util_parse_decimal(colon + 1, n - host_len - 1, 65535, &port) || port == 0)
        return fail(r, 400, "the target's port is not a number from 1 to 65535");
    r->port = (unsigned)port;
    return PROXY_REQ_MORE;
}

/* http://authority[/path][?query]: the authority, and the rest as the
 * origin form. */
static enum proxy_req_state absolute(struct proxy_req *r, const char *s, size_t n)
{
    if (n >= 8 && strncasecmp(s, "https://", 8) == 0)
        return fail(r, 400, "https:// URLs go through a CONNECT tunnel (HTTPS_PROXY)");
    if (n < 7 || strncasecmp(s, "http://", 7) != 0) {
        if (s[0] == '/' || s[0] == '*')
            return fail(r, 400,
                        "this is a proxy: the target must be an absolute http:// URL, "
                        "or CONNECT host:port");
        return fail(r, 400, "only http:// URLs are served (CONNECT for anything else)");
    }
    s += 7;
    n -= 7;
    size_t a = 0;
    while (a < n && s[a] != '/' && s[a] != '?' && s[a] != '#')
        a++;
    if (authority(r, s, a, false) != PROXY_REQ_MORE)
        return r->state;
    if (memchr(s + a, '#', n - a))
        return fail(r, 400, "a fragment (#) has no place in a request's target");
    size_t k = 0;
    if (a == n || s[a] != '/')
        r->target[k++] = '/';
    memcpy(r->target + k, s + a, n - a);
    k += n - a;
    r->target[k] = '\0';
    r->target_len = k;
    return PROXY_REQ_MORE;
}

/* "/path?query": copied as it is. */
static enum proxy_req_state origin_form(struct proxy_req *r, const char *s, size_t n)
{
    if (n == 0 || s[0] != '/')
        return fail(r, 400, "inside the tunnel the target must be a path (/...)");
    if (memchr(s, '#', n))
        return fail(r, 400, "a fragment (#) has no place in a request's target");
    memcpy(r->target, s, n);
    r->target[n] = '\0';
    r->target_len = n;
    return PROXY_REQ_MORE;
}

static enum proxy_req_state request_line(struct proxy_req *r, const char *s, size_t n)
{
    static const char *const shape = "the request line is not METHOD TARGET HTTP/1.x";
    if (n == 0)
        return fail(r, 400, "the request begins with an empty line");
    const char *sp1 = memchr(s, ' ', n);
    const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', n - (size_t)(sp1 - s) - 1) : NULL;
    if (!sp2 || sp1 == s || sp2 == sp1 + 1)
        return fail(r, 400, shape);
    const char *target = sp1 + 1;
    size_t target_len = (size_t)(sp2 - target);
    const char *version = sp2 + 1;
    size_t version_len = n - (size_t)(version - s);
    if (!token(s, (size_t)(sp1 - s)))
        return fail(r, 400, shape);
    if (version_len != 8 || memcmp(version, "HTTP/", 5) != 0 || version[6] != '.' ||
        version[5] < '0' || version[5] > '9' || version[7] < '0' || version[7] > '9')
        return fail(r, 400, shape);
    if (version[5] != '1' || version[7] > '1')
        return fail(r, 505, "only HTTP/1.0 and HTTP/1.1 are served");
    r->minor = version[7] - '0';
    /* Methods are case-sensitive: "get" is not GET. */
    size_t method_len = (size_t)(sp1 - s);
    size_t m = 0;
    while (m < ARRAY_SIZE(method_names) &&
           (method_len != strlen(method_names[m]) || memcmp(s, method_names[m], method_len) != 0))
        m++;
    if (m == ARRAY_SIZE(method_names))
        return fail(r, 405,
                    "only CONNECT, GET, HEAD, POST, PUT, PATCH, DELETE and OPTIONS are "
                    "served");
    r->method = (enum proxy_method)m;
    for (size_t i = 0; i < target_len; i++)
        if ((unsigned char)target[i] < 0x21 || (unsigned char)target[i] > 0x7e)
            return fail(r, 400, "the target holds a byte that is not printable ASCII");
    if (r->origin && r->method == PROXY_CONNECT)
        return fail(r, 405, "CONNECT inside a tunnel is refused");
    if (r->origin)
        return origin_form(r, target, target_len);
    if (r->method == PROXY_CONNECT)
        return authority(r, target, target_len, true);
    return absolute(r, target, target_len);
}

/* A field that decides where the body ends, or where the request goes. */
static enum proxy_req_state framing(struct proxy_req *r, const char *name, size_t name_len,
                                    const char *value, size_t value_len)
{
    if (same_word(name, name_len, "host")) {
        if (r->have_host_field)
            return fail(r, 400, "more than one Host field");
        r->have_host_field = true;
    } else if (same_word(name, name_len, "content-length")) {
        unsigned long long v = 0;
        if (!util_parse_decimal(value, value_len, PROXY_REQ_CONTENT_LENGTH_MAX, &v))
            return fail(r, 400, "Content-Length is not a number (or is too large)");
        if (r->have_content_length && v != r->content_length)
            return fail(r, 400, "two Content-Length fields that differ");
        r->have_content_length = true;
        r->content_length = v;
    } else if (same_word(name, name_len, "transfer-encoding")) {
        if (r->have_transfer_encoding)
            return fail(r, 400, "more than one Transfer-Encoding field");
        r->have_transfer_encoding = true;
        if (!same_word(value, value_len, "chunked"))
            return fail(r, 501, "only the chunked transfer coding is supported");
        r->chunked = true;
    }
    return PROXY_REQ_MORE;
}

static enum proxy_req_state field(struct proxy_req *r, const char *s, size_t n)
{
    if (s[0] == ' ' || s[0] == '\t')
        return fail(r, 400, "a folded field line (obs-fold) is refused");
    const char *colon = memchr(s, ':', n);
    if (!colon)
        return fail(r, 400, "a field line is not NAME: VALUE");
    size_t name_len = (size_t)(colon - s);
    if (!token(s, name_len))
        return fail(r, 400, "a field name is not a token (or has a blank before its colon)");
    const char *value = colon + 1;
    size_t value_len = n - name_len - 1;
    while (value_len && (value[0] == ' ' || value[0] == '\t')) {
        value++;
        value_len--;
    }
    while (value_len && (value[value_len - 1] == ' ' || value[value_len - 1] == '\t'))
        value_len--;
    for (size_t i = 0; i < value_len; i++) {
        unsigned char c = (unsigned char)value[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return fail(r, 400, "a field value holds a control character");
    }
    if (r->nfields >= PROXY_REQ_FIELDS_MAX)
        return fail(r, 431, "more header fields than the gateway takes (64)");
    struct proxy_req_field *f = &r->fields[r->nfields++];
    f->name = (uint32_t)(s - r->head);
    f->name_len = (uint32_t)name_len;
    f->value = (uint32_t)(value - r->head);
    f->value_len = (uint32_t)value_len;
    return framing(r, s, name_len, value, value_len);
}

/* Whether a Connection field's comma-separated value lists name. */
static bool connection_lists(const char *v, size_t n, const char *name, size_t name_len)
{
    size_t i = 0;
    while (i < n) {
        size_t start = i;
        while (i < n && v[i] != ',')
            i++;
        size_t a = start;
        size_t b = i;
        while (a < b && (v[a] == ' ' || v[a] == '\t'))
            a++;
        while (b > a && (v[b - 1] == ' ' || v[b - 1] == '\t'))
            b--;
        if (b - a == name_len && strncasecmp(v + a, name, name_len) == 0)
            return true;
        i++;
    }
    return false;
}

/* Whether a Connection field names a field the request's framing or
 * routing rests on: dropping it would leave the gateway framing the body
 * one way and the upstream another (a request smuggled inside it). */
static bool connection_names_framing(const struct proxy_req *r)
{
    static const char *const names[] = {"content-length", "transfer-encoding", "host"};
    for (size_t k = 0; k < r->nfields; k++) {
        const struct proxy_req_field *f = &r->fields[k];
        if (!same_word(r->head + f->name, f->name_len, "connection"))
            continue;
        for (size_t j = 0; j < ARRAY_SIZE(names); j++)
            if (connection_lists(r->head + f->value, f->value_len, names[j], strlen(names[j])))
                return true;
    }
    return false;
}

static enum proxy_req_state finish(struct proxy_req *r)
{
    if (connection_names_framing(r))
        return fail(r, 400, "a Connection field names Content-Length, Transfer-Encoding or Host");
    if (r->have_content_length && r->have_transfer_encoding)
        return fail(r, 400, "both Content-Length and Transfer-Encoding");
    if (r->have_transfer_encoding && r->minor == 0)
        return fail(r, 400, "Transfer-Encoding in an HTTP/1.0 request");
    if (r->method == PROXY_CONNECT &&
        (r->have_transfer_encoding || (r->have_content_length && r->content_length > 0)))
        return fail(r, 400, "a CONNECT request carries no body");
    r->state = PROXY_REQ_DONE;
    return r->state;
}

/* The line that the LF just taken ends. */
static enum proxy_req_state line(struct proxy_req *r)
{
    const char *s = r->head + r->line_start;
    size_t n = r->len - 1 - r->line_start;
    r->line_start = r->len;
    if (n && s[n - 1] == '\r')
        n--;
    if (memchr(s, '\r', n))
        return fail(r, 400, "a CR that does not end a line");
    if (!r->have_line) {
        r->have_line = true;
        if (n > PROXY_REQ_LINE_MAX)
            return fail(r, 414, "the request line is longer than 8 KiB");
        return request_line(r, s, n);
    }
    if (n == 0)
        return finish(r);
    return field(r, s, n);
}

enum proxy_req_state proxy_req_feed(struct proxy_req *r, const void *data, size_t n,
                                    size_t *consumed)
{
    const char *p = data;
    size_t i = 0;
    while (r->state == PROXY_REQ_MORE && i < n && r->len < PROXY_REQ_HEAD_MAX) {
        char c = p[i++];
        r->head[r->len++] = c;
        if (c == '\0') {
            fail(r, 400, "a NUL byte in the head");
        } else if (c == '\n') {
            line(r);
        } else if (!r->have_line && r->len - r->line_start > PROXY_REQ_LINE_MAX + 1) {
            /* + 1: room for the line's CR. */
            fail(r, 414, "the request line is longer than 8 KiB");
        }
    }
    if (r->state == PROXY_REQ_MORE && r->len >= PROXY_REQ_HEAD_MAX)
        fail(r, 431, "the request head is longer than 16 KiB");
    if (consumed)
        *consumed = i;
    return r->state;
}

int proxy_req_status(const struct proxy_req *r)
{
    return r->state == PROXY_REQ_ERROR ? r->status : 0;
}

const char *proxy_req_reason(const struct proxy_req *r)
{
    return r->state == PROXY_REQ_ERROR ? r->reason : NULL;
}

enum proxy_method proxy_req_method(const struct proxy_req *r)
{
    return r->method;
}

const char *proxy_method_name(enum proxy_method m)
{
    return (size_t)m < ARRAY_SIZE(method_names) ? method_names[m] : "?";
}

int proxy_req_minor(const struct proxy_req *r)
{
    return r->minor;
}

const struct egress_host *proxy_req_host(const struct proxy_req *r)
{
    return &r->host;
}

unsigned proxy_req_port(const struct proxy_req *r)
{
    return r->port;
}

const char *proxy_req_target(const struct proxy_req *r, size_t *len)
{
    if (len)
        *len = r->target_len;
    return r->target;
}

size_t proxy_req_field_count(const struct proxy_req *r)
{
    return r->nfields;
}

void proxy_req_field(const struct proxy_req *r, size_t i, const char **name, size_t *name_len,
                     const char **value, size_t *value_len)
{
    const struct proxy_req_field *f = &r->fields[i];
    *name = r->head + f->name;
    *name_len = f->name_len;
    *value = r->head + f->value;
    *value_len = f->value_len;
}

bool proxy_req_field_hop_by_hop(const struct proxy_req *r, size_t i)
{
    const char *name = r->head + r->fields[i].name;
    size_t name_len = r->fields[i].name_len;
    for (size_t k = 0; k < ARRAY_SIZE(hop_by_hop); k++)
        if (same_word(name, name_len, hop_by_hop[k]))
            return true;
    for (size_t k = 0; k < r->nfields; k++) {
        const struct proxy_req_field *f = &r->fields[k];
        if (same_word(r->head + f->name, f->name_len, "connection") &&
            connection_lists(r->head + f->value, f->value_len, name, name_len))
            return true;
    }
    return false;
}

bool proxy_req_has_content_length(const struct proxy_req *r)
{
    return r->have_content_length;
}

unsigned long long proxy_req_content_length(const struct proxy_req *r)
{
    return r->content_length;
}

bool proxy_req_chunked(const struct proxy_req *r)
{
    return r->chunked;
}

size_t proxy_req_head_len(const struct proxy_req *r)
{
    return r->len;
}

bool proxy_req_wants_close(const struct proxy_req *r)
{
    if (r->minor == 0)
        return true;
    for (size_t k = 0; k < r->nfields; k++) {
        const struct proxy_req_field *f = &r->fields[k];
        if (same_word(r->head + f->name, f->name_len, "connection") &&
            connection_lists(r->head + f->value, f->value_len, "close", 5))
            return true;
    }
    return false;
}

struct out {
    char *p;
    size_t n;
    size_t cap;
    bool over;
};

static void put(struct out *o, const char *s, size_t n)
{
    if (o->over || n > o->cap - o->n) {
        o->over = true;
        return;
    }
    memcpy(o->p + o->n, s, n);
    o->n += n;
}

static void puts0(struct out *o, const char *s)
{
    put(o, s, strlen(s));
}

/* A field the gateway never passes on: the hop-by-hop ones, the proxy's
 * own, and Host (it writes its own). */
static bool dropped(const struct proxy_req *r, size_t i)
{
    const struct proxy_req_field *f = &r->fields[i];
    const char *name = r->head + f->name;
    size_t nl = f->name_len;
    return proxy_req_field_hop_by_hop(r, i) || same_word(name, nl, "host") ||
           (nl >= 6 && strncasecmp(name, "proxy-", 6) == 0);
}

size_t proxy_req_upstream_head(const struct proxy_req *r, const char *host, size_t host_len,
                               bool close, char *out, size_t cap)
{
    struct out o = {.p = out, .cap = cap};
    puts0(&o, proxy_method_name(r->method));
    put(&o, " ", 1);
    put(&o, r->target, r->target_len);
    puts0(&o, r->minor ? " HTTP/1.1\r\nHost: " : " HTTP/1.0\r\nHost: ");
    put(&o, host, host_len);
    put(&o, "\r\n", 2);
    for (size_t i = 0; i < r->nfields; i++) {
        if (dropped(r, i))
            continue;
        const struct proxy_req_field *f = &r->fields[i];
        put(&o, r->head + f->name, f->name_len);
        put(&o, ": ", 2);
        put(&o, r->head + f->value, f->value_len);
        put(&o, "\r\n", 2);
    }
    if (r->chunked)
        puts0(&o, "Transfer-Encoding: chunked\r\n");
    if (close)
        puts0(&o, "Connection: close\r\n");
    put(&o, "\r\n", 2);
    return o.over ? 0 : o.n;
}
