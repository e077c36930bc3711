/* Parsers for the request header values the HTTP transport reads. All are
 * pure: they read only their arguments (NUL-terminated unless a length is
 * given), allocate nothing and keep no pointer past the call, so any bytes
 * a client sends can be fed to them (tests/fuzz/fuzz_http_headers.c). What
 * to allow is decided in http_guard.c. */
#ifndef MCPSBX_HTTP_HEADERS_H
#define MCPSBX_HTTP_HEADERS_H

#include <stdbool.h>
#include <stddef.h>

/* s[0..n) equals word, ignoring ASCII case. */
bool http_token_is(const char *s, size_t n, const char *word);

/* Content-Type: value (may be NULL) names type; parameters are ignored. */
bool http_media_type_is(const char *value, const char *type);

/* Accept: the list names type, or a wildcard covering it (any type, or
 * any subtype of type's major type), without q=0. */
bool http_accept_lists(const char *accept, const char *type);

/* A host as Host and Origin name it. */
struct http_host {
    const char *name; /* into the parsed text; an IPv6 literal keeps its [] */
    size_t name_len;
    bool has_port;
    unsigned port; /* at most five digits, so up to 99999 */
};

/* Host: "name[:port]" or "[v6][:port]" from s[0..len); false when
 * malformed (empty name, unclosed bracket, empty or non-digit port). The
 * name's characters are not checked: callers compare it to known names. */
bool http_parse_host(const char *s, size_t len, struct http_host *out);

/* Origin: the host of an "http://" or "https://" origin; false for any
 * other scheme ("null", "file://...") or a malformed host. */
bool http_parse_origin(const char *origin, struct http_host *out);

/* localhost, 127.0.0.1 or [::1] (ASCII case ignored). */
bool http_is_loopback_name(const char *s, size_t n);

/* Authorization: the token of "Bearer <token>" without surrounding
 * blanks, its length in *len; NULL for any other value. */
const char *http_bearer_token(const char *value, size_t *len);

/* Content-Length: value (may be NULL) announces more than max bytes. */
bool http_content_length_over(const char *value, unsigned long long max);

/* Last-Event-ID: "<stream>-<seq>", both decimal, stream > 0, seq below
 * ULONG_MAX (the next one must be representable). */
bool http_parse_event_id(const char *s, unsigned long *no, unsigned long *seq);

/* MCP-Protocol-Version: absent (NULL) means 2025-03-26; otherwise any
 * version mcp supports, even one other than the session's. */
bool http_protocol_version_ok(const char *value);

#endif
