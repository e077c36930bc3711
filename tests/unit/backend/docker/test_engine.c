/* engine.c and engine_http.c against the fake Engine API
 * (tests/fake_engine): its container model for the ordinary answers and
 * injected faults for the refusals, plus a hook here for what only these
 * tests need at the byte level: a stalled answer, an oversized one, a
 * chunked one, and an attach upgrade that streams multiplexed frames. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "backend/docker/engine.h"
#include "backend/docker/engine_http.h"
#include "backend/docker/engine_stream.h"
#include "fake_engine/fake_engine.h"
#include "unit/rig.h"

#define ECHO_ID    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define STALL_ID   "aaaaaaaaaaaa"
#define MISSING_ID "deadbeef0404"
#define CHUNKY_ID  "c0ffee000404"
#define PODMISS_ID "deadbeef0405"
#define RUNNING_ID "0000000000a2" /* kill: 500 while still running */

/* What the hook's attach read from the client; the test reads a copy. */
struct echo {
    pthread_mutex_t mu;
    char in[64];
    size_t in_len;
};

static struct fake_engine *F; /* set up per test */
static struct echo ECHO = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* ---- the hook: byte-level answers ---------------------------------------- */

/* Answers with early output in the same write as the head, then echoes the
 * 5 bytes it reads as "got <them>\n" on stdout and "e\0rr\n" on stderr, cut
 * mid-header across writes. */
static void serve_echo_attach(struct fake_engine *fe, int fd)
{
    /* The first frame rides in the same write as the answer head, so the
     * client must keep bytes read past the head. */
    char first[256];
    static const char head[] = "HTTP/1.1 101 UPGRADED\r\nContent-Type: "
                               "application/vnd.docker.raw-stream\r\nConnection: Upgrade\r\n"
                               "Upgrade: tcp\r\n\r\n";
    memcpy(first, head, sizeof(head) - 1);
    size_t n0 = fake_engine_frame(first + sizeof(head) - 1, 1, "early:", 6);
    fake_engine_write(fe, fd, first, sizeof(head) - 1 + n0);

    char in[5];
    size_t got = 0;
    while (got < sizeof(in)) {
        ssize_t r = fake_engine_read(fe, fd, in + got, sizeof(in) - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    pthread_mutex_lock(&ECHO.mu);
    memcpy(ECHO.in, in, got);
    ECHO.in_len = got;
    pthread_mutex_unlock(&ECHO.mu);

    char out[128];
    char reply[16];
    memcpy(reply, "got ", 4);
    memcpy(reply + 4, in, got);
    reply[4 + got] = '\n';
    size_t n1 = 4 + got + 1;
    size_t total = fake_engine_frame(out, 1, reply, (uint32_t)n1);
    total += fake_engine_frame(out + total, 2, "e\0rr\n", 5);
    total += fake_engine_frame(out + total, 1, "", 0);
    /* Separate writes so reads may end inside a header or a payload (the
     * client's 7-byte reads split frames either way). */
    fake_engine_write(fe, fd, out, 3);
    fake_engine_write(fe, fd, out + 3, 8 + n1 + 4 - 3);
    fake_engine_write(fe, fd, out + 8 + n1 + 4, total - (8 + n1 + 4));
}

static bool hook(struct fake_engine *fe, int fd, const struct fake_request *req, void *ctx)
{
    (void)ctx;
    const char *t = req->target;
    if (req->op == FAKE_OP_ATTACH && !strcmp(req->id, ECHO_ID)) {
        serve_echo_attach(fe, fd);
    } else if (req->op == FAKE_OP_ATTACH && !strcmp(req->id, CHUNKY_ID)) {
        static const char r[] = "HTTP/1.1 409 Conflict\r\nTransfer-Encoding: chunked\r\n\r\n"
                                "c\r\n{\"message\":\"\r\n"
                                "b\r\nis paused\"}\r\n0\r\n\r\n";
        fake_engine_write(fe, fd, r, sizeof(r) - 1);
    } else if (!strcmp(t, "/v1.41/stall")) {
        fake_engine_hold(fe);
    } else if (!strcmp(req->method, "GET") && !strcmp(t, "/v1.41/big")) {
        size_t n = ENGINE_HTTP_MAX_RESPONSE + 1024u;
        char *big = malloc(n + 1);
        memset(big, 'x', n);
        big[n] = '\0';
        fake_engine_respond(fd, 200, big);
        free(big);
    } else if (!strcmp(req->method, "GET") && !strcmp(t, "/v1.41/chunked")) {
        static const char r[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                "Transfer-Encoding: chunked\r\n\r\n"
                                "7\r\n{\"Id\":1\r\n1\r\n}\r\n0\r\n\r\n";
        fake_engine_write(fe, fd, r, sizeof(r) - 1);
    } else {
        return false;
    }
    return true;
}

static int fake_start(void **state)
{
    (void)state;
    F = fake_engine_start();
    if (!F)
        return -1;
    fake_engine_set_hook(F, hook, NULL);
    return 0;
}

static int fake_stop(void **state)
{
    (void)state;
    fake_engine_stop(F);
    F = NULL;
    return 0;
}

static struct fake_request last(void)
{
    struct fake_request r;
    if (!fake_engine_last(F, FAKE_OP_COUNT, &r))
        fail_msg("the fake engine got no request");
    return r;
}

static int bind_unix(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%.100s", path);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
        return -1;
    return fd;
}

static const char PODMAN_VERSION[] =
    "{\"Platform\":{\"Name\":\"linux/amd64/debian-12\"},\"Components\":[{\"Name\":\"Podman "
    "Engine\",\"Version\":\"4.3.1\",\"Details\":{}},{\"Name\":\"Conmon\",\"Version\":\"2.1\"}],"
    "\"Version\":\"4.3.1\",\"ApiVersion\":\"1.41\"}";
static const char DOCKER_VERSION[] =
    "{\"Platform\":{\"Name\":\"\"},\"Components\":[{\"Name\":\"Engine\",\"Version\":"
    "\"20.10.24+dfsg1\"},{\"Name\":\"containerd\",\"Version\":\"1.6.20\"}],"
    "\"Version\":\"20.10.24+dfsg1\",\"ApiVersion\":\"1.41\"}";

/* ---- tests -------------------------------------------------------------- */

/* Asserts success and shows the error message otherwise. */
#define check_ok(call)                                                                             \
    do {                                                                                           \
        if ((call) < 0)                                                                            \
            fail_msg("%s: %s", #call, err_msg(&err));                                              \
    } while (0)

static void test_version(void **state)
{
    (void)state;
    struct engine *e = engine_new(fake_engine_socket(F));
    struct err err = ERR_INIT;
    char *name = NULL, *version = NULL;

    assert_int_equal(engine_oom_flag_reliable(e), -1);
    fake_engine_set_version(F, PODMAN_VERSION);
    check_ok(engine_version(e, &name, &version, &err));
    assert_string_equal(name, "Podman Engine");
    assert_string_equal(version, "4.3.1");
    assert_int_equal(engine_oom_flag_reliable(e), 0);
    free(name);
    free(version);

    fake_engine_set_version(F, DOCKER_VERSION);
    check_ok(engine_version(e, &name, &version, &err));
    assert_string_equal(name, "Docker Engine");
    assert_string_equal(version, "20.10.24+dfsg1");
    free(name);
    free(version);

    fake_engine_set_version(F, "{\"Version\":\"9\"");
    assert_int_equal(engine_version(e, &name, &version, &err), -1);
    assert_int_equal(err.code, ERR_PROTOCOL);
    err_clear(&err);
    engine_free(e);
}

static json_object *create_body(const char *image)
{
    json_object *b = json_object_new_object();
    json_object_object_add(b, "Image", json_object_new_string(image));
    json_object *cmd = json_object_new_array();
    json_object_array_add(cmd, json_object_new_string("python3"));
    json_object_object_add(b, "Cmd", cmd);
    return b;
}

/* Creates a container in the fake's model; returns its id (caller frees). */
static char *create(struct engine *e)
{
    struct err err = ERR_INIT;
    char *id = NULL;
    json_object *b = create_body("mcp-sandboxd-python:latest");
    check_ok(engine_create(e, b, 0, &id, &err));
    json_object_put(b);
    return id;
}

static void test_create(void **state)
{
    (void)state;
    struct engine *e = engine_new(fake_engine_socket(F));
    struct err err = ERR_INIT;
    char *id = NULL;

    json_object *b = create_body("mcp-sandboxd-python:latest");
    check_ok(engine_create(e, b, 0, &id, &err));
    char made[FAKE_ID_MAX + 1];
    assert_true(fake_engine_last_id(F, made, sizeof(made)));
    assert_string_equal(id, made);
    free(id);
    json_object_put(b);
    struct fake_request r = last();
    assert_string_equal(r.method, "POST");
    assert_string_equal(r.target, "/v1.41/containers/create");
    assert_string_equal(r.content_type, "application/json");
    assert_string_equal(r.body, "{\"Image\":\"mcp-sandboxd-python:latest\",\"Cmd\":[\"python3\"]}");

    fake_engine_fault(F, FAKE_OP_CREATE, 404, "{\"message\":\"No such image: missing:1\"}", 1);
    b = create_body("missing:1");
    id = NULL;
    assert_int_equal(engine_create(e, b, 0, &id, &err), -1);
    assert_null(id);
    assert_int_equal(err.code, ERR_NOT_FOUND);
    assert_non_null(strstr(err.msg, "image 'missing:1'"));
    assert_non_null(strstr(err.msg, fake_engine_socket(F)));
    assert_non_null(strstr(err.msg, "make images"));
    assert_non_null(strstr(err.msg, "No such image: missing:1"));
    err_clear(&err);
    json_object_put(b);

    fake_engine_fault(F, FAKE_OP_CREATE, 500, "{\"message\":\"something broke\\nbadly\\u0007\"}",
                      1);
    b = create_body("boom");
    assert_int_equal(engine_create(e, b, 0, &id, &err), -1);
    assert_int_equal(err.code, ERR_ENGINE);
    assert_non_null(strstr(err.msg, "HTTP 500"));
    /* Engine text is shown, with control characters flattened. */
    assert_non_null(strstr(err.msg, "something broke badly"));
    err_clear(&err);
    json_object_put(b);

    fake_engine_fault(F, FAKE_OP_CREATE, 201, "{\"Id\":\"../../etc/passwd\",\"Warnings\":[]}", 1);
    b = create_body("badid");
    assert_int_equal(engine_create(e, b, 0, &id, &err), -1);
    assert_int_equal(err.code, ERR_PROTOCOL);
    assert_null(id);
    err_clear(&err);
    json_object_put(b);
    engine_free(e);
}

static void test_start_kill_remove(void **state)
{
    (void)state;
    struct engine *e = engine_new(fake_engine_socket(F));
    struct err err = ERR_INIT;
    char *id = create(e);
    char *path = xasprintf("/v1.41/containers/%s", id);

    check_ok(engine_start(e, id, 0, &err));
    struct fake_request r = last();
    char *want = xasprintf("%s/start", path);
    assert_string_equal(r.target, want);
    free(want);
    assert_string_equal(r.content_type, "");

    /* Started without anyone attached, it has exited: Docker's 409 "not
     * running" is success for kill. */
    check_ok(engine_kill(e, id, &err));
    r = last();
    want = xasprintf("%s/kill?signal=SIGKILL", path);
    assert_string_equal(r.target, want);
    free(want);

    check_ok(engine_remove(e, id, &err));
    r = last();
    assert_string_equal(r.method, "DELETE");
    want = xasprintf("%s?force=1&v=1", path);
    assert_string_equal(r.target, want);
    free(want);
    assert_true(fake_engine_removed(F, id));
    /* 404 "already gone" is success for remove. */
    check_ok(engine_remove(e, id, &err));
    assert_int_equal(fake_engine_count(F, FAKE_OP_DELETE, id), 2);
    free(id);
    free(path);

    /* Podman's 500 for a stopped container is not an error; a 500 while
     * the container still runs is. */
    fake_engine_set_podman(F, true);
    id = create(e);
    check_ok(engine_start(e, id, 0, &err));
    check_ok(engine_kill(e, id, &err));
    assert_int_equal(fake_engine_count(F, FAKE_OP_INSPECT, id), 1);
    free(id);
    fake_engine_add_container(F, RUNNING_ID, 1, NULL, true);
    fake_engine_fault(F, FAKE_OP_KILL, 500,
                      "{\"cause\":\"container state improper\",\"message\":\"container state "
                      "improper: stopped\",\"response\":500}",
                      1);
    assert_int_equal(engine_kill(e, RUNNING_ID, &err), -1);
    assert_int_equal(err.code, ERR_ENGINE);
    assert_non_null(strstr(err.msg, "container state improper"));
    err_clear(&err);

    /* An unknown container, and an unexpected status, surface with the
     * engine's message. */
    assert_int_equal(engine_start(e, "bbbbbbbbbbbb", 0, &err), -1);
    assert_int_equal(err.code, ERR_NOT_FOUND);
    assert_non_null(strstr(err.msg, "No such container: bbbbbbbbbbbb"));
    err_clear(&err);
    fake_engine_fault(F, FAKE_OP_START, 400, "{\"message\":\"fake engine: no route\"}", 1);
    assert_int_equal(engine_start(e, RUNNING_ID, 0, &err), -1);
    assert_int_equal(err.code, ERR_ENGINE);
    assert_non_null(strstr(err.msg, "HTTP 400"));
    assert_non_null(strstr(err.msg, "fake engine: no route"));
    err_clear(&err);
    engine_free(e);
}

/* One request whatever the failure: retrying is the caller's (the
 * reaper's), which can do other work meanwhile. */
static void test_remove_tries_once(void **state)
{
    (void)state;
    struct engine *e = engine_new(fake_engine_socket(F));
    struct err err = ERR_INIT;
    fake_engine_add_container(F, RUNNING_ID, 1, NULL, true);
    /* Podman's answer for a container that is stopping at that moment. */
    fake_engine_fault(F, FAKE_OP_DELETE, 500,
                      "{\"cause\":\"container state improper\",\"message\":\"container state "
                      "improper\",\"response\":500}",
                      1);
    assert_int_equal(engine_remove(e, RUNNING_ID, &err), -1);
    assert_int_equal(err.code, ERR_ENGINE);
    assert_non_null(strstr(err.msg, "container state improper"));
    err_clear(&err);
    assert_int_equal(fake_engine_count(F, FAKE_OP_DELETE, RUNNING_ID), 1);
    assert_false(fake_engine_removed(F, RUNNING_ID));

    /* An engine that is down: one connection. */
    fake_engine_set_outage(F, true);
    assert_int_equal(engine_remove(e, RUNNING_ID, &err), -1);
    fake_engine_set_outage(F, false);
    assert_int_equal(err.code, ERR_ENGINE);
    err_clear(&err);
    assert_int_equal(fake_engine_dropped(F), 1);

    check_ok(engine_remove(e, RUNNING_ID, &err));
    assert_true(fake_engine_removed(F, RUNNING_ID));
    assert_int_equal(fake_engine_count(F, FAKE_OP_DELETE, RUNNING_ID), 2);
    engine_free(e);
}

static void test_wait_and_inspect(void **state)
{
    (void)state;
    struct engine *e = engine_new(fake_engine_socket(F));
    struct err err = ERR_INIT;
    struct backend_state st = {.running = true};
    struct fake_program oom = {.end = FAKE_END_EXIT, .exit_code = 137, .oom_killed = true};
    fake_engine_set_program(F, &oom);
    char *id = create(e);
    check_ok(engine_start(e, id, 0, &err));

    char runtime[ENGINE_RUNTIME_MAX] = "x";
    check_ok(engine_wait(e, id, 5000, &st, runtime, &err));
    assert_string_equal(runtime, ""); /* created without one */
    assert_false(st.running);
    assert_true(st.oom_killed);
    assert_int_equal(st.exit_code, 137);
    struct fake_request r = last();
    assert_int_equal(r.op, FAKE_OP_INSPECT);
    assert_string_equal(r.id, id);
    assert_true(fake_engine_last(F, FAKE_OP_WAIT, &r));
    assert_non_null(strstr(r.target, "/wait?condition=not-running"));

    memset(&st, 0, sizeof(st));
    check_ok(engine_inspect_state(e, id, &st, &err));
    assert_false(st.running);
    assert_true(st.oom_killed);
    assert_int_equal(st.exit_code, 137);
    free(id);
    engine_free(e);
}

static void test_wait_timeout(void **state)
{
    (void)state;
    struct engine *e = engine_new(fake_engine_socket(F));
    struct err err = ERR_INIT;
    struct backend_state st;
    char runtime[ENGINE_RUNTIME_MAX];
    fake_engine_fault(F, FAKE_OP_WAIT, FAKE_STALL, NULL, 1);
    double t0 = util_now_ms();
    assert_int_equal(engine_wait(e, STALL_ID, 150, &st, runtime, &err), -1);
    double dt = util_now_ms() - t0;
    assert_int_equal(err.code, ERR_TIMEOUT);
    /* The upper bound is only a hang guard. */
    assert_true(dt >= 140 && dt < FAKE_HANG_GUARD_MS);
    assert_true(fake_engine_wait_held(F, 1, FAKE_HANG_GUARD_MS));
    err_clear(&err);
    engine_free(e);
}

static void test_request_timeout_and_caps(void **state)
{
    (void)state;
    struct err err = ERR_INIT;
    struct buf resp;
    buf_init(&resp, ENGINE_HTTP_MAX_RESPONSE);
    long status = 0;
    const char *sock = fake_engine_socket(F);

    assert_int_equal(
        engine_http_request(sock, "GET", "/v1.41/stall", NULL, 0, 150, &status, &resp, &err), -1);
    assert_int_equal(err.code, ERR_TIMEOUT);
    assert_non_null(strstr(err.msg, sock));
    err_clear(&err);

    assert_int_equal(
        engine_http_request(sock, "GET", "/v1.41/big", NULL, 0, 5000, &status, &resp, &err), -1);
    assert_int_equal(err.code, ERR_TOO_BIG);
    err_clear(&err);

    check_ok(
        engine_http_request(sock, "GET", "/v1.41/chunked", NULL, 0, 5000, &status, &resp, &err));
    assert_int_equal(status, 200);
    assert_int_equal(resp.len, 8);
    assert_memory_equal(resp.data, "{\"Id\":1}", 8);

    /* The attach upgrade has its own timeout path. */
    struct engine_http_conn *c = NULL;
    assert_int_equal(engine_http_upgrade(sock, "/v1.41/stall", 150, &c, &err), -1);
    assert_null(c);
    assert_int_equal(err.code, ERR_TIMEOUT);
    err_clear(&err);
    buf_free(&resp);
}

static void test_list_managed(void **state)
{
    (void)state;
    struct engine *e = engine_new(fake_engine_socket(F));
    struct err err = ERR_INIT;
    fake_engine_add_container(F, ECHO_ID, 1700000000,
                              "{\"io.mcp-sandboxd.managed\":\"1\",\"io.mcp-sandboxd.instance\":"
                              "\"inst-1\",\"io.mcp-sandboxd.uid\":\"2000000007\","
                              "\"io.mcp-sandboxd.owner\":\"o:1:2:3\","
                              "\"io.mcp-sandboxd.expires\":\"1700000600\"}",
                              false);
    fake_engine_add_container(F, "not/a/valid/id", 1, "{\"io.mcp-sandboxd.managed\":\"1\"}", false);
    /* A uid label is anyone's to set: only a plain decimal uid counts. */
    fake_engine_add_container(
        F, "bbbbbbbbbbbb", 1700000001,
        "{\"io.mcp-sandboxd.managed\":\"1\",\"io.mcp-sandboxd.uid\":\"4294967296\"}", true);
    fake_engine_add_container(F, "dddddddddddd", 1700000002,
                              "{\"io.mcp-sandboxd.managed\":\"1\",\"io.mcp-sandboxd.uid\":\" 12\"}",
                              true);
    /* Nor is an expiry anything but plain decimal: a malformed one is none. */
    fake_engine_add_container(F, "eeeeeeeeeeee", 1700000003,
                              "{\"io.mcp-sandboxd.managed\":\"1\",\"io.mcp-sandboxd.uid\":"
                              "\"-3002\",\"io.mcp-sandboxd.expires\":\"-1\"}",
                              true);
    /* Not ours: the label filter leaves it out. */
    fake_engine_add_container(F, "cccccccccccc", 1, "{\"other\":\"1\"}", false);
    struct backend_container *list = NULL;
    size_t n = 0;
    check_ok(engine_list_managed(e, 0, &list, &n, &err));
    assert_int_equal(n, 4);
    assert_string_equal(list[0].id, ECHO_ID);
    assert_int_equal(list[0].created, 1700000000LL);
    assert_string_equal(list[0].instance, "inst-1");
    assert_string_equal(list[0].owner, "o:1:2:3");
    assert_int_equal(list[0].expires, 1700000600LL);
    assert_int_equal(list[0].uid, 2000000007LL);
    assert_string_equal(list[1].id, "bbbbbbbbbbbb");
    assert_null(list[1].instance);
    assert_null(list[1].owner);
    assert_int_equal(list[1].expires, 0);
    assert_int_equal(list[1].uid, -1);
    assert_int_equal(list[2].uid, -1);
    assert_string_equal(list[3].id, "eeeeeeeeeeee");
    assert_int_equal(list[3].expires, 0);
    assert_int_equal(list[3].uid, -1);
    backend_container_list_free(list, n);
    struct fake_request r = last();
    assert_string_equal(r.target, "/v1.41/containers/json?all=1&filters="
                                  "%7B%22label%22%3A%5B%22io.mcp-sandboxd.managed%22%5D%7D");
    engine_free(e);
}

static void test_bad_ids_never_reach_engine(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "abc",
        "../../../../v1.41/version",
        "0123456789ab/../x",
        "ABCDEF123456",
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0",
        "0123456789ab?x=1",
        "0123456789ab 1",
    };
    struct engine *e = engine_new(fake_engine_socket(F));
    struct err err = ERR_INIT;
    struct backend_state st;
    char runtime[ENGINE_RUNTIME_MAX];
    struct engine_http_conn *c = NULL;
    int before = fake_engine_nreq(F);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(engine_start(e, bad[i], 0, &err), -1);
        assert_int_equal(err.code, ERR_INVALID);
        assert_int_equal(engine_kill(e, bad[i], &err), -1);
        assert_int_equal(engine_remove(e, bad[i], &err), -1);
        assert_int_equal(engine_wait(e, bad[i], 1000, &st, runtime, &err), -1);
        assert_int_equal(engine_inspect_state(e, bad[i], &st, &err), -1);
        assert_int_equal(engine_attach(e, bad[i], 0, &c, &err), -1);
        assert_int_equal(err.code, ERR_INVALID);
        err_clear(&err);
    }
    assert_null(c);
    assert_int_equal(engine_start(e, NULL, 0, &err), -1);
    err_clear(&err);
    assert_int_equal(fake_engine_nreq(F), before);
    engine_free(e);
}

static void test_unreachable(void **state)
{
    (void)state;
    struct err err = ERR_INIT;
    char *name = NULL, *version = NULL;
    char dir[64];
    snprintf(dir, sizeof(dir), "/tmp/test_engine.XXXXXX");
    assert_non_null(mkdtemp(dir));

    /* No socket at all. */
    char missing[160];
    snprintf(missing, sizeof(missing), "%s/nope.sock", dir);
    struct engine *e = engine_new(missing);
    assert_int_equal(engine_version(e, &name, &version, &err), -1);
    assert_int_equal(err.code, ERR_ENGINE);
    assert_non_null(strstr(err.msg, "cannot reach the container engine at unix://"));
    assert_non_null(strstr(err.msg, missing));
    assert_non_null(strstr(err.msg, "No such file or directory"));
    err_clear(&err);
    struct engine_http_conn *c = NULL;
    assert_int_equal(engine_attach(e, ECHO_ID, 0, &c, &err), -1);
    assert_int_equal(err.code, ERR_ENGINE);
    assert_non_null(strstr(err.msg, missing));
    err_clear(&err);
    engine_free(e);

    /* A socket file nobody listens on: connection refused. */
    char dead[160];
    snprintf(dead, sizeof(dead), "%s/dead.sock", dir);
    int fd = bind_unix(dead);
    assert_true(fd >= 0);
    e = engine_new(dead);
    assert_int_equal(engine_start(e, ECHO_ID, 0, &err), -1);
    assert_int_equal(err.code, ERR_ENGINE);
    assert_non_null(strstr(err.msg, dead));
    assert_non_null(strstr(err.msg, "Connection refused"));
    err_clear(&err);
    engine_free(e);
    close(fd);
    unlink(dead);
    rmdir(dir);
}

struct demux {
    struct buf out[4];
};

static int on_frame(void *ctx, int stream, const char *data, size_t len, struct err *err)
{
    (void)err;
    struct demux *d = ctx;
    return buf_add(&d->out[stream], data, len);
}

static void test_attach_stream(void **state)
{
    (void)state;
    struct engine *e = engine_new(fake_engine_socket(F));
    struct err err = ERR_INIT;
    struct engine_http_conn *c = NULL;
    check_ok(engine_attach(e, ECHO_ID, 0, &c, &err));
    assert_non_null(c);
    assert_true(engine_http_conn_pending(c));
    struct fake_request r = last();
    assert_string_equal(r.target,
                        "/v1.41/containers/" ECHO_ID "/attach?stream=1&stdin=1&stdout=1&stderr=1");
    assert_true(r.upgrade_tcp);

    check_ok(engine_http_conn_send(c, "hello", 5, 1000, &err));

    struct demux d;
    for (int i = 0; i < 4; i++)
        buf_init(&d.out[i], 4096);
    struct engine_stream st;
    engine_stream_init(&st);
    double deadline = util_now_ms() + FAKE_HANG_GUARD_MS;
    for (;;) {
        char chunk[7]; /* small on purpose: frames straddle reads */
        long n = engine_http_conn_recv(c, chunk, sizeof(chunk), &err);
        if (n == -2) {
            assert_false(engine_http_conn_pending(c));
            struct pollfd p = {.fd = engine_http_conn_fd(c), .events = POLLIN};
            assert_true(util_now_ms() < deadline);
            assert_true(poll(&p, 1, 1000) >= 0);
            continue;
        }
        assert_true(n >= 0);
        if (n == 0)
            break;
        check_ok(engine_stream_feed(&st, chunk, (size_t)n, on_frame, &d, &err));
    }
    assert_true(engine_stream_at_boundary(&st));
    assert_int_equal(d.out[1].len, 16);
    assert_memory_equal(d.out[1].data, "early:got hello\n", 16);
    assert_int_equal(d.out[2].len, 5);
    assert_memory_equal(d.out[2].data, "e\0rr\n", 5);
    pthread_mutex_lock(&ECHO.mu);
    size_t in_len = ECHO.in_len;
    char in[sizeof(ECHO.in)];
    memcpy(in, ECHO.in, sizeof(in));
    pthread_mutex_unlock(&ECHO.mu);
    assert_int_equal(in_len, 5);
    assert_memory_equal(in, "hello", 5);

    engine_http_conn_close(c);
    for (int i = 0; i < 4; i++)
        buf_free(&d.out[i]);
    engine_free(e);
}

static void test_attach_refused(void **state)
{
    (void)state;
    struct engine *e = engine_new(fake_engine_socket(F));
    struct err err = ERR_INIT;
    struct engine_http_conn *c = NULL;
    /* The fake answers like Docker: plain text, no length, then close. */
    assert_int_equal(engine_attach(e, MISSING_ID, 0, &c, &err), -1);
    assert_null(c);
    assert_int_equal(err.code, ERR_NOT_FOUND);
    assert_non_null(strstr(err.msg, "No such container: " MISSING_ID));
    err_clear(&err);
    fake_engine_fault(F, FAKE_OP_ATTACH, 404,
                      "{\"cause\":\"no such container\",\"message\":\"no container with name or ID "
                      "\\\"" PODMISS_ID "\\\" found: no such container\",\"response\":404}",
                      1);
    assert_int_equal(engine_attach(e, PODMISS_ID, 0, &c, &err), -1);
    assert_int_equal(err.code, ERR_NOT_FOUND);
    assert_non_null(strstr(err.msg, "no container with name or ID \"" PODMISS_ID "\" found"));
    err_clear(&err);

    /* A chunked error body still yields the engine's message. */
    assert_int_equal(engine_attach(e, CHUNKY_ID, 0, &c, &err), -1);
    assert_int_equal(err.code, ERR_ENGINE);
    assert_non_null(strstr(err.msg, "HTTP 409"));
    assert_non_null(strstr(err.msg, "is paused"));
    err_clear(&err);
    engine_free(e);
}

static void test_engine_message(void **state)
{
    (void)state;
    char *m = engine_http_message("{\"message\":\"x\"}", 15);
    assert_string_equal(m, "x");
    free(m);
    assert_null(engine_http_message("{\"message\":1}", 13));
    assert_null(engine_http_message("{\"cause\":\"x\"}", 13));
    assert_null(engine_http_message("", 0));
    assert_null(engine_http_message(" \r\n", 3));
    /* Plain-text bodies (Docker's failed attach, Go's 404) are shown. */
    m = engine_http_message("No such container: abc\r\n", 24);
    assert_string_equal(m, "No such container: abc");
    free(m);
    m = engine_http_message("404 page not found\n", 19);
    assert_string_equal(m, "404 page not found");
    free(m);
    m = engine_http_message("a\0b\001c", 5);
    assert_string_equal(m, "a b c");
    free(m);
    /* Long messages are capped on a UTF-8 boundary. */
    char big[2000];
    size_t n = 0;
    n += (size_t)snprintf(big, sizeof(big), "{\"message\":\"");
    for (int i = 0; i < 400; i++) {
        memcpy(big + n, "\xc3\xa9", 2);
        n += 2;
    }
    memcpy(big + n, "\"}", 2);
    n += 2;
    m = engine_http_message(big, n);
    assert_non_null(m);
    size_t ml = strlen(m);
    assert_true(ml <= 300 && ml >= 298);
    assert_int_equal(ml % 2, 0);
    free(m);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, fake_start, fake_stop)
    const struct CMUnitTest tests[] = {
        T(test_version),
        T(test_create),
        T(test_start_kill_remove),
        T(test_remove_tries_once),
        T(test_wait_and_inspect),
        T(test_wait_timeout),
        T(test_request_timeout_and_caps),
        T(test_list_managed),
        T(test_bad_ids_never_reach_engine),
        T(test_unreachable),
        T(test_attach_stream),
        T(test_attach_refused),
        cmocka_unit_test(test_engine_message),
    };
#undef T
    return cmocka_run_group_tests(tests, rig_group_setup, rig_group_teardown);
}
