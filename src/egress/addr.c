#include "egress/addr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

/* How much of a bad CIDR an error shows (escaped). */
#define SHOWN_MAX 96

struct range {
    unsigned char addr[16]; /* 4 bytes used for IPv4 */
    unsigned prefix;
    const char *why;
};

/* First match wins: a single address before the range around it. */
static const struct range v4_ranges[] = {
    {{169, 254, 169, 254}, 32, "the cloud metadata address"},
    {{255, 255, 255, 255}, 32, "the broadcast address"},
    {{0, 0, 0, 0}, 8, "a this-network address (0.0.0.0/8)"},
    {{10, 0, 0, 0}, 8, "a private address"},
    {{100, 64, 0, 0}, 10, "a carrier-grade NAT (CGNAT) address"},
    {{127, 0, 0, 0}, 8, "a loopback address"},
    {{169, 254, 0, 0}, 16, "a link-local address"},
    {{172, 16, 0, 0}, 12, "a private address"},
    {{192, 0, 0, 0}, 24, "an IETF protocol assignment address (192.0.0.0/24)"},
    {{192, 0, 2, 0}, 24, "a documentation address"},
    {{192, 168, 0, 0}, 16, "a private address"},
    {{198, 18, 0, 0}, 15, "a benchmarking address (198.18.0.0/15)"},
    {{198, 51, 100, 0}, 24, "a documentation address"},
    {{203, 0, 113, 0}, 24, "a documentation address"},
    {{224, 0, 0, 0}, 4, "a multicast address"},
    {{240, 0, 0, 0}, 4, "a reserved address (240.0.0.0/4)"},
};

static const struct range v6_ranges[] = {
    {{0}, 128, "the unspecified address"},
    {{[15] = 1}, 128, "a loopback address"},
    {{0}, 96, "a deprecated IPv4-compatible address (::/96)"},
    {{0xfd, 0x00, 0x0e, 0xc2, [14] = 0x02, [15] = 0x54}, 128, "the cloud metadata address"},
    {{0xfc}, 7, "a unique local address (ULA)"},
    {{0xfe, 0x80}, 10, "a link-local address"},
    {{0xfe, 0xc0}, 10, "a site-local address"},
    {{0xff}, 8, "a multicast address"},
    {{0x20, 0x01, 0x0d, 0xb8}, 32, "a documentation address"},
    {{0x01, 0x00}, 64, "a discard-only address (100::/64)"},
    {{0x00, 0x64, 0xff, 0x9b, 0x00, 0x01}, 48, "a local-use NAT64 address (64:ff9b:1::/48)"},
};

/* The IPv6 forms that carry an IPv4 address, and where it sits. */
static const struct {
    unsigned char addr[16];
    unsigned prefix;
    unsigned v4_at;
} v6_carriers[] = {
    {{[10] = 0xff, [11] = 0xff}, 96, 12}, /* IPv4-mapped */
    {{[8] = 0xff, [9] = 0xff}, 96, 12},   /* IPv4-translated */
    {{0x00, 0x64, 0xff, 0x9b}, 96, 12},   /* NAT64 */
    {{0x20, 0x02}, 16, 2},                /* 6to4 */
};

/* The first prefix bits of a and b are equal. */
static bool prefix_equal(const unsigned char *a, const unsigned char *b, unsigned prefix)
{
    unsigned whole = prefix / 8;
    if (memcmp(a, b, whole) != 0)
        return false;
    unsigned rest = prefix % 8;
    if (rest == 0)
        return true;
    unsigned char mask = (unsigned char)(0xff << (8 - rest));
    return (a[whole] & mask) == (b[whole] & mask);
}

/* sa's family and raw address (4 or 16 bytes); false for another family. */
static bool raw_addr(const struct sockaddr *sa, sa_family_t *family, const unsigned char **addr)
{
    if (sa->sa_family == AF_INET) {
        *addr = (const unsigned char *)&((const struct sockaddr_in *)(const void *)sa)->sin_addr;
    } else if (sa->sa_family == AF_INET6) {
        *addr = ((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr.s6_addr;
    } else {
        return false;
    }
    *family = sa->sa_family;
    return true;
}

static bool raw_contains(const struct egress_cidr *c, sa_family_t family, const unsigned char *addr)
{
    return c->family == family && prefix_equal(c->addr, addr, c->prefix);
}

bool egress_cidr_contains(const struct egress_cidr *c, const struct sockaddr *sa)
{
    sa_family_t family = 0;
    const unsigned char *addr = NULL;
    return raw_addr(sa, &family, &addr) && raw_contains(c, family, addr);
}

static bool allowed(const struct egress_cidrs *allow, sa_family_t family, const unsigned char *addr)
{
    for (size_t i = 0; allow && i < allow->n; i++)
        if (raw_contains(&allow->items[i], family, addr))
            return true;
    return false;
}

static const char *lookup(const struct range *ranges, size_t n, const unsigned char *addr)
{
    for (size_t i = 0; i < n; i++)
        if (prefix_equal(ranges[i].addr, addr, ranges[i].prefix))
            return ranges[i].why;
    return NULL;
}

/* The rule that refuses sa, or NULL. */
static const char *rule_for(const struct sockaddr *sa, const struct egress_cidrs *allow)
{
    sa_family_t family = 0;
    const unsigned char *addr = NULL;
    if (!raw_addr(sa, &family, &addr))
        return "not an IP address";
    if (allowed(allow, family, addr))
        return NULL;
    if (family == AF_INET)
        return lookup(v4_ranges, ARRAY_SIZE(v4_ranges), addr);
    for (size_t i = 0; i < ARRAY_SIZE(v6_carriers); i++) {
        if (!prefix_equal(v6_carriers[i].addr, addr, v6_carriers[i].prefix))
            continue;
        const unsigned char *v4 = addr + v6_carriers[i].v4_at;
        return allowed(allow, AF_INET, v4) ? NULL : lookup(v4_ranges, ARRAY_SIZE(v4_ranges), v4);
    }
    return lookup(v6_ranges, ARRAY_SIZE(v6_ranges), addr);
}

bool egress_addr_blocked(const struct sockaddr *sa, const struct egress_cidrs *allow,
                         const char **why)
{
    const char *rule = rule_for(sa, allow);
    if (rule && why)
        *why = rule;
    return rule != NULL;
}

/* s into buf[cap], cut to cap - 1 bytes (cap > 0); returns the length. */
static size_t copy_text(char *buf, size_t cap, const char *s)
{
    size_t n = strlen(s);
    if (n >= cap)
        n = cap - 1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    return n;
}

size_t egress_addr_format(const struct sockaddr *sa, char *buf, size_t cap)
{
    if (cap == 0)
        return 0;
    char text[EGRESS_ADDR_TEXT_CAP] = "?";
    sa_family_t family = 0;
    const unsigned char *addr = NULL;
    if (raw_addr(sa, &family, &addr) && !inet_ntop(family, addr, text, sizeof(text)))
        snprintf(text, sizeof(text), "?");
    return copy_text(buf, cap, text);
}

size_t egress_cidr_format(const struct egress_cidr *c, char *buf, size_t cap)
{
    if (cap == 0)
        return 0;
    char text[EGRESS_ADDR_TEXT_CAP] = "?";
    if (!inet_ntop(c->family, c->addr, text, sizeof(text)))
        snprintf(text, sizeof(text), "?");
    char cidr[EGRESS_CIDR_TEXT_CAP];
    snprintf(cidr, sizeof(cidr), "%s/%u", text, c->prefix);
    return copy_text(buf, cap, cidr);
}

static int bad(struct err *err, const char *text, const char *why)
{
    char shown[SHOWN_MAX];
    util_escape(shown, sizeof(shown), text, strlen(text));
    return err_set(err, ERR_INVALID, "CIDR '%s': %s", shown, why);
}

int egress_cidr_parse(const char *text, struct egress_cidr *out, struct err *err)
{
    memset(out, 0, sizeof(*out));
    size_t len = strlen(text);
    const char *slash = strchr(text, '/');
    size_t addr_len = slash ? (size_t)(slash - text) : len;
    char addr[EGRESS_ADDR_TEXT_CAP];
    if (addr_len == 0 || addr_len >= sizeof(addr))
        return bad(err, text, "not ADDRESS/PREFIX with an IPv4 or IPv6 address");
    memcpy(addr, text, addr_len);
    addr[addr_len] = '\0';
    unsigned bits = 0;
    if (inet_pton(AF_INET, addr, out->addr) == 1) {
        out->family = AF_INET;
        bits = 32;
    } else if (inet_pton(AF_INET6, addr, out->addr) == 1) {
        out->family = AF_INET6;
        bits = 128;
    } else {
        return bad(err, text, "not ADDRESS/PREFIX with an IPv4 or IPv6 address");
    }
    out->prefix = bits;
    if (slash) {
        unsigned long long v = 0;
        if (!util_parse_decimal(slash + 1, len - addr_len - 1, bits, &v))
            return bad(err, text,
                       bits == 32 ? "the prefix must be a number from 0 to 32"
                                  : "the prefix must be a number from 0 to 128");
        out->prefix = (unsigned)v;
    }
    struct egress_cidr masked = *out;
    memset(masked.addr, 0, sizeof(masked.addr));
    for (unsigned i = 0; i < out->prefix; i++)
        masked.addr[i / 8] |= (unsigned char)(out->addr[i / 8] & (0x80u >> (i % 8)));
    if (memcmp(masked.addr, out->addr, sizeof(out->addr)) != 0) {
        char network[EGRESS_CIDR_TEXT_CAP];
        egress_cidr_format(&masked, network, sizeof(network));
        char shown[SHOWN_MAX];
        util_escape(shown, sizeof(shown), text, len);
        return err_set(err, ERR_INVALID,
                       "CIDR '%s': the address has bits set past the /%u prefix; "
                       "the network is %s (or give the address alone)",
                       shown, out->prefix, network);
    }
    return 0;
}

int egress_cidrs_add(struct egress_cidrs *list, const char *text, struct err *err)
{
    struct egress_cidr c;
    if (egress_cidr_parse(text, &c, err) < 0)
        return -1;
    if (list->n >= EGRESS_CIDRS_MAX)
        return err_set(err, ERR_TOO_BIG, "too many CIDRs: at most %d", EGRESS_CIDRS_MAX);
    list->items[list->n++] = c;
    return 0;
}
