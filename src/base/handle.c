#include "base/handle.h"

#include <stdio.h>
#include <string.h>

static char daemon_name[HANDLE_DAEMON_MAX + 1];

static bool label_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
}

static bool hex_run(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

/* The length of the DNS label at s (stopping at the first byte that cannot
 * be in one), or 0 when it is not one. */
static size_t label_len(const char *s)
{
    size_t n = 0;
    while (n <= HANDLE_DAEMON_MAX && label_char(s[n]))
        n++;
    if (n == 0 || n > HANDLE_DAEMON_MAX || s[0] == '-' || s[n - 1] == '-')
        return 0;
    return n;
}

bool handle_daemon_valid(const char *name)
{
    size_t n = name ? label_len(name) : 0;
    return n > 0 && name[n] == '\0';
}

int handle_set_daemon(const char *name, struct err *err)
{
    if (name && *name) {
        if (!handle_daemon_valid(name))
            return err_set(err, ERR_INVALID, "daemon id '%.64s' is not a DNS label", name);
        snprintf(daemon_name, sizeof(daemon_name), "%s", name);
        return 0;
    }
    unsigned char raw[4];
    if (util_random_bytes(raw, sizeof(raw)) < 0)
        return err_set(err, ERR_INTERNAL, "no random bytes for a daemon id");
    util_hex(raw, sizeof(raw), daemon_name);
    return 0;
}

const char *handle_daemon(void)
{
    return daemon_name;
}

int handle_new(char out[HANDLE_MAX + 1])
{
    unsigned char raw[HANDLE_RANDOM_BYTES];
    if (util_random_bytes(raw, sizeof(raw)) < 0)
        return -1;
    char hex[HANDLE_RANDOM_LEN + 1];
    util_hex(raw, sizeof(raw), hex);
    snprintf(out, HANDLE_MAX + 1, "%s%s%s", daemon_name, *daemon_name ? "." : "", hex);
    return 0;
}

enum handle_kind handle_parse(const char *h, char daemon[HANDLE_DAEMON_MAX + 1])
{
    if (!h)
        return HANDLE_BAD;
    size_t n = 0;
    if (!hex_run(h, HANDLE_RANDOM_LEN) || h[HANDLE_RANDOM_LEN] != '\0') {
        n = label_len(h);
        if (n == 0 || h[n] != '.')
            return HANDLE_BAD;
    }
    const char *tail = n ? h + n + 1 : h;
    if (strnlen(tail, HANDLE_RANDOM_LEN + 1) != HANDLE_RANDOM_LEN ||
        !hex_run(tail, HANDLE_RANDOM_LEN))
        return HANDLE_BAD;
    if (n == strlen(daemon_name) && memcmp(h, daemon_name, n) == 0)
        return HANDLE_MINE;
    if (n == 0) /* names no daemon, and every daemon has a name */
        return HANDLE_BAD;
    if (daemon) {
        memcpy(daemon, h, n);
        daemon[n] = '\0';
    }
    return HANDLE_OTHER;
}

const char *handle_tail(const char *h)
{
    const char *dot = strchr(h, '.');
    return dot ? dot + 1 : h;
}

bool handle_equal(const char *a, const char *b)
{
    size_t na = strnlen(a, HANDLE_MAX + 1), nb = strnlen(b, HANDLE_MAX + 1);
    unsigned char d = na != nb;
    size_t n = na < nb ? na : nb;
    for (size_t i = 0; i < n; i++)
        d |= (unsigned char)(a[i] ^ b[i]);
    return d == 0;
}
