#include "egress/resolve.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <string.h>

/* How much of a bad text an error shows (escaped). */
#define SHOWN_MAX 96

static int bad_pin(struct err *err, const char *text, const char *why)
{
    char shown[SHOWN_MAX];
    util_escape(shown, sizeof(shown), text, strlen(text));
    return err_set(err, ERR_INVALID, "egress pin '%s': %s", shown, why);
}

/* An IPv4 or IPv6 literal into ss (port 0). */
static bool literal_addr(const struct egress_host *h, struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof(*ss));
    if (h->kind == EGRESS_HOST_IPV4) {
        struct sockaddr_in *sin = (struct sockaddr_in *)ss;
        sin->sin_family = AF_INET;
        memcpy(&sin->sin_addr, h->addr, 4);
        return true;
    }
    if (h->kind == EGRESS_HOST_IPV6) {
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
        sin6->sin6_family = AF_INET6;
        memcpy(&sin6->sin6_addr, h->addr, 16);
        return true;
    }
    return false;
}

int egress_pins_add(struct egress_pins *pins, const char *text, struct err *err)
{
    size_t len = strlen(text);
    if (len > EGRESS_PIN_TEXT_MAX)
        return bad_pin(err, text, "longer than any NAME=ADDRESS");
    const char *eq = strchr(text, '=');
    if (!eq)
        return bad_pin(err, text, "not NAME=ADDRESS");
    struct egress_host name;
    struct egress_host addr;
    if (!egress_host_parse(text, (size_t)(eq - text), &name) || name.kind != EGRESS_HOST_NAME)
        return bad_pin(err, text, "NAME must be a DNS name (letters, digits, hyphens)");
    if (!egress_host_parse(eq + 1, len - (size_t)(eq - text) - 1, &addr) ||
        addr.kind == EGRESS_HOST_NAME)
        return bad_pin(err, text, "ADDRESS must be an IPv4 or IPv6 address");
    if (egress_pins_find(pins, name.text))
        return bad_pin(err, text, "the name is pinned already");
    if (pins->n >= EGRESS_PINS_MAX)
        return err_set(err, ERR_TOO_BIG, "too many egress pins: at most %d", EGRESS_PINS_MAX);
    struct egress_pin *pin = &pins->items[pins->n];
    memcpy(pin->name, name.text, sizeof(pin->name));
    literal_addr(&addr, &pin->addr);
    pins->n++;
    return 0;
}

const struct sockaddr_storage *egress_pins_find(const struct egress_pins *pins, const char *host)
{
    struct egress_host h;
    if (!pins || !host || !egress_host_parse(host, strlen(host), &h) || h.kind != EGRESS_HOST_NAME)
        return NULL;
    for (size_t i = 0; i < pins->n; i++)
        if (strcmp(pins->items[i].name, h.text) == 0)
            return &pins->items[i].addr;
    return NULL;
}

static void set_port(struct sockaddr_storage *ss, unsigned port)
{
    if (ss->ss_family == AF_INET6)
        ((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
    else
        ((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
}

/* What one decision has seen: the addresses kept, and the first refused
 * with its rule (for the error when nothing is kept). */
struct judged {
    struct egress_addrs *out;
    struct sockaddr_storage first_refused;
    const char *first_why;
};

static void judge(struct judged *j, const struct sockaddr *sa, size_t sa_len, unsigned port,
                  const struct egress_cidrs *allow)
{
    struct egress_addrs *out = j->out;
    if (sa_len > sizeof(struct sockaddr_storage))
        return;
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof(ss));
    memcpy(&ss, sa, sa_len);
    const char *why = NULL;
    if (egress_addr_blocked((const struct sockaddr *)&ss, allow, &why)) {
        if (!j->first_why) {
            j->first_refused = ss;
            j->first_why = why;
        }
        out->refused++;
        return;
    }
    set_port(&ss, port);
    for (size_t i = 0; i < out->n; i++)
        if (memcmp(&out->items[i], &ss, sizeof(ss)) == 0)
            return;
    if (out->n < EGRESS_ADDRS_MAX)
        out->items[out->n++] = ss;
}

static int lookup(const char *name, unsigned port, const struct egress_cidrs *allow,
                  struct judged *j, struct err *err)
{
    struct addrinfo hints;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(name, NULL, &hints, &res);
    if (rc == EAI_NONAME || rc == EAI_NODATA || rc == EAI_FAMILY || (rc == 0 && !res)) {
        if (res)
            freeaddrinfo(res);
        return err_set(err, ERR_NOT_FOUND, "%s does not resolve to an address", name);
    }
    if (rc != 0)
        return err_set(err, ERR_IO, "cannot resolve %s: %s", name, gai_strerror(rc));
    for (const struct addrinfo *ai = res; ai; ai = ai->ai_next)
        if (ai->ai_family == AF_INET || ai->ai_family == AF_INET6)
            judge(j, ai->ai_addr, ai->ai_addrlen, port, allow);
    freeaddrinfo(res);
    if (j->out->n == 0 && !j->first_why)
        return err_set(err, ERR_NOT_FOUND, "%s has no IPv4 or IPv6 address", name);
    return 0;
}

int egress_resolve(const char *host, unsigned port, const struct egress_pins *pins,
                   const struct egress_cidrs *allow, struct egress_addrs *out, struct err *err)
{
    memset(out, 0, sizeof(*out));
    struct egress_host h;
    if (!host || !egress_host_parse(host, strlen(host), &h)) {
        char shown[SHOWN_MAX];
        util_escape(shown, sizeof(shown), host ? host : "", host ? strlen(host) : 0);
        return err_set(err, ERR_INVALID, "'%s' is not a host name or IP address", shown);
    }
    if (port == 0 || port > 65535)
        return err_set(err, ERR_INVALID, "port %u of %s is not from 1 to 65535", port, h.text);
    struct judged j = {.out = out};
    const char *verb = "resolves to";
    const struct sockaddr_storage *pin = NULL;
    struct sockaddr_storage lit;
    if (literal_addr(&h, &lit)) {
        judge(&j, (const struct sockaddr *)&lit, sizeof(lit), port, allow);
    } else if ((pin = egress_pins_find(pins, h.text)) != NULL) {
        verb = "is pinned to";
        judge(&j, (const struct sockaddr *)pin, sizeof(*pin), port, allow);
    } else if (lookup(h.text, port, allow, &j, err) < 0) {
        return -1;
    }
    if (out->n > 0)
        return 0;
    char addr[EGRESS_ADDR_TEXT_CAP];
    egress_addr_format((const struct sockaddr *)&j.first_refused, addr, sizeof(addr));
    if (h.kind != EGRESS_HOST_NAME)
        return err_set(err, ERR_INVALID, "%s is %s; --egress-allow-cidr can allow it", h.text,
                       j.first_why);
    return err_set(err, ERR_INVALID, "%s %s %s, %s; --egress-allow-cidr can allow it", h.text, verb,
                   addr, j.first_why);
}
