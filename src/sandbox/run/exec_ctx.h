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
#include "sandbox/languages/langtable.h"
#include "sandbox/output/redact.h"
#include "sandbox/pool/pool.h"
#include "sandbox/pool/reaper.h"
#include "sandbox/pool/uids.h"
#include "sandbox/run/commands.h"
#include "sandbox/run/launch.h"
#include "sandbox/run/policy.h"
#include "sandbox/runner/runner.h"

struct exec_cancel {
    int fd; /* eventfd, readable once cancelled */
    atomic_bool cancelled;
};

struct exec_ctx {
    const struct config *cfg;
    const struct langtable *langs;
    struct lang_cmds *cmds; /* per language, by index */
    struct backend *backend;
    char instance[RUNNER_NONCE_HEX_LEN + 1];
    struct policy_secrets secrets; /* --pass-through-env, for the requests */
    struct redactor *redactor;     /* their values in output; NULL: none */
    struct uids *uids;             /* each sandbox's own uid; NULL: all run as --sandbox-user */
    struct reaper *reaper;
    struct launcher *launcher;
    struct pool *pool; /* NULL when no language keeps a pool */
};

#endif
