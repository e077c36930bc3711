/* The rig of exec.c's tests (test_exec.c, test_exec_faults.c): an
 * execution context over the fake backend (tests/fake_backend), one run
 * at a time, with the sandbox's program and the backend's faults
 * scripted. Every run must leave no sandbox behind. Nothing waits on a
 * sleep: the fake's conditions are the handshakes, their timeouts only
 * hang guards. Include after cmocka.h. */
#ifndef MCPSBX_TEST_EXEC_RIG_H
#define MCPSBX_TEST_EXEC_RIG_H

#include <string.h>

#include "fake_backend/fake_backend.h"
#include "sandbox/run/exec.h"
#include "unit/options.h"
#include "unit/cache_dir.h"
#include "unit/langs.h"

#define GUARD 20000 /* ms: a hang guard only */

struct rig {
    struct fake_backend *fb;
    struct config cfg;
    struct langtable *langs; /* the built-in table, configured by cfg at setup */
    struct exec_ctx *exec;
};

/* The running test's languages (of its rig's table). */
static const struct langtable_lang *PY, *JS;

/* The table again, configured by the rig's options as they are now. */
static inline void reconfigure(struct rig *g)
{
    langtable_free(g->langs);
    g->langs = test_langs(&g->cfg);
    PY = test_lang(g->langs, "python");
    JS = test_lang(g->langs, "javascript");
}

static inline int setup(void **state)
{
    struct rig *g = xcalloc(1, sizeof(*g));
    g->fb = fake_backend_new();
    config_init(&g->cfg);
    g->cfg.pool_size = 0; /* the pool has tests of its own */
    test_cache_dir(&g->cfg);
    reconfigure(g);
    *state = g;
    return 0;
}

/* The execution context, with the daemon's environment envp (NULL: none). */
static inline void rig_open_env(struct rig *g, char **envp)
{
    struct err err = ERR_INIT;
    g->exec = exec_ctx_new(&g->cfg, g->langs, fake_backend_get(g->fb), NULL, envp, &err);
    if (!g->exec)
        fail_msg("exec_ctx_new: %s", err_msg(&err));
}

static inline void rig_open(struct rig *g)
{
    rig_open_env(g, NULL);
}

/* Ends the context: its reaper's threads, the sweeper among them, too. */
static inline void rig_close(struct rig *g)
{
    exec_ctx_free(g->exec);
    g->exec = NULL;
}

static inline int teardown(void **state)
{
    struct rig *g = *state;
    rig_close(g);
    fake_backend_release(g->fb);
    size_t left = fake_backend_live(g->fb);
    backend_free(fake_backend_get(g->fb));
    langtable_free(g->langs);
    config_free(&g->cfg);
    free(g);
    if (left != 0)
        fail_msg("%zu sandboxes left behind", left);
    return 0;
}

static inline struct run request(const char *code)
{
    return (struct run){
        .language = PY,
        .code = code,
        .code_len = strlen(code),
        .timeout_ms = 30000,
        .memory_mb = 128,
    };
}

/* Runs req, which must not fail; res is the caller's (initialised). */
static inline void run_ok(struct rig *g, const struct run *req, struct exec_result *res)
{
    struct err err = ERR_INIT;
    if (exec_run(g->exec, req, res, &err) < 0)
        fail_msg("exec_run: %s", err_msg(&err));
}

static inline void assert_contains(const char *hay, const char *needle)
{
    if (!hay || !strstr(hay, needle))
        fail_msg("\"%s\" does not contain \"%s\"", hay ? hay : "(null)", needle);
}

/* The run's sandbox: the last one created. */
static inline void last_sandbox(struct rig *g, char id[FAKE_BACKEND_ID_MAX + 1])
{
    if (!fake_backend_last_id(g->fb, id, FAKE_BACKEND_ID_MAX + 1))
        fail_msg("no sandbox was created");
}

/* What the last sandbox was made from, and what became of it. */
static inline void last_info(struct rig *g, struct fake_sandbox_info *info)
{
    char id[FAKE_BACKEND_ID_MAX + 1];
    last_sandbox(g, id);
    assert_true(fake_backend_info(g->fb, id, info));
}

/* The run's sandbox was removed, and no other is left. */
static inline void assert_removed(struct rig *g, const char *id)
{
    if (!fake_backend_wait_removed(g->fb, id, GUARD))
        fail_msg("sandbox %s was not removed (%d removals asked)", id,
                 fake_backend_count(g->fb, FAKE_STEP_REMOVE, id));
    assert_int_equal(fake_backend_live(g->fb), 0);
}

static inline void assert_last_removed(struct rig *g)
{
    char id[FAKE_BACKEND_ID_MAX + 1];
    last_sandbox(g, id);
    assert_removed(g, id);
}

/* Live output as the callback saw it (called on the running thread). */
struct live {
    struct buf out, err;
    int ticks;
};

static inline void on_output(void *ctx, int stream, const char *data, size_t len)
{
    struct live *l = ctx;
    if (stream == EXEC_TICK) {
        l->ticks++;
        return;
    }
    size_t added = buf_add_upto(stream == EXEC_STDERR ? &l->err : &l->out, data, len);
    (void)added;
}

static inline void live_init(struct live *l, struct run *req)
{
    *l = (struct live){.ticks = 0};
    buf_init(&l->out, 1 << 16);
    buf_init(&l->err, 1 << 16);
    req->on_output = on_output;
    req->on_output_ctx = l;
}

static inline void live_free(struct live *l)
{
    buf_free(&l->out);
    buf_free(&l->err);
}

#endif
