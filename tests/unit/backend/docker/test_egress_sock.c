/* egress_sock.c, with sock_dir.c (the directory and its sweep) and peer.c
 * (who may connect) under it: the sandbox's side is this process (the
 * daemon's own user) or a child that takes another uid (the tests run as
 * root; those cases skip otherwise). The "container" is a line of this
 * process's /proc/self/cgroup, so its children are in it. Once, the
 * whole way in as a sandbox has it: the connector (connect.pl), the
 * forwarder (forward.pl) and a program that asks the proxy port, under
 * perl. After every test the base directory must be empty and no relay
 * left running. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/docker/channel.h"
#include "backend/docker/egress_sock.h"
#include "backend/docker/peer.h"
#include "backend/docker/sock_dir.h"
#include "sock_rig.h"

#define GUARD_MS 20000

static int setup(void **state)
{
    return rig_setup(state, "egress_sock_test");
}

/* SIGKILLs the processes with an argument that starts with prefix (a
 * forwarder's detached relay, its socket's path among its arguments
 * after the forwarder's source); how many. */
static int kill_marked(const char *prefix)
{
    enum { ARGS_MAX = 1 << 16 };
    char *args = xmalloc(ARGS_MAX);
    DIR *d = opendir("/proc");
    assert_non_null(d);
    int n = 0;
    for (const struct dirent *e; (e = readdir(d));) {
        char path[300];
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t len = 0, got;
        while (len < ARGS_MAX - 1 && (got = read(fd, args + len, ARGS_MAX - 1 - len)) > 0)
            len += got;
        close(fd);
        if (len == 0)
            continue;
        args[len] = '\0';
        for (ssize_t i = 0; i < len; i += (ssize_t)strlen(args + i) + 1)
            if (strncmp(args + i, prefix, strlen(prefix)) == 0) {
                n += kill((pid_t)atol(e->d_name), SIGKILL) == 0;
                break;
            }
    }
    closedir(d);
    free(args);
    return n;
}

static int teardown(void **state)
{
    struct rig *g = *state;
    kill_marked(g->base); /* what a failed test left running */
    return rig_teardown(g);
}

static struct egress_sock *open_ok(const struct rig *g)
{
    struct egress_sock *s = NULL;
    struct err err = ERR_INIT;
    if (egress_sock_open(g->base, g->uid, g->gid, &s, &err) < 0)
        fail_msg("egress_sock_open: %s", err_msg(&err));
    return s;
}

static char *socket_path(const struct egress_sock *s)
{
    return xasprintf("%s/%s", egress_sock_dir(s), EGRESS_SOCK_NAME);
}

static int connect_to(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/* Until a connection waits on s (the listener polls readable). */
static void wait_pending(const struct egress_sock *s)
{
    struct pollfd p = {.fd = egress_sock_fd(s), .events = POLLIN};
    if (poll(&p, 1, GUARD_MS) != 1)
        fail_msg("no connection came");
}

static void test_open_modes(void **state)
{
    struct rig *g = *state;
    struct egress_sock *s = open_ok(g);
    struct stat st;
    const char *dir = egress_sock_dir(s);
    assert_int_equal(lstat(dir, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0711);
    assert_int_equal(st.st_uid, geteuid());
    /* "<pid>.<16 hex>", as the sweep knows them */
    const char *name = strrchr(dir, '/') + 1;
    char *want = xasprintf("%ld.", (long)getpid());
    assert_memory_equal(name, want, strlen(want));
    assert_int_equal(strlen(name + strlen(want)), 2 * SOCK_DIR_RANDOM_BYTES);
    free(want);
    char *path = socket_path(s);
    char *dir_copy = xstrdup(dir);
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_int_equal(st.st_uid, g->uid);
    assert_int_equal(st.st_gid, g->gid);
    int fd = egress_sock_fd(s);
    assert_true(fd >= 0);
    assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
    egress_sock_close(s);
    assert_int_equal(lstat(path, &st), -1);
    assert_int_equal(lstat(dir_copy, &st), -1);
    assert_int_equal(fcntl(fd, F_GETFD), -1); /* the listener closed */
    free(path);
    free(dir_copy);
}

/* The daemon's CA's public files, in the socket's directory as the
 * sandbox reads them (0644, the same bytes), gone with the socket. */
static void test_ca_files(void **state)
{
    struct rig *g = *state;
    char *src = xasprintf("%s/ca-src.pem", g->base);
    char *bundle = xasprintf("%s/bundle-src.pem", g->base);
    FILE *f = fopen(src, "we");
    assert_non_null(f);
    fputs("-----BEGIN CERTIFICATE-----\nca\n", f);
    fclose(f);
    f = fopen(bundle, "we");
    assert_non_null(f);
    fputs("roots and ca\n", f);
    fclose(f);
    assert_int_equal(chmod(src, 0644), 0);
    assert_int_equal(chmod(bundle, 0644), 0);
    struct egress_sock *s = open_ok(g);
    struct backend_spec spec = {.egress = true, .egress_ca_file = src, .egress_ca_bundle = bundle};
    struct err err = ERR_INIT;
    assert_int_equal(egress_sock_add_ca(s, &spec, &err), 0);
    char *in_ca = xasprintf("%s/ca.pem", egress_sock_dir(s));
    char *in_bundle = xasprintf("%s/ca-bundle.pem", egress_sock_dir(s));
    char *dir_copy = xstrdup(egress_sock_dir(s));
    struct stat st;
    assert_int_equal(stat(in_ca, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0644);
    char buf[64] = {0};
    f = fopen(in_bundle, "re");
    assert_non_null(f);
    assert_non_null(fgets(buf, sizeof(buf), f));
    fclose(f);
    assert_string_equal(buf, "roots and ca\n");
    /* Without CA files there is nothing to add. */
    struct backend_spec none = {.egress = true};
    assert_int_equal(egress_sock_add_ca(s, &none, &err), 0);
    egress_sock_close(s);
    assert_int_equal(stat(in_ca, &st), -1);
    assert_int_equal(stat(dir_copy, &st), -1);
    assert_int_equal(unlink(src), 0);
    assert_int_equal(unlink(bundle), 0);
    free(dir_copy);
    free(in_bundle);
    free(in_ca);
    free(bundle);
    free(src);
}

static void test_accept_nothing_waiting(void **state)
{
    struct rig *g = *state;
    struct egress_sock *s = open_ok(g);
    egress_sock_set_container(s, g->cg);
    int fd = 7;
    struct err err = ERR_INIT;
    assert_int_equal(egress_sock_accept(s, &fd, &err), 0);
    assert_int_equal(fd, -1);
    egress_sock_close(s);
}

/* The daemon's own user passes, container or not; the connection is a
 * plain connected socket both ways, close-on-exec. */
static void test_accept_own_user(void **state)
{
    struct rig *g = *state;
    struct egress_sock *s = open_ok(g);
    char *path = socket_path(s);
    int peer = connect_to(path);
    assert_true(peer >= 0);
    wait_pending(s);
    int fd = -1;
    struct err err = ERR_INIT;
    if (egress_sock_accept(s, &fd, &err) < 0)
        fail_msg("egress_sock_accept: %s", err_msg(&err));
    assert_true(fd >= 0);
    assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    assert_int_equal(send(peer, "CONNECT", 7, 0), 7);
    char buf[16] = {0};
    assert_int_equal(recv(fd, buf, sizeof(buf), 0), 7);
    assert_string_equal(buf, "CONNECT");
    assert_int_equal(send(fd, "200", 3, 0), 3);
    assert_int_equal(recv(peer, buf, sizeof(buf), 0), 3);
    close(fd);
    close(peer);
    egress_sock_close(s);
    free(path);
}

/* A child that becomes uid:gid connects and reports whether the daemon
 * closed its connection (it reads an end: exit 0). */
/* A forked child's end with status code. Through an exec, so that a
 * memory checker does not count the copy of this process's heap the
 * child leaves behind as the child's leaks. */
static void child_exit(int code)
{
    char text[8];
    snprintf(text, sizeof(text), "%d", code);
    execl("/bin/sh", "sh", "-c", "exit \"$0\"", text, (char *)NULL);
    _exit(code);
}

static pid_t connect_as(const char *path, uid_t uid, gid_t gid)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(GUARD_MS / 1000);
        if (setgid(gid) < 0 || setuid(uid) < 0)
            child_exit(2);
        int fd = connect_to(path);
        if (fd < 0)
            child_exit(3);
        char c;
        child_exit(recv(fd, &c, 1, 0) == 0 ? 0 : 4);
    }
    return pid;
}

/* What the child of connect_as saw: 0 when its connection was closed. */
static int child_status(pid_t pid)
{
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* A peer of uid:gid, the container being container_id, is refused with
 * ERR_PROTOCOL naming needle, and its connection closed. */
static void expect_refused(struct rig *g, uid_t uid, gid_t gid, const char *container_id,
                           const char *needle)
{
    struct egress_sock *s = open_ok(g);
    if (container_id)
        egress_sock_set_container(s, container_id);
    char *path = socket_path(s);
    /* Open to all, so only the peer check stands in the way. */
    assert_int_equal(chmod(path, 0666), 0);
    pid_t pid = connect_as(path, uid, gid);
    wait_pending(s);
    int fd = 7;
    struct err err = ERR_INIT;
    assert_int_equal(egress_sock_accept(s, &fd, &err), -1);
    assert_int_equal(fd, -1);
    assert_int_equal(err.code, ERR_PROTOCOL);
    if (!strstr(err_msg(&err), needle) || !strstr(err_msg(&err), "egress socket"))
        fail_msg("\"%s\" does not say \"%s\"", err_msg(&err), needle);
    err_clear(&err);
    assert_int_equal(child_status(pid), 0);
    /* Nothing else waits; the listener still serves. */
    assert_int_equal(egress_sock_accept(s, &fd, &err), 0);
    assert_int_equal(fd, -1);
    egress_sock_close(s);
    free(path);
}

static void test_stranger_refused(void **state)
{
    struct rig *g = *state;
    if (geteuid() != 0)
        skip();
    expect_refused(g, 12345, 12345, g->cg, "uid 12345");
}

/* The sandbox's uid, but not a process of its container. */
static void test_outsider_refused(void **state)
{
    struct rig *g = *state;
    if (geteuid() != 0)
        skip();
    expect_refused(g, g->uid, g->gid, "0123456789abcdef-not-this-container", "outside the sandbox");
    /* And before the container is known, nobody of its uid. */
    expect_refused(g, g->uid, g->gid, NULL, "outside the sandbox");
}

/* The sandbox's uid in the container's cgroup is let in. */
static void test_sandbox_process_accepted(void **state)
{
    struct rig *g = *state;
    if (geteuid() != 0)
        skip();
    struct egress_sock *s = open_ok(g);
    egress_sock_set_container(s, g->cg);
    char *path = socket_path(s);
    pid_t pid = connect_as(path, g->uid, g->gid);
    wait_pending(s);
    int fd = -1;
    struct err err = ERR_INIT;
    if (egress_sock_accept(s, &fd, &err) < 0)
        fail_msg("egress_sock_accept: %s", err_msg(&err));
    assert_true(fd >= 0);
    struct ucred cred;
    socklen_t len = sizeof(cred);
    assert_int_equal(getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len), 0);
    assert_int_equal(cred.uid, g->uid);
    close(fd); /* the child then reads its end */
    assert_int_equal(child_status(pid), 0);
    egress_sock_close(s);
    free(path);
}

/* What a daemon that is not root (uid 23456) decides about this process,
 * root, connecting to its listener: a child of that uid accepts and
 * exits 0 when peer_check passes, 1 when it refuses. */
static int root_peer_verdict(struct rig *g, const char *container_id)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/root-peer.sock", g->base);
    int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(lfd >= 0);
    assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(lfd, 1), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(GUARD_MS / 1000);
        if (setgid(23456) < 0 || setuid(23456) < 0)
            child_exit(2);
        int fd = accept(lfd, NULL, NULL);
        struct err err = ERR_INIT;
        child_exit(fd < 0                                                                 ? 3
                   : peer_check(fd, g->uid, container_id, "its egress socket", &err) == 0 ? 0
                                                                                          : 1);
    }
    int fd = connect_to(sa.sun_path);
    assert_true(fd >= 0);
    int verdict = child_status(pid);
    close(fd);
    close(lfd);
    unlink(sa.sun_path);
    return verdict;
}

/* gVisor's file proxy connects for the sandbox as root from the
 * container's cgroup: let in even by a daemon that is not root; root
 * elsewhere is not. */
static void test_runtime_proxy_accepted(void **state)
{
    struct rig *g = *state;
    if (geteuid() != 0)
        skip();
    assert_int_equal(root_peer_verdict(g, g->cg), 0);
    assert_int_equal(root_peer_verdict(g, "0123456789abcdef-not-this-container"), 1);
    assert_int_equal(root_peer_verdict(g, NULL), 1);
}

/* What a killed daemon left, a channel's and an egress socket's
 * directory alike, is removed; a live process's is not, nor anything
 * not named like ours. */
static void test_sweep(void **state)
{
    struct rig *g = *state;
    pid_t dead = fork();
    assert_true(dead >= 0);
    if (dead == 0)
        _exit(0);
    waitpid(dead, NULL, 0);
    char *stale_io = xasprintf("%s/%ld.0123456789abcdef", g->base, (long)dead);
    char *stale_eg = xasprintf("%s/%ld.fedcba9876543210", g->base, (long)dead);
    char *live = xasprintf("%s/%ld.0123456789abcdef", g->base, (long)getpid());
    char *other = xasprintf("%s/notours", g->base);
    const char *const dirs[] = {stale_io, stale_eg, live, other};
    for (size_t i = 0; i < ARRAY_SIZE(dirs); i++)
        assert_int_equal(mkdir(dirs[i], 0711), 0);
    char *io = xasprintf("%s/%s", stale_io, CHANNEL_SOCKET_NAME);
    char *eg = xasprintf("%s/%s", stale_eg, EGRESS_SOCK_NAME);
    const char *const files[] = {io, eg};
    for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
        int fd = open(files[i], O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        close(fd);
    }
    sock_dir_sweep(g->base);
    struct stat st;
    assert_int_equal(stat(stale_io, &st), -1);
    assert_int_equal(stat(stale_eg, &st), -1);
    assert_int_equal(stat(live, &st), 0);
    assert_int_equal(stat(other, &st), 0);
    rmdir(live);
    rmdir(other);
    free(io);
    free(eg);
    free(stale_io);
    free(stale_eg);
    free(live);
    free(other);
}

/* ---- the forwarder behind the connector, as a sandbox runs them ---------- */

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sa);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    close(fd);
    return ntohs(sa.sin_port);
}

struct out {
    char text[256];
    size_t len;
};

static int collect(void *ctx, int stream, const char *data, size_t len, struct err *err)
{
    (void)err;
    struct out *o = ctx;
    if (stream == BACKEND_STDOUT && o->len + len < sizeof(o->text)) {
        memcpy(o->text + o->len, data, len);
        o->len += len;
    }
    return 0;
}

/* The command a sandbox with egress runs on a channel: the connector,
 * then the forwarder, then the program, here one that asks the proxy
 * port once and prints the answer. The connection reaches the egress
 * socket through the relay (a process of the sandbox's uid and
 * "container"), its end passes through, and the program's stdout ends
 * when it does while the relay lives on. */
static void test_forwarder_behind_connector(void **state)
{
    struct rig *g = *state;
    if (system("perl -MSocket -MPOSIX -MFcntl -MIO::Socket::INET -e 1 2>/dev/null") != 0)
        skip();
    struct channel *ch = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(channel_open(g->base, g->uid, g->gid, &ch, &err), 0);
    struct egress_sock *s = open_ok(g);
    egress_sock_set_container(s, g->cg);
    char *io = xasprintf("%s/%s", channel_dir(ch), CHANNEL_SOCKET_NAME);
    char *eg = socket_path(s);
    char port[8];
    snprintf(port, sizeof(port), "%d", free_port());
    char *prog = xasprintf("my $s = IO::Socket::INET->new('127.0.0.1:%s') or die $@; "
                           "print $s \"ping\\n\"; $s->shutdown(1); print scalar <$s>;",
                           port);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (geteuid() == 0 && (setgid(g->gid) < 0 || setuid(g->uid) < 0))
            _exit(2);
        execlp("perl", "perl", "-e", channel_connect_src, io, "perl", "-e", egress_forward_src, eg,
               port, "perl", "-MIO::Socket::INET", "-e", prog, (char *)NULL);
        _exit(127);
    }
    struct backend_stream *stream = NULL;
    if (channel_accept(ch, g->cg, util_now_ms() + GUARD_MS, -1, NULL, NULL, &stream, &err) != 0)
        fail_msg("channel_accept: %s", err_msg(&err));
    wait_pending(s);
    int fd = -1;
    if (egress_sock_accept(s, &fd, &err) < 0)
        fail_msg("egress_sock_accept: %s", err_msg(&err));
    char buf[16] = {0};
    size_t have = 0;
    ssize_t n;
    while ((n = recv(fd, buf + have, sizeof(buf) - 1 - have, 0)) > 0)
        have += (size_t)n;
    assert_int_equal(n, 0); /* the client's half-close came through */
    assert_string_equal(buf, "ping\n");
    assert_int_equal(send(fd, "pong\n", 5, MSG_NOSIGNAL), 5);
    close(fd);
    struct out out = {.len = 0};
    double until = util_now_ms() + GUARD_MS;
    for (long r = BACKEND_AGAIN; r != 0;) {
        struct pollfd p = {.fd = backend_stream_fd(stream), .events = POLLIN};
        poll(&p, 1, 1000);
        r = backend_stream_read(stream, collect, &out, &err);
        if ((r < 0 && r != BACKEND_AGAIN) || util_now_ms() > until)
            fail_msg("the program's stdout did not end");
    }
    assert_int_equal(out.len, 5);
    assert_memory_equal(out.text, "pong\n", 5);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(kill_marked(eg), 1);
    backend_stream_close(stream);
    channel_close(ch);
    egress_sock_close(s);
    free(prog);
    free(eg);
    free(io);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_open_modes),
        T(test_ca_files),
        T(test_accept_nothing_waiting),
        T(test_accept_own_user),
        T(test_stranger_refused),
        T(test_outsider_refused),
        T(test_sandbox_process_accepted),
        T(test_runtime_proxy_accepted),
        T(test_sweep),
        T(test_forwarder_behind_connector),
    };
#undef T
    return cmocka_run_group_tests_name("egress_sock", tests, NULL, NULL);
}
