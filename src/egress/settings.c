#include "egress/settings.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"

/* The caps the options give; the connect and head times stay the
 * defaults (no option sets them). The option table's bounds keep every
 * value within its field. */
static void caps_of(const struct config *cfg, struct egress_caps *caps)
{
    egress_caps_default(caps);
    caps->conns_open = (unsigned)cfg->egress_max_connections;
    caps->conns_total = (unsigned)cfg->egress_max_connections_total;
    caps->bytes_up = (unsigned long long)cfg->egress_max_bytes_up;
    caps->bytes_down = (unsigned long long)cfg->egress_max_bytes_down;
    caps->conn_ms = cfg->egress_connection_timeout_ms;
}

int egress_settings_new(const struct config *cfg, struct egress_settings **out, struct err *err)
{
    struct egress_settings *s = xcalloc(1, sizeof(*s));
    int rc = -1;
    *out = NULL;
    for (size_t i = 0; i < cfg->egress_resolve.n; i++)
        if (egress_pins_add(&s->pins, cfg->egress_resolve.items[i], err) < 0) {
            err_wrap(err, "--egress-resolve");
            goto out;
        }
    for (size_t i = 0; i < cfg->egress_allow_cidr.n; i++)
        if (egress_cidrs_add(&s->allow, cfg->egress_allow_cidr.items[i], err) < 0) {
            err_wrap(err, "--egress-allow-cidr");
            goto out;
        }
    const char *extra = cfg->egress_upstream_ca;
    if (extra && !*extra)
        extra = NULL;
    if (egress_tls_client_new(extra, &s->upstream_tls, err) < 0) {
        if (extra)
            err_wrap(err, "--egress-upstream-ca");
        goto out;
    }
    caps_of(cfg, &s->caps);
    if (egress_caps_check(&s->caps, err) < 0) {
        err_wrap(err, "--egress-max-connections, --egress-max-connections-total, "
                      "--egress-max-bytes-up, --egress-max-bytes-down or "
                      "--egress-connection-timeout-ms");
        goto out;
    }
    *out = s;
    s = NULL;
    rc = 0;
out:
    egress_settings_free(s);
    return rc;
}

int egress_settings_tls_ca(struct egress_settings *s, const char *dir, struct err *err)
{
    if (s->ca)
        return 0;
    return egress_tls_ca_new(dir, NULL, &s->ca, err);
}

/* The random part of the CA directory's name, in bytes. */
#define CA_DIR_RANDOM_BYTES 8

int egress_settings_tls_ca_under(struct egress_settings *s, const char *base_dir, struct err *err)
{
    if (s->ca)
        return 0;
    int rc = util_own_dir(base_dir, 0711, NULL);
    if (rc == UTIL_DIR_NOT_OURS)
        return err_set(err, ERR_INVALID,
                       "%s must be a directory of uid %u that no one else may write", base_dir,
                       (unsigned)geteuid());
    if (rc < 0)
        return err_set(err, ERR_IO, "cannot make %s: %s", base_dir, strerror(errno));
    unsigned char rnd[CA_DIR_RANDOM_BYTES];
    char hex[2 * CA_DIR_RANDOM_BYTES + 1];
    if (util_random_bytes(rnd, sizeof(rnd)) < 0)
        return err_set(err, ERR_INTERNAL, "no random bytes for the CA directory's name");
    util_hex(rnd, sizeof(rnd), hex);
    char *dir = xasprintf("%s/%ld.%s", base_dir, (long)getpid(), hex);
    if (egress_tls_ca_new(dir, NULL, &s->ca, err) < 0) {
        rmdir(dir);
        free(dir);
        return err_wrap(err, "the egress gateway's CA");
    }
    s->ca_dir = dir;
    return 0;
}

void egress_settings_free(struct egress_settings *s)
{
    if (!s)
        return;
    SSL_CTX_free(s->upstream_tls);
    egress_tls_ca_free(s->ca);
    if (s->ca_dir)
        rmdir(s->ca_dir);
    free(s->ca_dir);
    free(s);
}
