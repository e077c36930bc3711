/* The gateway's resolver: a host and port to the addresses the gateway
 * will connect to, each judged by egress/addr.h's rules.
 *
 * An IP literal is itself; a name pinned with --egress-resolve NAME=ADDRESS
 * (like curl's --resolve) is its pin and never reaches DNS; any other name
 * goes to getaddrinfo. The caller connects to exactly the addresses
 * returned and resolves nothing again, so a name cannot resolve to an
 * allowed address for the check and to another for the connection (DNS
 * rebinding). Blocking: getaddrinfo may take as long as the system's
 * resolver does. */
#ifndef MCPSBX_EGRESS_RESOLVE_H
#define MCPSBX_EGRESS_RESOLVE_H

#include <stddef.h>
#include <sys/socket.h>

#include "base/err.h"
#include "egress/addr.h"
#include "egress/pattern.h"

/* How many pins a table holds. */
#define EGRESS_PINS_MAX 64
/* The longest NAME=ADDRESS text. */
#define EGRESS_PIN_TEXT_MAX (EGRESS_NAME_MAX + 1 + EGRESS_ADDR_TEXT_CAP + 2)
/* How many addresses one resolution keeps (getaddrinfo's others are
 * dropped). */
#define EGRESS_ADDRS_MAX 16

struct egress_pin {
    char name[EGRESS_HOST_CAP];   /* normal form (egress_host_parse) */
    struct sockaddr_storage addr; /* port 0 */
};

struct egress_pins {
    size_t n;
    struct egress_pin items[EGRESS_PINS_MAX];
};

/* Adds "NAME=ADDRESS" to pins: NAME a DNS name (not a wildcard, not a
 * literal) not pinned yet, ADDRESS an IPv4 or IPv6 literal (brackets
 * allowed). */
int egress_pins_add(struct egress_pins *pins, const char *text, struct err *err);

/* The pin of host (any case, a trailing dot allowed), or NULL. */
const struct sockaddr_storage *egress_pins_find(const struct egress_pins *pins, const char *host);

struct egress_addrs {
    size_t n;
    struct sockaddr_storage items[EGRESS_ADDRS_MAX]; /* with the port */
    size_t refused; /* how many were dropped by the address rules */
};

/* Resolves host (a name or a literal, as egress_host_parse reads it) for
 * port (1..65535) into *out: only the addresses egress_addr_blocked lets
 * through with allow (may be NULL), in the resolver's order. pins may be
 * NULL. Fails with
 *   ERR_INVALID    host is not a host, or every address it has is refused:
 *                  the message names the host, an address and the rule,
 *                  "db.example resolves to 10.1.2.3, a private address;
 *                  --egress-allow-cidr can allow it" (answer 403);
 *   ERR_NOT_FOUND  the name does not exist or has no IPv4/IPv6 address;
 *   ERR_IO         the resolver failed otherwise (a temporary failure). */
int egress_resolve(const char *host, unsigned port, const struct egress_pins *pins,
                   const struct egress_cidrs *allow, struct egress_addrs *out, struct err *err);

#endif
