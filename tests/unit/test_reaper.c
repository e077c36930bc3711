/* reaper.c against a small programmable Engine API on a unix socket: which
 * containers a sweep removes (expired, orphaned by a dead daemon, stale
 * without a label) and which it must leave alone (another live daemon's),
 * removals retried after failures and across an engine outage, and the
 * owner label's parsing of hostile values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

#include "backend/docker/docker.h"
#include "backend/docker/engine_http.h"
#include "sandbox/reaper.h"

#define MAX_DELETES 64

struct fake {
    char dir[64];
    char path[96]; /* fits sockaddr_un's sun_path */
    int lfd;
    int stop[2];
    pthread_t th;
    bool running;

    pthread_mutex_t mu;
    char list[8192];  /* the body of GET /containers/json */
    int fail_deletes; /* answer this many DELETEs with 500 first */
    char deleted[MAX_DELETES][80];
    int n_deleted;
    int n_delete_calls;
};

static struct fake F;

static void write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

static void respond(int fd, int status, const char *body)
{
    char head[256];
    int n = snprintf(head, sizeof(head),
                     "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n",
                     status, body ? strlen(body) : 0);
    write_all(fd, head, (size_t)n);
    if (body)
        write_all(fd, body, strlen(body));
}

static void handle(int fd)
{
    char req[4096];
    size_t len = 0;
    while (len < sizeof(req) - 1) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 2000) <= 0)
            return;
        ssize_t r = recv(fd, req + len, sizeof(req) - 1 - len, 0);
        if (r <= 0)
            return;
        len += (size_t)r;
        req[len] = '\0';
        if (strstr(req, "\r\n\r\n"))
            break;
    }
    char m[16] = "", t[1024] = "";
    if (sscanf(req, "%15s %1023s", m, t) != 2)
        return;
    static const char del_prefix[] = "/v1.41/containers/";
    pthread_mutex_lock(&F.mu);
    if (!strcmp(m, "GET") && !strncmp(t, "/v1.41/containers/json?", 23)) {
        char body[sizeof(F.list)];
        memcpy(body, F.list, sizeof(body));
        pthread_mutex_unlock(&F.mu);
        respond(fd, 200, body);
        return;
    }
    if (!strcmp(m, "DELETE") && !strncmp(t, del_prefix, sizeof(del_prefix) - 1)) {
        F.n_delete_calls++;
        if (F.fail_deletes > 0) {
            F.fail_deletes--;
            pthread_mutex_unlock(&F.mu);
            respond(fd, 500, "{\"message\":\"removal of container is already in progress\"}");
            return;
        }
        const char *id = t + sizeof(del_prefix) - 1;
        size_t idlen = strcspn(id, "?");
        if (F.n_deleted < MAX_DELETES && idlen < sizeof(F.deleted[0])) {
            memcpy(F.deleted[F.n_deleted], id, idlen);
            F.deleted[F.n_deleted++][idlen] = '\0';
        }
        pthread_mutex_unlock(&F.mu);
        respond(fd, 204, NULL);
        return;
    }
    pthread_mutex_unlock(&F.mu);
    respond(fd, 400, "{\"message\":\"fake engine: no route\"}");
}

static void *serve(void *arg)
{
    (void)arg;
    for (;;) {
        struct pollfd p[2] = {{.fd = F.lfd, .events = POLLIN}, {.fd = F.stop[0], .events = POLLIN}};
        if (poll(p, 2, -1) < 0 || (p[1].revents & POLLIN))
            return NULL;
        int fd = accept(F.lfd, NULL, NULL);
        if (fd < 0)
            continue;
        handle(fd);
        close(fd);
    }
}

/* Starts (or restarts, after engine_down) serving on F.path. */
static void engine_up(void)
{
    F.lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", F.path);
    assert_true(F.lfd >= 0);
    assert_int_equal(bind(F.lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(F.lfd, 64), 0);
    assert_int_equal(pipe(F.stop), 0);
    assert_int_equal(pthread_create(&F.th, NULL, serve, NULL), 0);
    F.running = true;
}

/* Like an engine that died: nothing listens at the socket any more. */
static void engine_down(void)
{
    if (!F.running)
        return;
    assert_int_equal(write(F.stop[1], "x", 1), 1);
    pthread_join(F.th, NULL);
    close(F.lfd);
    close(F.stop[0]);
    close(F.stop[1]);
    unlink(F.path);
    F.running = false;
}

static int setup(void **state)
{
    (void)state;
    struct err err = ERR_INIT;
    if (engine_http_global_init(&err) < 0)
        return -1;
    memset(&F, 0, sizeof(F));
    pthread_mutex_init(&F.mu, NULL);
    snprintf(F.dir, sizeof(F.dir), "/tmp/test_reaper.XXXXXX");
    if (!mkdtemp(F.dir))
        return -1;
    snprintf(F.path, sizeof(F.path), "%.64s/engine.sock", F.dir);
    snprintf(F.list, sizeof(F.list), "[]");
    engine_up();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    engine_down();
    rmdir(F.dir);
    pthread_mutex_destroy(&F.mu);
    engine_http_global_cleanup();
    return 0;
}

static void set_list(const char *json)
{
    pthread_mutex_lock(&F.mu);
    size_t n = strlen(json);
    assert_true(n < sizeof(F.list));
    memcpy(F.list, json, n + 1);
    F.n_deleted = 0;
    F.n_delete_calls = 0;
    pthread_mutex_unlock(&F.mu);
}

static bool was_deleted(const char *id)
{
    bool found = false;
    pthread_mutex_lock(&F.mu);
    for (int i = 0; i < F.n_deleted; i++)
        found |= strcmp(F.deleted[i], id) == 0;
    pthread_mutex_unlock(&F.mu);
    return found;
}

static void wait_drained(struct reaper *r)
{
    for (int i = 0; i < 2000 && reaper_pending(r) > 0; i++)
        usleep(5000);
    assert_int_equal(reaper_pending(r), 0);
}

/* An owner value for a process that has exited (same boot, same pid
 * namespace as ours, so its death can be proven). */
static void dead_owner(const char *self, char *out, size_t n)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(0);
    waitpid(pid, NULL, 0);
    /* self is "boot:ns:pid:start": keep boot and ns, name the dead pid. */
    const char *third = strchr(strchr(self, ':') + 1, ':');
    size_t head = (size_t)(third - self);
    assert_true(head + 32 < n);
    memcpy(out, self, head);
    snprintf(out + head, n - head, ":%d:12345", (int)pid);
}

static void test_owner_values(void **state)
{
    (void)state;
    char self[REAPER_OWNER_MAX];
    struct err err = ERR_INIT;
    assert_int_equal(reaper_owner_self(self, &err), 0);
    assert_int_equal(reaper_owner_alive(self, self), 1);
    char dead[REAPER_OWNER_MAX];
    dead_owner(self, dead, sizeof(dead));
    assert_int_equal(reaper_owner_alive(dead, self), 0);
    /* Same pid, different start time: the pid was reused. */
    char reused[REAPER_OWNER_MAX + 4];
    size_t upto = (size_t)(strrchr(self, ':') - self);
    memcpy(reused, self, upto);
    memcpy(reused + upto, ":1", 3);
    assert_int_equal(reaper_owner_alive(reused, self), 0);
    /* Another host or pid namespace: cannot tell. */
    char other[REAPER_OWNER_MAX + 40];
    snprintf(other, sizeof(other), "00000000-0000-0000-0000-000000000000%.80s", strchr(self, ':'));
    assert_int_equal(reaper_owner_alive(other, self), -1);
    static const char *const hostile[] = {
        "",
        "x",
        ":::",
        "../../../../etc/passwd:1:1:1",
        "00000000-0000-0000-0000-00000000000g:1:1:1",
        "00000000-0000-0000-0000-000000000000:1:0:1",
        "00000000-0000-0000-0000-000000000000:1:99999999999:1",
        "00000000-0000-0000-0000-000000000000:1:-5:1",
        "00000000-0000-0000-0000-000000000000:1:1:1:extra",
        "00000000-0000-0000-0000-000000000000:184467440737095516150:1:1",
    };
    for (size_t i = 0; i < ARRAY_SIZE(hostile); i++)
        assert_int_equal(reaper_owner_alive(hostile[i], self), -1);
    assert_int_equal(reaper_owner_alive(NULL, self), -1);
}

static void test_sweep_decisions(void **state)
{
    (void)state;
    struct err err = ERR_INIT;
    struct backend *e = docker_backend_new(F.path);
    struct reaper *r = reaper_new(e, "me", 600, 0, &err);
    assert_non_null(r);
    const char *self = reaper_owner(r);
    char dead[REAPER_OWNER_MAX];
    dead_owner(self, dead, sizeof(dead));
    long long now = (long long)time(NULL);
    char list[8192];
    snprintf(list, sizeof(list),
             "["
             /* ours, live */
             "{\"Id\":\"aaaaaaaaaa01\",\"Created\":%lld,\"Labels\":{\"io.mcp-sandboxd.instance\":"
             "\"me\",\"io.mcp-sandboxd.owner\":\"%s\",\"io.mcp-sandboxd.expires\":\"%lld\"}},"
             /* ours, past its expiry (a stuck run) */
             "{\"Id\":\"aaaaaaaaaa02\",\"Created\":%lld,\"Labels\":{\"io.mcp-sandboxd.instance\":"
             "\"me\",\"io.mcp-sandboxd.owner\":\"%s\",\"io.mcp-sandboxd.expires\":\"%lld\"}},"
             /* another live daemon's (same process here), not expired */
             "{\"Id\":\"aaaaaaaaaa03\",\"Created\":%lld,\"Labels\":{\"io.mcp-sandboxd.instance\":"
             "\"other\",\"io.mcp-sandboxd.owner\":\"%s\",\"io.mcp-sandboxd.expires\":\"%lld\"}},"
             /* a crashed daemon's orphan, long before its expiry */
             "{\"Id\":\"aaaaaaaaaa04\",\"Created\":%lld,\"Labels\":{\"io.mcp-sandboxd.instance\":"
             "\"gone\",\"io.mcp-sandboxd.owner\":\"%s\",\"io.mcp-sandboxd.expires\":\"%lld\"}},"
             /* a daemon on another host: only its expiry counts */
             "{\"Id\":\"aaaaaaaaaa05\",\"Created\":%lld,\"Labels\":{\"io.mcp-sandboxd.instance\":"
             "\"far\",\"io.mcp-sandboxd.owner\":\"00000000-0000-0000-0000-000000000000:1:1:1\","
             "\"io.mcp-sandboxd.expires\":\"%lld\"}},"
             /* expired, whoever made it */
             "{\"Id\":\"aaaaaaaaaa06\",\"Created\":%lld,\"Labels\":{\"io.mcp-sandboxd.instance\":"
             "\"far\",\"io.mcp-sandboxd.expires\":\"%lld\"}},"
             /* no expiry label: by age */
             "{\"Id\":\"aaaaaaaaaa07\",\"Created\":%lld,\"Labels\":{\"io.mcp-sandboxd.instance\":"
             "\"old\"}},"
             "{\"Id\":\"aaaaaaaaaa08\",\"Created\":%lld,\"Labels\":{\"io.mcp-sandboxd.instance\":"
             "\"young\"}},"
             /* a malformed expiry counts as none; a bad id is never used */
             "{\"Id\":\"aaaaaaaaaa09\",\"Created\":%lld,\"Labels\":{\"io.mcp-sandboxd.instance\":"
             "\"odd\",\"io.mcp-sandboxd.expires\":\"-1\"}},"
             "{\"Id\":\"../../x\",\"Created\":1,\"Labels\":{\"io.mcp-sandboxd.expires\":\"1\"}}"
             "]",
             now, self, now + 600, now - 900, self, now - 1, now, self, now + 600, now, dead,
             now + 600, now, now + 600, now - 900, now - 1, now - 3600, now - 10, now - 10);
    set_list(list);
    reaper_create_begin(r);
    reaper_create_end(r, "aaaaaaaaaa01"); /* a run of ours holds it */
    assert_int_equal(reaper_sweep(r, &err), 4);
    wait_drained(r);
    assert_false(was_deleted("aaaaaaaaaa01"));
    assert_true(was_deleted("aaaaaaaaaa02"));
    assert_false(was_deleted("aaaaaaaaaa03"));
    assert_true(was_deleted("aaaaaaaaaa04"));
    assert_false(was_deleted("aaaaaaaaaa05"));
    assert_true(was_deleted("aaaaaaaaaa06"));
    assert_true(was_deleted("aaaaaaaaaa07"));
    assert_false(was_deleted("aaaaaaaaaa08"));
    assert_false(was_deleted("aaaaaaaaaa09"));
    reaper_free(r);
    backend_free(e);
}

static void test_removal_retried(void **state)
{
    (void)state;
    struct err err = ERR_INIT;
    struct backend *e = docker_backend_new(F.path);
    struct reaper *r = reaper_new(e, "me", 600, 0, &err);
    set_list("[]");
    pthread_mutex_lock(&F.mu);
    F.fail_deletes = 2;
    pthread_mutex_unlock(&F.mu);
    reaper_remove(r, "bbbbbbbbbb01");
    reaper_remove(r, "bbbbbbbbbb01"); /* queued once */
    wait_drained(r);
    assert_true(was_deleted("bbbbbbbbbb01"));
    pthread_mutex_lock(&F.mu);
    int calls = F.n_delete_calls;
    pthread_mutex_unlock(&F.mu);
    assert_int_equal(calls, 3);
    reaper_free(r);
    backend_free(e);
}

/* The removal of a run interrupted by an engine outage happens once the
 * engine is back, without anyone asking again. */
static void test_removal_survives_engine_outage(void **state)
{
    (void)state;
    struct err err = ERR_INIT;
    struct backend *e = docker_backend_new(F.path);
    struct reaper *r = reaper_new(e, "me", 600, 0, &err);
    set_list("[]");
    engine_down();
    reaper_remove(r, "cccccccccc01");
    usleep(600 * 1000); /* a few failed tries */
    assert_int_equal(reaper_pending(r), 1);
    engine_up();
    wait_drained(r);
    assert_true(was_deleted("cccccccccc01"));
    reaper_free(r);
    backend_free(e);
}

/* A container of ours that no run holds was created after its run gave up
 * (a stalled engine answering late): removed, but only by a sweep during
 * which no create was under way, since a create still waiting for its
 * answer may be the one that made it. */
static void test_abandoned_create(void **state)
{
    (void)state;
    struct err err = ERR_INIT;
    struct backend *e = docker_backend_new(F.path);
    struct reaper *r = reaper_new(e, "me", 600, 0, &err);
    long long now = (long long)time(NULL);
    char list[1024];
    snprintf(list, sizeof(list),
             "[{\"Id\":\"eeeeeeeeee01\",\"Created\":%lld,\"Labels\":{\"io.mcp-sandboxd.instance\":"
             "\"me\",\"io.mcp-sandboxd.expires\":\"%lld\"}},"
             "{\"Id\":\"eeeeeeeeee02\",\"Created\":%lld,\"Labels\":{\"io.mcp-sandboxd.instance\":"
             "\"me\",\"io.mcp-sandboxd.expires\":\"%lld\"}}]",
             now, now + 600, now, now + 600);
    set_list(list);
    reaper_create_begin(r);
    reaper_create_end(r, "eeeeeeeeee01"); /* held by its run */
    reaper_create_begin(r);               /* a create under way */
    assert_int_equal(reaper_sweep(r, &err), 0);
    reaper_create_end(r, NULL); /* the run gave up on it */
    assert_int_equal(reaper_sweep(r, &err), 1);
    wait_drained(r);
    assert_true(was_deleted("eeeeeeeeee02"));
    assert_false(was_deleted("eeeeeeeeee01"));
    /* Once its run is done with it, it goes like any other. */
    reaper_remove(r, "eeeeeeeeee01");
    wait_drained(r);
    assert_true(was_deleted("eeeeeeeeee01"));
    reaper_free(r);
    backend_free(e);
}

/* With sweeps on, a crashed daemon's orphan goes without any call. */
static void test_periodic_sweep(void **state)
{
    (void)state;
    struct err err = ERR_INIT;
    struct backend *e = docker_backend_new(F.path);
    long long now = (long long)time(NULL);
    char list[512];
    snprintf(list, sizeof(list),
             "[{\"Id\":\"dddddddddd01\",\"Created\":%lld,\"Labels\":{\"io.mcp-sandboxd.instance\":"
             "\"x\",\"io.mcp-sandboxd.expires\":\"%lld\"}}]",
             now - 100, now - 1);
    set_list(list);
    struct reaper *r = reaper_new(e, "me", 600, 50, &err);
    for (int i = 0; i < 400 && !was_deleted("dddddddddd01"); i++)
        usleep(10000);
    assert_true(was_deleted("dddddddddd01"));
    reaper_free(r);
    backend_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_owner_values),
        cmocka_unit_test(test_sweep_decisions),
        cmocka_unit_test(test_removal_retried),
        cmocka_unit_test(test_removal_survives_engine_outage),
        cmocka_unit_test(test_abandoned_create),
        cmocka_unit_test(test_periodic_sweep),
    };
    return cmocka_run_group_tests_name("reaper", tests, setup, teardown);
}
