#include "egress/pattern.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

/* How much of a bad pattern an error shows (escaped). */
#define SHOWN_MAX 96

static bool is_alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static char lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* s[0..n) (no trailing dot) as a DNS name, the rules of pattern.h. */
static bool name_ok(const char *s, size_t n)
{
    if (n == 0 || n > EGRESS_NAME_MAX)
        return false;
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] != '.') {
            if (!is_alpha(s[i]) && !is_digit(s[i]) && s[i] != '-')
                return false;
            continue;
        }
        size_t len = i - start;
        if (len == 0 || len > 63 || s[start] == '-' || s[i - 1] == '-')
            return false;
        if (i == n && !is_alpha(s[start]))
            return false;
        start = i + 1;
    }
    return true;
}

static bool literal(int family, const char *s, size_t n, struct egress_host *out)
{
    char text[EGRESS_HOST_CAP];
    if (n >= sizeof(text))
        return false;
    memcpy(text, s, n);
    text[n] = '\0';
    memset(out->addr, 0, sizeof(out->addr));
    if (inet_pton(family, text, out->addr) != 1)
        return false;
    if (!inet_ntop(family, out->addr, out->text, sizeof(out->text)))
        return false;
    out->kind = family == AF_INET ? EGRESS_HOST_IPV4 : EGRESS_HOST_IPV6;
    return true;
}

bool egress_host_parse(const char *s, size_t n, struct egress_host *out)
{
    memset(out, 0, sizeof(*out));
    if (!s || n == 0 || memchr(s, '\0', n))
        return false;
    if (s[0] == '[')
        return n >= 2 && s[n - 1] == ']' && literal(AF_INET6, s + 1, n - 2, out);
    if (memchr(s, ':', n))
        return literal(AF_INET6, s, n, out);
    if (literal(AF_INET, s, n, out))
        return true;
    if (s[n - 1] == '.')
        n--;
    if (!name_ok(s, n))
        return false;
    out->kind = EGRESS_HOST_NAME;
    for (size_t i = 0; i < n; i++)
        out->text[i] = lower(s[i]);
    out->text[n] = '\0';
    return true;
}

static int bad(struct err *err, const char *s, size_t n, const char *why)
{
    char shown[SHOWN_MAX];
    util_escape(shown, sizeof(shown), s, n);
    return err_set(err, ERR_INVALID, "egress pattern '%s': %s", shown, why);
}

static int too_many(struct err *err, const char *s, size_t n)
{
    char shown[SHOWN_MAX];
    util_escape(shown, sizeof(shown), s, n);
    return err_set(err, ERR_TOO_BIG, "egress pattern '%s': a list holds at most %d patterns", shown,
                   EGRESS_PATTERNS_MAX);
}

/* Splits s[0..n) into its host and optional port (*port 0 when none). */
static int split_port(const char *s, size_t n, size_t *host_len, uint16_t *port, struct err *err)
{
    const char *colon = NULL;
    if (s[0] == '[') {
        const char *close = memchr(s, ']', n);
        if (!close)
            return bad(err, s, n, "an IPv6 literal's '[' has no ']'");
        if ((size_t)(close - s) + 1 < n) {
            if (close[1] != ':')
                return bad(err, s, n, "only ':PORT' may follow an IPv6 literal's ']'");
            colon = close + 1;
        }
    } else {
        colon = memchr(s, ':', n);
        /* More than one colon: a bare IPv6 literal, which takes no port. */
        if (colon && memchr(colon + 1, ':', n - (size_t)(colon - s) - 1))
            colon = NULL;
    }
    *port = 0;
    *host_len = colon ? (size_t)(colon - s) : n;
    if (!colon)
        return 0;
    unsigned long long v = 0;
    size_t digits = n - *host_len - 1;
    if (!util_parse_decimal(colon + 1, digits, 65535, &v) || v == 0)
        return bad(err, s, n, "the port must be a number from 1 to 65535");
    *port = (uint16_t)v;
    return 0;
}

int egress_pattern_parse(const char *s, size_t n, struct egress_pattern *out, struct err *err)
{
    memset(out, 0, sizeof(*out));
    if (n == 0)
        return err_set(err, ERR_INVALID, "egress pattern '': a pattern cannot be empty");
    if (n > EGRESS_PATTERN_TEXT_MAX)
        return bad(err, s, n, "longer than any host and port");
    size_t host_len = 0;
    if (split_port(s, n, &host_len, &out->port, err) < 0)
        return -1;
    const char *host = s;
    if (host_len >= 2 && host[0] == '*' && host[1] == '.') {
        out->wildcard = true;
        host += 2;
        host_len -= 2;
    }
    if (!egress_host_parse(host, host_len, &out->host))
        return bad(err, s, n,
                   "not a host: a DNS name (letters, digits, hyphens), *.SUFFIX, "
                   "or an IPv4 or [IPv6] address");
    if (out->wildcard && out->host.kind != EGRESS_HOST_NAME)
        return bad(err, s, n, "a wildcard needs a DNS name after '*.'");
    return 0;
}

int egress_patterns_add(struct egress_patterns *list, const char *s, size_t n, struct err *err)
{
    struct egress_pattern p;
    if (egress_pattern_parse(s, n, &p, err) < 0)
        return -1;
    if (list->n >= EGRESS_PATTERNS_MAX)
        return too_many(err, s, n);
    list->items[list->n++] = p;
    return 0;
}

static bool blank(char c)
{
    return c == ' ' || c == '\t';
}

int egress_patterns_parse(const char *text, struct egress_patterns *list, struct err *err)
{
    list->n = 0;
    size_t len = strlen(text);
    if (len > EGRESS_PATTERNS_TEXT_MAX)
        return err_set(err, ERR_TOO_BIG, "an egress list is longer than %d bytes",
                       EGRESS_PATTERNS_TEXT_MAX);
    size_t i = 0;
    while (i < len && blank(text[i]))
        i++;
    if (i == len)
        return 0;
    for (;;) {
        const char *end = memchr(text + i, ',', len - i);
        size_t stop = end ? (size_t)(end - text) : len;
        size_t a = i;
        size_t b = stop;
        while (a < b && blank(text[a]))
            a++;
        while (b > a && blank(text[b - 1]))
            b--;
        if (egress_patterns_add(list, text + a, b - a, err) < 0) {
            list->n = 0;
            return -1;
        }
        if (!end)
            return 0;
        i = stop + 1;
    }
}

bool egress_pattern_allows_port(const struct egress_pattern *p, unsigned port)
{
    if (p->port)
        return port == p->port;
    return port == EGRESS_PORT_HTTPS || port == EGRESS_PORT_HTTP;
}

/* name lies strictly under suffix: at least one more label, then
 * ".suffix". Both lower-cased. */
static bool under(const char *name, const char *suffix)
{
    size_t n = strlen(name);
    size_t s = strlen(suffix);
    return n > s + 1 && name[n - s - 1] == '.' && memcmp(name + n - s, suffix, s) == 0;
}

static bool same_literal(const struct egress_host *a, const struct egress_host *b)
{
    return a->kind == b->kind && a->kind != EGRESS_HOST_NAME &&
           memcmp(a->addr, b->addr, sizeof(a->addr)) == 0;
}

/* Whether p's host part allows the host h. */
static bool host_allowed(const struct egress_pattern *p, const struct egress_host *h)
{
    if (h->kind != EGRESS_HOST_NAME)
        return !p->wildcard && same_literal(&p->host, h);
    if (p->host.kind != EGRESS_HOST_NAME)
        return false;
    if (p->wildcard)
        return under(h->text, p->host.text);
    return strcmp(h->text, p->host.text) == 0;
}

int egress_patterns_match(const struct egress_patterns *list, const char *host, unsigned port)
{
    struct egress_host h;
    if (!host || !egress_host_parse(host, strlen(host), &h))
        return -1;
    for (size_t i = 0; i < list->n; i++)
        if (egress_pattern_allows_port(&list->items[i], port) && host_allowed(&list->items[i], &h))
            return (int)i;
    return -1;
}

/* Whether base allows every host asked's host part allows. */
static bool host_covers(const struct egress_pattern *base, const struct egress_pattern *asked)
{
    if (!asked->wildcard)
        return host_allowed(base, &asked->host);
    if (!base->wildcard)
        return false;
    return strcmp(asked->host.text, base->host.text) == 0 ||
           under(asked->host.text, base->host.text);
}

static bool port_covered(const struct egress_patterns *base, const struct egress_pattern *asked,
                         unsigned port)
{
    for (size_t i = 0; i < base->n; i++)
        if (egress_pattern_allows_port(&base->items[i], port) &&
            host_covers(&base->items[i], asked))
            return true;
    return false;
}

static bool covered(const struct egress_patterns *base, const struct egress_pattern *asked)
{
    if (asked->port)
        return port_covered(base, asked, asked->port);
    return port_covered(base, asked, EGRESS_PORT_HTTPS) &&
           port_covered(base, asked, EGRESS_PORT_HTTP);
}

int egress_patterns_narrow(const struct egress_patterns *base, const struct egress_patterns *asked,
                           struct egress_patterns *out, struct err *err)
{
    for (size_t i = 0; i < asked->n; i++) {
        if (covered(base, &asked->items[i]))
            continue;
        char text[EGRESS_PATTERN_TEXT_MAX + 1];
        egress_pattern_format(&asked->items[i], text, sizeof(text));
        return err_set(err, ERR_INVALID,
                       "egress pattern '%s' is not allowed: a call may only narrow its "
                       "language's egress list, never widen it",
                       text);
    }
    if (out != asked) {
        out->n = asked->n;
        memcpy(out->items, asked->items, asked->n * sizeof(asked->items[0]));
    }
    return 0;
}

size_t egress_pattern_format(const struct egress_pattern *p, char *buf, size_t cap)
{
    if (cap == 0)
        return 0;
    bool brackets = p->host.kind == EGRESS_HOST_IPV6 && p->port;
    char port[8] = "";
    if (p->port)
        snprintf(port, sizeof(port), ":%u", (unsigned)p->port);
    int r = snprintf(buf, cap, "%s%s%s%s%s", p->wildcard ? "*." : "", brackets ? "[" : "",
                     p->host.text, brackets ? "]" : "", port);
    /* snprintf cuts to cap - 1 bytes; its answer is the uncut length. */
    if (r < 0)
        r = 0;
    return (size_t)r < cap ? (size_t)r : cap - 1;
}

char *egress_patterns_format(const struct egress_patterns *list)
{
    char *out = xmalloc(list->n * (EGRESS_PATTERN_TEXT_MAX + 1) + 1);
    size_t len = 0;
    for (size_t i = 0; i < list->n; i++) {
        if (i)
            out[len++] = ',';
        len += egress_pattern_format(&list->items[i], out + len, EGRESS_PATTERN_TEXT_MAX + 1);
    }
    out[len] = '\0';
    return out;
}
