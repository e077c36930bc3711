/* pool.c through exec against the fake Engine API (tests/fake_engine):
 * warm containers are made ahead as warm runners, each serves one run and
 * is removed, dead or aged ones are replaced and never handed out, runs
 * with other limits go on demand, a pool that cannot fill leaves runs on
 * demand, and nothing is left after shutdown. Sandboxes connect through
 * the daemon's socket; the tests marked so run again attached. Waits poll the pool's
 * figures with hang guards; no assertion is about time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backend/docker/docker.h"
#include "backend/docker/engine.h"
#include "fake_engine/fake_engine.h"
#include "sandbox/run/exec.h"
#include "sandbox/runner/runner.h"
#include "unit/langs.h"
#include "unit/rig.h"

#define GUARD FAKE_HANG_GUARD_MS

struct rig {
    struct fake_engine *fe;
    struct config cfg;
    struct backend *backend;
    /* The built-in table (with languages_text over it) configured by cfg
     * at rig_open: python and javascript only (--languages), so the pool
     * has the two profiles these tests count on. */
    const char *languages_text;
    struct langtable *langs;
    struct exec_ctx *exec;
    char io_dir[64]; /* --sandbox-io-dir: empty again after every test */
};

/* The open rig's languages. */
static const struct langtable_lang *PY, *JS;

static void rig_open(struct rig *g)
{
    struct err err = ERR_INIT;
    langtable_free(g->langs);
    g->langs = test_langs_text(&g->cfg, g->languages_text);
    PY = test_lang(g->langs, "python");
    JS = test_lang(g->langs, "javascript");
    struct docker_options opts = {.sandbox_io = g->cfg.sandbox_io,
                                  .sandbox_io_dir = g->cfg.sandbox_io_dir};
    g->backend = docker_backend_new(fake_engine_socket(g->fe), NULL, &opts);
    g->exec = exec_ctx_new(&g->cfg, g->langs, g->backend, NULL, &err);
    if (!g->exec)
        fail_msg("exec_ctx_new: %s", err_msg(&err));
}

static void rig_close(struct rig *g)
{
    exec_ctx_free(g->exec);
    backend_free(g->backend);
    g->exec = NULL;
    g->backend = NULL;
}

static int setup(void **state)
{
    struct rig *g = xcalloc(1, sizeof(*g));
    g->fe = fake_engine_start();
    if (!g->fe) {
        free(g);
        return -1;
    }
    config_init(&g->cfg);
    g->cfg.pool_size = 1;
    free(g->cfg.languages.items);
    g->cfg.languages.items = xcalloc(3, sizeof(char *));
    g->cfg.languages.items[0] = xstrdup("python");
    g->cfg.languages.items[1] = xstrdup("javascript");
    g->cfg.languages.n = 2;
    snprintf(g->io_dir, sizeof(g->io_dir), "/tmp/pool_io.XXXXXX");
    if (!mkdtemp(g->io_dir))
        return -1;
    free(g->cfg.sandbox_io_dir);
    g->cfg.sandbox_io_dir = xstrdup(g->io_dir);
    /* Giving the sockets to each sandbox's own uid takes root; otherwise
     * the sandboxes all run as this user. */
    if (geteuid() != 0) {
        g->cfg.sandbox_uid_count = 0;
        free(g->cfg.sandbox_user);
        g->cfg.sandbox_user = xasprintf("%u:%u", (unsigned)geteuid(), (unsigned)getegid());
    }
    *state = g;
    return 0;
}

/* Waiting sandboxes on the engine's attach stream instead of the socket. */
static int setup_attach(void **state)
{
    if (setup(state) < 0)
        return -1;
    struct rig *g = *state;
    free(g->cfg.sandbox_io);
    g->cfg.sandbox_io = xstrdup("attach");
    g->cfg.sandbox_uid_count = 4096; /* no socket to give away: any user may */
    return 0;
}

static int teardown(void **state)
{
    struct rig *g = *state;
    if (g->exec)
        rig_close(g);
    fake_engine_stop(g->fe);
    langtable_free(g->langs);
    config_free(&g->cfg);
    /* No socket directory outlives its sandbox's set-up. */
    int left = rmdir(g->io_dir);
    free(g);
    if (left != 0)
        fail_msg("the sandbox I/O directory is not empty");
    return 0;
}

static struct run request(const struct langtable_lang *lang, const char *code, long long mb)
{
    return (struct run){
        .language = lang,
        .code = code,
        .code_len = strlen(code),
        .timeout_ms = 30000,
        .memory_mb = mb,
    };
}

static void run_ok(struct rig *g, const struct run *req, const char *want_out)
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

static struct exec_pool_stats stats(struct rig *g, const struct langtable_lang *lang)
{
    struct exec_pool_stats st;
    assert_true(exec_pool_stats(g->exec, lang, &st));
    return st;
}

/* Whether lang's pool came to have `ready` waiting containers (hang guard). */
static bool reached_ready(struct rig *g, const struct langtable_lang *lang, size_t ready)
{
    for (int i = 0; i < GUARD / 5; i++) {
        if (stats(g, lang).ready == ready)
            return true;
        usleep(5000);
    }
    return false;
}

/* Waits until lang's pool has `ready` waiting containers (hang guard). */
static void wait_ready(struct rig *g, const struct langtable_lang *lang, size_t ready)
{
    if (reached_ready(g, lang, ready))
        return;
    struct exec_pool_stats st = stats(g, lang);
    fail_msg("%s pool: %zu ready, %zu starting, %llu failed (%s); wanted %zu ready", lang->name,
             st.ready, st.starting, st.failed, st.last_error, ready);
}

/* The fake names its n-th container "fe" + n in 62 hex digits. */
static void nth_id(unsigned long n, char id[FAKE_ID_MAX + 1])
{
    snprintf(id, FAKE_ID_MAX + 1, "fe%062lx", n);
}

/* How many containers' programs got code; id is set to the last of them. */
static int count_ran(struct rig *g, const char *code, char id[FAKE_ID_MAX + 1])
{
    int found = 0;
    int n = fake_engine_count(g->fe, FAKE_OP_CREATE, NULL);
    for (int i = 1; i <= n; i++) {
        char cand[FAKE_ID_MAX + 1];
        struct fake_container_info info;
        nth_id((unsigned long)i, cand);
        if (fake_engine_info(g->fe, cand, &info) && info.code_received &&
            strcmp(info.code, code) == 0) {
            memcpy(id, cand, FAKE_ID_MAX + 1);
            found++;
        }
    }
    return found;
}

/* The container whose program got code; fails when none or several did. */
static void container_of(struct rig *g, const char *code, char id[FAKE_ID_MAX + 1])
{
    int found = count_ran(g, code, id);
    if (found != 1)
        fail_msg("%d containers ran \"%s\"", found, code);
}

/* The waiting container of the pool: the newest created, warm and unused. */
static void waiting_id(struct rig *g, char id[FAKE_ID_MAX + 1])
{
    int n = fake_engine_count(g->fe, FAKE_OP_CREATE, NULL);
    for (int i = n; i >= 1; i--) {
        struct fake_container_info info;
        nth_id((unsigned long)i, id);
        if (fake_engine_info(g->fe, id, &info) && info.warm && info.running &&
            !info.code_received && !info.removed)
            return;
    }
    fail_msg("no warm container is waiting");
}

static void assert_all_gone(struct rig *g)
{
    int n = fake_engine_count(g->fe, FAKE_OP_CREATE, NULL);
    for (int i = 1; i <= n; i++) {
        char id[FAKE_ID_MAX + 1];
        struct fake_container_info info;
        nth_id((unsigned long)i, id);
        /* Failed creates made no container: fewer ids than creates. */
        if (!fake_engine_info(g->fe, id, &info))
            continue;
        if (!fake_engine_wait_removed(g->fe, id, GUARD))
            fail_msg("container %.12s was not removed", id);
    }
    assert_int_equal(fake_engine_live(g->fe), 0);
}

/* ---- warm runs ------------------------------------------------------------ */

/* A run takes the waiting container: no create, attach or start on its
 * path; the container was a warm runner with the preload list, ran this
 * one program only, and is removed; the pool makes a new one. */
static void test_warm_run_single_use(void **state)
{
    struct rig *g = *state;
    struct fake_program p = {.out = "hi\n", .out_len = 3};
    fake_engine_set_program(g->fe, &p);
    rig_open(g);
    wait_ready(g, PY, 1);
    wait_ready(g, JS, 1);
    char warm[FAKE_ID_MAX + 1];
    waiting_id(g, warm);
    int creates = fake_engine_count(g->fe, FAKE_OP_CREATE, NULL);

    struct run req = request(PY, "print('hi')", g->cfg.memory_mb);
    run_ok(g, &req, "hi\n");
    char used[FAKE_ID_MAX + 1];
    container_of(g, "print('hi')", used);
    struct fake_container_info info;
    assert_true(fake_engine_info(g->fe, used, &info));
    assert_true(info.warm);
    assert_string_equal(info.image, PY->image);
    assert_true(info.memory == g->cfg.memory_mb << 20);
    assert_true(fake_engine_wait_removed(g->fe, used, GUARD));
    /* Made before the run, not for it. */
    assert_int_equal(fake_engine_count(g->fe, FAKE_OP_START, used), 1);
    assert_true(strcmp(used, warm) == 0 || creates >= 2);

    /* Refilled with a new container; the next run gets a fresh one. */
    wait_ready(g, PY, 1);
    req = request(PY, "print('hi') # 2", g->cfg.memory_mb);
    run_ok(g, &req, "hi\n");
    char second[FAKE_ID_MAX + 1];
    container_of(g, "print('hi') # 2", second);
    assert_string_not_equal(used, second);
    assert_true(fake_engine_info(g->fe, second, &info));
    assert_true(info.warm);

    struct exec_pool_stats st = stats(g, PY);
    assert_true(st.hits == 2);
    assert_true(st.misses == 0);
    assert_int_equal(st.size, 1);
    rig_close(g);
    assert_all_gone(g);
}

/* The warm runner gets the configured preload list as its argument. */
static void test_preload_argument(void **state)
{
    struct rig *g = *state;
    free(g->cfg.python_preload);
    g->cfg.python_preload = xstrdup("json,decimal");
    free(g->cfg.js_preload);
    g->cfg.js_preload = xstrdup("zlib");
    rig_open(g);
    wait_ready(g, PY, 1);
    wait_ready(g, JS, 1);
    bool py = false, js = false;
    int n = fake_engine_count(g->fe, FAKE_OP_CREATE, NULL);
    for (int i = 1; i <= n; i++) {
        char id[FAKE_ID_MAX + 1];
        struct fake_container_info info;
        nth_id((unsigned long)i, id);
        assert_true(fake_engine_info(g->fe, id, &info));
        assert_true(info.warm);
        if (strcmp(info.image, PY->image) == 0) {
            assert_string_equal(info.preload, "json,decimal");
            py = true;
        } else {
            assert_string_equal(info.preload, "zlib");
            js = true;
        }
    }
    assert_true(py && js);
    rig_close(g);
    assert_all_gone(g);
}

/* ---- limits ---------------------------------------------------------------- */

/* Other memory than the pool's: a container of its own, made for the run
 * with exactly that limit; the pool is not touched. */
static void test_other_limits_on_demand(void **state)
{
    struct rig *g = *state;
    struct fake_program p = {.out = "big\n", .out_len = 4};
    fake_engine_set_program(g->fe, &p);
    rig_open(g);
    wait_ready(g, PY, 1);
    struct run req = request(PY, "bigger", g->cfg.memory_mb * 2);
    run_ok(g, &req, "big\n");
    char used[FAKE_ID_MAX + 1];
    container_of(g, "bigger", used);
    struct fake_container_info info;
    assert_true(fake_engine_info(g->fe, used, &info));
    assert_false(info.warm);
    assert_true(info.memory == (g->cfg.memory_mb * 2) << 20);
    req = request(PY, "smaller", 64);
    run_ok(g, &req, "big\n");
    container_of(g, "smaller", used);
    assert_true(fake_engine_info(g->fe, used, &info));
    assert_false(info.warm);
    assert_true(info.memory == 64LL << 20);
    struct exec_pool_stats st = stats(g, PY);
    assert_true(st.hits == 0 && st.misses == 0);
    assert_int_equal(st.ready, 1);
    rig_close(g);
    assert_all_gone(g);
}

/* ---- health ---------------------------------------------------------------- */

/* A waiting container killed from outside is replaced and never runs a
 * program; the run goes to a healthy one. */
static void test_killed_waiting_replaced(void **state)
{
    struct rig *g = *state;
    struct fake_program p = {.out = "ok\n", .out_len = 3};
    fake_engine_set_program(g->fe, &p);
    rig_open(g);
    wait_ready(g, PY, 1);
    char killed[FAKE_ID_MAX + 1];
    struct fake_container_info info;
    /* The newest warm one may be the JavaScript pool's: find Python's. */
    int n = fake_engine_count(g->fe, FAKE_OP_CREATE, NULL);
    killed[0] = '\0';
    for (int i = 1; i <= n; i++) {
        char id[FAKE_ID_MAX + 1];
        nth_id((unsigned long)i, id);
        if (fake_engine_info(g->fe, id, &info) && info.warm && info.running &&
            strcmp(info.image, PY->image) == 0)
            memcpy(killed, id, sizeof(killed));
    }
    assert_true(killed[0] != '\0');
    struct err err = ERR_INIT;
    if (backend_kill(g->backend, killed, &err) < 0)
        fail_msg("kill: %s", err_msg(&err));
    /* The watcher sees it die, removes it and the fillers make another. */
    assert_true(fake_engine_wait_removed(g->fe, killed, GUARD));
    wait_ready(g, PY, 1);
    assert_true(stats(g, PY).replaced >= 1);

    struct run req = request(PY, "after kill", g->cfg.memory_mb);
    run_ok(g, &req, "ok\n");
    char used[FAKE_ID_MAX + 1];
    container_of(g, "after kill", used);
    assert_string_not_equal(used, killed);
    assert_true(fake_engine_info(g->fe, killed, &info));
    assert_false(info.code_received);
    rig_close(g);
    assert_all_gone(g);
}

/* Killed just before a run takes it: whoever notices first (the watcher or
 * the take), the run never gets the dead one. */
static void test_killed_just_before_take(void **state)
{
    struct rig *g = *state;
    g->cfg.pool_size = 2;
    struct fake_program p = {.out = "ok\n", .out_len = 3};
    fake_engine_set_program(g->fe, &p);
    rig_open(g);
    wait_ready(g, PY, 2);
    char victims[2][FAKE_ID_MAX + 1];
    size_t nv = 0;
    int n = fake_engine_count(g->fe, FAKE_OP_CREATE, NULL);
    for (int i = 1; i <= n && nv < 2; i++) {
        struct fake_container_info info;
        nth_id((unsigned long)i, victims[nv]);
        if (fake_engine_info(g->fe, victims[nv], &info) && info.warm && info.running &&
            strcmp(info.image, PY->image) == 0)
            nv++;
    }
    assert_int_equal(nv, 2);
    struct err err = ERR_INIT;
    assert_int_equal(backend_kill(g->backend, victims[0], &err), 0);
    struct run req = request(PY, "racing", g->cfg.memory_mb);
    run_ok(g, &req, "ok\n");
    char used[FAKE_ID_MAX + 1];
    container_of(g, "racing", used);
    assert_string_not_equal(used, victims[0]);
    rig_close(g);
    assert_all_gone(g);
}

/* A pooled container that dies once it has the request but before its
 * runner said so: the code never ran there, so the run goes to another
 * container (here on demand, the pool being empty) and succeeds. */
static void test_dies_before_go_retried(void **state)
{
    struct rig *g = *state;
    struct fake_program dying = {.warm_dies = true};
    fake_engine_set_program(g->fe, &dying);
    rig_open(g);
    wait_ready(g, PY, 1);
    char doomed[FAKE_ID_MAX + 1];
    int n = fake_engine_count(g->fe, FAKE_OP_CREATE, NULL);
    doomed[0] = '\0';
    for (int i = 1; i <= n; i++) {
        char id[FAKE_ID_MAX + 1];
        struct fake_container_info info;
        nth_id((unsigned long)i, id);
        if (fake_engine_info(g->fe, id, &info) && info.warm && info.running &&
            strcmp(info.image, PY->image) == 0)
            memcpy(doomed, id, sizeof(doomed));
    }
    assert_true(doomed[0] != '\0');
    struct fake_program fine = {.out = "fine\n", .out_len = 5};
    fake_engine_set_program(g->fe, &fine);
    struct run req = request(PY, "once", g->cfg.memory_mb);
    run_ok(g, &req, "fine\n");
    struct fake_container_info info;
    assert_true(fake_engine_info(g->fe, doomed, &info));
    assert_true(info.code_received);
    assert_true(fake_engine_wait_removed(g->fe, doomed, GUARD));
    assert_true(stats(g, PY).replaced >= 1);
    rig_close(g);
    assert_all_gone(g);
}

/* Past the age limit a waiting container is replaced unused. */
static void test_max_age_recycles(void **state)
{
    struct rig *g = *state;
    g->cfg.pool_max_age_ms = 1000;
    rig_open(g);
    wait_ready(g, PY, 1);
    char first[FAKE_ID_MAX + 1];
    waiting_id(g, first);
    assert_true(fake_engine_wait_removed(g->fe, first, GUARD));
    struct fake_container_info info;
    assert_true(fake_engine_info(g->fe, first, &info));
    assert_false(info.code_received);
    wait_ready(g, PY, 1);
    assert_true(stats(g, PY).recycled >= 1);
    rig_close(g);
    assert_all_gone(g);
}

/* ---- a pool that cannot fill ------------------------------------------------ */

/* Fails every create of a warm runner (the pool's), serves the rest. */
static bool fail_warm_creates(struct fake_engine *fe, int fd, const struct fake_request *req,
                              void *ctx)
{
    (void)fe;
    atomic_int *failed = ctx;
    if (req->op != FAKE_OP_CREATE || !strstr(req->body, "numpy"))
        return false;
    atomic_fetch_add(failed, 1);
    fake_engine_respond(fd, 500, "{\"message\":\"fake engine: no warm runners today\"}");
    return true;
}

static void test_cannot_fill_runs_on_demand(void **state)
{
    struct rig *g = *state;
    atomic_int failed = 0;
    fake_engine_set_hook(g->fe, fail_warm_creates, &failed);
    struct fake_program p = {.out = "cold\n", .out_len = 5};
    fake_engine_set_program(g->fe, &p);
    rig_open(g);
    for (int i = 0; i < GUARD / 5 && stats(g, PY).failed == 0; i++)
        usleep(5000);
    struct exec_pool_stats st = stats(g, PY);
    assert_true(st.failed >= 1);
    assert_non_null(strstr(st.last_error, "no warm runners today"));
    assert_int_equal(st.ready, 0);

    struct run req = request(PY, "cold run", g->cfg.memory_mb);
    run_ok(g, &req, "cold\n");
    char used[FAKE_ID_MAX + 1];
    container_of(g, "cold run", used);
    struct fake_container_info info;
    assert_true(fake_engine_info(g->fe, used, &info));
    assert_false(info.warm);
    assert_true(stats(g, PY).misses == 1);
    rig_close(g);
    fake_engine_set_hook(g->fe, NULL, NULL);
    assert_all_gone(g);
}

/* A run that found the pool empty puts it under pressure: refills skip the
 * preloads for a while (here only those could succeed: the fake fails
 * every create that asks for numpy). */
static void test_pressure_refills_lean(void **state)
{
    struct rig *g = *state;
    atomic_int failed = 0;
    fake_engine_set_hook(g->fe, fail_warm_creates, &failed);
    rig_open(g);
    for (int i = 0; i < GUARD / 5 && stats(g, PY).failed == 0; i++)
        usleep(5000);
    struct run req = request(PY, "missed", g->cfg.memory_mb);
    run_ok(g, &req, "");
    assert_true(stats(g, PY).misses == 1);
    wait_ready(g, PY, 1);
    assert_true(stats(g, PY).lean >= 1);
    char id[FAKE_ID_MAX + 1];
    int n = fake_engine_count(g->fe, FAKE_OP_CREATE, NULL);
    bool seen = false;
    for (int i = 1; i <= n; i++) {
        struct fake_container_info info;
        nth_id((unsigned long)i, id);
        if (fake_engine_info(g->fe, id, &info) && info.warm && info.running &&
            strcmp(info.image, PY->image) == 0) {
            assert_string_equal(info.preload, "");
            seen = true;
        }
    }
    assert_true(seen);
    rig_close(g);
    fake_engine_set_hook(g->fe, NULL, NULL);
    assert_all_gone(g);
}

/* ---- refills and the run that took a container ------------------------------- */

struct bg_run {
    struct rig *g;
    struct run req;
    struct exec_cancel *cancel;
    struct exec_result res;
    int rc;
    pthread_t th;
};

static void *bg_main(void *arg)
{
    struct bg_run *b = arg;
    struct err err = ERR_INIT;
    b->req.cancel = b->cancel;
    b->rc = exec_run(b->g->exec, &b->req, &b->res, &err);
    err_clear(&err);
    return NULL;
}

/* Starts a Python run of code in the background; returns once its program
 * has the code (hang guard). */
static void bg_start(struct rig *g, struct bg_run *b, const char *code)
{
    *b = (struct bg_run){.g = g, .req = request(PY, code, g->cfg.memory_mb)};
    b->cancel = exec_cancel_new();
    exec_result_init(&b->res);
    assert_int_equal(pthread_create(&b->th, NULL, bg_main, b), 0);
    char id[FAKE_ID_MAX + 1];
    for (int i = 0; i < GUARD / 5; i++) {
        if (count_ran(g, code, id) > 0)
            return;
        usleep(5000);
    }
    exec_cancel(b->cancel);
    pthread_join(b->th, NULL);
    fail_msg("the run of \"%s\" never reached its program", code);
}

static void bg_stop(struct bg_run *b)
{
    exec_cancel(b->cancel);
    pthread_join(b->th, NULL);
    assert_int_equal(b->rc, 0);
    assert_int_equal(b->res.status, EXEC_CANCELLED);
    exec_result_free(&b->res);
    exec_cancel_free(b->cancel);
}

/* Opens the rig with this refill delay and programs that run until
 * cancelled, once the Python pool is full. */
static void open_endless(struct rig *g, long long refill_delay_ms)
{
    g->cfg.pool_refill_delay_ms = refill_delay_ms;
    struct fake_program p = {.run_ms = FAKE_RUN_FOREVER};
    fake_engine_set_program(g->fe, &p);
    rig_open(g);
    wait_ready(g, PY, 1);
}

/* While a run that took the waiting container goes on, the pool does not
 * set up the next one (within --pool-refill-delay-ms, here an hour); it
 * does as soon as the run ends. The wait below can only hide a fault on a
 * slow machine, never invent one. */
static void test_refill_waits_for_run(void **state)
{
    struct rig *g = *state;
    open_endless(g, 3600 * 1000);
    wait_ready(g, JS, 1);
    int creates = fake_engine_count(g->fe, FAKE_OP_CREATE, NULL);
    struct bg_run b;
    bg_start(g, &b, "while True: pass");
    usleep(300 * 1000);
    int during = fake_engine_count(g->fe, FAKE_OP_CREATE, NULL);
    size_t ready = stats(g, PY).ready;
    bg_stop(&b); /* before any assert: the run must end either way */
    assert_int_equal(during, creates);
    assert_int_equal(ready, 0);
    wait_ready(g, PY, 1);
    assert_true(stats(g, PY).hits == 1);
    rig_close(g);
    assert_all_gone(g);
}

/* With a refill delay of 0 the pool refills while the run goes on. */
static void test_refill_at_once(void **state)
{
    struct rig *g = *state;
    open_endless(g, 0);
    struct bg_run b;
    bg_start(g, &b, "while True: pass");
    bool refilled = reached_ready(g, PY, 1);
    bg_stop(&b);
    assert_true(refilled);
    rig_close(g);
    assert_all_gone(g);
}

/* A run that finds the pool empty ends the wait: demand outruns the pool,
 * so it refills while the first run still goes on. */
static void test_miss_ends_refill_wait(void **state)
{
    struct rig *g = *state;
    open_endless(g, 3600 * 1000);
    struct bg_run first, second;
    bg_start(g, &first, "first");
    bg_start(g, &second, "second");
    unsigned long long misses = stats(g, PY).misses;
    bool refilled = reached_ready(g, PY, 1);
    bg_stop(&second);
    bg_stop(&first);
    assert_true(misses == 1);
    assert_true(refilled);
    rig_close(g);
    assert_all_gone(g);
}

/* ---- start and stop ---------------------------------------------------------- */

/* Filling waits for the start-up sweep: the first create comes after the
 * engine was asked for the list of containers. */
static bool creates_after_list(struct fake_engine *fe, int fd, const struct fake_request *req,
                               void *ctx)
{
    (void)fd;
    atomic_int *early = ctx;
    if (req->op == FAKE_OP_CREATE && fake_engine_count(fe, FAKE_OP_LIST, NULL) == 0)
        atomic_fetch_add(early, 1);
    return false;
}

static void test_sweep_before_fill(void **state)
{
    struct rig *g = *state;
    atomic_int early = 0;
    fake_engine_set_hook(g->fe, creates_after_list, &early);
    rig_open(g);
    wait_ready(g, PY, 1);
    assert_int_equal(atomic_load(&early), 0);
    rig_close(g);
    fake_engine_set_hook(g->fe, NULL, NULL);
    assert_all_gone(g);
}

/* Shutdown removes every waiting container, and those being made. */
static void test_shutdown_removes_waiting(void **state)
{
    struct rig *g = *state;
    g->cfg.pool_size = 3;
    rig_open(g);
    wait_ready(g, PY, 3);
    rig_close(g);
    assert_all_gone(g);
}

/* ---- concurrency ------------------------------------------------------------ */

#define STRESS_THREADS 8
#define STRESS_RUNS    6

struct stress {
    struct rig *g;
    int index;
    atomic_int failures;
    atomic_bool stop;
};

static void *stress_runner(void *arg)
{
    struct stress *st = arg;
    struct rig *g = st->g;
    for (int i = 0; i < STRESS_RUNS; i++) {
        char code[64];
        snprintf(code, sizeof(code), "stress %d %d", st->index, i);
        const struct langtable_lang *lang = (i + st->index) % 2 ? JS : PY;
        struct run req = request(lang, code, g->cfg.memory_mb);
        struct exec_result res;
        exec_result_init(&res);
        struct err err = ERR_INIT;
        if (exec_run(g->exec, &req, &res, &err) < 0 || res.status != EXEC_OK || res.out.len != 3 ||
            memcmp(res.out.data, "ok\n", 3) != 0) {
            /* Said here: the assertion below only counts. */
            fprintf(stderr, "stress run %d/%d: status %s, %zu bytes out: %s\n", st->index, i,
                    exec_status_name(res.status), res.out.len,
                    res.message ? res.message : err_msg(&err));
            atomic_fetch_add(&st->failures, 1);
        }
        err_clear(&err);
        exec_result_free(&res);
    }
    return NULL;
}

/* Kills waiting containers now and then, as an operator or the OOM killer
 * might, while runs take them. */
static void *stress_killer(void *arg)
{
    struct stress *st = arg;
    struct rig *g = st->g;
    while (!atomic_load(&st->stop)) {
        int n = fake_engine_count(g->fe, FAKE_OP_CREATE, NULL);
        for (int i = n; i >= 1 && i > n - 4; i--) {
            char id[FAKE_ID_MAX + 1];
            nth_id((unsigned long)i, id);
            /* Checked and killed in one step: a kill that lands after a
             * run took the sandbox and sent its code would fail that run
             * (exit 137, no record), which no daemon can avoid. */
            if (fake_engine_kill_waiting(g->fe, id))
                break;
        }
        usleep(20000);
    }
    return NULL;
}

/* Many runs at once take, refill and replace through one pool while
 * waiting containers get killed: every run succeeds, nothing is left.
 * Under TSan and ASan this is the pool's race and leak check. */
static void test_concurrent_runs_and_kills(void **state)
{
    struct rig *g = *state;
    g->cfg.pool_size = 2;
    struct fake_program p = {.out = "ok\n", .out_len = 3};
    fake_engine_set_program(g->fe, &p);
    rig_open(g);
    struct stress st[STRESS_THREADS];
    struct stress killer = {.g = g};
    pthread_t th[STRESS_THREADS], kth;
    assert_int_equal(pthread_create(&kth, NULL, stress_killer, &killer), 0);
    for (int i = 0; i < STRESS_THREADS; i++) {
        st[i] = (struct stress){.g = g, .index = i};
        assert_int_equal(pthread_create(&th[i], NULL, stress_runner, &st[i]), 0);
    }
    int failures = 0;
    for (int i = 0; i < STRESS_THREADS; i++) {
        pthread_join(th[i], NULL);
        failures += atomic_load(&st[i].failures);
    }
    atomic_store(&killer.stop, true);
    pthread_join(kth, NULL);
    assert_int_equal(failures, 0);
    struct exec_pool_stats py = stats(g, PY), js = stats(g, JS);
    assert_true(py.hits + py.misses + js.hits + js.misses >= STRESS_THREADS * STRESS_RUNS);
    rig_close(g);
    assert_all_gone(g);
}

struct held_run {
    struct rig *g;
    struct run req;
    struct exec_cancel *cancel;
    pthread_t th;
};

static void *held_run_main(void *arg)
{
    struct held_run *h = arg;
    struct exec_result res;
    exec_result_init(&res);
    h->req.cancel = h->cancel;
    exec_run(h->g->exec, &h->req, &res, NULL);
    exec_result_free(&res);
    return NULL;
}

/* The users of the containers alive now: each a uid of the range all its
 * own, its gid the same number. Returns how many there are. */
static size_t distinct_users(struct rig *g)
{
    enum { MAX_LIVE = 64 };
    unsigned long seen[MAX_LIVE];
    size_t k = 0;
    unsigned long first = (unsigned long)g->cfg.sandbox_uid_base;
    unsigned long last = first + (unsigned long)g->cfg.sandbox_uid_count - 1;
    int n = fake_engine_count(g->fe, FAKE_OP_CREATE, NULL);
    for (int i = 1; i <= n; i++) {
        char id[FAKE_ID_MAX + 1];
        struct fake_container_info info;
        nth_id((unsigned long)i, id);
        if (!fake_engine_info(g->fe, id, &info) || info.removed)
            continue;
        unsigned long uid = 0, gid = 0;
        if (sscanf(info.user, "%lu:%lu", &uid, &gid) != 2)
            fail_msg("container %.12s: User '%s'", id, info.user);
        assert_int_equal(uid, gid);
        assert_in_range(uid, first, last);
        for (size_t j = 0; j < k; j++)
            if (seen[j] == uid)
                fail_msg("two live sandboxes run as uid %lu", uid);
        assert_true(k < MAX_LIVE);
        seen[k++] = uid;
    }
    return k;
}

/* Every sandbox alive at once, waiting in a pool or running pooled or on
 * demand, runs as a uid of its own (sandbox/pool/uids.h), so nproc counts each
 * apart; with the sockets, the socket went to that uid. */
static void test_sandbox_users(void **state)
{
    struct rig *g = *state;
    if (g->cfg.sandbox_uid_count == 0)
        skip(); /* not root: the sockets cannot be given to other uids */
    g->cfg.pool_size = 2;
    struct fake_program p = {.run_ms = FAKE_RUN_FOREVER};
    fake_engine_set_program(g->fe, &p);
    rig_open(g);
    wait_ready(g, PY, 2);
    wait_ready(g, JS, 2);
    assert_int_equal(distinct_users(g), 4);
    /* Two pooled runs and one on demand (other limits), all at once. */
    struct held_run h[3];
    const char *codes[3] = {"held 0", "held 1", "held 2"};
    for (int i = 0; i < 3; i++) {
        h[i] = (struct held_run){.g = g, .cancel = exec_cancel_new()};
        h[i].req =
            request(i == 1 ? JS : PY, codes[i], i == 2 ? g->cfg.memory_mb * 2 : g->cfg.memory_mb);
        assert_int_equal(pthread_create(&h[i].th, NULL, held_run_main, &h[i]), 0);
    }
    bool all_running = false;
    for (int t = 0; t < GUARD / 5 && !all_running; t++) {
        char id[FAKE_ID_MAX + 1];
        all_running = count_ran(g, codes[0], id) == 1 && count_ran(g, codes[1], id) == 1 &&
                      count_ran(g, codes[2], id) == 1;
        if (!all_running)
            usleep(5000);
    }
    size_t live = all_running ? distinct_users(g) : 0;
    for (int i = 0; i < 3; i++) {
        exec_cancel(h[i].cancel);
        pthread_join(h[i].th, NULL);
        exec_cancel_free(h[i].cancel);
    }
    assert_true(all_running);
    assert_true(live >= 3);
    rig_close(g);
    assert_all_gone(g);
}

/* --pool-size 0: no pool, every run on demand. */
static void test_size_zero(void **state)
{
    struct rig *g = *state;
    g->cfg.pool_size = 0;
    struct fake_program p = {.out = "x\n", .out_len = 2};
    fake_engine_set_program(g->fe, &p);
    rig_open(g);
    struct exec_pool_stats st;
    assert_false(exec_pool_stats(g->exec, PY, &st));
    struct run req = request(JS, "console.log('x')", g->cfg.memory_mb);
    run_ok(g, &req, "x\n");
    assert_int_equal(fake_engine_count(g->fe, FAKE_OP_CREATE, NULL), 1);
    char used[FAKE_ID_MAX + 1];
    container_of(g, "console.log('x')", used);
    struct fake_container_info info;
    assert_true(fake_engine_info(g->fe, used, &info));
    assert_false(info.warm);
    rig_close(g);
    assert_all_gone(g);
}

/* Sizes per language (the table's pool_size, --pool-size not given): only
 * python keeps a pool here, so javascript's runs go on demand and no warm
 * javascript sandbox is ever made. */
static void test_per_language_sizes(void **state)
{
    struct rig *g = *state;
    g->cfg.pool_size = -1;
    g->languages_text = "{\"languages\": [{\"name\": \"python\", \"pool_size\": 1},\n"
                        "  {\"name\": \"javascript\", \"pool_size\": 0}]}";
    struct fake_program p = {.out = "x\n", .out_len = 2};
    fake_engine_set_program(g->fe, &p);
    rig_open(g);
    assert_int_equal(PY->pool_size, 1);
    assert_int_equal(JS->pool_size, 0);
    wait_ready(g, PY, 1);
    struct exec_pool_stats st;
    /* The daemon keeps a pool (python's); javascript's is empty. */
    assert_true(exec_pool_stats(g->exec, JS, &st));
    assert_int_equal(st.size, 0);
    assert_int_equal(st.ready, 0);
    assert_int_equal(stats(g, PY).size, 1);

    struct run js = request(JS, "console.log('x')", g->cfg.memory_mb);
    run_ok(g, &js, "x\n");
    char used[FAKE_ID_MAX + 1];
    container_of(g, "console.log('x')", used);
    struct fake_container_info info;
    assert_true(fake_engine_info(g->fe, used, &info));
    assert_false(info.warm);
    assert_string_equal(info.image, JS->image);
    assert_int_equal(fake_engine_count(g->fe, FAKE_OP_START, used), 1);
    st = stats(g, JS);
    assert_true(st.hits == 0);

    struct run py = request(PY, "print('x')", g->cfg.memory_mb);
    run_ok(g, &py, "x\n");
    container_of(g, "print('x')", used);
    assert_true(fake_engine_info(g->fe, used, &info));
    assert_true(info.warm);
    assert_true(stats(g, PY).hits == 1);

    /* Every warm sandbox ever made was python's. */
    wait_ready(g, PY, 1);
    int n = fake_engine_count(g->fe, FAKE_OP_CREATE, NULL);
    for (int i = 1; i <= n; i++) {
        char id[FAKE_ID_MAX + 1];
        nth_id((unsigned long)i, id);
        if (fake_engine_info(g->fe, id, &info) && info.warm)
            assert_string_equal(info.image, PY->image);
    }
    rig_close(g);
    assert_all_gone(g);
}

/* The argv after a generic warm runner's "warm" in its Cmd (JSON text):
 * that of the newest such container, once one is ready. */
static void generic_warm_args(struct rig *g, const struct langtable_lang *lang, char *out, size_t n)
{
    wait_ready(g, lang, 1);
    int created = fake_engine_count(g->fe, FAKE_OP_CREATE, NULL);
    for (int i = created; i >= 1; i--) {
        char id[FAKE_ID_MAX + 1];
        struct fake_container_info info;
        nth_id((unsigned long)i, id);
        if (fake_engine_info(g->fe, id, &info) && info.warm && strcmp(info.preload, "warm") == 0) {
            assert_true(strlen(info.warm_args) < n);
            memcpy(out, info.warm_args, strlen(info.warm_args) + 1);
            return;
        }
    }
    fail_msg("no warm %s sandbox was made", lang->name);
}

/* A warm TypeScript sandbox keeps the daemon's checker ready: node running
 * runner_tscheck_src with the typecheck's options (not "tsc", not the
 * source file); without typecheck_warm the warm runner starts none. */
static void test_typescript_warm_checker(void **state)
{
    struct rig *g = *state;
    g->cfg.languages.items = xrealloc(g->cfg.languages.items, 4 * sizeof(char *));
    g->cfg.languages.items[2] = xstrdup("typescript");
    g->cfg.languages.items[3] = NULL;
    g->cfg.languages.n = 3;
    rig_open(g);
    const struct langtable_lang *ts = test_lang(g->langs, "typescript");
    char args[8192];
    generic_warm_args(g, ts, args, sizeof(args));
    json_object *a = json_tokener_parse(args);
    assert_non_null(a);
    size_t n = json_object_array_length(a);
    assert_int_equal(n, 4 + ts->typecheck.n - 2);
    assert_string_equal(json_object_get_string(json_object_array_get_idx(a, 0)), "node");
    assert_string_equal(json_object_get_string(json_object_array_get_idx(a, 1)), "-e");
    assert_string_equal(json_object_get_string(json_object_array_get_idx(a, 2)),
                        runner_tscheck_src);
    assert_string_equal(json_object_get_string(json_object_array_get_idx(a, 3)), "--");
    for (size_t i = 4, k = 1; i < n; i++, k++) {
        if (strcmp(ts->typecheck.v[k], ts->source_file) == 0)
            k++;
        assert_string_equal(json_object_get_string(json_object_array_get_idx(a, i)),
                            ts->typecheck.v[k]);
    }
    json_object_put(a);
    rig_close(g);
    assert_all_gone(g);

    g->languages_text = "{\"languages\": [{\"name\": \"typescript\", \"typecheck_warm\": null}]}";
    rig_open(g);
    generic_warm_args(g, test_lang(g->langs, "typescript"), args, sizeof(args));
    assert_string_equal(args, "[]");
    rig_close(g);
    assert_all_gone(g);
}

/* --pool-size, when given, is every language's, over the table's. */
static void test_pool_size_option_wins(void **state)
{
    struct rig *g = *state;
    g->cfg.pool_size = 2;
    g->languages_text = "{\"languages\": [{\"name\": \"javascript\", \"pool_size\": 0}]}";
    rig_open(g);
    assert_int_equal(JS->pool_size, 2);
    wait_ready(g, PY, 2);
    wait_ready(g, JS, 2);
    assert_int_equal(stats(g, JS).size, 2);
    rig_close(g);
    assert_all_gone(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_warm_run_single_use, setup, teardown),
        cmocka_unit_test_setup_teardown(test_warm_run_single_use, setup_attach, teardown),
        cmocka_unit_test_setup_teardown(test_preload_argument, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_limits_on_demand, setup, teardown),
        cmocka_unit_test_setup_teardown(test_killed_waiting_replaced, setup, teardown),
        cmocka_unit_test_setup_teardown(test_killed_waiting_replaced, setup_attach, teardown),
        cmocka_unit_test_setup_teardown(test_killed_just_before_take, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dies_before_go_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dies_before_go_retried, setup_attach, teardown),
        cmocka_unit_test_setup_teardown(test_max_age_recycles, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cannot_fill_runs_on_demand, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pressure_refills_lean, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refill_waits_for_run, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refill_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_miss_ends_refill_wait, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sweep_before_fill, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shutdown_removes_waiting, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_runs_and_kills, setup, teardown),
        cmocka_unit_test_setup_teardown(test_size_zero, setup, teardown),
        cmocka_unit_test_setup_teardown(test_per_language_sizes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_typescript_warm_checker, setup, teardown),
        cmocka_unit_test_setup_teardown(test_per_language_sizes, setup_attach, teardown),
        cmocka_unit_test_setup_teardown(test_pool_size_option_wins, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sandbox_users, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sandbox_users, setup_attach, teardown),
    };
    return cmocka_run_group_tests(tests, rig_group_setup, rig_group_teardown);
}
