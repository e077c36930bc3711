/* The rig of the pool's tests (test_pool.c, test_pool_refill.c): an
 * execution context as main makes it, with python and javascript only
 * (--languages), over the fake backend (tests/fake_backend), and what the
 * tests ask of the sandboxes it made. Waits poll the pool's figures with
 * hang guards; no assertion is about time. Include after cmocka.h. */
#ifndef MCPSBX_TEST_POOL_RIG_H
#define MCPSBX_TEST_POOL_RIG_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_backend/fake_backend.h"
#include "sandbox/run/exec.h"
#include "unit/options.h"
#include "unit/cache_dir.h"
#include "unit/langs.h"

#define GUARD 20000

struct rig {
    struct fake_backend *fake;
    struct config cfg;
    /* The built-in table (with languages_text over it) configured by cfg
     * at rig_open. */
    const char *languages_text;
    struct langtable *langs;
    struct exec_ctx *exec;
};

/* The open rig's languages. */
static const struct langtable_lang *PY, *JS;

static inline void rig_open(struct rig *g)
{
    struct err err = ERR_INIT;
    langtable_free(g->langs);
    g->langs = test_langs_text(&g->cfg, g->languages_text);
    PY = test_lang(g->langs, "python");
    JS = test_lang(g->langs, "javascript");
    g->exec = exec_ctx_new(&g->cfg, g->langs, fake_backend_get(g->fake), NULL, NULL, &err);
    if (!g->exec)
        fail_msg("exec_ctx_new: %s", err_msg(&err));
}

static inline void rig_close(struct rig *g)
{
    exec_ctx_free(g->exec);
    g->exec = NULL;
}

static inline int setup(void **state)
{
    struct rig *g = xcalloc(1, sizeof(*g));
    g->fake = fake_backend_new();
    config_init(&g->cfg);
    g->cfg.pool_size = 1;
    test_cache_dir(&g->cfg);
    /* No ready installers: the tests count the languages' sandboxes
     * (test_pool_installers.c has those). */
    g->cfg.packages_offline = true;
    set_list(&g->cfg.languages, (const char *const[]){"python", "javascript"}, 2);
    *state = g;
    return 0;
}

static inline int teardown(void **state)
{
    struct rig *g = *state;
    if (g->exec)
        rig_close(g);
    fake_backend_release(g->fake);
    backend_free(fake_backend_get(g->fake));
    langtable_free(g->langs);
    config_free(&g->cfg);
    free(g);
    return 0;
}

static inline struct run request(const struct langtable_lang *lang, const char *code, long long mb)
{
    return (struct run){
        .language = lang,
        .code = code,
        .code_len = strlen(code),
        .timeout_ms = 30000,
        .memory_mb = mb,
    };
}

static inline void run_ok(struct rig *g, const struct run *req, const char *want_out)
{
    struct exec_result res;
    exec_result_init(&res);
    struct err err = ERR_INIT;
    if (exec_run(g->exec, req, &res, &err) < 0)
        fail_msg("exec_run: %s", err_msg(&err));
    assert_int_equal(res.status, EXEC_OK);
    assert_int_equal(res.exit_code, 0);
    assert_int_equal(res.out.len, strlen(want_out));
    assert_memory_equal(res.out.data, want_out, res.out.len);
    exec_result_free(&res);
}

static inline struct exec_pool_stats stats(struct rig *g, const struct langtable_lang *lang)
{
    struct exec_pool_stats st;
    assert_true(exec_pool_stats(g->exec, lang, &st));
    return st;
}

/* Whether lang's pool came to have `ready` waiting sandboxes (hang guard). */
static inline bool reached_ready(struct rig *g, const struct langtable_lang *lang, size_t ready)
{
    for (int i = 0; i < GUARD / 5; i++) {
        if (stats(g, lang).ready == ready)
            return true;
        usleep(5000);
    }
    return false;
}

/* Waits until lang's pool has `ready` waiting sandboxes (hang guard). */
static inline void wait_ready(struct rig *g, const struct langtable_lang *lang, size_t ready)
{
    if (reached_ready(g, lang, ready))
        return;
    struct exec_pool_stats st = stats(g, lang);
    fail_msg("%s pool: %zu ready, %zu starting, %llu failed (%s); wanted %zu ready", lang->name,
             st.ready, st.starting, st.failed, st.last_error, ready);
}

/* How many sandboxes' programs got code; *info is the last of them. */
static inline int count_ran(struct rig *g, const char *code, struct fake_sandbox_info *info)
{
    memset(info, 0, sizeof(*info));
    size_t n = 0;
    struct fake_sandbox_info *all = fake_backend_all(g->fake, &n);
    int found = 0;
    for (size_t i = 0; i < n; i++) {
        if (all[i].code_received && strcmp(all[i].code, code) == 0) {
            *info = all[i];
            found++;
        }
    }
    free(all);
    return found;
}

/* The sandbox whose program got code; fails when none or several did. */
static inline void sandbox_of(struct rig *g, const char *code, struct fake_sandbox_info *info)
{
    int found = count_ran(g, code, info);
    if (found != 1)
        fail_msg("%d sandboxes ran \"%s\"", found, code);
}

/* A warm runner of lang's image waiting for its request (the newest); its
 * id in id. */
static inline bool find_waiting(struct rig *g, const struct langtable_lang *lang,
                                char id[FAKE_BACKEND_ID_MAX + 1])
{
    size_t n = 0;
    struct fake_sandbox_info *all = fake_backend_all(g->fake, &n);
    bool found = false;
    for (size_t i = n; i-- > 0 && !found;) {
        const struct fake_sandbox_info *in = &all[i];
        found = in->warm && in->running && !in->code_received && !in->removed &&
                (!lang || strcmp(in->image, lang->image) == 0);
        if (found)
            memcpy(id, in->id, FAKE_BACKEND_ID_MAX + 1);
    }
    free(all);
    return found;
}

/* After rig_close: every sandbox made was removed. */
static inline void assert_all_gone(struct rig *g)
{
    assert_int_equal(fake_backend_live(g->fake), 0);
}

#endif
