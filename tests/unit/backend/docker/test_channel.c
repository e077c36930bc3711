/* channel.c: the sandbox side is played by a thread or a child process
 * connecting as the connector does, and once by the connector itself
 * (src/backend/docker/connect.pl under perl). After every test the base
 * directory must be empty: no socket or directory outlives its accept. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/docker/channel.h"
#include "sock_rig.h"

#define GUARD_MS 20000.0

static int setup(void **state)
{
    return rig_setup(state, "channel_test");
}

static int teardown(void **state)
{
    return rig_teardown(*state);
}

static char *socket_path(struct channel *c)
{
    return xasprintf("%s/%s", channel_dir(c), CHANNEL_SOCKET_NAME);
}

static int connect_tagged(const char *path, char tag)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        (tag && send(fd, &tag, 1, MSG_NOSIGNAL) != 1)) {
        close(fd);
        return -1;
    }
    return fd;
}

/* The sandbox's side, on a thread of this process. */
struct peer {
    char *path;
    char tags[2];
    int fds[2];
    pthread_t th;
};

static void *peer_main(void *arg)
{
    struct peer *p = arg;
    for (int i = 0; i < 2; i++)
        p->fds[i] = p->tags[i] == '-' ? -1 : connect_tagged(p->path, p->tags[i]);
    return NULL;
}

static void peer_start(struct peer *p, struct channel *c, char tag0, char tag1)
{
    *p = (struct peer){.path = socket_path(c), .tags = {tag0, tag1}, .fds = {-1, -1}};
    assert_int_equal(pthread_create(&p->th, NULL, peer_main, p), 0);
}

static void peer_join(struct peer *p)
{
    pthread_join(p->th, NULL);
    free(p->path);
}

static void peer_close(struct peer *p)
{
    for (int i = 0; i < 2; i++)
        if (p->fds[i] >= 0)
            close(p->fds[i]);
}

struct got {
    char out[256], err[256];
    size_t out_len, err_len;
};

static int collect(void *ctx, int stream, const char *data, size_t len, struct err *err)
{
    (void)err;
    struct got *g = ctx;
    char *dst = stream == BACKEND_STDOUT ? g->out : g->err;
    size_t *n = stream == BACKEND_STDOUT ? &g->out_len : &g->err_len;
    if (*n + len >= sizeof(g->out))
        len = sizeof(g->out) - 1 - *n;
    memcpy(dst + *n, data, len);
    *n += len;
    return 0;
}

/* Reads until both ends closed; returns what came. */
static void read_to_end(struct backend_stream *s, struct got *got)
{
    double until = util_now_ms() + GUARD_MS;
    for (;;) {
        struct pollfd p = {.fd = backend_stream_fd(s), .events = POLLIN};
        if (poll(&p, 1, 1000) < 0 && errno != EINTR)
            fail_msg("poll: %s", strerror(errno));
        struct err err = ERR_INIT;
        long n = backend_stream_read(s, collect, got, &err);
        if (n == 0)
            return;
        if (n < 0 && n != BACKEND_AGAIN)
            fail_msg("read: %s", err_msg(&err));
        if (util_now_ms() > until)
            fail_msg("the stream never ended");
    }
}

static void test_open_modes(void **state)
{
    struct rig *g = *state;
    struct channel *c = NULL;
    struct err err = ERR_INIT;
    if (channel_open(g->base, g->uid, g->gid, &c, &err) < 0)
        fail_msg("channel_open: %s", err_msg(&err));
    struct stat st;
    assert_int_equal(lstat(channel_dir(c), &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0711);
    char *path = socket_path(c);
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_int_equal(st.st_uid, g->uid);
    channel_close(c);
    assert_int_equal(lstat(path, &st), -1);
    free(path);
}

/* Both connections in, in either order: a stream like an attach stream,
 * and nothing left to connect to. */
static void test_accept_and_stream(void **state)
{
    struct rig *g = *state;
    for (int order = 0; order < 2; order++) {
        struct channel *c = NULL;
        struct err err = ERR_INIT;
        assert_int_equal(channel_open(g->base, g->uid, g->gid, &c, &err), 0);
        char *path = socket_path(c);
        struct peer p;
        peer_start(&p, c, order ? CHANNEL_TAG_ERR : CHANNEL_TAG_IO,
                   order ? CHANNEL_TAG_IO : CHANNEL_TAG_ERR);
        struct backend_stream *s = NULL;
        if (channel_accept(c, g->cg, util_now_ms() + GUARD_MS, -1, NULL, NULL, &s, &err) != 0)
            fail_msg("channel_accept: %s", err_msg(&err));
        peer_join(&p);
        int io = p.fds[order ? 1 : 0], er = p.fds[order ? 0 : 1];
        assert_int_equal(dir_entries(g->base), 0);
        assert_int_equal(connect_tagged(path, 0), -1); /* gone */

        assert_int_equal(backend_stream_send(s, "request\n", 8, 1000, &err), 0);
        char buf[16] = {0};
        assert_int_equal(recv(io, buf, sizeof(buf), 0), 8);
        assert_string_equal(buf, "request\n");
        assert_int_equal(send(io, "out", 3, 0), 3);
        assert_int_equal(send(er, "err", 3, 0), 3);
        peer_close(&p);
        struct got got = {.out_len = 0};
        read_to_end(s, &got);
        assert_int_equal(got.out_len, 3);
        assert_memory_equal(got.out, "out", 3);
        assert_int_equal(got.err_len, 3);
        assert_memory_equal(got.err, "err", 3);
        assert_false(backend_stream_pending(s));
        backend_stream_close(s);
        channel_close(c);
        free(path);
    }
}

static void expect_refusal(struct rig *g, char tag0, char tag1, enum err_code code, const char *msg)
{
    struct channel *c = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(channel_open(g->base, g->uid, g->gid, &c, &err), 0);
    struct peer p;
    peer_start(&p, c, tag0, tag1);
    struct backend_stream *s = NULL;
    assert_int_equal(channel_accept(c, g->cg, util_now_ms() + 500, -1, NULL, NULL, &s, &err), -1);
    assert_null(s);
    assert_int_equal(err.code, code);
    if (!strstr(err_msg(&err), msg))
        fail_msg("\"%s\" does not say \"%s\"", err_msg(&err), msg);
    assert_int_equal(dir_entries(g->base), 0);
    peer_join(&p);
    peer_close(&p);
    err_clear(&err);
    channel_close(c);
}

static void test_bad_tags(void **state)
{
    struct rig *g = *state;
    expect_refusal(g, 'x', CHANNEL_TAG_ERR, ERR_PROTOCOL, "unexpected tag 0x78");
    expect_refusal(g, CHANNEL_TAG_IO, CHANNEL_TAG_IO, ERR_PROTOCOL, "unexpected tag 0x6f");
    /* One connection only: the time runs out. */
    expect_refusal(g, CHANNEL_TAG_IO, '-', ERR_TIMEOUT, "did not connect");
}

/* A process of uid:gid connects (tagged) and stays; channel_accept for
 * container_id must refuse it with ERR_PROTOCOL naming needle. The socket
 * is opened to all first, so only the peer check stands in the way. */
static void expect_peer_refused(struct rig *g, uid_t uid, gid_t gid, const char *container_id,
                                const char *needle)
{
    struct channel *c = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(channel_open(g->base, g->uid, g->gid, &c, &err), 0);
    char *path = socket_path(c);
    assert_int_equal(chmod(path, 0666), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (setgid(gid) < 0 || setuid(uid) < 0)
            _exit(2);
        int fd = connect_tagged(path, CHANNEL_TAG_IO);
        if (fd >= 0)
            pause(); /* until killed: the daemon must refuse, not the kernel */
        _exit(3);
    }
    struct backend_stream *s = NULL;
    assert_int_equal(
        channel_accept(c, container_id, util_now_ms() + GUARD_MS, -1, NULL, NULL, &s, &err), -1);
    assert_int_equal(err.code, ERR_PROTOCOL);
    if (!strstr(err_msg(&err), needle))
        fail_msg("\"%s\" does not say \"%s\"", err_msg(&err), needle);
    assert_int_equal(channel_accepted(c), 1);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    err_clear(&err);
    free(path);
    channel_close(c);
}

/* A process of another user (not the sandbox's, not ours) is refused. */
static void test_stranger_refused(void **state)
{
    struct rig *g = *state;
    if (geteuid() != 0)
        skip();
    expect_peer_refused(g, 12345, 12345, g->cg, "uid 12345");
}

/* A process of the sandbox's uid that is not in the sandbox (another
 * container's, or the host's) is refused too. */
static void test_outsider_refused(void **state)
{
    struct rig *g = *state;
    if (geteuid() != 0)
        skip();
    expect_peer_refused(g, g->uid, g->gid, "0123456789abcdef-not-this-container",
                        "outside the sandbox");
}

/* A connection that never sends its tag holds nothing past a stop. */
static void test_stop_while_tagless(void **state)
{
    struct rig *g = *state;
    struct channel *c = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(channel_open(g->base, g->uid, g->gid, &c, &err), 0);
    char *path = socket_path(c);
    int fd = connect_tagged(path, 0);
    assert_true(fd >= 0);
    int ev = eventfd(0, EFD_CLOEXEC);
    pid_t pid = fork(); /* stops it 300 ms from now */
    assert_true(pid >= 0);
    if (pid == 0) {
        usleep(300000);
        uint64_t one = 1;
        _exit(write(ev, &one, sizeof(one)) == 8 ? 0 : 1);
    }
    double t0 = util_now_ms();
    struct backend_stream *s = NULL;
    assert_int_equal(channel_accept(c, g->cg, t0 + GUARD_MS, ev, NULL, NULL, &s, &err), 1);
    assert_true(util_now_ms() - t0 < CHANNEL_TAG_MS);
    waitpid(pid, NULL, 0);
    close(fd);
    close(ev);
    free(path);
    channel_close(c);
}

static int gone(void *ctx, struct err *err)
{
    int *calls = ctx;
    if (++*calls < 2)
        return 0;
    return err_set(err, ERR_ENGINE, "it exited with status 127");
}

/* Nobody connects: alive is asked every CHANNEL_CHECK_MS and ends it. */
static void test_sandbox_gone(void **state)
{
    struct rig *g = *state;
    struct channel *c = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(channel_open(g->base, g->uid, g->gid, &c, &err), 0);
    int calls = 0;
    struct backend_stream *s = NULL;
    assert_int_equal(channel_accept(c, g->cg, util_now_ms() + GUARD_MS, -1, gone, &calls, &s, &err),
                     -1);
    assert_int_equal(calls, 2);
    assert_int_equal(err.code, ERR_ENGINE);
    assert_non_null(strstr(err_msg(&err), "ended before it connected"));
    assert_non_null(strstr(err_msg(&err), "status 127"));
    assert_int_equal(dir_entries(g->base), 0);
    err_clear(&err);
    channel_close(c);
}

static void test_stop(void **state)
{
    struct rig *g = *state;
    struct channel *c = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(channel_open(g->base, g->uid, g->gid, &c, &err), 0);
    int ev = eventfd(1, EFD_CLOEXEC);
    struct backend_stream *s = NULL;
    assert_int_equal(channel_accept(c, g->cg, util_now_ms() + GUARD_MS, ev, NULL, NULL, &s, &err),
                     1);
    assert_null(s);
    assert_int_equal(dir_entries(g->base), 0);
    close(ev);
    channel_close(c);
}

/* A base directory others may write, or not a directory, is refused. */
static void test_unsafe_base(void **state)
{
    struct rig *g = *state;
    struct channel *c = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(chmod(g->base, 0777), 0);
    assert_int_equal(channel_open(g->base, g->uid, g->gid, &c, &err), -1);
    assert_int_equal(err.code, ERR_INVALID);
    assert_null(c);
    err_clear(&err);
    assert_int_equal(chmod(g->base, 0711), 0);
    char *link = xasprintf("%s/link", g->base);
    assert_int_equal(symlink("/tmp", link), 0);
    assert_int_equal(channel_open(link, g->uid, g->gid, &c, &err), -1);
    assert_int_equal(err.code, ERR_INVALID);
    err_clear(&err);
    unlink(link);
    free(link);
    /* Made when missing, closed to writers. */
    char *fresh = xasprintf("%s/fresh", g->base);
    assert_int_equal(channel_open(fresh, g->uid, g->gid, &c, &err), 0);
    channel_close(c);
    struct stat st;
    assert_int_equal(stat(fresh, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0711);
    rmdir(fresh);
    free(fresh);
}

/* The real connector under perl: the program it runs has the
 * connections as its stdin, stdout and stderr. */
static void test_connector(void **state)
{
    struct rig *g = *state;
    if (system("perl -MSocket -MPOSIX -e 1 2>/dev/null") != 0)
        skip();
    struct channel *c = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(channel_open(g->base, g->uid, g->gid, &c, &err), 0);
    char *path = socket_path(c);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (geteuid() == 0 && (setgid(g->gid) < 0 || setuid(g->uid) < 0))
            _exit(2);
        execlp("perl", "perl", "-e", channel_connect_src, path, "sh", "-c",
               "read line; echo \"got $line\"; echo oops >&2; "
               "for f in 0 1 2; do readlink /proc/$$/fd/$f; done | grep -c socket: >&2",
               (char *)NULL);
        _exit(127);
    }
    struct backend_stream *s = NULL;
    if (channel_accept(c, g->cg, util_now_ms() + GUARD_MS, -1, NULL, NULL, &s, &err) != 0)
        fail_msg("channel_accept: %s", err_msg(&err));
    assert_int_equal(backend_stream_send(s, "hello\n", 6, 1000, &err), 0);
    struct got got = {.out_len = 0};
    read_to_end(s, &got);
    int status = 0;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_string_equal(got.out, "got hello\n");
    assert_string_equal(got.err, "oops\n3\n");
    backend_stream_close(s);
    channel_close(c);
    free(path);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_open_modes),       T(test_accept_and_stream),
        T(test_bad_tags),         T(test_stranger_refused),
        T(test_outsider_refused), T(test_stop_while_tagless),
        T(test_sandbox_gone),     T(test_stop),
        T(test_unsafe_base),      T(test_connector),
    };
#undef T
    return cmocka_run_group_tests_name("channel", tests, NULL, NULL);
}
