/* engine.c and engine_http.c against a fake Engine API served in-process
 * on a unix socket: canned answers, a stalled answer, an oversized one,
 * and an attach upgrade that streams multiplexed frames. */
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

#define GOOD_ID    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define STALL_ID   "aaaaaaaaaaaa"
#define MISSING_ID "deadbeef0404"
#define CHUNKY_ID  "c0ffee000404"
#define PODMISS_ID "deadbeef0405"
#define STOPPED_ID "0000000000a1" /* kill: 500 (Podman's answer when stopped) */
#define RUNNING_ID "0000000000a2" /* kill: 500 while still running */

/* What the fake saw last; tests read a copy (an assertion must never
 * longjmp out while holding the mutex the server thread needs). */
struct record {
    int nreq;
    char method[16];
    char target[1024];
    char ctype[128];
    bool upgrade_tcp;
    char body[8192];
    size_t body_len;
    char attach_in[64];
    size_t attach_in_len;
};

struct fake {
    char dir[64];
    char path[128];
    int lfd;
    int stop[2];
    pthread_t th;

    pthread_mutex_t mu; /* guards rec and version_body */
    struct record rec;
    const char *version_body;
};

static struct fake *F; /* the one fake engine, set up per group */

/* ---- the fake engine ---------------------------------------------------- */

static bool wait_readable(struct fake *f, int fd)
{
    struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = f->stop[0], .events = POLLIN}};
    for (;;) {
        int r = poll(p, 2, -1);
        if (r < 0 && errno == EINTR)
            continue;
        return r > 0 && !(p[1].revents & POLLIN);
    }
}

static void write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
        if (w <= 0)
            return;
        c += w;
        n -= (size_t)w;
    }
}

static void respond(int fd, int status, const char *reason, const char *body)
{
    char head[256];
    size_t n = body ? strlen(body) : 0;
    int hl = snprintf(head, sizeof(head),
                      "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
                      "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                      status, reason, n);
    write_all(fd, head, (size_t)hl);
    if (n)
        write_all(fd, body, n);
}

/* Holds the connection without answering until the client gives up. */
static void stall(struct fake *f, int fd)
{
    char tmp[256];
    while (wait_readable(f, fd) && recv(fd, tmp, sizeof(tmp), 0) > 0)
        ;
}

static void frame(char *out, int stream, const char *data, uint32_t len)
{
    unsigned char h[8] = {(unsigned char)stream,
                          0,
                          0,
                          0,
                          (unsigned char)(len >> 24),
                          (unsigned char)(len >> 16),
                          (unsigned char)(len >> 8),
                          (unsigned char)len};
    memcpy(out, h, 8);
    memcpy(out + 8, data, len);
}

static void serve_attach(struct fake *f, int fd)
{
    /* The first frame rides in the same write as the answer head, so the
     * client must keep bytes read past the head. */
    char first[256];
    static const char head[] = "HTTP/1.1 101 UPGRADED\r\nContent-Type: "
                               "application/vnd.docker.raw-stream\r\nConnection: Upgrade\r\n"
                               "Upgrade: tcp\r\n\r\n";
    memcpy(first, head, sizeof(head) - 1);
    frame(first + sizeof(head) - 1, 1, "early:", 6);
    write_all(fd, first, sizeof(head) - 1 + 8 + 6);

    char in[5];
    size_t got = 0;
    while (got < sizeof(in) && wait_readable(f, fd)) {
        ssize_t r = recv(fd, in + got, sizeof(in) - got, 0);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    pthread_mutex_lock(&f->mu);
    memcpy(f->rec.attach_in, in, got);
    f->rec.attach_in_len = got;
    pthread_mutex_unlock(&f->mu);

    /* "got hello\n" on stdout and "e\0rr\n" on stderr, cut mid-header. */
    char out[128];
    char reply[16];
    memcpy(reply, "got ", 4);
    memcpy(reply + 4, in, got);
    reply[4 + got] = '\n';
    size_t n1 = 4 + got + 1;
    frame(out, 1, reply, (uint32_t)n1);
    frame(out + 8 + n1, 2, "e\0rr\n", 5);
    frame(out + 8 + n1 + 8 + 5, 1, "", 0);
    size_t total = 8 + n1 + 8 + 5 + 8;
    write_all(fd, out, 3);
    usleep(2000);
    write_all(fd, out + 3, 8 + n1 + 4 - 3);
    usleep(2000);
    write_all(fd, out + 8 + n1 + 4, total - (8 + n1 + 4));
}

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void route(struct fake *f, int fd, const char *m, const char *t, const char *body)
{
    char chunked_head[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                          "Transfer-Encoding: chunked\r\n\r\n"
                          "7\r\n{\"Id\":1\r\n1\r\n}\r\n0\r\n\r\n";
    if (!strcmp(m, "GET") && !strcmp(t, "/v1.41/version")) {
        pthread_mutex_lock(&f->mu);
        const char *v = f->version_body;
        pthread_mutex_unlock(&f->mu);
        respond(fd, 200, "OK", v);
    } else if (!strcmp(m, "POST") && !strcmp(t, "/v1.41/containers/create")) {
        if (strstr(body, "\"Image\":\"missing:1\""))
            respond(fd, 404, "Not Found", "{\"message\":\"No such image: missing:1\"}");
        else if (strstr(body, "\"Image\":\"boom\""))
            respond(fd, 500, "Internal Server Error",
                    "{\"message\":\"something broke\\nbadly\\u0007\"}");
        else if (strstr(body, "\"Image\":\"badid\""))
            respond(fd, 201, "Created", "{\"Id\":\"../../etc/passwd\",\"Warnings\":[]}");
        else
            respond(fd, 201, "Created", "{\"Id\":\"" GOOD_ID "\",\"Warnings\":[]}\n");
    } else if (!strcmp(m, "POST") && !strcmp(t, "/v1.41/containers/" GOOD_ID "/start")) {
        respond(fd, 204, "No Content", NULL);
    } else if (!strcmp(m, "POST") &&
               !strcmp(t, "/v1.41/containers/" GOOD_ID "/kill?signal=SIGKILL")) {
        respond(fd, 409, "Conflict", "{\"message\":\"container is not running\"}");
    } else if (!strcmp(m, "DELETE") && !strcmp(t, "/v1.41/containers/" GOOD_ID "?force=1&v=1")) {
        respond(fd, 404, "Not Found", "{\"message\":\"No such container\"}");
    } else if (!strcmp(m, "POST") &&
               !strcmp(t, "/v1.41/containers/" GOOD_ID "/wait?condition=not-running")) {
        respond(fd, 200, "OK", "{\"StatusCode\":137,\"Error\":null}\n");
    } else if (!strcmp(m, "GET") && !strcmp(t, "/v1.41/containers/" GOOD_ID "/json")) {
        respond(fd, 200, "OK",
                "{\"Id\":\"" GOOD_ID "\",\"State\":{\"Status\":\"exited\",\"Running\":false,"
                "\"OOMKilled\":true,\"ExitCode\":137}}");
    } else if (!strcmp(m, "GET") && starts_with(t, "/v1.41/containers/json?all=1&filters=")) {
        respond(fd, 200, "OK",
                "[{\"Id\":\"" GOOD_ID "\",\"Created\":1700000000,\"Labels\":{"
                "\"io.mcp-sandboxd.managed\":\"1\",\"io.mcp-sandboxd.instance\":\"inst-1\"}},"
                "{\"Id\":\"not/a/valid/id\",\"Created\":1},"
                "{\"Id\":\"bbbbbbbbbbbb\",\"Created\":1700000001,\"Labels\":null}]");
    } else if (!strcmp(m, "POST") && starts_with(t, "/v1.41/containers/" GOOD_ID "/attach?")) {
        serve_attach(f, fd);
    } else if (!strcmp(m, "POST") && starts_with(t, "/v1.41/containers/" MISSING_ID "/attach?")) {
        /* Docker answers a failed attach in plain text, then closes. */
        static const char r[] = "HTTP/1.1 404 Not Found\r\n"
                                "Content-Type: application/vnd.docker.raw-stream\r\n\r\n"
                                "No such container: " MISSING_ID "\r\n";
        write_all(fd, r, sizeof(r) - 1);
    } else if (!strcmp(m, "POST") && starts_with(t, "/v1.41/containers/" PODMISS_ID "/attach?")) {
        respond(fd, 404, "Not Found",
                "{\"cause\":\"no such container\",\"message\":\"no container with name or ID "
                "\\\"" PODMISS_ID "\\\" found: no such container\",\"response\":404}");
    } else if (!strcmp(m, "POST") &&
               (!strcmp(t, "/v1.41/containers/" STOPPED_ID "/kill?signal=SIGKILL") ||
                !strcmp(t, "/v1.41/containers/" RUNNING_ID "/kill?signal=SIGKILL"))) {
        respond(fd, 500, "Internal Server Error",
                "{\"cause\":\"container state improper\",\"message\":\"container state "
                "improper: stopped\",\"response\":500}");
    } else if (!strcmp(m, "GET") && !strcmp(t, "/v1.41/containers/" STOPPED_ID "/json")) {
        respond(fd, 200, "OK", "{\"State\":{\"Running\":false,\"ExitCode\":0}}");
    } else if (!strcmp(m, "GET") && !strcmp(t, "/v1.41/containers/" RUNNING_ID "/json")) {
        respond(fd, 200, "OK", "{\"State\":{\"Running\":true,\"ExitCode\":0}}");
    } else if (!strcmp(m, "POST") && starts_with(t, "/v1.41/containers/" CHUNKY_ID "/attach?")) {
        static const char r[] = "HTTP/1.1 409 Conflict\r\nTransfer-Encoding: chunked\r\n\r\n"
                                "c\r\n{\"message\":\"\r\n"
                                "b\r\nis paused\"}\r\n0\r\n\r\n";
        write_all(fd, r, sizeof(r) - 1);
    } else if (!strcmp(t, "/v1.41/stall") ||
               !strcmp(t, "/v1.41/containers/" STALL_ID "/wait?condition=not-running")) {
        stall(f, fd);
    } else if (!strcmp(m, "GET") && !strcmp(t, "/v1.41/big")) {
        size_t n = ENGINE_HTTP_MAX_RESPONSE + 1024u;
        char *big = malloc(n + 1);
        memset(big, 'x', n);
        big[n] = '\0';
        respond(fd, 200, "OK", big);
        free(big);
    } else if (!strcmp(m, "GET") && !strcmp(t, "/v1.41/chunked")) {
        write_all(fd, chunked_head, strlen(chunked_head));
    } else {
        respond(fd, 400, "Bad Request", "{\"message\":\"fake engine: no route\"}");
    }
}

static size_t header_value(const char *head, const char *name, char *out, size_t n)
{
    const char *p = strcasestr(head, name);
    if (!p)
        return 0;
    p += strlen(name);
    while (*p == ' ')
        p++;
    size_t i = 0;
    while (p[i] && p[i] != '\r' && i + 1 < n) {
        out[i] = p[i];
        i++;
    }
    out[i] = '\0';
    return i;
}

static void handle(struct fake *f, int fd)
{
    char req[16384];
    size_t len = 0;
    char *end = NULL;
    while (!end && len < sizeof(req) - 1 && wait_readable(f, fd)) {
        ssize_t r = recv(fd, req + len, sizeof(req) - 1 - len, 0);
        if (r <= 0)
            return;
        len += (size_t)r;
        req[len] = '\0';
        end = strstr(req, "\r\n\r\n");
    }
    if (!end)
        return;
    *end = '\0';
    char *body = end + 4;
    size_t have = len - (size_t)(body - req);

    char cl[32] = "", m[16] = "", t[1024] = "", ctype[128] = "", upg[32] = "";
    header_value(req, "\r\nContent-Length:", cl, sizeof(cl));
    header_value(req, "\r\nContent-Type:", ctype, sizeof(ctype));
    header_value(req, "\r\nUpgrade:", upg, sizeof(upg));
    size_t want = (size_t)strtoul(cl, NULL, 10);
    while (have < want && body + have < req + sizeof(req) - 1 && wait_readable(f, fd)) {
        ssize_t r = recv(fd, body + have, (size_t)(req + sizeof(req) - 1 - (body + have)), 0);
        if (r <= 0)
            return;
        have += (size_t)r;
    }
    body[have] = '\0';
    if (sscanf(req, "%15s %1023s", m, t) != 2)
        return;

    pthread_mutex_lock(&f->mu);
    f->rec.nreq++;
    snprintf(f->rec.method, sizeof(f->rec.method), "%s", m);
    snprintf(f->rec.target, sizeof(f->rec.target), "%s", t);
    snprintf(f->rec.ctype, sizeof(f->rec.ctype), "%s", ctype);
    f->rec.upgrade_tcp = strcmp(upg, "tcp") == 0;
    f->rec.body_len = have < sizeof(f->rec.body) ? have : sizeof(f->rec.body) - 1;
    memcpy(f->rec.body, body, f->rec.body_len);
    f->rec.body[f->rec.body_len] = '\0';
    pthread_mutex_unlock(&f->mu);

    route(f, fd, m, t, body);
}

static void *serve(void *arg)
{
    struct fake *f = arg;
    while (wait_readable(f, f->lfd)) {
        int fd = accept(f->lfd, NULL, NULL);
        if (fd < 0)
            continue;
        handle(f, fd);
        close(fd);
    }
    return NULL;
}

static int bind_unix(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
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

static int fake_start(void **state)
{
    (void)state;
    struct err err = ERR_INIT;
    if (engine_http_global_init(&err) < 0)
        return -1;
    struct fake *f = calloc(1, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/test_engine.XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->path, sizeof(f->path), "%s/engine.sock", f->dir);
    pthread_mutex_init(&f->mu, NULL);
    f->version_body = PODMAN_VERSION;
    f->lfd = bind_unix(f->path);
    if (f->lfd < 0 || listen(f->lfd, 16) < 0 || pipe(f->stop) < 0)
        return -1;
    if (pthread_create(&f->th, NULL, serve, f) != 0)
        return -1;
    F = f;
    return 0;
}

static int fake_stop(void **state)
{
    (void)state;
    struct fake *f = F;
    if (write(f->stop[1], "x", 1) != 1)
        return -1;
    pthread_join(f->th, NULL);
    close(f->lfd);
    close(f->stop[0]);
    close(f->stop[1]);
    unlink(f->path);
    rmdir(f->dir);
    pthread_mutex_destroy(&f->mu);
    free(f);
    engine_http_global_cleanup();
    return 0;
}

static struct record last(void)
{
    pthread_mutex_lock(&F->mu);
    struct record r = F->rec;
    pthread_mutex_unlock(&F->mu);
    return r;
}

static int nreq(void)
{
    return last().nreq;
}

/* ---- tests -------------------------------------------------------------- */

/* Asserts success and shows the error message otherwise. */
#define check_ok(call)                                                                             \
    do {                                                                                           \
        if ((call) < 0)                                                                            \
            fail_msg("%s: %s", #call, err_msg(&err));                                              \
    } while (0)

static void set_version_body(const char *body)
{
    pthread_mutex_lock(&F->mu);
    F->version_body = body;
    pthread_mutex_unlock(&F->mu);
}

static void test_version(void **state)
{
    (void)state;
    struct engine *e = engine_new(F->path);
    struct err err = ERR_INIT;
    char *name = NULL, *version = NULL;

    set_version_body(PODMAN_VERSION);
    check_ok(engine_version(e, &name, &version, &err));
    assert_string_equal(name, "Podman Engine");
    assert_string_equal(version, "4.3.1");
    free(name);
    free(version);

    set_version_body(DOCKER_VERSION);
    check_ok(engine_version(e, &name, &version, &err));
    assert_string_equal(name, "Docker Engine");
    assert_string_equal(version, "20.10.24+dfsg1");
    free(name);
    free(version);

    set_version_body("{\"Version\":\"9\"");
    assert_int_equal(engine_version(e, &name, &version, &err), -1);
    assert_int_equal(err.code, ERR_PROTOCOL);
    err_clear(&err);
    set_version_body(PODMAN_VERSION);
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

static void test_create(void **state)
{
    (void)state;
    struct engine *e = engine_new(F->path);
    struct err err = ERR_INIT;
    char *id = NULL;

    json_object *b = create_body("mcp-sandboxd-python:latest");
    check_ok(engine_create(e, b, 0, &id, &err));
    assert_string_equal(id, GOOD_ID);
    free(id);
    json_object_put(b);
    struct record r = last();
    assert_string_equal(r.method, "POST");
    assert_string_equal(r.target, "/v1.41/containers/create");
    assert_string_equal(r.ctype, "application/json");
    assert_string_equal(r.body, "{\"Image\":\"mcp-sandboxd-python:latest\",\"Cmd\":[\"python3\"]}");

    b = create_body("missing:1");
    id = NULL;
    assert_int_equal(engine_create(e, b, 0, &id, &err), -1);
    assert_null(id);
    assert_int_equal(err.code, ERR_NOT_FOUND);
    assert_non_null(strstr(err.msg, "image 'missing:1'"));
    assert_non_null(strstr(err.msg, F->path));
    assert_non_null(strstr(err.msg, "make images"));
    err_clear(&err);
    json_object_put(b);

    b = create_body("boom");
    assert_int_equal(engine_create(e, b, 0, &id, &err), -1);
    assert_int_equal(err.code, ERR_ENGINE);
    assert_non_null(strstr(err.msg, "HTTP 500"));
    /* Engine text is shown, with control characters flattened. */
    assert_non_null(strstr(err.msg, "something broke badly"));
    err_clear(&err);
    json_object_put(b);

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
    struct engine *e = engine_new(F->path);
    struct err err = ERR_INIT;

    check_ok(engine_start(e, GOOD_ID, 0, &err));
    struct record r = last();
    assert_string_equal(r.target, "/v1.41/containers/" GOOD_ID "/start");
    assert_string_equal(r.ctype, "");

    /* 409 "not running" is success for kill. */
    check_ok(engine_kill(e, GOOD_ID, &err));
    r = last();
    assert_string_equal(r.target, "/v1.41/containers/" GOOD_ID "/kill?signal=SIGKILL");

    /* 404 "already gone" is success for remove. */
    check_ok(engine_remove(e, GOOD_ID, &err));
    r = last();
    assert_string_equal(r.method, "DELETE");
    assert_string_equal(r.target, "/v1.41/containers/" GOOD_ID "?force=1&v=1");

    /* Podman's 500 for a stopped container is not an error; a 500 while
     * the container still runs is. */
    check_ok(engine_kill(e, STOPPED_ID, &err));
    assert_int_equal(engine_kill(e, RUNNING_ID, &err), -1);
    assert_int_equal(err.code, ERR_ENGINE);
    assert_non_null(strstr(err.msg, "container state improper"));
    err_clear(&err);

    /* The fake has no route for this id: a 400 must surface with the
     * engine's message. */
    assert_int_equal(engine_start(e, "bbbbbbbbbbbb", 0, &err), -1);
    assert_int_equal(err.code, ERR_ENGINE);
    assert_non_null(strstr(err.msg, "fake engine: no route"));
    err_clear(&err);
    engine_free(e);
}

static void test_wait_and_inspect(void **state)
{
    (void)state;
    struct engine *e = engine_new(F->path);
    struct err err = ERR_INIT;
    struct backend_state st = {.running = true};

    check_ok(engine_wait(e, GOOD_ID, 5000, &st, &err));
    assert_false(st.running);
    assert_true(st.oom_killed);
    assert_int_equal(st.exit_code, 137);
    struct record r = last();
    assert_string_equal(r.target, "/v1.41/containers/" GOOD_ID "/json");

    memset(&st, 0, sizeof(st));
    check_ok(engine_inspect_state(e, GOOD_ID, &st, &err));
    assert_true(st.oom_killed);
    assert_int_equal(st.exit_code, 137);
    engine_free(e);
}

static void test_wait_timeout(void **state)
{
    (void)state;
    struct engine *e = engine_new(F->path);
    struct err err = ERR_INIT;
    struct backend_state st;
    double t0 = util_now_ms();
    assert_int_equal(engine_wait(e, STALL_ID, 150, &st, &err), -1);
    double dt = util_now_ms() - t0;
    assert_int_equal(err.code, ERR_TIMEOUT);
    assert_true(dt >= 140 && dt < 1500);
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

    assert_int_equal(
        engine_http_request(F->path, "GET", "/v1.41/stall", NULL, 0, 150, &status, &resp, &err),
        -1);
    assert_int_equal(err.code, ERR_TIMEOUT);
    assert_non_null(strstr(err.msg, F->path));
    err_clear(&err);

    assert_int_equal(
        engine_http_request(F->path, "GET", "/v1.41/big", NULL, 0, 5000, &status, &resp, &err), -1);
    assert_int_equal(err.code, ERR_TOO_BIG);
    err_clear(&err);

    check_ok(
        engine_http_request(F->path, "GET", "/v1.41/chunked", NULL, 0, 5000, &status, &resp, &err));
    assert_int_equal(status, 200);
    assert_int_equal(resp.len, 8);
    assert_memory_equal(resp.data, "{\"Id\":1}", 8);

    /* The attach upgrade has its own timeout path. */
    struct engine_http_conn *c = NULL;
    assert_int_equal(engine_http_upgrade(F->path, "/v1.41/stall", 150, &c, &err), -1);
    assert_null(c);
    assert_int_equal(err.code, ERR_TIMEOUT);
    err_clear(&err);
    buf_free(&resp);
}

static void test_list_managed(void **state)
{
    (void)state;
    struct engine *e = engine_new(F->path);
    struct err err = ERR_INIT;
    struct backend_container *list = NULL;
    size_t n = 0;
    check_ok(engine_list_managed(e, 0, &list, &n, &err));
    assert_int_equal(n, 2);
    assert_string_equal(list[0].id, GOOD_ID);
    assert_int_equal(list[0].created, 1700000000LL);
    assert_string_equal(list[0].instance, "inst-1");
    assert_string_equal(list[1].id, "bbbbbbbbbbbb");
    assert_null(list[1].instance);
    backend_container_list_free(list, n);
    struct record r = last();
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
    struct engine *e = engine_new(F->path);
    struct err err = ERR_INIT;
    struct backend_state st;
    struct engine_http_conn *c = NULL;
    int before = nreq();
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(engine_start(e, bad[i], 0, &err), -1);
        assert_int_equal(err.code, ERR_INVALID);
        assert_int_equal(engine_kill(e, bad[i], &err), -1);
        assert_int_equal(engine_remove(e, bad[i], &err), -1);
        assert_int_equal(engine_wait(e, bad[i], 1000, &st, &err), -1);
        assert_int_equal(engine_inspect_state(e, bad[i], &st, &err), -1);
        assert_int_equal(engine_attach(e, bad[i], 0, &c, &err), -1);
        assert_int_equal(err.code, ERR_INVALID);
        err_clear(&err);
    }
    assert_null(c);
    assert_int_equal(engine_start(e, NULL, 0, &err), -1);
    err_clear(&err);
    assert_int_equal(nreq(), before);
    engine_free(e);
}

static void test_unreachable(void **state)
{
    (void)state;
    struct err err = ERR_INIT;
    char *name = NULL, *version = NULL;

    /* No socket at all. */
    char missing[160];
    snprintf(missing, sizeof(missing), "%s/nope.sock", F->dir);
    struct engine *e = engine_new(missing);
    assert_int_equal(engine_version(e, &name, &version, &err), -1);
    assert_int_equal(err.code, ERR_ENGINE);
    assert_non_null(strstr(err.msg, "cannot reach the container engine at unix://"));
    assert_non_null(strstr(err.msg, missing));
    assert_non_null(strstr(err.msg, "No such file or directory"));
    err_clear(&err);
    struct engine_http_conn *c = NULL;
    assert_int_equal(engine_attach(e, GOOD_ID, 0, &c, &err), -1);
    assert_int_equal(err.code, ERR_ENGINE);
    assert_non_null(strstr(err.msg, missing));
    err_clear(&err);
    engine_free(e);

    /* A socket file nobody listens on: connection refused. */
    char dead[160];
    snprintf(dead, sizeof(dead), "%s/dead.sock", F->dir);
    int fd = bind_unix(dead);
    assert_true(fd >= 0);
    e = engine_new(dead);
    assert_int_equal(engine_start(e, GOOD_ID, 0, &err), -1);
    assert_int_equal(err.code, ERR_ENGINE);
    assert_non_null(strstr(err.msg, dead));
    assert_non_null(strstr(err.msg, "Connection refused"));
    err_clear(&err);
    engine_free(e);
    close(fd);
    unlink(dead);
}

struct demux {
    struct buf out[4];
};

static int on_frame(void *ctx, int stream, const char *data, size_t len, struct err *err)
{
    (void)err;
    struct demux *d = ctx;
    assert_int_equal(buf_add(&d->out[stream], data, len), 0);
    return 0;
}

static void test_attach_stream(void **state)
{
    (void)state;
    struct engine *e = engine_new(F->path);
    struct err err = ERR_INIT;
    struct engine_http_conn *c = NULL;
    check_ok(engine_attach(e, GOOD_ID, 0, &c, &err));
    assert_non_null(c);
    assert_true(engine_http_conn_pending(c));
    struct record r = last();
    assert_string_equal(r.target,
                        "/v1.41/containers/" GOOD_ID "/attach?stream=1&stdin=1&stdout=1&stderr=1");
    assert_true(r.upgrade_tcp);

    check_ok(engine_http_conn_send(c, "hello", 5, 1000, &err));

    struct demux d;
    for (int i = 0; i < 4; i++)
        buf_init(&d.out[i], 4096);
    struct engine_stream st;
    engine_stream_init(&st);
    double deadline = util_now_ms() + 3000;
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
    r = last();
    assert_int_equal(r.attach_in_len, 5);
    assert_memory_equal(r.attach_in, "hello", 5);

    engine_http_conn_close(c);
    for (int i = 0; i < 4; i++)
        buf_free(&d.out[i]);
    engine_free(e);
}

static void test_attach_refused(void **state)
{
    (void)state;
    struct engine *e = engine_new(F->path);
    struct err err = ERR_INIT;
    struct engine_http_conn *c = NULL;
    assert_int_equal(engine_attach(e, MISSING_ID, 0, &c, &err), -1);
    assert_null(c);
    assert_int_equal(err.code, ERR_NOT_FOUND);
    assert_non_null(strstr(err.msg, "No such container: " MISSING_ID));
    err_clear(&err);
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
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version),           cmocka_unit_test(test_create),
        cmocka_unit_test(test_start_kill_remove), cmocka_unit_test(test_wait_and_inspect),
        cmocka_unit_test(test_wait_timeout),      cmocka_unit_test(test_request_timeout_and_caps),
        cmocka_unit_test(test_list_managed),      cmocka_unit_test(test_bad_ids_never_reach_engine),
        cmocka_unit_test(test_unreachable),       cmocka_unit_test(test_attach_stream),
        cmocka_unit_test(test_attach_refused),    cmocka_unit_test(test_engine_message),
    };
    return cmocka_run_group_tests(tests, fake_start, fake_stop);
}
