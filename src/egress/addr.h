/* Which addresses the gateway refuses to connect to, whatever name led
 * there, and the CIDRs an operator lists to allow some of them anyway
 * (--egress-allow-cidr).
 *
 * Refused, each named in words (egress_addr_blocked's why):
 *   IPv4  0.0.0.0/8 this-network, 10.0.0.0/8, 172.16.0.0/12 and
 *         192.168.0.0/16 private, 100.64.0.0/10 carrier-grade NAT,
 *         127.0.0.0/8 loopback, 169.254.169.254 the cloud metadata address
 *         and the rest of 169.254.0.0/16 link-local, 192.0.0.0/24 IETF
 *         protocol assignments, 192.0.2.0/24, 198.51.100.0/24 and
 *         203.0.113.0/24 documentation, 198.18.0.0/15 benchmarking,
 *         224.0.0.0/4 multicast, 255.255.255.255 broadcast and the rest of
 *         240.0.0.0/4 reserved;
 *   IPv6  :: unspecified, ::1 loopback, the rest of ::/96 (deprecated
 *         IPv4-compatible), fd00:ec2::254 the cloud metadata address and
 *         the rest of fc00::/7 unique local, fe80::/10 link-local,
 *         fec0::/10 site-local, ff00::/8 multicast, 2001:db8::/32
 *         documentation, 100::/64 discard-only, 64:ff9b:1::/48 local-use
 *         NAT64;
 *   and the IPv6 forms that carry an IPv4 address, judged by that
 *   address: IPv4-mapped ::ffff:0:0/96, IPv4-translated ::ffff:0:0:0/96,
 *   NAT64 64:ff9b::/96 and 6to4 2002::/16.
 * An address inside an allow CIDR is never refused; a form that carries
 * an IPv4 address is also allowed when a CIDR holds that IPv4 address. So
 * a CIDR that covers the metadata address (0.0.0.0/0 does) lets it through:
 * list only what is meant.
 *
 * CIDRs are ADDRESS/PREFIX (IPv4 or IPv6, no brackets) or a bare ADDRESS,
 * one address (/32, /128). Bits set past the prefix are refused rather
 * than masked ("10.1.2.3/8"): the operator may have meant the address
 * alone, and the error says which network the prefix makes. */
#ifndef MCPSBX_EGRESS_ADDR_H
#define MCPSBX_EGRESS_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "base/err.h"

/* How many CIDRs a list holds. */
#define EGRESS_CIDRS_MAX 32
/* Room for an address as text, and a NUL (an IPv6 address with an
 * embedded IPv4 one is the longest: 45 bytes). */
#define EGRESS_ADDR_TEXT_CAP 48
/* Room for a CIDR as text ("/128"), and a NUL. */
#define EGRESS_CIDR_TEXT_CAP (EGRESS_ADDR_TEXT_CAP + 4)

struct egress_cidr {
    sa_family_t family; /* AF_INET or AF_INET6 */
    unsigned char addr[16];
    unsigned prefix;
};

struct egress_cidrs {
    size_t n;
    struct egress_cidr items[EGRESS_CIDRS_MAX];
};

int egress_cidr_parse(const char *text, struct egress_cidr *out, struct err *err);

/* Appends the CIDR text to list; fails when malformed or the list is full. */
int egress_cidrs_add(struct egress_cidrs *list, const char *text, struct err *err);

/* c as text, "10.0.0.0/8"; returns the length (cut to cap - 1). */
size_t egress_cidr_format(const struct egress_cidr *c, char *buf, size_t cap);

/* Whether sa (AF_INET or AF_INET6; any other family never) lies in c. */
bool egress_cidr_contains(const struct egress_cidr *c, const struct sockaddr *sa);

/* Whether the gateway refuses to connect to sa (allow may be NULL: no
 * CIDRs). When it does and why is not NULL, *why names the range, a
 * static phrase that reads after "resolves to 10.1.2.3, ": "a private
 * address", "the cloud metadata address", ... Anything but AF_INET and
 * AF_INET6 is refused ("not an IP address"). */
bool egress_addr_blocked(const struct sockaddr *sa, const struct egress_cidrs *allow,
                         const char **why);

/* sa's address as text, without port or brackets ("?" for another
 * family); returns the length (cut to cap - 1). */
size_t egress_addr_format(const struct sockaddr *sa, char *buf, size_t cap);

#endif
