/* The execution context's insides, shared by the parts of a run that
 * exec.c orchestrates (attempt.c, request.c) and by what later reuses
 * them. Internal to the sandbox layer: the layers above see struct
 * exec_ctx only as the opaque handle of sandbox/sandbox.h (the lint's
 * facade rule keeps them out of this header). */
#ifndef MCPSBX_EXEC_CTX_H
#define MCPSBX_EXEC_CTX_H

#include <stdatomic.h>

#include "backend/backend.h"
#include "base/config.h"
#include "egress/policy.h"
#include "egress/secrets.h"
#include "sandbox/languages/langtable.h"
#include "sandbox/output/redact.h"
#include "sandbox/pool/pool.h"
#include "sandbox/pool/reaper.h"
#include "sandbox/pool/uids.h"
#include "sandbox/run/commands.h"
#include "sandbox/run/launch.h"
#include "sandbox/run/policy.h"
#include "sandbox/run/run.h"
#include "sandbox/runner/runner.h"

struct exec_cancel {
    int fd; /* eventfd, readable once cancelled */
    atomic_bool cancelled;
};

/* The code sessions' registry and watcher (sandbox/session/code_session.h). */
struct code_space;
/* The package cache and the install runs' settings (packages_run.h). */
struct packages_ctx;

struct exec_ctx {
    const struct config *cfg;
    const struct langtable *langs;
    struct lang_cmds *cmds; /* per language, by index */
    struct backend *backend;
    char instance[RUNNER_NONCE_HEX_LEN + 1];
    struct policy_secrets secrets; /* --pass-through-env, for the requests */
    /* --secret's values and hosts (never sent to a sandbox: a run gets
     * placeholders, sandbox/run/egress_run.h). */
    struct egress_secrets *egress_secrets;
    struct redactor *redactor; /* both kinds of values in output; NULL: none */
    struct uids *uids;         /* each sandbox's own uid; NULL: all run as --sandbox-user */
    struct reaper *reaper;
    struct launcher *launcher;
    struct pool *pool; /* NULL when no language keeps a pool */
    /* What a pooled sandbox's expiry label gives it past the pool's age
     * limit, in seconds (0: no pool). */
    long long pool_expiry_extra_s;
    struct code_space *sessions; /* NULL until code_sessions_start */
    /* The egress gateway's daemon-wide settings (egress/settings.h),
     * shared read-only by every run: the pinned names and the allowed
     * CIDRs (NULL: none) and each run's caps. */
    const struct egress_pins *egress_pins;
    const struct egress_cidrs *egress_allow;
    struct egress_caps egress_caps;
    /* The TLS the gateway terminates for the hosts bound to a --secret:
     * the daemon's CA (NULL: none, every tunnel is untouched) and its
     * public files, and the upstream side's context. */
    struct egress_tls_ca *egress_ca;
    const char *egress_ca_file;
    const char *egress_ca_bundle;
    SSL_CTX *egress_upstream_tls;
    struct packages_ctx *packages; /* never NULL once exec_ctx_new returned */
};

/* The container for req (exec.c): the policy's limits, and labels that let
 * any daemon remove it once every deadline of its use is past: setup (from
 * t0, util_now_ms time), life_ms of programs (a run's timeout, or a code
 * session's whole life), the wait for its exit status. */
void run_spec(const struct exec_ctx *ctx, const struct run *req, double t0, long long life_ms,
              struct backend_spec *spec);

#endif
