/* Where --http listens, and whether only this machine can reach it.
 *
 * The rules, which the HTTP transport binds by (netaddr_resolve_listen):
 * an empty host or "localhost" is 127.0.0.1,
 * an IPv4 or IPv6 literal is itself, any other name is resolved with
 * getaddrinfo and the listener takes its first address. Loopback is
 * 127.0.0.0/8, ::1 and IPv4-mapped 127.0.0.0/8; the wildcards 0.0.0.0 and
 * :: are not: they listen on every interface. */
#ifndef MCPSBX_NETADDR_H
#define MCPSBX_NETADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "base/err.h"

/* Room for any address as text (INET6_ADDRSTRLEN and a NUL). */
#define NETADDR_TEXT_MAX 48

bool netaddr_is_loopback(const struct sockaddr *sa);

/* The address a listener for HOST:port binds (the rules above: a name's
 * first IPv4 or IPv6 address). */
int netaddr_resolve_listen(const char *host, unsigned port, struct sockaddr_storage *ss,
                           struct err *err);

/* Sets *loopback to whether a listener bound to HOST is reachable from
 * this machine only. A name is loopback only when every address it
 * resolves to is, so the answer holds whichever of them the listener
 * takes. shown (shown_len bytes, NETADDR_TEXT_MAX is enough) gets the
 * address the answer rests on: the first that is not loopback, else the
 * first. Fails when the name does not resolve to an IPv4 or IPv6 address. */
int netaddr_listen_is_loopback(const char *host, bool *loopback, char *shown, size_t shown_len,
                               struct err *err);

#endif
