/* The gateway's daemon-wide settings, made once at start from the
 * options (base/config.h) and read-only after, so every run and thread
 * shares them without a lock: the names pinned to addresses
 * (--egress-resolve), the CIDRs allowed although the address rules refuse
 * them (--egress-allow-cidr), and every run's caps (--egress-max-*,
 * --egress-connection-timeout-ms; the connect and head times are
 * policy.h's defaults), and the TLS the gateway speaks: the upstream
 * side's context (the host's trust store plus --egress-upstream-ca), and
 * the daemon's CA, made only when something needs TLS terminated
 * (egress_settings_tls_ca). The per-language host lists are the language
 * table's (langtable_configure reads --egress). */
#ifndef MCPSBX_EGRESS_SETTINGS_H
#define MCPSBX_EGRESS_SETTINGS_H

#include "base/config.h"
#include "base/err.h"
#include "egress/addr.h"
#include "egress/policy.h"
#include "egress/resolve.h"
#include "egress/tls.h"

struct egress_settings {
    struct egress_pins pins;
    struct egress_cidrs allow;
    struct egress_caps caps;
    SSL_CTX *upstream_tls;    /* verifies upstreams; shared by every connection */
    struct egress_tls_ca *ca; /* NULL until egress_settings_tls_ca */
    char *ca_dir;             /* the fresh directory egress_settings_tls_ca_under made */
};

/* Builds *out (allocated; free with egress_settings_free) from cfg's
 * options. Fails with ERR_INVALID naming the option and the item:
 * "--egress-resolve 'db.internal=10.0.0.300': ...". */
int egress_settings_new(const struct config *cfg, struct egress_settings **out, struct err *err);

/* Makes the daemon's CA and writes its files in dir (egress/tls.h), once,
 * at start, before any thread reads s: for a daemon that terminates TLS
 * (a host bound to a secret). 0 when s->ca is there already. */
int egress_settings_tls_ca(struct egress_settings *s, const char *dir, struct err *err);

/* The same in a fresh directory "<pid>.<16 hex>" made under base_dir
 * (made 0711 when missing; it must be this uid's and writable by no one
 * else), removed with the CA's files by egress_settings_free. The name's
 * shape is the one the Docker backend sweeps when its daemon is gone
 * (--sandbox-io-dir's), so a killed daemon's public files go too; the
 * CA's key is never there (egress/tls.h). */
int egress_settings_tls_ca_under(struct egress_settings *s, const char *base_dir, struct err *err);

void egress_settings_free(struct egress_settings *s);

#endif
