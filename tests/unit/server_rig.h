/* The one rig of the unit tests above the backend (mcp, transport): a
 * server as main makes it (configuration, language table, execution
 * context, MCP server) over the fake backend (tests/fake_backend).
 * rig_init, then any configuration, then rig_start; rig_fini at the end.
 * Include after cmocka.h. */
#ifndef MCPSBX_TEST_SERVER_RIG_H
#define MCPSBX_TEST_SERVER_RIG_H

#include "fake_backend/fake_backend.h"
#include "mcp/mcp.h"
#include "sandbox/run/exec.h"
#include "unit/cache_dir.h"
#include "unit/langs.h"

/* How the backend behaves: down (every operation fails at once), stalled
 * (every operation hangs until its deadline), or up (sandboxes run the
 * fake's program). */
enum rig_backend { RIG_DOWN, RIG_STALLED, RIG_UP };

struct rig {
    struct config cfg;
    struct fake_backend *fake;
    struct backend *backend;
    struct langtable *langs; /* the built-in table, as main configures it */
    struct exec_ctx *exec;
    struct mcp_server *srv;
};

static inline void rig_init(struct rig *g, enum rig_backend how)
{
    memset(g, 0, sizeof(*g));
    config_init(&g->cfg);
    g->cfg.pool_size = 0; /* the pool has tests of its own */
    test_cache_dir(&g->cfg);
    g->fake = fake_backend_new();
    g->backend = fake_backend_get(g->fake);
    if (how == RIG_DOWN)
        fake_backend_set_outage(g->fake, true);
    for (int step = 0; how == RIG_STALLED && step < FAKE_STEP_COUNT; step++)
        fake_backend_stall(g->fake, (enum fake_step)step, -1);
}

static inline void rig_start(struct rig *g)
{
    struct err err = ERR_INIT;
    g->langs = test_langs(&g->cfg);
    g->exec = exec_ctx_new(&g->cfg, g->langs, g->backend, NULL, NULL, &err);
    if (!g->exec)
        fail_msg("exec_ctx_new: %s", err_msg(&err));
    g->srv = mcp_server_new(&g->cfg, g->exec, &err);
    if (!g->srv)
        fail_msg("mcp_server_new: %s", err_msg(&err));
}

static inline void rig_fini(struct rig *g)
{
    mcp_server_free(g->srv);
    exec_ctx_free(g->exec);
    fake_backend_release(g->fake);
    backend_free(g->backend);
    langtable_free(g->langs);
    config_free(&g->cfg);
}

#endif
