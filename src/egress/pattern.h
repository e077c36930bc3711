/* Egress host patterns: which hosts and ports a sandbox may reach through
 * the gateway, as an operator writes them (--egress, the language table)
 * and as a call narrows them.
 *
 * One pattern is HOST[:PORT]. HOST is
 *   - an exact DNS name, lower-cased, without a trailing dot: letters,
 *     digits and hyphens in labels of 1 to 63 bytes, no label starting or
 *     ending with a hyphen, 253 bytes at most, and a last label that
 *     starts with a letter (so no name is one that getaddrinfo would read
 *     as a number: "127.1", "0x7f.1");
 *   - "*.SUFFIX": any name with at least one more label that ends in
 *     .SUFFIX, never SUFFIX itself;
 *   - an IPv4 literal (dotted quad) or an IPv6 literal, in brackets when a
 *     port follows. A host given as a literal matches only a literal
 *     pattern of the same address, never a name.
 * PORT is 1 to 65535; without one a pattern allows 443 and 80.
 *
 * A list is comma-separated; blanks around each pattern are ignored, an
 * empty text is an empty list (no host at all), an empty element is an
 * error. Texts in errors are escaped and cut: they may come from a client.
 * Everything here is pure: no I/O, and no allocation but
 * egress_patterns_format's result and error messages. */
#ifndef MCPSBX_EGRESS_PATTERN_H
#define MCPSBX_EGRESS_PATTERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

/* The longest DNS name (RFC 1035), without its trailing dot. */
#define EGRESS_NAME_MAX 253
/* Room for a host's text: a name, or an IPv6 literal, and a NUL. */
#define EGRESS_HOST_CAP (EGRESS_NAME_MAX + 1)
/* The longest pattern: "*." NAME ":65535". */
#define EGRESS_PATTERN_TEXT_MAX (2 + EGRESS_NAME_MAX + 6)
/* How many patterns one list holds. */
#define EGRESS_PATTERNS_MAX 64
/* The longest list text egress_patterns_parse reads (blanks included). */
#define EGRESS_PATTERNS_TEXT_MAX (16 * 1024)
/* The ports a pattern without one allows. */
#define EGRESS_PORT_HTTPS 443
#define EGRESS_PORT_HTTP  80

enum egress_host_kind {
    EGRESS_HOST_NAME,
    EGRESS_HOST_IPV4,
    EGRESS_HOST_IPV6,
};

/* A host in its normal form. */
struct egress_host {
    enum egress_host_kind kind;
    /* A name lower-cased without a trailing dot; a literal as inet_ntop
     * writes it, without brackets. */
    char text[EGRESS_HOST_CAP];
    /* A literal's address in network order (4 or 16 bytes used). */
    unsigned char addr[16];
};

/* s[0..n) as a host: a name (the rules above), an IPv4 literal, or an
 * IPv6 literal with or without brackets (no zone). False when it is none
 * of these; *out is then unspecified. */
bool egress_host_parse(const char *s, size_t n, struct egress_host *out);

struct egress_pattern {
    /* For a wildcard, the suffix (a name). */
    struct egress_host host;
    bool wildcard;
    /* 0: EGRESS_PORT_HTTPS and EGRESS_PORT_HTTP. */
    uint16_t port;
};

struct egress_patterns {
    size_t n;
    struct egress_pattern items[EGRESS_PATTERNS_MAX];
};

/* One pattern from s[0..n) (no blanks around it). */
int egress_pattern_parse(const char *s, size_t n, struct egress_pattern *out, struct err *err);

/* Appends the pattern s[0..n) to list; fails when it is malformed or the
 * list is full. */
int egress_patterns_add(struct egress_patterns *list, const char *s, size_t n, struct err *err);

/* Replaces *list with the patterns of the comma-separated text; on
 * failure *list is empty. */
int egress_patterns_parse(const char *text, struct egress_patterns *list, struct err *err);

/* Whether p allows port. */
bool egress_pattern_allows_port(const struct egress_pattern *p, unsigned port);

/* The index of the first pattern of list that allows host (a name or a
 * literal, as egress_host_parse reads it; any ASCII case) on port, or -1
 * (a host that does not parse matches nothing). */
int egress_patterns_match(const struct egress_patterns *list, const char *host, unsigned port);

/* A call's own list, asked, checked against its language's list, base: a
 * call may narrow its language's list, never widen it. Every port of every
 * asked pattern must be allowed by some base pattern that covers its host:
 * an exact name by an equal name or a wildcard matching it, a wildcard by
 * a wildcard of an equal or shorter suffix it lies under, a literal by an
 * equal literal. On success *out (which may be asked itself) is asked;
 * else an error names the first asked pattern that is not allowed. */
int egress_patterns_narrow(const struct egress_patterns *base, const struct egress_patterns *asked,
                           struct egress_patterns *out, struct err *err);

/* p as text, as egress_pattern_parse reads it back; returns the length
 * (cut to cap - 1; EGRESS_PATTERN_TEXT_MAX + 1 always suffices). */
size_t egress_pattern_format(const struct egress_pattern *p, char *buf, size_t cap);

/* The list as comma-separated text (allocated; "" for an empty list). */
char *egress_patterns_format(const struct egress_patterns *list);

#endif
