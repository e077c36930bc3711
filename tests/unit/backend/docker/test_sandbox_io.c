/* The Docker backend's create and start against the fake Engine API
 * (tests/fake_engine): how a sandbox's streams reach the daemon
 * (sandbox_io.c: the socket channel, the attach stream, the fallback from
 * one to the other) and how its seccomp profile reaches the engine
 * (inline for Docker, a file for Podman). Every container made is removed;
 * no socket directory outlives a start. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <dirent.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "backend/docker/egress_sock.h"
#include "backend/docker/engine_http.h"
#include "backend/docker/seccomp_profile.h"
#include "unit/backend/docker/docker_rig.h"
#include "unit/rig.h"

struct rig {
    struct fake_engine *fe;
    char io_dir[64]; /* --sandbox-io-dir: empty again after every test */
};

static struct backend *open_backend(struct rig *g, const char *mode)
{
    struct docker_options opts = {.sandbox_io = mode, .sandbox_io_dir = g->io_dir};
    return docker_backend_new(fake_engine_socket(g->fe), NULL, &opts);
}

static int setup(void **state)
{
    struct rig *g = xcalloc(1, sizeof(*g));
    g->fe = fake_engine_start();
    snprintf(g->io_dir, sizeof(g->io_dir), "/tmp/sandbox_io.XXXXXX");
    if (!g->fe || !mkdtemp(g->io_dir))
        return -1;
    struct fake_program p = {.out = "1\n", .out_len = 2};
    fake_engine_set_program(g->fe, &p);
    *state = g;
    return 0;
}

static int teardown(void **state)
{
    struct rig *g = *state;
    fake_engine_stop(g->fe);
    int left = rmdir(g->io_dir);
    free(g);
    if (left != 0)
        fail_msg("the sandbox I/O directory is not empty");
    return 0;
}

/* create then start; the result of start, *id and the create body kept. */
static int create_start(struct rig *g, struct backend *b, const struct backend_spec *spec,
                        bool fallback, char **id, struct fake_request *create, struct err *err)
{
    struct backend_stream *s = NULL;
    int rc = docker_rig_create_start(b, spec, fallback, 0, id, &s, err);
    assert_true(fake_engine_last(g->fe, FAKE_OP_CREATE, create));
    assert_true(rc == 0 ? s != NULL : s == NULL);
    backend_stream_close(s);
    return rc;
}

/* create_start, which must succeed. */
static void start_ok(struct rig *g, struct backend *b, const struct backend_spec *spec,
                     bool fallback, char **id, struct fake_request *create)
{
    struct err err = ERR_INIT;
    if (create_start(g, b, spec, fallback, id, create, &err) != 0)
        fail_msg("start: %s", err_msg(&err));
}

static void remove_container(struct backend *b, char *id)
{
    struct err err = ERR_INIT;
    if (backend_remove(b, id, &err) < 0)
        fail_msg("backend_remove: %s", err_msg(&err));
    free(id);
}

/* --sandbox-io socket: the connector runs the command, the directory is
 * bound in, nothing is attached. */
static void test_socket(void **state)
{
    struct rig *g = *state;
    struct backend *b = open_backend(g, "socket");
    struct backend_spec spec = docker_rig_spec("img:1");
    assert_string_equal(backend_io_name(b, &spec), "socket");
    char *id = NULL;
    struct fake_request create;
    start_ok(g, b, &spec, false, &id, &create);
    assert_non_null(strstr(create.body, "\"Cmd\":[\"perl\",\"-e\",\""));
    assert_non_null(strstr(create.body, ":\\/run\\/mcpsbx-io:ro\"]"));
    /* The connector runs the spec's command, after its socket's path. */
    assert_non_null(strstr(create.body, "\\/run\\/mcpsbx-io\\/io.sock\",\"python3\",\"-c\""));
    assert_non_null(strstr(create.body, "\"OpenStdin\":false"));
    assert_int_equal(fake_engine_count(g->fe, FAKE_OP_ATTACH, id), 0);
    assert_int_equal(fake_engine_count(g->fe, FAKE_OP_START, id), 1);
    remove_container(b, id);
    backend_free(b);
}

/* A sandbox that ends without connecting (an image without perl) asks
 * for another (BACKEND_RETRY); its image attaches from then on, and so
 * does any sandbox created with fallback. */
static void test_fallback_to_attach(void **state)
{
    struct rig *g = *state;
    struct fake_program p = {.out = "1\n", .out_len = 2, .no_connect = true};
    fake_engine_set_program(g->fe, &p);
    struct backend *b = open_backend(g, "socket");
    struct backend_spec spec = docker_rig_spec("img:noperl");
    struct backend_spec other = docker_rig_spec("img:other");
    char *id = NULL;
    struct fake_request create;
    struct err err = ERR_INIT;
    assert_int_equal(create_start(g, b, &spec, false, &id, &create, &err), BACKEND_RETRY);
    assert_non_null(strstr(err_msg(&err), "exited"));
    err_clear(&err);
    assert_non_null(strstr(create.body, "\"Binds\""));
    remove_container(b, id);
    assert_string_equal(backend_io_name(b, &spec), "attach");
    assert_string_equal(backend_io_name(b, &other), "socket");

    fake_engine_set_program(g->fe, &(struct fake_program){.out = "1\n", .out_len = 2});
    for (int fallback = 1; fallback >= 0; fallback--) {
        start_ok(g, b, &spec, fallback, &id, &create);
        assert_null(strstr(create.body, "Binds"));
        assert_non_null(strstr(create.body, "\"Cmd\":[\"python3\""));
        assert_int_equal(fake_engine_count(g->fe, FAKE_OP_ATTACH, id), 1);
        remove_container(b, id);
    }
    /* fallback attaches whatever the image. */
    start_ok(g, b, &other, true, &id, &create);
    assert_null(strstr(create.body, "Binds"));
    remove_container(b, id);
    backend_free(b);
}

/* --sandbox-io attach, no options at all, a gVisor runtime (its file
 * proxy does not pass host sockets): attached. */
static void test_attach_choices(void **state)
{
    struct rig *g = *state;
    struct backend_spec spec = docker_rig_spec("img:1");
    struct backend *b = open_backend(g, "attach");
    assert_string_equal(backend_io_name(b, &spec), "attach");
    backend_free(b);
    b = docker_backend_new(fake_engine_socket(g->fe), NULL, NULL);
    assert_string_equal(backend_io_name(b, &spec), "attach");
    backend_free(b);

    b = open_backend(g, "socket");
    static const char *const gvisor[] = {"runsc", "runsc-kvm", "my-gvisor"};
    for (size_t i = 0; i < ARRAY_SIZE(gvisor); i++) {
        spec.runtime = gvisor[i];
        assert_string_equal(backend_io_name(b, &spec), "attach");
    }
    char *id = NULL;
    struct fake_request create;
    spec.runtime = "runsc";
    start_ok(g, b, &spec, false, &id, &create);
    assert_non_null(strstr(create.body, "\"Runtime\":\"runsc\""));
    assert_null(strstr(create.body, "Binds"));
    assert_int_equal(fake_engine_count(g->fe, FAKE_OP_ATTACH, id), 1);
    remove_container(b, id);
    spec.runtime = "runc";
    assert_string_equal(backend_io_name(b, &spec), "socket");
    backend_free(b);
}

/* A socket directory others may write is refused: sockets are off for
 * good, every sandbox attaches. */
static void test_socket_dir_unsafe(void **state)
{
    struct rig *g = *state;
    assert_int_equal(chmod(g->io_dir, 0777), 0);
    struct backend *b = open_backend(g, "socket");
    struct backend_spec spec = docker_rig_spec("img:1");
    char *id = NULL;
    struct fake_request create;
    start_ok(g, b, &spec, false, &id, &create);
    assert_null(strstr(create.body, "Binds"));
    assert_int_equal(fake_engine_count(g->fe, FAKE_OP_ATTACH, id), 1);
    remove_container(b, id);
    assert_string_equal(backend_io_name(b, &spec), "attach");
    backend_free(b);
}

/* The egress socket in the sandbox I/O directory (there must be one
 * only), or NULL. */
static char *find_egress_socket(const struct rig *g)
{
    DIR *d = opendir(g->io_dir);
    assert_non_null(d);
    char *found = NULL;
    for (const struct dirent *e; (e = readdir(d));) {
        char *path = xasprintf("%s/%s/%s", g->io_dir, e->d_name, EGRESS_SOCK_NAME);
        struct stat st;
        if (e->d_name[0] != '.' && lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
            assert_null(found);
            found = path;
        } else {
            free(path);
        }
    }
    closedir(d);
    return found;
}

static int connect_unix(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(fd >= 0);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    return fd;
}

/* A pending set-up dropped before start leaves no socket directory. */
static void test_pending_free(void **state)
{
    struct rig *g = *state;
    struct backend *b = open_backend(g, "socket");
    struct backend_spec spec = docker_rig_spec("img:1");
    struct backend_pending *pending = NULL;
    char *id = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(backend_create(b, &spec, false, 0, &id, &pending, &err), 0);
    assert_non_null(pending);
    backend_pending_free(b, pending);
    remove_container(b, id);
    /* Its egress socket too. */
    spec.egress = true;
    assert_int_equal(backend_create(b, &spec, false, 0, &id, &pending, &err), 0);
    char *path = find_egress_socket(g);
    assert_non_null(path);
    free(path);
    backend_pending_free(b, pending);
    assert_null(find_egress_socket(g));
    remove_container(b, id);
    backend_free(b);
}

/* A sandbox started and waiting for its stdin (a warm runner in a pool),
 * killed from outside: its stream, on the socket channel or attached,
 * shows it at once (readable, then its end), which is all a pool's
 * watcher polls for. */
static void test_killed_while_waiting(void **state)
{
    struct rig *g = *state;
    static const char *const modes[] = {"socket", "attach"};
    for (size_t m = 0; m < ARRAY_SIZE(modes); m++) {
        struct backend *b = open_backend(g, modes[m]);
        struct backend_spec spec = docker_rig_spec("img:1");
        assert_string_equal(backend_io_name(b, &spec), modes[m]);
        struct backend_stream *s = NULL;
        char *id = NULL;
        struct err err = ERR_INIT;
        if (docker_rig_create_start(b, &spec, false, 0, &id, &s, &err) != 0)
            fail_msg("%s: %s", modes[m], err_msg(&err));
        if (backend_kill(b, id, &err) < 0)
            fail_msg("kill: %s", err_msg(&err));
        long got = docker_rig_drain(s, &err);
        if (got != 0 && got != -1)
            fail_msg("%s: the stream did not end after the kill", modes[m]);
        err_clear(&err);
        backend_stream_close(s);
        remove_container(b, id);
        backend_free(b);
    }
}

/* A started sandbox with egress, its streams on a channel or attached:
 * the create body binds the socket's directory and runs the forwarder
 * (after the connector, on a channel), the stream carries the listener,
 * a connection made to the socket is handed over, and closing the
 * stream removes the socket and its directory. */
static void test_egress(void **state)
{
    struct rig *g = *state;
    static const char *const modes[] = {"socket", "attach"};
    for (size_t m = 0; m < ARRAY_SIZE(modes); m++) {
        struct backend *b = open_backend(g, modes[m]);
        struct backend_spec spec = docker_rig_spec("img:1");
        spec.egress = true;
        struct err err = ERR_INIT;
        if (backend_egress_check(b, &spec, &err) < 0)
            fail_msg("backend_egress_check: %s", err_msg(&err));
        struct backend_stream *s = NULL;
        char *id = NULL;
        if (docker_rig_create_start(b, &spec, false, 0, &id, &s, &err) != 0)
            fail_msg("%s: %s", modes[m], err_msg(&err));
        struct fake_request create;
        assert_true(fake_engine_last(g->fe, FAKE_OP_CREATE, &create));
        assert_non_null(strstr(create.body, ":\\/run\\/mcpsbx-egress:ro\""));
        assert_non_null(strstr(create.body, "\"NetworkMode\":\"none\""));
        assert_non_null(
            strstr(create.body, "\\/run\\/mcpsbx-egress\\/egress.sock\",\"3128\",\"python3\""));
        bool channel = m == 0;
        assert_int_equal(
            strstr(create.body, "\\/run\\/mcpsbx-io\\/io.sock\",\"perl\",\"-e\"") != NULL, channel);
        assert_int_equal(fake_engine_count(g->fe, FAKE_OP_ATTACH, id), channel ? 0 : 1);

        char *path = find_egress_socket(g);
        assert_non_null(path);
        int fd = 7;
        assert_int_equal(backend_stream_egress_accept(s, &fd, &err), 0);
        assert_int_equal(fd, -1);
        int peer = connect_unix(path);
        struct pollfd p = {.fd = backend_stream_egress_fd(s), .events = POLLIN};
        assert_true(p.fd >= 0);
        assert_int_equal(poll(&p, 1, 10000), 1);
        if (backend_stream_egress_accept(s, &fd, &err) < 0)
            fail_msg("accept: %s", err_msg(&err));
        assert_true(fd >= 0);
        assert_int_equal(send(peer, "x", 1, 0), 1);
        char c = 0;
        assert_int_equal(recv(fd, &c, 1, 0), 1);
        assert_int_equal(c, 'x');
        close(fd);
        close(peer);
        backend_stream_close(s);
        struct stat st;
        assert_int_equal(lstat(path, &st), -1);
        *strrchr(path, '/') = '\0';
        assert_int_equal(lstat(path, &st), -1);
        free(path);
        remove_container(b, id);
        backend_free(b);
    }
}

/* A stream without egress has none to give. */
static void test_no_egress(void **state)
{
    struct rig *g = *state;
    struct backend *b = open_backend(g, "socket");
    struct backend_spec spec = docker_rig_spec("img:1");
    struct backend_stream *s = NULL;
    char *id = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(docker_rig_create_start(b, &spec, false, 0, &id, &s, &err), 0);
    assert_int_equal(backend_stream_egress_fd(s), -1);
    int fd = 7;
    assert_int_equal(backend_stream_egress_accept(s, &fd, &err), 0);
    assert_int_equal(fd, -1);
    /* Nothing to check for a spec without egress, wherever it runs. */
    spec.runtime = "runsc";
    assert_int_equal(backend_egress_check(b, &spec, &err), 0);
    backend_stream_close(s);
    remove_container(b, id);
    backend_free(b);
}

/* Where a sandbox cannot reach the gateway, egress_check says why and
 * create makes nothing (no container, no socket): without
 * a directory for sockets, in a directory others may write. */
static void expect_no_egress(struct rig *g, struct backend *b, const struct backend_spec *spec,
                             const char *needle)
{
    struct err err = ERR_INIT;
    assert_int_equal(backend_egress_check(b, spec, &err), -1);
    assert_int_equal(err.code, ERR_INVALID);
    if (!strstr(err_msg(&err), needle))
        fail_msg("\"%s\" does not say \"%s\"", err_msg(&err), needle);
    err_clear(&err);
    int before = fake_engine_count(g->fe, FAKE_OP_CREATE, NULL);
    struct backend_pending *pending = NULL;
    char *id = NULL;
    assert_int_equal(backend_create(b, spec, false, 0, &id, &pending, &err), -1);
    assert_int_equal(err.code, ERR_INVALID);
    assert_null(pending);
    err_clear(&err);
    assert_int_equal(fake_engine_count(g->fe, FAKE_OP_CREATE, NULL), before);
    assert_null(find_egress_socket(g));
}

/* An engine's description, as GET /info answers it. */
struct info {
    const char *body;
};

/* Answers GET /info with the struct info in ctx. */
static bool info_hook(struct fake_engine *fe, int fd, const struct fake_request *req, void *ctx)
{
    (void)fe;
    if (strcmp(req->method, "GET") != 0 || !strstr(req->target, "/info"))
        return false;
    fake_engine_respond(fd, 200, ((const struct info *)ctx)->body);
    return true;
}

#define INFO_RUNSC(args)                                                                           \
    "{\"Runtimes\":{\"runc\":{\"path\":\"runc\"},\"runsc\":{\"path\":\"/usr/bin/runsc\","          \
    "\"runtimeArgs\":" args "}}}"

/* Under gVisor a sandbox reaches its socket only when the engine runs
 * runsc with --host-uds=open (or =all): the engine's /info says. */
static void test_egress_gvisor(void **state)
{
    struct rig *g = *state;
    struct backend_spec spec = docker_rig_spec("img:1");
    spec.egress = true;
    spec.runtime = "runsc";
    static struct info refused[] = {
        {INFO_RUNSC("[\"--network=none\"]")},
        {INFO_RUNSC("[\"--host-uds=none\",\"--host-uds-open\"]")},
        {"{\"Runtimes\":{\"runc\":{\"path\":\"runc\"}}}"},
        {"{}"},
    };
    struct backend *b = open_backend(g, "socket");
    struct err err = ERR_INIT;
    for (size_t i = 0; i < ARRAY_SIZE(refused); i++) {
        fake_engine_set_hook(g->fe, info_hook, &refused[i]);
        assert_int_equal(backend_egress_check(b, &spec, &err), -1);
        assert_int_equal(err.code, ERR_INVALID);
        if (!strstr(err_msg(&err), "does not run runtime 'runsc' with --host-uds=open"))
            fail_msg("%s: %s", refused[i].body, err_msg(&err));
        err_clear(&err);
    }
    /* An engine that cannot say is not taken at its word. */
    fake_engine_set_hook(g->fe, NULL, NULL);
    assert_int_equal(backend_egress_check(b, &spec, &err), -1);
    assert_non_null(strstr(err_msg(&err), "cannot tell whether runtime 'runsc'"));
    err_clear(&err);
    static struct info passed[] = {
        {INFO_RUNSC("[\"--network=none\",\"--oci-seccomp\",\"--host-uds=open\"]")},
        {INFO_RUNSC("[\"-host-uds=all\"]")},
        {INFO_RUNSC("[\"--fsgofer-host-uds\"]")},
    };
    for (size_t i = 0; i < ARRAY_SIZE(passed); i++) {
        fake_engine_set_hook(g->fe, info_hook, &passed[i]);
        if (backend_egress_check(b, &spec, &err) < 0)
            fail_msg("%s: %s", passed[i].body, err_msg(&err));
    }
    fake_engine_set_hook(g->fe, NULL, NULL);
    char *id = NULL;
    struct backend_stream *s = NULL;
    assert_int_equal(docker_rig_create_start(b, &spec, false, 0, &id, &s, &err), 0);
    assert_true(backend_stream_egress_fd(s) >= 0);
    backend_stream_close(s);
    remove_container(b, id);
    backend_free(b);
}

static void test_egress_refused(void **state)
{
    struct rig *g = *state;
    struct backend_spec spec = docker_rig_spec("img:1");
    spec.egress = true;
    struct backend *b = docker_backend_new(fake_engine_socket(g->fe), NULL, NULL);
    expect_no_egress(g, b, &spec, "--sandbox-io-dir");
    backend_free(b);
    assert_int_equal(chmod(g->io_dir, 0777), 0);
    b = open_backend(g, "attach");
    expect_no_egress(g, b, &spec, "no one else may write");
    backend_free(b);
    assert_int_equal(chmod(g->io_dir, 0700), 0);
}

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return NULL;
    char *data = xcalloc(1, 1 << 16);
    size_t n = fread(data, 1, (1 << 16) - 1, f);
    (void)n;
    fclose(f);
    return data;
}

/* Docker gets the profile inline; Podman, which reads a path on its own
 * host, the path of a file holding exactly the same profile. */
static void test_seccomp_delivery(void **state)
{
    struct rig *g = *state;
    struct err err = ERR_INIT;
    char *want = seccomp_profile_new(SECCOMP_KERNEL_HOST, &err);
    assert_non_null(want);
    struct backend_spec spec = docker_rig_spec("img:1");
    struct fake_container_info info;
    struct fake_request create;
    char *id = NULL;
    struct backend *b = open_backend(g, "attach");
    assert_int_equal(create_start(g, b, &spec, false, &id, &create, &err), 0);
    assert_true(fake_engine_info(g->fe, id, &info));
    assert_true(info.seccomp_inline);
    remove_container(b, id);
    backend_free(b);

    fake_engine_set_version(g->fe, PODMAN_VERSION);
    b = open_backend(g, "attach");
    assert_int_equal(create_start(g, b, &spec, false, &id, &create, &err), 0);
    assert_true(fake_engine_info(g->fe, id, &info));
    assert_false(info.seccomp_inline);
    const char *dir = getenv("RUNTIME_DIRECTORY");
    assert_non_null(dir);
    assert_memory_equal(info.seccomp_path, dir, strlen(dir));
    char *got = read_all(info.seccomp_path);
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
    free(want);
    remove_container(b, id);
    backend_free(b);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_socket),
        T(test_fallback_to_attach),
        T(test_attach_choices),
        T(test_socket_dir_unsafe),
        T(test_pending_free),
        T(test_seccomp_delivery),
        T(test_killed_while_waiting),
        T(test_egress),
        T(test_no_egress),
        T(test_egress_refused),
        T(test_egress_gvisor),
    };
#undef T
    return cmocka_run_group_tests_name("sandbox_io", tests, rig_group_setup, rig_group_teardown);
}
