/* The gateway's daemon-wide settings, made once at start from the
 * options (base/config.h) and read-only after, so every run and thread
 * shares them without a lock: the names pinned to addresses
 * (--egress-resolve), the CIDRs allowed although the address rules refuse
 * them (--egress-allow-cidr), and every run's caps (--egress-max-*,
 * --egress-connection-timeout-ms; the connect and head times are
 * policy.h's defaults). The per-language host lists are the language
 * table's (langtable_configure reads --egress). */
#ifndef MCPSBX_EGRESS_SETTINGS_H
#define MCPSBX_EGRESS_SETTINGS_H

#include "base/config.h"
#include "base/err.h"
#include "egress/addr.h"
#include "egress/policy.h"
#include "egress/resolve.h"

struct egress_settings {
    struct egress_pins pins;
    struct egress_cidrs allow;
    struct egress_caps caps;
};

/* Builds *out (allocated; free with egress_settings_free) from cfg's
 * options. Fails with ERR_INVALID naming the option and the item:
 * "--egress-resolve 'db.internal=10.0.0.300': ...". */
int egress_settings_new(const struct config *cfg, struct egress_settings **out, struct err *err);

void egress_settings_free(struct egress_settings *s);

#endif
