/* exec.c end to end against the fake Engine API (tests/fake_engine): one
 * run per test, through create, the sandbox's streams (the daemon's socket
 * unless a test says attach), start, the runner protocol on them, wait and
 * the removal, with the program's behaviour and
 * the engine's faults scripted. Every run must leave no container behind.
 * Nothing waits on a sleep: the fake's conditions are the handshakes, their
 * timeouts only hang guards. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <dirent.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "backend/docker/docker.h"
#include "backend/docker/engine.h"
#include "fake_engine/fake_engine.h"
#include "sandbox/run/exec.h"
#include "sandbox/run/policy.h"
#include "unit/langs.h"
#include "unit/rig.h"

#define GUARD FAKE_HANG_GUARD_MS

static const char PODMAN_VERSION[] =
    "{\"Components\":[{\"Name\":\"Podman Engine\",\"Version\":\"4.3.1\"}],\"Version\":\"4.3.1\"}";

struct rig {
    struct fake_engine *fe;
    struct config cfg;
    struct backend *backend;
    struct langtable *langs; /* the built-in table, configured by cfg at setup */
    struct exec_ctx *exec;
    char io_dir[64]; /* --sandbox-io-dir: empty again after every test */
};

/* The running test's languages (of its rig's table). */
static const struct langtable_lang *PY, *JS;

/* The Docker backend on the fake engine, with the rig's --sandbox-io
 * options. */
static struct backend *rig_backend(const struct rig *g)
{
    struct docker_options opts = {.sandbox_io = g->cfg.sandbox_io,
                                  .sandbox_io_dir = g->cfg.sandbox_io_dir};
    return docker_backend_new(fake_engine_socket(g->fe), NULL, &opts);
}

/* The one place exec meets the fake engine, through the Docker backend.
 * probe asks the engine's kind first, as main() does at start; without it
 * the engine's kind is unknown. */
static void rig_open(struct rig *g, bool probe)
{
    struct err err = ERR_INIT;
    g->backend = rig_backend(g);
    if (probe) {
        char *name = NULL, *version = NULL;
        if (backend_version(g->backend, &name, &version, &err) < 0)
            fail_msg("backend_version: %s", err_msg(&err));
        free(name);
        free(version);
    }
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
    g->cfg.pool_size = 0; /* the pool has tests of its own */
    g->langs = test_langs(&g->cfg);
    PY = test_lang(g->langs, "python");
    JS = test_lang(g->langs, "javascript");
    snprintf(g->io_dir, sizeof(g->io_dir), "/tmp/exec_io.XXXXXX");
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

/* Entries in dir besides . and .. */
static int dir_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    for (const struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

/* The table again, configured by the rig's options as they are now. */
static void reconfigure(struct rig *g)
{
    langtable_free(g->langs);
    g->langs = test_langs(&g->cfg);
    PY = test_lang(g->langs, "python");
    JS = test_lang(g->langs, "javascript");
}

static void use_attach(struct rig *g)
{
    free(g->cfg.sandbox_io);
    g->cfg.sandbox_io = xstrdup("attach");
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
    int left = dir_entries(g->io_dir);
    rmdir(g->io_dir);
    free(g);
    if (left != 0)
        fail_msg("%d entries left in the sandbox I/O directory", left);
    return 0;
}

/* Live output as the callback saw it (called on the running thread). */
struct live {
    struct buf out, err;
    int ticks;
};

static void on_output(void *ctx, int stream, const char *data, size_t len)
{
    struct live *l = ctx;
    if (stream == EXEC_TICK) {
        l->ticks++;
        return;
    }
    size_t added = buf_add_upto(stream == EXEC_STDERR ? &l->err : &l->out, data, len);
    (void)added;
}

static struct run request(const char *code)
{
    return (struct run){
        .language = PY,
        .code = code,
        .code_len = strlen(code),
        .timeout_ms = 30000,
        .memory_mb = 128,
    };
}

static void assert_contains(const char *hay, const char *needle)
{
    if (!hay || !strstr(hay, needle))
        fail_msg("\"%s\" does not contain \"%s\"", hay ? hay : "(null)", needle);
}

/* The run's container: the last one created. */
static void last_container(struct rig *g, char id[FAKE_ID_MAX + 1])
{
    if (!fake_engine_last_id(g->fe, id, FAKE_ID_MAX + 1))
        fail_msg("no container was created");
}

/* The run's container was removed: the daemon asked, and it is gone. */
static void assert_removed(struct rig *g, const char *id)
{
    if (!fake_engine_wait_removed(g->fe, id, GUARD))
        fail_msg("container %.12s was not removed (%d DELETE requests)", id,
                 fake_engine_count(g->fe, FAKE_OP_DELETE, id));
    assert_int_equal(fake_engine_live(g->fe), 0);
}

/* The last container the run created was removed. */
static void assert_last_removed(struct rig *g)
{
    char id[FAKE_ID_MAX + 1];
    last_container(g, id);
    assert_removed(g, id);
}

/* ---- a normal run -------------------------------------------------------- */

static void run_ok(struct rig *g, bool socket)
{
    struct fake_program p = {
        .out = "hello\n", .out_len = 6, .err = "warn\n", .err_len = 5, .exit_code = 3};
    fake_engine_set_program(g->fe, &p);
    rig_open(g, false);

    struct live live = {.ticks = 0};
    buf_init(&live.out, 1 << 16);
    buf_init(&live.err, 1 << 16);
    struct run req = request("print('hello')");
    req.stdin_data = "some input";
    req.stdin_len = 10;
    req.on_output = on_output;
    req.on_output_ctx = &live;
    struct exec_result res;
    exec_result_init(&res);
    struct err err = ERR_INIT;
    if (exec_run(g->exec, &req, &res, &err) < 0)
        fail_msg("exec_run: %s", err_msg(&err));
    assert_int_equal(res.status, EXEC_OK);
    assert_true(res.has_exit_code);
    assert_int_equal(res.exit_code, 3);
    assert_string_equal(buf_cstr(&res.out), "hello\n");
    assert_string_equal(buf_cstr(&res.err), "warn\n");
    assert_false(res.truncated);
    assert_null(res.message);
    assert_true(res.duration_ms >= 0);
    /* Live output is the same bytes; the record is in neither. */
    assert_string_equal(buf_cstr(&live.out), "hello\n");
    assert_string_equal(buf_cstr(&live.err), "warn\n");

    char id[FAKE_ID_MAX + 1];
    last_container(g, id);
    struct fake_container_info info;
    assert_true(fake_engine_info(g->fe, id, &info));
    assert_true(info.code_received);
    assert_string_equal(info.code, "print('hello')");
    assert_string_equal(info.stdin_data, "some input");
    assert_string_equal(info.image, PY->image);
    assert_string_equal(info.image, "mcp-sandboxd-python:latest");
    struct fake_request create;
    assert_true(fake_engine_last(g->fe, FAKE_OP_CREATE, &create));
    assert_contains(create.body, "\"" ENGINE_LABEL_MANAGED "\":\"1\"");
    assert_contains(create.body, "\"NetworkMode\":\"none\"");
    if (socket) {
        /* Its streams are the socket's: the connector runs the runner. */
        assert_int_equal(fake_engine_count(g->fe, FAKE_OP_ATTACH, id), 0);
        assert_contains(create.body, "\"Binds\":[\"");
        /* (json-c writes "/" as "\/") */
        assert_contains(create.body, ":\\/run\\/mcpsbx-io:ro\"]");
        assert_contains(create.body, "\"Cmd\":[\"perl\",\"-e\",\"");
        assert_contains(create.body, "\\/run\\/mcpsbx-io\\/io.sock\",\"python3\"");
        assert_contains(create.body, "\"OpenStdin\":false");
    } else {
        /* Attached before it started, so no output can be lost. */
        assert_int_equal(fake_engine_count(g->fe, FAKE_OP_ATTACH, id), 1);
        assert_null(strstr(create.body, "Binds"));
        assert_contains(create.body, "\"Cmd\":[\"python3\"");
    }
    assert_int_equal(fake_engine_count(g->fe, FAKE_OP_START, id), 1);
    /* The record ended the run: the engine was not asked for the exit. */
    assert_int_equal(fake_engine_count(g->fe, FAKE_OP_WAIT, id), 0);
    assert_removed(g, id);

    /* JavaScript runs in its own image. */
    struct run js = request("console.log(1)");
    js.language = JS;
    if (exec_run(g->exec, &js, &res, &err) < 0)
        fail_msg("exec_run: %s", err_msg(&err));
    assert_int_equal(res.status, EXEC_OK);
    last_container(g, id);
    assert_true(fake_engine_info(g->fe, id, &info));
    assert_string_equal(info.image, JS->image);
    assert_string_equal(info.image, "mcp-sandboxd-node:latest");
    assert_removed(g, id);
    exec_result_free(&res);
    buf_free(&live.out);
    buf_free(&live.err);
}

static void test_ok(void **state)
{
    run_ok(*state, true);
}

static void test_ok_attached(void **state)
{
    struct rig *g = *state;
    use_attach(g);
    run_ok(g, false);
}

/* A sandbox that cannot connect to its socket (an image without perl)
 * never had the code: the run goes on in a sandbox that attaches, and so
 * do the image's later runs. */
static void test_socket_unreachable_falls_back(void **state)
{
    struct rig *g = *state;
    struct fake_program p = {.out = "1\n", .out_len = 2, .no_connect = true};
    fake_engine_set_program(g->fe, &p);
    rig_open(g, false);
    struct run req = request("print(1)");
    struct exec_result res;
    exec_result_init(&res);
    struct err err = ERR_INIT;
    for (int k = 0; k < 2; k++) {
        if (exec_run(g->exec, &req, &res, &err) < 0)
            fail_msg("exec_run: %s", err_msg(&err));
        assert_int_equal(res.status, EXEC_OK);
        assert_string_equal(buf_cstr(&res.out), "1\n");
        assert_last_removed(g);
    }
    /* One that could not connect, then two that attached. */
    assert_int_equal(fake_engine_count(g->fe, FAKE_OP_CREATE, NULL), 3);
    assert_int_equal(fake_engine_count(g->fe, FAKE_OP_ATTACH, NULL), 2);
    struct fake_request create;
    assert_true(fake_engine_last(g->fe, FAKE_OP_CREATE, &create));
    assert_null(strstr(create.body, "Binds"));
    exec_result_free(&res);
}

/* A sandbox's environment is the daemon's base and its language's own
 * (the table's environment): python's matplotlib settings are python's. */
static void test_language_environment(void **state)
{
    struct rig *g = *state;
    rig_open(g, false);
    const struct langtable_lang *langs[] = {PY, JS};
    for (size_t i = 0; i < 2; i++) {
        struct fake_program p = {.out = "1\n", .out_len = 2};
        fake_engine_set_program(g->fe, &p);
        struct run req = request("1");
        req.language = langs[i];
        struct exec_result res;
        exec_result_init(&res);
        assert_int_equal(exec_run(g->exec, &req, &res, NULL), 0);
        assert_int_equal(res.status, EXEC_OK);
        struct fake_request create;
        assert_true(fake_engine_last(g->fe, FAKE_OP_CREATE, &create));
        /* (json-c writes "/" as "\/") */
        assert_contains(create.body, "\"Env\":[\"HOME=\\/tmp\",\"TMPDIR=\\/tmp\",\"LANG=C.UTF-8\"");
        if (i == 0)
            assert_contains(create.body, "\"LANG=C.UTF-8\",\"PYTHONDONTWRITEBYTECODE=1\","
                                         "\"MPLBACKEND=Agg\",\"MPLCONFIGDIR=\\/tmp\\/.mpl\"]");
        else
            assert_contains(create.body, "\"LANG=C.UTF-8\"]");
        exec_result_free(&res);
    }
}

/* ---- time limit, cancel, output cap ---------------------------------------- */

static void test_timeout(void **state)
{
    struct rig *g = *state;
    struct fake_program p = {.out = "tick\n", .out_len = 5, .run_ms = FAKE_RUN_FOREVER};
    fake_engine_set_program(g->fe, &p);
    rig_open(g, false);
    struct run req = request("while True: pass");
    req.timeout_ms = 200;
    struct exec_result res;
    exec_result_init(&res);
    struct err err = ERR_INIT;
    assert_int_equal(exec_run(g->exec, &req, &res, &err), 0);
    assert_int_equal(res.status, EXEC_TIMEOUT);
    assert_false(res.has_exit_code);
    assert_contains(res.message, "200 ms (timeout)");
    assert_true(res.duration_ms >= 200);
    char id[FAKE_ID_MAX + 1];
    last_container(g, id);
    assert_removed(g, id);
    /* It never ends by itself: the removal (DELETE with force) killed it. */
    struct fake_container_info info;
    assert_true(fake_engine_info(g->fe, id, &info));
    assert_true(info.killed);
    struct fake_request del;
    assert_true(fake_engine_last(g->fe, FAKE_OP_DELETE, &del));
    assert_contains(del.target, "force=1");
    exec_result_free(&res);
}

struct bg_run {
    struct rig *g;
    struct run req;
    struct exec_cancel *cancel;
    struct exec_result res;
    struct err err;
    int rc;
    pthread_t th;
};

/* Runs exec_run off the test's thread; only the test's thread asserts. */
static void *bg_main(void *arg)
{
    struct bg_run *b = arg;
    b->req.cancel = b->cancel;
    b->rc = exec_run(b->g->exec, &b->req, &b->res, &b->err);
    return NULL;
}

static void test_cancel_mid_run(void **state)
{
    struct rig *g = *state;
    struct fake_program p = {.out = "working\n", .out_len = 8, .run_ms = FAKE_RUN_FOREVER};
    fake_engine_set_program(g->fe, &p);
    rig_open(g, false);
    struct bg_run b = {.g = g, .req = request("import time; time.sleep(60)"), .err = ERR_INIT};
    b.cancel = exec_cancel_new();
    exec_result_init(&b.res);
    assert_int_equal(pthread_create(&b.th, NULL, bg_main, &b), 0);
    char id[FAKE_ID_MAX + 1];
    bool running = fake_engine_wait_running(g->fe, id, sizeof(id), GUARD);
    exec_cancel(b.cancel); /* before any assert: the run must end either way */
    pthread_join(b.th, NULL);
    assert_true(running);
    assert_int_equal(b.rc, 0);
    assert_int_equal(b.res.status, EXEC_CANCELLED);
    assert_contains(b.res.message, "cancelled");
    assert_true(exec_cancelled(b.cancel));
    assert_removed(g, id);
    struct fake_container_info info;
    assert_true(fake_engine_info(g->fe, id, &info));
    assert_true(info.killed);
    exec_result_free(&b.res);
    exec_cancel_free(b.cancel);
}

/* Cancelled before it started: the container it made goes too, unstarted. */
static void test_cancel_before_run(void **state)
{
    struct rig *g = *state;
    rig_open(g, false);
    struct exec_cancel *c = exec_cancel_new();
    exec_cancel(c);
    struct run req = request("print(1)");
    struct exec_result res;
    exec_result_init(&res);
    struct err err = ERR_INIT;
    req.cancel = c;
    assert_int_equal(exec_run(g->exec, &req, &res, &err), 0);
    assert_int_equal(res.status, EXEC_CANCELLED);
    char id[FAKE_ID_MAX + 1];
    last_container(g, id);
    assert_int_equal(fake_engine_count(g->fe, FAKE_OP_START, NULL), 0);
    assert_removed(g, id);
    exec_result_free(&res);
    exec_cancel_free(c);
}

/* The cap counts stdout and stderr together; the program is stopped. */
static void test_output_limit(void **state)
{
    struct rig *g = *state;
    char out[600], err_text[600];
    memset(out, 'o', sizeof(out));
    memset(err_text, 'e', sizeof(err_text));
    struct fake_program p = {.out = out,
                             .out_len = sizeof(out),
                             .err = err_text,
                             .err_len = sizeof(err_text),
                             .run_ms = FAKE_RUN_FOREVER};
    fake_engine_set_program(g->fe, &p);
    g->cfg.max_output_bytes = 1000;
    rig_open(g, false);
    struct run req = request("print('o' * 600)");
    struct exec_result res;
    exec_result_init(&res);
    struct err err = ERR_INIT;
    assert_int_equal(exec_run(g->exec, &req, &res, &err), 0);
    assert_int_equal(res.status, EXEC_OUTPUT_LIMIT);
    assert_true(res.truncated);
    assert_int_equal(res.out.len, 600);
    assert_int_equal(res.err.len, 400);
    assert_contains(res.message, "1000-byte limit");
    char id[FAKE_ID_MAX + 1];
    last_container(g, id);
    assert_removed(g, id);
    struct fake_container_info info;
    assert_true(fake_engine_info(g->fe, id, &info));
    assert_true(info.killed);
    exec_result_free(&res);
}

/* ---- memory ------------------------------------------------------------------ */

/* Runs one request with the program given and returns the result's status
 * (res filled; the container checked removed). */
static enum exec_status run_program(struct rig *g, const struct fake_program *p, bool probe,
                                    struct exec_result *res)
{
    fake_engine_set_program(g->fe, p);
    if (!g->exec)
        rig_open(g, probe);
    struct run req = request("x = 'a' * 10**10");
    struct err err = ERR_INIT;
    int rc = exec_run(g->exec, &req, res, &err);
    assert_int_equal(rc, res->status == EXEC_ERROR ? -1 : 0);
    err_clear(&err);
    assert_last_removed(g);
    return res->status;
}

/* The runner saw MemoryError: its record says so. */
static void test_oom_memory_error(void **state)
{
    struct rig *g = *state;
    struct fake_program p = {.exit_code = 1, .memory_error = true};
    struct exec_result res;
    exec_result_init(&res);
    assert_int_equal(run_program(g, &p, false, &res), EXEC_OOM);
    assert_true(res.has_exit_code);
    assert_int_equal(res.exit_code, 1);
    assert_contains(res.message, "ran out of memory (limit 128 MiB)");
    exec_result_free(&res);
}

/* Killed by the kernel: no record, exit 137; Docker's OOMKilled is trusted. */
static void test_oom_killed_docker(void **state)
{
    struct rig *g = *state;
    struct fake_program oom = {.end = FAKE_END_EXIT, .exit_code = 137, .oom_killed = true};
    struct fake_program sigkill = {.end = FAKE_END_EXIT, .exit_code = 137};
    struct exec_result res;
    exec_result_init(&res);
    assert_int_equal(run_program(g, &oom, true, &res), EXEC_OOM);
    assert_int_equal(res.exit_code, 137);
    assert_contains(res.message, "more than 128 MiB");
    char id[FAKE_ID_MAX + 1];
    last_container(g, id);
    assert_int_equal(fake_engine_count(g->fe, FAKE_OP_WAIT, id), 1);
    assert_int_equal(fake_engine_count(g->fe, FAKE_OP_INSPECT, id), 1);
    /* A flag that comes after the exit (the runtime's OOM event late):
     * asked again, it counts. */
    struct fake_program late = oom;
    late.oom_flag_late = 2;
    assert_int_equal(run_program(g, &late, true, &res), EXEC_OOM);
    last_container(g, id);
    assert_int_equal(fake_engine_count(g->fe, FAKE_OP_INSPECT, id), 3);
    /* A SIGKILL Docker does not call an OOM kill, asked again, is just a
     * signal. */
    assert_int_equal(run_program(g, &sigkill, true, &res), EXEC_OK);
    assert_int_equal(res.exit_code, 137);
    assert_contains(res.message, "killed by signal 9");
    exec_result_free(&res);
}

/* Where OOMKilled cannot be trusted (Podman 4), exit 137 under a memory
 * limit counts as an OOM kill. (The kind is always known by then: the
 * first create asks for it, to hand over the seccomp profile.) */
static void test_oom_heuristic(void **state)
{
    struct rig *g = *state;
    struct fake_program p = {.end = FAKE_END_EXIT, .exit_code = 137};
    struct exec_result res;
    exec_result_init(&res);
    fake_engine_set_version(g->fe, PODMAN_VERSION);
    assert_int_equal(run_program(g, &p, true, &res), EXEC_OOM);
    assert_int_equal(res.exit_code, 137);
    /* Other exits without a record stay what they are. */
    struct fake_program crash = {.end = FAKE_END_EXIT, .exit_code = 139};
    assert_int_equal(run_program(g, &crash, true, &res), EXEC_OK);
    assert_int_equal(res.exit_code, 139);
    assert_contains(res.message, "signal 11");
    exec_result_free(&res);
}

/* ---- secrets ------------------------------------------------------------------- */

/* --pass-through-env values go in the run's request, never in the
 * container's configuration; where the program prints one (as it is, or
 * base64-encoded), the result and the live output say [REDACTED:NAME]. */
static void test_secrets(void **state)
{
    struct rig *g = *state;
    static const char secret[] = "tok-4f9a/secret+value";
    g->cfg.pass_through_env.items = xrealloc(g->cfg.pass_through_env.items, 3 * sizeof(char *));
    g->cfg.pass_through_env.items[0] = xstrdup("API_TOKEN");
    g->cfg.pass_through_env.items[1] = xstrdup("NOT_SET");
    g->cfg.pass_through_env.items[2] = NULL;
    g->cfg.pass_through_env.n = 2;
    char *envp[] = {"OTHER=x", "API_TOKEN=tok-4f9a/secret+value", NULL};
    /* Printed whole on stdout; split across two writes, base64 on stderr. */
    static const char out[] = "token: tok-4f9a/secret+value\n";
    static const char err_text[] = "dG9rLTRmOWEvc2VjcmV0K3ZhbHVl\n";
    struct fake_program p = {
        .out = out, .out_len = sizeof(out) - 1, .err = err_text, .err_len = sizeof(err_text) - 1};
    fake_engine_set_program(g->fe, &p);
    struct err err = ERR_INIT;
    g->backend = rig_backend(g);
    g->exec = exec_ctx_new(&g->cfg, g->langs, g->backend, envp, &err);
    assert_non_null(g->exec);

    struct live live = {.ticks = 0};
    buf_init(&live.out, 1 << 16);
    buf_init(&live.err, 1 << 16);
    struct run req = request("print(1)");
    req.on_output = on_output;
    req.on_output_ctx = &live;
    struct exec_result res;
    exec_result_init(&res);
    if (exec_run(g->exec, &req, &res, &err) < 0)
        fail_msg("exec_run: %s", err_msg(&err));
    assert_string_equal(buf_cstr(&res.out), "token: [REDACTED:API_TOKEN]\n");
    assert_string_equal(buf_cstr(&res.err), "[REDACTED:API_TOKEN]\n");
    assert_string_equal(buf_cstr(&live.out), "token: [REDACTED:API_TOKEN]\n");
    assert_string_equal(buf_cstr(&live.err), "[REDACTED:API_TOKEN]\n");

    char id[FAKE_ID_MAX + 1];
    last_container(g, id);
    struct fake_container_info info;
    assert_true(fake_engine_info(g->fe, id, &info));
    assert_non_null(strstr(info.config_env, "HOME="));
    assert_null(strstr(info.config_env, secret));
    assert_null(strstr(info.config_env, "API_TOKEN"));
    assert_string_equal(info.request_env, "{\"API_TOKEN\":\"tok-4f9a\\/secret+value\"}");
    struct fake_request create;
    assert_true(fake_engine_last(g->fe, FAKE_OP_CREATE, &create));
    assert_null(strstr(create.body, secret));
    assert_last_removed(g);
    buf_free(&live.out);
    buf_free(&live.err);
    exec_result_free(&res);
}

/* A program can write a completion record of its own (it runs in the
 * runner's process, where the nonce is): what the record says is data.
 * Its runner_error, carrying the secret, a newline that would forge a log
 * line and a terminal escape, comes back redacted and escaped; a secret
 * written half on stdout and half on stderr comes back whole in neither,
 * nor in the two put together, live or in the result. */
static void test_forged_record(void **state)
{
    struct rig *g = *state;
    g->cfg.pass_through_env.items = xrealloc(g->cfg.pass_through_env.items, 2 * sizeof(char *));
    g->cfg.pass_through_env.items[0] = xstrdup("API_TOKEN");
    g->cfg.pass_through_env.items[1] = NULL;
    g->cfg.pass_through_env.n = 1;
    char *envp[] = {"API_TOKEN=tok-4f9a/secret+value", NULL};
    struct fake_program p = {
        .out = "tok-4f9a/se",
        .out_len = 11,
        .err = "cret+value",
        .err_len = 10,
        .exit_code = 76,
        .runner_error = "leak tok-4f9a/secret+value\n2026-01-01T00:00:00.000Z mcp-sandboxd "
                        "error: forged\x1b[2J\xff",
    };
    fake_engine_set_program(g->fe, &p);
    struct err err = ERR_INIT;
    g->backend = rig_backend(g);
    g->exec = exec_ctx_new(&g->cfg, g->langs, g->backend, envp, &err);
    assert_non_null(g->exec);
    struct live live = {.ticks = 0};
    buf_init(&live.out, 1 << 16);
    buf_init(&live.err, 1 << 16);
    struct run req = request("print(1)");
    req.on_output = on_output;
    req.on_output_ctx = &live;
    struct exec_result res;
    exec_result_init(&res);
    assert_int_equal(exec_run(g->exec, &req, &res, &err), -1);
    assert_int_equal(res.status, EXEC_ERROR);
    assert_string_equal(res.message, err_msg(&err));
    assert_string_equal(res.message,
                        "the sandbox runner failed: leak [REDACTED:API_TOKEN]\\n2026-01-01T00:00:"
                        "00.000Z mcp-sandboxd error: forged\\x1b[2J\\xff");
    assert_string_equal(buf_cstr(&res.out), "[REDACTED:API_TOKEN]");
    assert_string_equal(buf_cstr(&res.err), "cret+value");
    assert_string_equal(buf_cstr(&live.out), "[REDACTED:API_TOKEN]");
    assert_string_equal(buf_cstr(&live.err), "cret+value");
    err_clear(&err);
    assert_last_removed(g);
    buf_free(&live.out);
    buf_free(&live.err);
    exec_result_free(&res);
}

/* ---- Podman ---------------------------------------------------------------- */

/* Podman's compatible API ignores a container's runtime: a run whose
 * language asks for one fails before any container exists, rather than
 * running under Podman's own; a language without one runs. */
static void test_runtime_on_podman(void **state)
{
    struct rig *g = *state;
    free(g->cfg.python_runtime);
    g->cfg.python_runtime = strdup("runsc");
    reconfigure(g);
    fake_engine_set_version(g->fe, PODMAN_VERSION);
    rig_open(g, false);
    struct run req = request("print(1)");
    struct exec_result res;
    exec_result_init(&res);
    struct err err = ERR_INIT;
    assert_int_equal(exec_run(g->exec, &req, &res, &err), -1);
    assert_int_equal(err.code, ERR_INVALID);
    assert_int_equal(res.status, EXEC_ERROR);
    assert_contains(res.message, "runtime 'runsc'");
    assert_contains(res.message, "Podman");
    assert_int_equal(fake_engine_count(g->fe, FAKE_OP_CREATE, NULL), 0);
    err_clear(&err);
    struct fake_program p = {.out = "1\n", .out_len = 2};
    fake_engine_set_program(g->fe, &p);
    req.language = JS;
    assert_int_equal(exec_run(g->exec, &req, &res, &err), 0);
    assert_int_equal(res.status, EXEC_OK);
    assert_int_equal(fake_engine_count(g->fe, FAKE_OP_CREATE, NULL), 1);
    exec_result_free(&res);
}

/* ---- the engine failing at each step ------------------------------------------ */

/* Runs print(1) against the fault already injected; returns exec_run's
 * value, the result in res. */
static int run_faulty(struct rig *g, struct exec_result *res, struct err *err)
{
    rig_open(g, false);
    struct run req = request("print(1)");
    exec_result_init(res);
    return exec_run(g->exec, &req, res, err);
}

static void test_create_fails(void **state)
{
    struct rig *g = *state;
    fake_engine_fault(g->fe, FAKE_OP_CREATE, 500, NULL, 1);
    struct exec_result res;
    struct err err = ERR_INIT;
    assert_int_equal(run_faulty(g, &res, &err), -1);
    assert_int_equal(err.code, ERR_ENGINE);
    assert_int_equal(res.status, EXEC_ERROR);
    assert_contains(res.message, "refused to create a container (HTTP 500)");
    assert_contains(res.message, "injected create failure");
    assert_contains(res.message, fake_engine_socket(g->fe));
    err_clear(&err);
    /* Nothing was made, so nothing is to remove. */
    assert_int_equal(fake_engine_live(g->fe), 0);
    assert_int_equal(fake_engine_count(g->fe, FAKE_OP_ATTACH, NULL), 0);
    assert_int_equal(fake_engine_count(g->fe, FAKE_OP_DELETE, NULL), 0);

    /* A missing image is named, with how to build it. */
    fake_engine_fault(g->fe, FAKE_OP_CREATE, 404, "{\"message\":\"No such image\"}", 1);
    struct run req = request("print(1)");
    assert_int_equal(exec_run(g->exec, &req, &res, &err), -1);
    assert_int_equal(err.code, ERR_NOT_FOUND);
    assert_contains(res.message, "mcp-sandboxd-python:latest");
    assert_contains(res.message, "make images");
    err_clear(&err);
    assert_int_equal(fake_engine_live(g->fe), 0);
    exec_result_free(&res);
}

static void test_attach_fails(void **state)
{
    struct rig *g = *state;
    use_attach(g);
    fake_engine_fault(g->fe, FAKE_OP_ATTACH, 500, NULL, 1);
    struct exec_result res;
    struct err err = ERR_INIT;
    assert_int_equal(run_faulty(g, &res, &err), -1);
    assert_int_equal(res.status, EXEC_ERROR);
    assert_contains(res.message, "attach");
    assert_contains(res.message, "HTTP 500");
    assert_contains(res.message, "injected attach failure");
    err_clear(&err);
    char id[FAKE_ID_MAX + 1];
    last_container(g, id);
    assert_int_equal(fake_engine_count(g->fe, FAKE_OP_START, NULL), 0);
    assert_removed(g, id);
    exec_result_free(&res);
}

static void test_start_fails(void **state)
{
    struct rig *g = *state;
    fake_engine_fault(g->fe, FAKE_OP_START, 500, NULL, 1);
    struct exec_result res;
    struct err err = ERR_INIT;
    assert_int_equal(run_faulty(g, &res, &err), -1);
    assert_int_equal(res.status, EXEC_ERROR);
    assert_contains(res.message, "refused to start container");
    assert_contains(res.message, "injected start failure");
    err_clear(&err);
    assert_last_removed(g);
    exec_result_free(&res);
}

/* The stream ended without a record and the engine cannot say how the
 * program exited: an error of the run, not a guessed status. */
static void test_wait_fails(void **state)
{
    struct rig *g = *state;
    struct fake_program p = {.out = "bye\n", .out_len = 4, .end = FAKE_END_EXIT, .exit_code = 1};
    fake_engine_set_program(g->fe, &p);
    fake_engine_fault(g->fe, FAKE_OP_WAIT, 500, NULL, 1);
    struct exec_result res;
    struct err err = ERR_INIT;
    assert_int_equal(run_faulty(g, &res, &err), -1);
    assert_int_equal(err.code, ERR_ENGINE);
    assert_int_equal(res.status, EXEC_ERROR);
    assert_false(res.has_exit_code);
    assert_contains(res.message, "exit status is unknown");
    assert_contains(res.message, "injected wait failure");
    assert_string_equal(res.message, err_msg(&err));
    assert_string_equal(buf_cstr(&res.out), "bye\n");
    err_clear(&err);
    assert_last_removed(g);
    exec_result_free(&res);
}

/* A removal the engine refuses does not touch the result; the reaper
 * retries it until the engine confirms, and asks no more after that (no
 * sweep takes the removed container for one left behind). */
static void test_remove_fails_then_retried(void **state)
{
    struct rig *g = *state;
    fake_engine_fault(g->fe, FAKE_OP_DELETE, 500, NULL, 2);
    struct exec_result res;
    struct err err = ERR_INIT;
    assert_int_equal(run_faulty(g, &res, &err), 0);
    assert_int_equal(res.status, EXEC_OK);
    assert_int_equal(res.exit_code, 0);
    char id[FAKE_ID_MAX + 1];
    last_container(g, id);
    assert_removed(g, id);
    rig_close(g); /* the reaper's threads, the sweeper among them, have ended */
    assert_int_equal(fake_engine_count(g->fe, FAKE_OP_DELETE, id), 3);
    exec_result_free(&res);
}

/* A stalled engine cannot hold a run past its start deadline, which is the
 * call's own time limit: the run timed out before its code ran. The
 * container it made is removed even while the stalled start is pending. */
static void test_stalled_start(void **state)
{
    struct rig *g = *state;
    fake_engine_fault(g->fe, FAKE_OP_START, FAKE_STALL, NULL, 1);
    rig_open(g, false);
    struct run req = request("print(1)");
    req.start_by_ms = util_now_ms() + 1000;
    struct exec_result res;
    exec_result_init(&res);
    struct err err = ERR_INIT;
    assert_int_equal(exec_run(g->exec, &req, &res, &err), -1);
    assert_int_equal(err.code, ERR_TIMEOUT);
    assert_int_equal(res.status, EXEC_TIMEOUT);
    assert_false(res.has_exit_code);
    assert_contains(res.message, "not ready within timeout_ms");
    assert_contains(res.message, "the code never ran");
    assert_contains(res.message, "did not answer");
    assert_contains(res.message, "/start");
    err_clear(&err);
    assert_last_removed(g);
    assert_true(fake_engine_wait_held(g->fe, 1, GUARD));
    fake_engine_release(g->fe);
    exec_result_free(&res);
}

/* ---- the attach stream failing ---------------------------------------------- */

/* The stream broke inside a frame: the output is incomplete, so the run
 * failed, whatever the engine says of the exit. What did arrive is kept
 * (live output showed it already). */
static void test_stream_cut_mid_frame(void **state)
{
    struct rig *g = *state;
    use_attach(g); /* frames are the attach stream's */
    struct fake_program p = {.out = "partial\n", .out_len = 8, .end = FAKE_END_CUT};
    fake_engine_set_program(g->fe, &p);
    struct exec_result res;
    struct err err = ERR_INIT;
    assert_int_equal(run_faulty(g, &res, &err), -1);
    assert_int_equal(err.code, ERR_PROTOCOL);
    assert_int_equal(res.status, EXEC_ERROR);
    assert_false(res.has_exit_code);
    assert_contains(res.message, "in the middle of a frame");
    assert_contains(res.message, fake_engine_socket(g->fe));
    assert_string_equal(res.message, err_msg(&err));
    assert_string_equal(buf_cstr(&res.out), "partial\ncut short!");
    err_clear(&err);
    char id[FAKE_ID_MAX + 1];
    last_container(g, id);
    assert_int_equal(fake_engine_count(g->fe, FAKE_OP_WAIT, id), 0);
    assert_removed(g, id);
    exec_result_free(&res);
}

static void test_oversized_record(void **state)
{
    struct rig *g = *state;
    struct fake_program p = {.out = "x\n", .out_len = 2, .end = FAKE_END_BIG_RECORD};
    fake_engine_set_program(g->fe, &p);
    struct exec_result res;
    struct err err = ERR_INIT;
    assert_int_equal(run_faulty(g, &res, &err), -1);
    assert_int_equal(res.status, EXEC_ERROR);
    assert_contains(res.message, "completion record over 4096 bytes");
    err_clear(&err);
    assert_last_removed(g);
    exec_result_free(&res);
}

static void test_runner_error(void **state)
{
    struct rig *g = *state;
    struct fake_program p = {.exit_code = 76, .runner_error = "request is not JSON"};
    fake_engine_set_program(g->fe, &p);
    struct exec_result res;
    struct err err = ERR_INIT;
    assert_int_equal(run_faulty(g, &res, &err), -1);
    assert_int_equal(err.code, ERR_INTERNAL);
    assert_int_equal(res.status, EXEC_ERROR);
    assert_true(res.has_exit_code);
    assert_int_equal(res.exit_code, 76);
    assert_contains(res.message, "the sandbox runner failed: request is not JSON");
    assert_string_equal(res.message, err_msg(&err));
    err_clear(&err);
    assert_last_removed(g);
    exec_result_free(&res);
}

static void test_bad_record(void **state)
{
    struct rig *g = *state;
    struct fake_program p = {.out = "x\n", .out_len = 2, .end = FAKE_END_BAD_RECORD};
    fake_engine_set_program(g->fe, &p);
    struct exec_result res;
    struct err err = ERR_INIT;
    assert_int_equal(run_faulty(g, &res, &err), -1);
    assert_int_equal(err.code, ERR_PROTOCOL);
    assert_int_equal(res.status, EXEC_ERROR);
    assert_contains(res.message, "unreadable completion record");
    assert_string_equal(res.message, err_msg(&err));
    assert_string_equal(buf_cstr(&res.out), "x\n");
    err_clear(&err);
    assert_last_removed(g);
    exec_result_free(&res);
}

/* A NULL err is allowed: the result still says why. */
static void test_error_without_err(void **state)
{
    struct rig *g = *state;
    fake_engine_fault(g->fe, FAKE_OP_START, 500, NULL, 1);
    rig_open(g, false);
    struct run req = request("print(1)");
    struct exec_result res;
    exec_result_init(&res);
    assert_int_equal(exec_run(g->exec, &req, &res, NULL), -1);
    assert_int_equal(res.status, EXEC_ERROR);
    assert_contains(res.message, "injected start failure");
    assert_last_removed(g);
    exec_result_free(&res);
}

/* ---- generic languages: the program, and compile errors ------------------------ */

/* A hook plays the generic runner on the attach stream (the fake's own
 * programs know nothing of "program" or "compile_error"): it keeps the
 * runner request it reads and answers with the scripted stderr and
 * completion record, on stderr and stdout as the runners do. */
struct scripted {
    pthread_mutex_t mu;
    const char *err;    /* written on stderr first, or NULL */
    const char *record; /* the completion record's JSON */
    char *request;      /* the last runner request's JSON, as read */
    int served;
};
static struct scripted SCRIPT = {.mu = PTHREAD_MUTEX_INITIALIZER};

static bool read_exact(struct fake_engine *fe, int fd, char *out, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = fake_engine_read(fe, fd, out + got, n - got);
        if (r <= 0)
            return false;
        got += (size_t)r;
    }
    return true;
}

static void send_frame(struct fake_engine *fe, int fd, int stream, const char *data, size_t n)
{
    char *frame = xmalloc(8 + n);
    size_t k = fake_engine_frame(frame, stream, data, (uint32_t)n);
    fake_engine_write(fe, fd, frame, k);
    free(frame);
}

static bool play_runner(struct fake_engine *fe, int fd, const struct fake_request *req, void *ctx)
{
    (void)ctx;
    if (req->op != FAKE_OP_ATTACH)
        return false;
    static const char head[] = "HTTP/1.1 101 UPGRADED\r\nContent-Type: "
                               "application/vnd.docker.raw-stream\r\nConnection: Upgrade\r\n"
                               "Upgrade: tcp\r\n\r\n";
    fake_engine_write(fe, fd, head, sizeof(head) - 1);
    char line[64];
    size_t n = 0;
    while (n + 1 < sizeof(line) && read_exact(fe, fd, line + n, 1) && line[n] != '\n')
        n++;
    line[n] = '\0';
    static const char proto[] = RUNNER_PROTOCOL " ";
    size_t len = strncmp(line, proto, sizeof(proto) - 1) == 0
                     ? (size_t)strtoul(line + sizeof(proto) - 1, NULL, 10)
                     : 0;
    if (len == 0 || len > (1u << 20))
        return true;
    char *json = xmalloc(len + 1);
    if (!read_exact(fe, fd, json, len)) {
        free(json);
        return true;
    }
    json[len] = '\0';
    char nonce[RUNNER_NONCE_HEX_LEN + 1] = "";
    json_object *o = json_tokener_parse(json);
    json_object *v = NULL;
    if (json_object_object_get_ex(o, "nonce", &v))
        snprintf(nonce, sizeof(nonce), "%s", json_object_get_string(v));
    json_object_put(o);
    pthread_mutex_lock(&SCRIPT.mu);
    free(SCRIPT.request);
    SCRIPT.request = json;
    SCRIPT.served++;
    const char *err_text = SCRIPT.err;
    const char *record = SCRIPT.record;
    pthread_mutex_unlock(&SCRIPT.mu);
    if (err_text)
        send_frame(fe, fd, 2, err_text, strlen(err_text));
    struct buf rec;
    buf_init(&rec, 1 << 16);
    if (buf_add(&rec, RUNNER_RECORD_PREFIX, RUNNER_RECORD_PREFIX_LEN) == 0 &&
        buf_addf(&rec, "%s:%s\n", nonce, record) == 0) {
        send_frame(fe, fd, 2, rec.data, rec.len);
        send_frame(fe, fd, 1, rec.data, rec.len);
    }
    buf_free(&rec);
    return true;
}

/* Scripts the runner's answer; the rig runs attached, through the hook. */
static void script(struct rig *g, const char *err_text, const char *record)
{
    pthread_mutex_lock(&SCRIPT.mu);
    SCRIPT.err = err_text;
    SCRIPT.record = record;
    free(SCRIPT.request);
    SCRIPT.request = NULL;
    SCRIPT.served = 0;
    pthread_mutex_unlock(&SCRIPT.mu);
    fake_engine_set_hook(g->fe, play_runner, NULL);
}

/* The last runner request the hook read, parsed (caller puts it). */
static json_object *script_request(void)
{
    pthread_mutex_lock(&SCRIPT.mu);
    json_object *o = SCRIPT.request ? json_tokener_parse(SCRIPT.request) : NULL;
    int served = SCRIPT.served;
    pthread_mutex_unlock(&SCRIPT.mu);
    if (!o || served < 1)
        fail_msg("the runner request was not read");
    return o;
}

static void script_done(struct rig *g)
{
    fake_engine_set_hook(g->fe, NULL, NULL);
    pthread_mutex_lock(&SCRIPT.mu);
    free(SCRIPT.request);
    SCRIPT.request = NULL;
    pthread_mutex_unlock(&SCRIPT.mu);
}

static json_object *member(json_object *o, const char *key)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, key, &v))
        fail_msg("no '%s' in %s", key, json_object_to_json_string(o));
    return v;
}

/* A JSON array of strings equals the table's argv. */
static void assert_argv_json(json_object *a, const struct langtable_strv *want)
{
    assert_true(json_object_is_type(a, json_type_array));
    assert_int_equal(json_object_array_length(a), want->n);
    for (size_t i = 0; i < want->n; i++)
        assert_string_equal(json_object_get_string(json_object_array_get_idx(a, i)), want->v[i]);
}

/* The container of the last run: the generic runner in the language's
 * image, no network. */
static void assert_generic_container(struct rig *g, const struct langtable_lang *lang)
{
    char id[FAKE_ID_MAX + 1];
    last_container(g, id);
    struct fake_container_info info;
    assert_true(fake_engine_info(g->fe, id, &info));
    assert_string_equal(info.image, lang->image);
    struct fake_request create;
    assert_true(fake_engine_last(g->fe, FAKE_OP_CREATE, &create));
    assert_contains(create.body, "\"Cmd\":[\"perl\",\"-e\",\"");
    assert_contains(create.body, "\"NetworkMode\":\"none\"");
    assert_removed(g, id);
}

/* C: the request carries the program (source file, compile step, run);
 * the runner's compile_error is the status compile_error with the
 * compiler's exit code, its messages on stderr, and nothing ran. */
static void test_generic_compile_error(void **state)
{
    struct rig *g = *state;
    use_attach(g);
    static const char cc_err[] = "main.c: In function 'main':\n"
                                 "main.c:1:27: error: expected ';' before '}' token\n";
    script(g, cc_err,
           "{\"exit_code\":1,\"memory_error\":false,"
           "\"compile_error\":{\"exit_code\":1,\"timed_out\":false}}");
    rig_open(g, false);
    const struct langtable_lang *c = test_lang(g->langs, "c");
    struct run req = request("int main(void) { return 0 }");
    req.language = c;
    struct exec_result res;
    exec_result_init(&res);
    struct err err = ERR_INIT;
    if (exec_run(g->exec, &req, &res, &err) < 0)
        fail_msg("exec_run: %s", err_msg(&err));
    assert_int_equal(res.status, EXEC_COMPILE_ERROR);
    assert_string_equal(exec_status_name(res.status), "compile_error");
    assert_true(res.has_exit_code);
    assert_int_equal(res.exit_code, 1);
    assert_contains(res.message, "the compile step failed (exit code 1");
    assert_contains(res.message, "did not run");
    assert_string_equal(buf_cstr(&res.err), cc_err);
    assert_int_equal(res.out.len, 0);

    json_object *rq = script_request();
    assert_string_equal(json_object_get_string(member(rq, "code")), "int main(void) { return 0 }");
    json_object *pg = member(rq, "program");
    assert_string_equal(json_object_get_string(member(pg, "source_file")), "main.c");
    assert_argv_json(member(pg, "compile"), &c->compile);
    assert_string_equal(json_object_get_string(json_object_array_get_idx(member(pg, "compile"), 0)),
                        "gcc");
    assert_int_equal(json_object_get_int64(member(pg, "compile_timeout_ms")),
                     c->compile_timeout_ms);
    assert_argv_json(member(pg, "run"), &c->run);
    assert_string_equal(json_object_get_string(json_object_array_get_idx(member(pg, "run"), 0)),
                        "./main");
    assert_false(json_object_object_get_ex(pg, "typecheck", NULL));
    assert_false(json_object_object_get_ex(pg, "typecheck_blocks", NULL));
    json_object_put(rq);
    assert_generic_container(g, c);

    /* A compile step stopped at its own limit says so. */
    script(g, NULL,
           "{\"exit_code\":137,\"memory_error\":false,"
           "\"compile_error\":{\"exit_code\":137,\"timed_out\":true}}");
    const struct langtable_lang *cpp = test_lang(g->langs, "c++");
    req.language = cpp;
    exec_result_free(&res);
    exec_result_init(&res);
    if (exec_run(g->exec, &req, &res, &err) < 0)
        fail_msg("exec_run: %s", err_msg(&err));
    assert_int_equal(res.status, EXEC_COMPILE_ERROR);
    assert_int_equal(res.exit_code, 137);
    char *want = xasprintf("stopped after %lld ms", cpp->compile_timeout_ms);
    assert_contains(res.message, want);
    free(want);
    rq = script_request();
    assert_string_equal(json_object_get_string(member(member(rq, "program"), "source_file")),
                        "main.cpp");
    json_object_put(rq);
    assert_generic_container(g, cpp);
    script_done(g);
    exec_result_free(&res);
}

/* TypeScript: the typecheck step and whether its failure blocks the run
 * (fail_on_type_errors) go in the program; a run that compiled is an
 * ordinary result. */
static void test_generic_typecheck_and_run(void **state)
{
    struct rig *g = *state;
    use_attach(g);
    script(g, "main.ts(1,7): error TS2322: Type 'string' is not assignable to type 'number'.\n",
           "{\"exit_code\":0,\"memory_error\":false}");
    rig_open(g, false);
    const struct langtable_lang *ts = test_lang(g->langs, "ts");
    struct run req = request("const x: number = 'a'; console.log(x)");
    req.language = ts;
    struct exec_result res;
    exec_result_init(&res);
    struct err err = ERR_INIT;
    if (exec_run(g->exec, &req, &res, &err) < 0)
        fail_msg("exec_run: %s", err_msg(&err));
    /* Shown, not blocking: the run went on. */
    assert_int_equal(res.status, EXEC_OK);
    assert_int_equal(res.exit_code, 0);
    assert_contains(buf_cstr(&res.err), "TS2322");
    json_object *rq = script_request();
    json_object *pg = member(rq, "program");
    assert_string_equal(json_object_get_string(member(pg, "source_file")), "main.ts");
    assert_argv_json(member(pg, "compile"), &ts->compile);
    assert_argv_json(member(pg, "typecheck"), &ts->typecheck);
    assert_false(json_object_get_boolean(member(pg, "typecheck_blocks")));
    assert_argv_json(member(pg, "run"), &ts->run);
    json_object_put(rq);
    assert_generic_container(g, ts);

    /* fail_on_type_errors: typecheck_blocks, and its failure is a
     * compile error. */
    script(g, "main.ts(1,7): error TS2322\n",
           "{\"exit_code\":2,\"memory_error\":false,"
           "\"compile_error\":{\"exit_code\":2,\"timed_out\":false}}");
    req.typecheck_blocks = true;
    exec_result_free(&res);
    exec_result_init(&res);
    if (exec_run(g->exec, &req, &res, &err) < 0)
        fail_msg("exec_run: %s", err_msg(&err));
    assert_int_equal(res.status, EXEC_COMPILE_ERROR);
    assert_int_equal(res.exit_code, 2);
    rq = script_request();
    assert_true(json_object_get_boolean(member(member(rq, "program"), "typecheck_blocks")));
    json_object_put(rq);
    assert_last_removed(g);

    /* Bash: no compile step, so the program has none. */
    script(g, NULL, "{\"exit_code\":3,\"memory_error\":false}");
    const struct langtable_lang *bash = test_lang(g->langs, "sh");
    req = request("exit 3");
    req.language = bash;
    exec_result_free(&res);
    exec_result_init(&res);
    if (exec_run(g->exec, &req, &res, &err) < 0)
        fail_msg("exec_run: %s", err_msg(&err));
    assert_int_equal(res.status, EXEC_OK);
    assert_int_equal(res.exit_code, 3);
    assert_null(res.message);
    rq = script_request();
    pg = member(rq, "program");
    assert_string_equal(json_object_get_string(member(pg, "source_file")), "main.sh");
    assert_false(json_object_object_get_ex(pg, "compile", NULL));
    assert_false(json_object_object_get_ex(pg, "compile_timeout_ms", NULL));
    assert_false(json_object_object_get_ex(pg, "typecheck", NULL));
    const char *bash_run[] = {"bash", "main.sh"};
    for (size_t i = 0; i < 2; i++)
        assert_string_equal(json_object_get_string(json_object_array_get_idx(member(pg, "run"), i)),
                            bash_run[i]);
    json_object_put(rq);
    assert_generic_container(g, bash);

    /* The version probe runs the table's version command instead. */
    script(g, NULL, "{\"exit_code\":0,\"memory_error\":false}");
    const struct langtable_lang *c = test_lang(g->langs, "c");
    req = request("");
    req.language = c;
    req.version_probe = true;
    exec_result_free(&res);
    exec_result_init(&res);
    if (exec_run(g->exec, &req, &res, &err) < 0)
        fail_msg("exec_run: %s", err_msg(&err));
    assert_int_equal(res.status, EXEC_OK);
    rq = script_request();
    pg = member(rq, "program");
    assert_argv_json(member(pg, "run"), &c->version);
    assert_false(json_object_object_get_ex(pg, "compile", NULL));
    json_object_put(rq);
    assert_last_removed(g);

    /* Python has a runner of its own: no program. */
    script(g, NULL, "{\"exit_code\":0,\"memory_error\":false}");
    req = request("print(1)");
    exec_result_free(&res);
    exec_result_init(&res);
    if (exec_run(g->exec, &req, &res, &err) < 0)
        fail_msg("exec_run: %s", err_msg(&err));
    assert_int_equal(res.status, EXEC_OK);
    rq = script_request();
    assert_false(json_object_object_get_ex(rq, "program", NULL));
    json_object_put(rq);
    assert_last_removed(g);
    script_done(g);
    exec_result_free(&res);
}

/* A compile_error the daemon cannot read is the runner breaking the
 * protocol: an error of the run, not a compile error. */
static void test_generic_bad_compile_error(void **state)
{
    struct rig *g = *state;
    use_attach(g);
    script(g, NULL,
           "{\"exit_code\":1,\"memory_error\":false,\"compile_error\":{\"exit_code\":\"1\"}}");
    rig_open(g, false);
    struct run req = request("int x");
    req.language = test_lang(g->langs, "c");
    struct exec_result res;
    exec_result_init(&res);
    struct err err = ERR_INIT;
    assert_int_equal(exec_run(g->exec, &req, &res, &err), -1);
    assert_int_equal(err.code, ERR_PROTOCOL);
    assert_int_equal(res.status, EXEC_ERROR);
    assert_contains(res.message, "malformed compile_error");
    err_clear(&err);
    assert_last_removed(g);
    script_done(g);
    exec_result_free(&res);
}

/* A described create request (text), parsed: its image, its command's
 * first n words, its network mode. */
static void check_described(char *text, const char *image, const char *const *cmd, size_t n,
                            const char *network)
{
    json_object *o = json_tokener_parse(text);
    if (!o)
        fail_msg("not JSON: %.200s", text);
    json_object *v = NULL, *hc = NULL;
    assert_true(json_object_object_get_ex(o, "Image", &v));
    assert_string_equal(json_object_get_string(v), image);
    assert_true(json_object_object_get_ex(o, "Cmd", &v));
    assert_true(json_object_array_length(v) > n);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(json_object_get_string(json_object_array_get_idx(v, i)), cmd[i]);
    assert_true(json_object_object_get_ex(o, "HostConfig", &hc));
    assert_true(json_object_object_get_ex(hc, "NetworkMode", &v));
    assert_string_equal(json_object_get_string(v), network);
    json_object_put(o);
    free(text);
}

/* --dry-run-create: the create request of any language of the table, its
 * own image and runner, nothing sent to the engine. */
static void test_describe_create(void **state)
{
    struct rig *g = *state;
    struct backend *b = rig_backend(g);
    static const char *const py_cmd[] = {"python3", "-u", "-B", "-c"};
    check_described(exec_describe_create(&g->cfg, b, PY), "mcp-sandboxd-python:latest", py_cmd, 4,
                    "none");
    static const char *const js_cmd[] = {"node", "-e"};
    check_described(exec_describe_create(&g->cfg, b, JS), "mcp-sandboxd-node:latest", js_cmd, 2,
                    "none");
    /* The generic runner, in the language's image. */
    static const char *const generic[] = {"perl", "-e"};
    const struct langtable_lang *c = test_lang(g->langs, "c");
    check_described(exec_describe_create(&g->cfg, b, c), "mcp-sandboxd-c:latest", generic, 2,
                    "none");
    check_described(exec_describe_create(&g->cfg, b, test_lang(g->langs, "ts")),
                    "mcp-sandboxd-node:latest", generic, 2, "none");
    /* A language the operator gave a network (by an alias, any case). */
    g->cfg.allow_network.items = xrealloc(g->cfg.allow_network.items, 2 * sizeof(char *));
    g->cfg.allow_network.items[0] = xstrdup("C");
    g->cfg.allow_network.items[1] = NULL;
    g->cfg.allow_network.n = 1;
    check_described(exec_describe_create(&g->cfg, b, c), "mcp-sandboxd-c:latest", generic, 2,
                    "bridge");
    check_described(exec_describe_create(&g->cfg, b, PY), "mcp-sandboxd-python:latest", py_cmd, 4,
                    "none");
    backend_free(b);
    assert_int_equal(fake_engine_nreq(g->fe), 0);

    /* How each language's sandboxes connect: the daemon's socket here. */
    rig_open(g, false);
    for (size_t i = 0; i < langtable_count(g->langs); i++)
        assert_string_equal(exec_sandbox_io(g->exec, langtable_get(g->langs, i)), "socket");
    assert_ptr_equal(exec_languages(g->exec), g->langs);
}

/* ---- the network ---------------------------------------------------------------- */

/* A sandbox gets a network only when the operator named its language (or
 * an alias) in --allow-network and the table allows it; never otherwise. */
static void test_network_per_language(void **state)
{
    struct rig *g = *state;
    /* The table says javascript never gets one; the options are set after
     * langtable_configure (which would refuse them) to see exec check too. */
    langtable_free(g->langs);
    g->langs = test_langs_text(
        &g->cfg, "{\"languages\": [{\"name\": \"javascript\", \"network_allowed\": false}]}");
    PY = test_lang(g->langs, "python");
    JS = test_lang(g->langs, "javascript");
    g->cfg.allow_network.items = xrealloc(g->cfg.allow_network.items, 3 * sizeof(char *));
    g->cfg.allow_network.items[0] = xstrdup("PY");
    g->cfg.allow_network.items[1] = xstrdup("javascript");
    g->cfg.allow_network.items[2] = NULL;
    g->cfg.allow_network.n = 2;
    struct fake_program p = {.out = "1\n", .out_len = 2};
    fake_engine_set_program(g->fe, &p);
    rig_open(g, false);
    const struct {
        const struct langtable_lang *lang;
        const char *mode;
    } cases[] = {
        {PY, "\"NetworkMode\":\"bridge\""},
        {JS, "\"NetworkMode\":\"none\""},
        {test_lang(g->langs, "ruby"), "\"NetworkMode\":\"none\""},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        struct run req = request("print(1)");
        req.language = cases[i].lang;
        struct exec_result res;
        exec_result_init(&res);
        struct err err = ERR_INIT;
        if (exec_run(g->exec, &req, &res, &err) < 0)
            fail_msg("exec_run: %s", err_msg(&err));
        struct fake_request create;
        assert_true(fake_engine_last(g->fe, FAKE_OP_CREATE, &create));
        assert_contains(create.body, cases[i].mode);
        assert_contains(create.body, cases[i].lang->image);
        assert_last_removed(g);
        exec_result_free(&res);
    }
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_ok),
        T(test_ok_attached),
        T(test_socket_unreachable_falls_back),
        T(test_language_environment),
        T(test_timeout),
        T(test_cancel_mid_run),
        T(test_cancel_before_run),
        T(test_output_limit),
        T(test_oom_memory_error),
        T(test_oom_killed_docker),
        T(test_oom_heuristic),
        T(test_runtime_on_podman),
        T(test_secrets),
        T(test_forged_record),
        T(test_create_fails),
        T(test_attach_fails),
        T(test_start_fails),
        T(test_wait_fails),
        T(test_remove_fails_then_retried),
        T(test_stalled_start),
        T(test_stream_cut_mid_frame),
        T(test_oversized_record),
        T(test_runner_error),
        T(test_bad_record),
        T(test_error_without_err),
        T(test_generic_compile_error),
        T(test_generic_typecheck_and_run),
        T(test_generic_bad_compile_error),
        T(test_network_per_language),
        T(test_describe_create),
    };
#undef T
    return cmocka_run_group_tests_name("exec", tests, rig_group_setup, rig_group_teardown);
}
