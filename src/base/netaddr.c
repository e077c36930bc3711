#include "base/netaddr.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

bool netaddr_is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *sin = (const struct sockaddr_in *)(const void *)sa;
        return (ntohl(sin->sin_addr.s_addr) >> 24) == 127;
    }
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
        return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
    }
    return false;
}

static void show_address(const struct sockaddr *sa, char *shown, size_t shown_len)
{
    char text[NETADDR_TEXT_MAX] = "?";
    const void *raw =
        sa->sa_family == AF_INET
            ? (const void *)&((const struct sockaddr_in *)(const void *)sa)->sin_addr
            : (const void *)&((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
    if (!inet_ntop(sa->sa_family, raw, text, sizeof(text)))
        snprintf(text, sizeof(text), "?");
    snprintf(shown, shown_len, "%s", text);
}

/* An empty host or "localhost" is 127.0.0.1; an IPv4 or IPv6 literal is
 * itself: true with *ss filled (its port 0). */
static bool parse_literal(const char *host, struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof(*ss));
    if (!host || !*host || strcasecmp(host, "localhost") == 0)
        host = "127.0.0.1";
    struct sockaddr_in *sin = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, host, &sin->sin_addr) == 1)
        sin->sin_family = AF_INET;
    else if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1)
        sin6->sin6_family = AF_INET6;
    return ss->ss_family != AF_UNSPEC;
}

static int lookup(const char *host, struct addrinfo **res, struct err *err)
{
    struct addrinfo hints;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    *res = NULL;
    int rc = getaddrinfo(host, NULL, &hints, res);
    if (rc != 0 || !*res) {
        if (*res)
            freeaddrinfo(*res);
        *res = NULL;
        return err_set(err, ERR_INVALID, "--http: cannot resolve '%.256s': %s", host,
                       rc ? gai_strerror(rc) : "no address");
    }
    return 0;
}

static bool inet_family(int family)
{
    return family == AF_INET || family == AF_INET6;
}

int netaddr_resolve_listen(const char *host, unsigned port, struct sockaddr_storage *ss,
                           struct err *err)
{
    if (!parse_literal(host, ss)) {
        struct addrinfo *res = NULL;
        if (lookup(host, &res, err) < 0)
            return -1;
        const struct addrinfo *ai = res;
        while (ai && !inet_family(ai->ai_family))
            ai = ai->ai_next;
        if (!ai || ai->ai_addrlen > sizeof(*ss)) {
            freeaddrinfo(res);
            return err_set(err, ERR_INVALID, "--http: '%.256s' has no IPv4 or IPv6 address", host);
        }
        memcpy(ss, ai->ai_addr, ai->ai_addrlen);
        freeaddrinfo(res);
    }
    if (ss->ss_family == AF_INET6)
        ((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
    else
        ((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
    return 0;
}

int netaddr_listen_is_loopback(const char *host, bool *loopback, char *shown, size_t shown_len,
                               struct err *err)
{
    *loopback = false;
    if (shown_len)
        shown[0] = '\0';
    struct sockaddr_storage ss;
    if (parse_literal(host, &ss)) {
        *loopback = netaddr_is_loopback((const struct sockaddr *)&ss);
        show_address((const struct sockaddr *)&ss, shown, shown_len);
        return 0;
    }
    struct addrinfo *res = NULL;
    if (lookup(host, &res, err) < 0)
        return -1;
    const struct addrinfo *shown_ai = NULL;
    bool all_loopback = true;
    for (const struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        if (!inet_family(ai->ai_family))
            continue;
        if (!shown_ai)
            shown_ai = ai;
        if (!netaddr_is_loopback(ai->ai_addr)) {
            if (all_loopback)
                shown_ai = ai;
            all_loopback = false;
        }
    }
    if (!shown_ai) {
        freeaddrinfo(res);
        return err_set(err, ERR_INVALID, "--http: '%.256s' has no IPv4 or IPv6 address", host);
    }
    *loopback = all_loopback;
    show_address(shown_ai->ai_addr, shown, shown_len);
    freeaddrinfo(res);
    return 0;
}
