#include "backend_conformance/conformance.h"

// clang-format off
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/util.h"

#define CONF_UID             64321
#define CONF_NOFILE          256
#define CONF_HANG_MS         60000 /* a guard only: a sandbox that should end but hangs fails the case */
#define CONF_OUT_MAX         (CONF_FLOOD_BYTES + 65536u)
#define CONF_DEADLINE        60000.0 /* create and start, on a loaded host */
#define CONF_STALL_MS        300.0   /* the deadline a stalled start must keep */
#define CONF_REMOVE_TRIES    4
#define CONF_REMOVE_PAUSE_MS 25L /* doubled each try: 50, 100, 200 ms */
#define MISSING_IMAGE        "mcp-sandboxd-conformance-missing:none"

/* Each reads a line and echoes it, as enum conf_behaviour says. */
static const char REPORT[] =
    "head -n 1; id -u; grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status; "
    "echo \"net: $(ls /sys/class/net | tr '\\n' ' ')\"; "
    "if touch /conformance 2>/dev/null; then echo 'root: writable'; else echo 'root: read-only'; "
    "fi; if touch ./conformance 2>/dev/null; then echo 'workdir: writable'; else echo 'workdir: "
    "read-only'; fi; echo \"nofile: $(ulimit -n)\"; echo \"pid1: $(cat /proc/1/comm)\"";

static const char *const SCRIPTS[] = {
    [CONF_ECHO] = "head -n 1; echo 'to stderr' >&2; exit 3",
    [CONF_SLEEP] = "head -n 1; exec sleep 600",
    [CONF_FLOOD] = "head -n 1; head -c 1048576 /dev/zero | tr '\\0' x",
    [CONF_OOM] = "head -n 1; exec python3 -c \"s = 'x' * (1 << 30)\"",
    [CONF_CUT] = "head -n 1",
    [CONF_REPORT] = REPORT,
};

_Static_assert(CONF_FLOOD_BYTES == 1048576, "the flood's script writes this many");

static char instance[64]; /* this run's mark: what the last case finds none of */

struct sandbox {
    const char *argv[4];
    struct backend_spec spec;
    char *id;
    struct backend_stream *stream;
    struct buf out, err;
};

static void sandbox_init(struct conformance_target *t, struct sandbox *s, enum conf_behaviour what)
{
    memset(s, 0, sizeof(*s));
    s->argv[0] = "sh";
    s->argv[1] = "-c";
    s->argv[2] = SCRIPTS[what];
    static const char *const env[] = {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", NULL};
    s->spec = (struct backend_spec){
        .image = t->image,
        .cmd = s->argv,
        .uid = CONF_UID,
        .gid = CONF_UID,
        .workdir = "/tmp",
        .workdir_mb = 16,
        .env = env,
        .memory_bytes = what == CONF_OOM ? 64ll << 20 : 256ll << 20,
        .nano_cpus = 1000000000ll,
        .pids_limit = 64,
        .nofile = CONF_NOFILE,
        .nproc = 64,
        .fsize = 16ll << 20,
        .shm_bytes = 16ll << 20,
        .instance = instance,
        .owner = "conformance",
        .expires = (long long)time(NULL) + 3600,
    };
    buf_init(&s->out, CONF_OUT_MAX);
    buf_init(&s->err, CONF_OUT_MAX);
    if (t->behave)
        t->behave(t->ctx, what);
}

/* Removes it (if made) and frees it; removal must succeed, asked as the
 * daemon's reaper asks: a remove may fail once and succeed when asked
 * again (Podman 4 answers a forced remove that meets the container while
 * it stops with 500 "container state improper"), so a few tries, pauses
 * doubling from CONF_REMOVE_PAUSE_MS. */
static void sandbox_done(struct conformance_target *t, struct sandbox *s)
{
    struct err err = ERR_INIT;
    backend_stream_close(s->stream);
    int rc = 0;
    for (int try = 0; s->id && try < CONF_REMOVE_TRIES; try++) {
        if (try) {
            err_clear(&err);
            const struct timespec pause = {0, (CONF_REMOVE_PAUSE_MS << try) * 1000000L};
            nanosleep(&pause, NULL);
        }
        rc = backend_remove(t->b, s->id, &err);
        if (rc == 0)
            break;
    }
    if (rc < 0)
        fail_msg("%s: remove %s: %s", t->name, s->id, err_msg(&err));
    free(s->id);
    buf_free(&s->out);
    buf_free(&s->err);
    err_clear(&err);
}

static int create(struct conformance_target *t, struct sandbox *s, bool fallback, struct err *err)
{
    struct backend_pending *p = NULL;
    double deadline = util_now_ms() + CONF_DEADLINE;
    if (backend_create(t->b, &s->spec, fallback, deadline, &s->id, &p, err) < 0)
        return -1;
    backend_pending_free(t->b, p);
    return 0;
}

/* create and start, once more set up with fallback when start says so;
 * on failure the sandbox is removed (the caller's duty). */
static int launch(struct conformance_target *t, struct sandbox *s, double deadline, struct err *err)
{
    for (int fallback = 0; fallback < 2; fallback++) {
        struct backend_pending *p = NULL;
        if (backend_create(t->b, &s->spec, fallback, util_now_ms() + CONF_DEADLINE, &s->id, &p,
                           err) < 0)
            return -1;
        int rc = backend_start(t->b, s->id, p, deadline, -1, &s->stream, err);
        if (rc == 0)
            return 0;
        struct err ignored = ERR_INIT;
        backend_remove(t->b, s->id, &ignored);
        err_clear(&ignored);
        free(s->id);
        s->id = NULL;
        if (rc != BACKEND_RETRY)
            return -1;
        err_clear(err);
    }
    return err_set(err, ERR_INTERNAL, "start asked for a retry after fallback");
}

static int collect(void *ctx, int stream, const char *data, size_t len, struct err *err)
{
    struct sandbox *s = ctx;
    struct buf *b = stream == BACKEND_STDERR ? &s->err : &s->out;
    if (stream != BACKEND_STDOUT && stream != BACKEND_STDERR)
        return err_set(err, ERR_PROTOCOL, "output of stream %d", stream);
    if (buf_add(b, data, len) < 0)
        return err_set(err, ERR_TOO_BIG, "more output than the case allows");
    return 0;
}

/* Reads the streams until they end: 0 at a clean end, else -1 with err. */
static int drain(struct sandbox *s, struct err *err)
{
    double deadline = util_now_ms() + CONF_HANG_MS;
    for (;;) {
        if (!backend_stream_pending(s->stream)) {
            double left = deadline - util_now_ms();
            if (left <= 0)
                return err_set(err, ERR_TIMEOUT, "the streams did not end");
            struct pollfd p = {.fd = backend_stream_fd(s->stream), .events = POLLIN};
            if (poll(&p, 1, (int)left + 1) == 0)
                continue;
        }
        long n = backend_stream_read(s->stream, collect, s, err);
        if (n == BACKEND_AGAIN)
            continue;
        if (n <= 0)
            return (int)n;
    }
}

static bool has_line(const struct buf *b, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = b->data; p && p + n <= b->data + b->len;) {
        if (memcmp(p, line, n) == 0 && (p + n == b->data + b->len || p[n] == '\n'))
            return true;
        const char *nl = memchr(p, '\n', (size_t)(b->data + b->len - p));
        if (!nl)
            break;
        p = nl + 1;
    }
    return false;
}

#define OK(call)                                                                                   \
    do {                                                                                           \
        struct err e_ = ERR_INIT;                                                                  \
        if ((call) != 0)                                                                           \
            fail_msg("%s: %s failed: %s", t->name, #call, err_msg(&e_));                           \
        err_clear(&e_);                                                                            \
    } while (0)

/* The program of s: started, its line sent and echoed; run to its end. */
static void run(struct conformance_target *t, struct sandbox *s, bool to_end)
{
    OK(launch(t, s, util_now_ms() + CONF_DEADLINE, &e_));
    OK(backend_stream_send(s->stream, "hello\n", 6, CONF_HANG_MS, &e_));
    if (to_end)
        OK(drain(s, &e_));
}

static void wait_exit(struct conformance_target *t, const struct sandbox *s,
                      struct backend_state *st)
{
    OK(backend_wait(t->b, s->id, CONF_HANG_MS, st, &e_));
    assert_false(st->running);
}

/* ---- the cases ------------------------------------------------------------------ */

static void conf_ping_version(void **state)
{
    struct conformance_target *t = *state;
    char *name = NULL, *version = NULL;
    OK(backend_ping(t->b, &e_));
    OK(backend_version(t->b, &name, &version, &e_));
    assert_true(name && *name && version && *version);
    free(name);
    free(version);
}

/* stdout and stderr apart, the exit code, inspect after the exit, and a
 * removal that is final and may be repeated. */
static void conf_run_and_remove(void **state)
{
    struct conformance_target *t = *state;
    struct sandbox s;
    sandbox_init(t, &s, CONF_ECHO);
    run(t, &s, true);
    assert_int_equal(s.out.len, 6);
    assert_memory_equal(s.out.data, "hello\n", 6);
    assert_int_equal(s.err.len, 10);
    assert_memory_equal(s.err.data, "to stderr\n", 10);
    struct backend_state st = {.running = true};
    wait_exit(t, &s, &st);
    assert_int_equal(st.exit_code, 3);
    assert_false(st.oom_killed);
    OK(backend_inspect(t->b, s.id, &st, &e_));
    assert_false(st.running);
    assert_int_equal(st.exit_code, 3);

    struct err err = ERR_INIT;
    OK(backend_remove(t->b, s.id, &e_));
    assert_int_equal(backend_inspect(t->b, s.id, &st, &err), -1);
    assert_int_equal(err.code, ERR_NOT_FOUND);
    err_clear(&err);
    sandbox_done(t, &s); /* removes it again: not an error */
}

/* A megabyte of output arrives whole and the stream ends cleanly. */
static void conf_output_whole(void **state)
{
    struct conformance_target *t = *state;
    struct sandbox s;
    sandbox_init(t, &s, CONF_FLOOD);
    run(t, &s, true);
    assert_int_equal(s.out.len, 6 + CONF_FLOOD_BYTES);
    for (size_t i = 6; i < s.out.len; i++)
        if (s.out.data[i] != 'x')
            fail_msg("%s: byte %zu of the output is %d", t->name, i, s.out.data[i]);
    struct backend_state st;
    wait_exit(t, &s, &st);
    assert_int_equal(st.exit_code, 0);
    sandbox_done(t, &s);
}

/* A kill ends a running program and its streams; a second is no error. */
static void conf_kill(void **state)
{
    struct conformance_target *t = *state;
    struct sandbox s;
    sandbox_init(t, &s, CONF_SLEEP);
    run(t, &s, false);
    struct err err = ERR_INIT;
    double deadline = util_now_ms() + CONF_HANG_MS;
    while (s.out.len < 6 && util_now_ms() < deadline) {
        struct pollfd p = {.fd = backend_stream_fd(s.stream), .events = POLLIN};
        poll(&p, 1, 100);
        if (backend_stream_read(s.stream, collect, &s, &err) == -1)
            fail_msg("%s: %s", t->name, err_msg(&err));
    }
    assert_int_equal(s.out.len, 6); /* it runs */
    struct backend_state st;
    OK(backend_inspect(t->b, s.id, &st, &e_));
    assert_true(st.running);
    OK(backend_kill(t->b, s.id, &e_));
    if (drain(&s, &err) < 0 && err.code == ERR_TIMEOUT)
        fail_msg("%s: the streams of a killed sandbox did not end", t->name);
    err_clear(&err);
    OK(backend_wait(t->b, s.id, CONF_HANG_MS, &st, &e_));
    assert_false(st.running);
    assert_int_not_equal(st.exit_code, 0);
    OK(backend_kill(t->b, s.id, &e_));
    sandbox_done(t, &s);
}

static const struct backend_container *listed(const struct backend_container *l, size_t n,
                                              const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(l[i].id, id) == 0)
            return &l[i];
    return NULL;
}

/* list reports a sandbox never started with its marks, until removed. */
static void conf_list_marks(void **state)
{
    struct conformance_target *t = *state;
    struct sandbox s;
    sandbox_init(t, &s, CONF_ECHO);
    OK(create(t, &s, false, &e_));
    struct backend_container *l = NULL;
    size_t n = 0;
    OK(backend_list(t->b, 0, &l, &n, &e_));
    const struct backend_container *c = listed(l, n, s.id);
    if (!c) {
        fail_msg("%s: list does not report sandbox %s", t->name, s.id);
        return;
    }
    assert_string_equal(c->instance, instance);
    assert_string_equal(c->owner, "conformance");
    assert_int_equal(c->expires, s.spec.expires);
    assert_int_equal(c->uid, CONF_UID);
    long long now = (long long)time(NULL);
    assert_true(c->created > now - 3600 && c->created <= now + 60);
    backend_container_list_free(l, n);
    OK(backend_remove(t->b, s.id, &e_));
    OK(backend_list(t->b, 0, &l, &n, &e_));
    assert_null(listed(l, n, s.id));
    backend_container_list_free(l, n);
    sandbox_done(t, &s);
}

static void conf_missing_image(void **state)
{
    struct conformance_target *t = *state;
    struct sandbox s;
    sandbox_init(t, &s, CONF_ECHO);
    s.spec.image = MISSING_IMAGE;
    if (t->missing)
        t->missing(t->ctx, MISSING_IMAGE);
    struct err err = ERR_INIT;
    /* At create, or at start where only the node that runs it finds out. */
    assert_int_equal(launch(t, &s, util_now_ms() + CONF_DEADLINE, &err), -1);
    assert_int_equal(err.code, ERR_NOT_FOUND);
    if (!strstr(err_msg(&err), MISSING_IMAGE))
        fail_msg("%s: the error does not name the image: %s", t->name, err_msg(&err));
    err_clear(&err);
    sandbox_done(t, &s);
}

static void conf_unknown_id(void **state)
{
    struct conformance_target *t = *state;
    static const char id[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    struct backend_state st;
    struct err err = ERR_INIT;
    assert_int_equal(backend_inspect(t->b, id, &st, &err), -1);
    assert_int_equal(err.code, ERR_NOT_FOUND);
    err_clear(&err);
    OK(backend_remove(t->b, id, &e_));
}

static void conf_oom(void **state)
{
    struct conformance_target *t = *state;
    struct sandbox s;
    sandbox_init(t, &s, CONF_OOM);
    run(t, &s, true);
    struct backend_state st;
    wait_exit(t, &s, &st);
    if (!st.oom_killed)
        fail_msg("%s: a sandbox over its memory limit exited %d, not killed for memory", t->name,
                 st.exit_code);
    sandbox_done(t, &s);
}

/* What a program sees from inside: the uid, no capabilities, no new
 * privileges, a seccomp filter, no network but loopback, a read-only root
 * with a writable working directory, the spec's rlimits, an init as PID 1. */
static void conf_hardening(void **state)
{
    struct conformance_target *t = *state;
    if (!t->real)
        skip(); /* a fake runs no programs: nothing to observe from inside */
    struct sandbox s;
    sandbox_init(t, &s, CONF_REPORT);
    run(t, &s, true);
    OK(buf_add(&s.out, "", 1)); /* NUL-terminated for the message */
    s.out.len--;
    static const char *const want[] = {
        "hello",    "64321",           "CapEff:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2",
        "net: lo ", "root: read-only", "workdir: writable",         "nofile: 256",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (!has_line(&s.out, want[i]))
            fail_msg("%s: no line '%s' in the sandbox's report:\n%s", t->name, want[i], s.out.data);
    if (has_line(&s.out, "pid1: sh") || !strstr(s.out.data, "pid1: "))
        fail_msg("%s: PID 1 is not an init:\n%s", t->name, s.out.data);
    sandbox_done(t, &s);
}

/* ---- faults (fakes) --------------------------------------------------------------- */

static bool faults(const struct conformance_target *t)
{
    return t->fail_next && t->stall_next && t->release && t->outage;
}

/* The step's call fails once (and only that call), leaving nothing behind. */
static void fail_at(struct conformance_target *t, enum conf_step step)
{
    struct sandbox s;
    struct err err = ERR_INIT;
    struct backend_state st;
    struct backend_container *l = NULL;
    size_t n = 0;
    sandbox_init(t, &s, step == CONF_STEP_KILL ? CONF_SLEEP : CONF_ECHO);
    if (step == CONF_STEP_START || step == CONF_STEP_INSPECT || step == CONF_STEP_REMOVE)
        OK(create(t, &s, true, &e_));
    if (step == CONF_STEP_WAIT || step == CONF_STEP_KILL)
        run(t, &s, step == CONF_STEP_WAIT);
    t->fail_next(t->ctx, step);
    int rc = 0;
    switch (step) {
    case CONF_STEP_PING:
        rc = backend_ping(t->b, &err);
        break;
    case CONF_STEP_CREATE:
        rc = create(t, &s, false, &err);
        break;
    case CONF_STEP_START:
        rc = backend_start(t->b, s.id, NULL, util_now_ms() + CONF_DEADLINE, -1, &s.stream, &err);
        break;
    case CONF_STEP_WAIT:
        rc = backend_wait(t->b, s.id, CONF_HANG_MS, &st, &err);
        break;
    case CONF_STEP_KILL:
        rc = backend_kill(t->b, s.id, &err);
        break;
    case CONF_STEP_REMOVE:
        rc = backend_remove(t->b, s.id, &err);
        break;
    case CONF_STEP_INSPECT:
        rc = backend_inspect(t->b, s.id, &st, &err);
        break;
    case CONF_STEP_LIST:
        rc = backend_list(t->b, 0, &l, &n, &err);
        break;
    case CONF_STEP_COUNT:
        break;
    }
    if (rc != -1 || err.code == ERR_OK)
        fail_msg("%s: step %d failed without an error (%d)", t->name, (int)step, rc);
    err_clear(&err);
    /* Once only: the same call now succeeds. */
    if (step == CONF_STEP_PING)
        OK(backend_ping(t->b, &e_));
    if (step == CONF_STEP_LIST) {
        OK(backend_list(t->b, 0, &l, &n, &e_));
        backend_container_list_free(l, n);
    }
    if (step == CONF_STEP_INSPECT)
        OK(backend_inspect(t->b, s.id, &st, &e_));
    if (step == CONF_STEP_KILL)
        OK(backend_kill(t->b, s.id, &e_));
    if (step == CONF_STEP_WAIT)
        OK(backend_wait(t->b, s.id, CONF_HANG_MS, &st, &e_));
    sandbox_done(t, &s);
}

static void conf_fault_each_step(void **state)
{
    struct conformance_target *t = *state;
    if (!faults(t))
        skip();
    for (int step = 0; step < CONF_STEP_COUNT; step++)
        fail_at(t, (enum conf_step)step);
}

/* A stalled start ends at its deadline; the sandbox is then removed. */
static void conf_fault_stall(void **state)
{
    struct conformance_target *t = *state;
    if (!faults(t))
        skip();
    struct sandbox s;
    sandbox_init(t, &s, CONF_ECHO);
    OK(create(t, &s, true, &e_));
    t->stall_next(t->ctx, CONF_STEP_START);
    struct err err = ERR_INIT;
    double t0 = util_now_ms();
    int rc = backend_start(t->b, s.id, NULL, t0 + CONF_STALL_MS, -1, &s.stream, &err);
    double took = util_now_ms() - t0;
    assert_int_equal(rc, -1);
    assert_int_equal(err.code, ERR_TIMEOUT);
    err_clear(&err);
    if (took > CONF_HANG_MS)
        fail_msg("%s: a stalled start held %.0f ms past its deadline", t->name, took);
    OK(backend_remove(t->b, s.id, &e_));
    t->release(t->ctx);
    sandbox_done(t, &s);
}

static void conf_fault_cut(void **state)
{
    struct conformance_target *t = *state;
    if (!faults(t))
        skip();
    struct sandbox s;
    sandbox_init(t, &s, CONF_CUT);
    run(t, &s, false);
    struct err err = ERR_INIT;
    assert_int_equal(drain(&s, &err), -1);
    assert_int_equal(err.code, ERR_PROTOCOL);
    err_clear(&err);
    sandbox_done(t, &s);
}

static void conf_fault_outage(void **state)
{
    struct conformance_target *t = *state;
    if (!faults(t))
        skip();
    struct sandbox s;
    sandbox_init(t, &s, CONF_ECHO);
    t->outage(t->ctx, true);
    struct err err = ERR_INIT;
    int ping = backend_ping(t->b, &err);
    err_clear(&err);
    int made = create(t, &s, false, &err);
    err_clear(&err);
    t->outage(t->ctx, false);
    assert_int_equal(ping, -1);
    assert_int_equal(made, -1);
    OK(backend_ping(t->b, &e_));
    sandbox_done(t, &s);
}

/* Last: every case removed what it made. */
static void conf_none_left(void **state)
{
    struct conformance_target *t = *state;
    struct backend_container *l = NULL;
    size_t n = 0;
    OK(backend_list(t->b, 0, &l, &n, &e_));
    for (size_t i = 0; i < n; i++)
        if (l[i].instance && strcmp(l[i].instance, instance) == 0)
            fail_msg("%s: sandbox %s was left behind", t->name, l[i].id);
    backend_container_list_free(l, n);
}

int conformance_run(const char *group, struct conformance_target *t)
{
    snprintf(instance, sizeof(instance), "conformance-%ld-%s", (long)getpid(), t->name);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_prestate(conf_ping_version, t),
        cmocka_unit_test_prestate(conf_run_and_remove, t),
        cmocka_unit_test_prestate(conf_output_whole, t),
        cmocka_unit_test_prestate(conf_kill, t),
        cmocka_unit_test_prestate(conf_list_marks, t),
        cmocka_unit_test_prestate(conf_missing_image, t),
        cmocka_unit_test_prestate(conf_unknown_id, t),
        cmocka_unit_test_prestate(conf_oom, t),
        cmocka_unit_test_prestate(conf_hardening, t),
        cmocka_unit_test_prestate(conf_fault_each_step, t),
        cmocka_unit_test_prestate(conf_fault_stall, t),
        cmocka_unit_test_prestate(conf_fault_cut, t),
        cmocka_unit_test_prestate(conf_fault_outage, t),
        cmocka_unit_test_prestate(conf_none_left, t),
    };
    return _cmocka_run_group_tests(group, tests, sizeof(tests) / sizeof(tests[0]), NULL, NULL);
}
