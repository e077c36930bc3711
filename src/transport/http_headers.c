#include "transport/http_headers.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mcp/mcp.h"

static const char *skip_ows(const char *p)
{
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

static size_t trim_len(const char *s, size_t n)
{
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    return n;
}

bool http_token_is(const char *s, size_t n, const char *word)
{
    return strlen(word) == n && strncasecmp(s, word, n) == 0;
}

bool http_media_type_is(const char *value, const char *type)
{
    if (!value)
        return false;
    value = skip_ows(value);
    return http_token_is(value, trim_len(value, strcspn(value, ";")), type);
}

/* True when the parameters of one Accept element hold q=0. */
static bool q_is_zero(const char *p)
{
    while (*p == ';') {
        p = skip_ows(p + 1);
        if ((p[0] == 'q' || p[0] == 'Q') && p[1] == '=') {
            char *end = NULL;
            double q = strtod(p + 2, &end);
            return end != p + 2 && q <= 0.0;
        }
        p += strcspn(p, ";,");
    }
    return false;
}

bool http_accept_lists(const char *accept, const char *type)
{
    size_t major = strcspn(type, "/");
    const char *p = accept;
    while (p && *p) {
        p = skip_ows(p);
        size_t elem = strcspn(p, ",");
        size_t mlen = strcspn(p, ";,");
        size_t n = trim_len(p, mlen);
        bool match =
            http_token_is(p, n, type) || http_token_is(p, n, "*/*") ||
            (n == major + 2 && strncasecmp(p, type, major + 1) == 0 && p[major + 1] == '*');
        if (match && !q_is_zero(p + mlen))
            return true;
        p += elem;
        if (*p == ',')
            p++;
    }
    return false;
}

bool http_parse_host(const char *s, size_t len, struct http_host *out)
{
    size_t nl;
    if (len && s[0] == '[') {
        const char *close = memchr(s, ']', len);
        if (!close)
            return false;
        nl = (size_t)(close - s) + 1;
    } else {
        const char *colon = memchr(s, ':', len);
        nl = colon ? (size_t)(colon - s) : len;
    }
    if (nl == 0)
        return false;
    out->name = s;
    out->name_len = nl;
    out->has_port = false;
    out->port = 0;
    if (nl == len)
        return true;
    if (s[nl] != ':')
        return false;
    const char *port = s + nl + 1;
    size_t port_len = len - nl - 1;
    if (port_len == 0 || port_len > 5)
        return false;
    for (size_t i = 0; i < port_len; i++) {
        if (!isdigit((unsigned char)port[i]))
            return false;
        out->port = out->port * 10 + (unsigned)(port[i] - '0');
    }
    out->has_port = true;
    return true;
}

bool http_parse_origin(const char *origin, struct http_host *out)
{
    const char *rest;
    if (strncasecmp(origin, "http://", 7) == 0)
        rest = origin + 7;
    else if (strncasecmp(origin, "https://", 8) == 0)
        rest = origin + 8;
    else
        return false;
    return http_parse_host(rest, strlen(rest), out);
}

bool http_is_loopback_name(const char *s, size_t n)
{
    return http_token_is(s, n, "localhost") || http_token_is(s, n, "127.0.0.1") ||
           http_token_is(s, n, "[::1]");
}

const char *http_bearer_token(const char *value, size_t *len)
{
    if (!value || strncasecmp(value, "Bearer ", 7) != 0)
        return NULL;
    const char *token = skip_ows(value + 7);
    *len = trim_len(token, strlen(token));
    return token;
}

bool http_content_length_over(const char *value, unsigned long long max)
{
    return value && strtoull(value, NULL, 10) > max;
}

bool http_parse_event_id(const char *s, unsigned long *no, unsigned long *seq)
{
    char *end = NULL;
    if (!isdigit((unsigned char)s[0]))
        return false;
    *no = strtoul(s, &end, 10);
    if (*end != '-' || !isdigit((unsigned char)end[1]))
        return false;
    *seq = strtoul(end + 1, &end, 10);
    return *end == '\0' && *no > 0 && *seq < (unsigned long)-1;
}

bool http_protocol_version_ok(const char *value)
{
    return !value || mcp_version_from_name(value) >= 0;
}
