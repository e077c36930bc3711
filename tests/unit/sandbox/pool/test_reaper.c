/* reaper.c against the fake Engine API (tests/fake_engine): which
 * containers a sweep removes (expired, orphaned by a dead daemon, stale
 * without a label) and which it must leave alone (another live daemon's,
 * and those this daemon has just removed), removals retried after failures
 * and across an engine outage, when the sweeper sweeps, what stopping
 * finishes and how long it retries, and the owner label's parsing of hostile values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "backend/docker/docker.h"
#include "backend/docker/engine_http.h"
#include "fake_engine/fake_engine.h"
#include "sandbox/pool/reaper.h"
#include "unit/rig.h"

#define GUARD FAKE_HANG_GUARD_MS

static struct fake_engine *F;
static struct backend *E;

/* The one place the reaper meets the fake engine, through the Docker
 * backend. Instance "me"; containers without an expiry label are
 * stale after 600 s; sweep_ms 0 means sweeps only by hand. uids may be
 * NULL. */
static struct reaper *new_reaper_uids(long sweep_ms, struct uids *uids)
{
    struct err err = ERR_INIT;
    E = docker_backend_new(fake_engine_socket(F), NULL, NULL);
    struct reaper *r = reaper_new(E, "me", 600, sweep_ms, uids, &err);
    if (!r)
        fail_msg("reaper_new: %s", err_msg(&err));
    return r;
}

static struct reaper *new_reaper(long sweep_ms)
{
    return new_reaper_uids(sweep_ms, NULL);
}

static void free_reaper(struct reaper *r)
{
    reaper_free(r);
    backend_free(E);
    E = NULL;
}

static int setup(void **state)
{
    (void)state;
    F = fake_engine_start();
    return F ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    fake_engine_stop(F);
    F = NULL;
    return 0;
}

/* A managed container with these extra labels (a JSON members list). */
static void add(const char *id, long long created, const char *fmt, ...) ATTR_PRINTF(3, 4);
static void add(const char *id, long long created, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *members = xvasprintf(fmt, ap);
    va_end(ap);
    char *labels =
        xasprintf("{\"io.mcp-sandboxd.managed\":\"1\"%s%s}", *members ? "," : "", members);
    fake_engine_add_container(F, id, created, labels, false);
    free(labels);
    free(members);
}

static bool was_deleted(const char *id)
{
    return fake_engine_removed(F, id);
}

/* The reaper offers no condition to wait on; this polls, as a hang guard
 * only (a removal the fake confirmed is unqueued right after). */
static bool drained(struct reaper *r)
{
    double deadline = util_now_ms() + GUARD;
    while (reaper_pending(r) > 0 && util_now_ms() < deadline)
        usleep(2000);
    return reaper_pending(r) == 0;
}

static void wait_drained(struct reaper *r)
{
    assert_true(drained(r));
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
    struct reaper *r = new_reaper(0);
    const char *self = reaper_owner(r);
    char dead[REAPER_OWNER_MAX];
    dead_owner(self, dead, sizeof(dead));
    long long now = (long long)time(NULL);
    /* ours, live */
    add("aaaaaaaaaa01", now,
        "\"io.mcp-sandboxd.instance\":\"me\",\"io.mcp-sandboxd.owner\":\"%s\","
        "\"io.mcp-sandboxd.expires\":\"%lld\"",
        self, now + 600);
    /* ours, past its expiry (a stuck run) */
    add("aaaaaaaaaa02", now - 900,
        "\"io.mcp-sandboxd.instance\":\"me\",\"io.mcp-sandboxd.owner\":\"%s\","
        "\"io.mcp-sandboxd.expires\":\"%lld\"",
        self, now - 1);
    /* another live daemon's (same process here), not expired */
    add("aaaaaaaaaa03", now,
        "\"io.mcp-sandboxd.instance\":\"other\",\"io.mcp-sandboxd.owner\":\"%s\","
        "\"io.mcp-sandboxd.expires\":\"%lld\"",
        self, now + 600);
    /* a crashed daemon's orphan, long before its expiry */
    add("aaaaaaaaaa04", now,
        "\"io.mcp-sandboxd.instance\":\"gone\",\"io.mcp-sandboxd.owner\":\"%s\","
        "\"io.mcp-sandboxd.expires\":\"%lld\"",
        dead, now + 600);
    /* a daemon on another host: only its expiry counts */
    add("aaaaaaaaaa05", now,
        "\"io.mcp-sandboxd.instance\":\"far\",\"io.mcp-sandboxd.owner\":"
        "\"00000000-0000-0000-0000-000000000000:1:1:1\",\"io.mcp-sandboxd.expires\":\"%lld\"",
        now + 600);
    /* expired, whoever made it */
    add("aaaaaaaaaa06", now - 900,
        "\"io.mcp-sandboxd.instance\":\"far\",\"io.mcp-sandboxd.expires\":\"%lld\"", now - 1);
    /* no expiry label: by age */
    add("aaaaaaaaaa07", now - 3600, "\"io.mcp-sandboxd.instance\":\"old\"");
    add("aaaaaaaaaa08", now - 10, "\"io.mcp-sandboxd.instance\":\"young\"");
    /* a malformed expiry counts as none; a bad id is never used */
    add("aaaaaaaaaa09", now - 10,
        "\"io.mcp-sandboxd.instance\":\"odd\",\"io.mcp-sandboxd.expires\":\"-1\"");
    add("../../x", 1, "\"io.mcp-sandboxd.expires\":\"1\"");
    reaper_create_begin(r);
    reaper_create_end(r, "aaaaaaaaaa01", -1); /* a run of ours holds it */
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
    assert_int_equal(fake_engine_count(F, FAKE_OP_DELETE, NULL), 4);
    free_reaper(r);
}

/* Refusals (Podman's while a removal is under way) retried by the reaper
 * until the engine confirms; one removal queued however often it is asked
 * for. */
static void test_removal_retried(void **state)
{
    (void)state;
    struct reaper *r = new_reaper(0);
    add("bbbbbbbbbb01", 1, "%s", "");
    fake_engine_fault(F, FAKE_OP_DELETE, 500,
                      "{\"message\":\"removal of container is already in progress\"}", 2);
    reaper_remove(r, "bbbbbbbbbb01");
    reaper_remove(r, "bbbbbbbbbb01"); /* queued once */
    wait_drained(r);
    assert_true(was_deleted("bbbbbbbbbb01"));
    assert_int_equal(fake_engine_count(F, FAKE_OP_DELETE, "bbbbbbbbbb01"), 3);
    free_reaper(r);
}

/* The removal of a run interrupted by an engine outage happens once the
 * engine is back, without anyone asking again: the reaper's retries. */
static void test_removal_survives_engine_outage(void **state)
{
    (void)state;
    struct reaper *r = new_reaper(0);
    add("cccccccccc01", 1, "%s", "");
    fake_engine_set_outage(F, true);
    reaper_remove(r, "cccccccccc01");
    bool dropped = fake_engine_wait_dropped(F, 3, GUARD);
    size_t pending = reaper_pending(r);
    fake_engine_set_outage(F, false);
    assert_true(dropped);
    assert_int_equal(pending, 1);
    assert_true(fake_engine_wait_removed(F, "cccccccccc01", GUARD));
    wait_drained(r);
    assert_int_equal(fake_engine_count(F, FAKE_OP_DELETE, "cccccccccc01"), 1);
    free_reaper(r);
}

/* A removal asked for later waits for its time while others go ahead, and
 * stopping the reaper does not wait for it: it is removed at once. */
static void test_removal_after_delay(void **state)
{
    (void)state;
    struct reaper *r = new_reaper(0);
    add("dddddddddd01", 1, "%s", "");
    add("dddddddddd02", 1, "%s", "");
    reaper_remove_after(r, "dddddddddd01", 3600 * 1000L);
    reaper_remove(r, "dddddddddd02");
    assert_true(fake_engine_wait_removed(F, "dddddddddd02", GUARD));
    /* The worker unqueues 02 just after the fake confirmed it. */
    double deadline = util_now_ms() + GUARD;
    while (reaper_pending(r) > 1 && util_now_ms() < deadline)
        usleep(2000);
    assert_int_equal(reaper_pending(r), 1);
    assert_false(was_deleted("dddddddddd01"));
    free_reaper(r);
    assert_true(was_deleted("dddddddddd01"));
}

/* A container of ours that no run holds was created after its run gave up
 * (a stalled engine answering late): removed, but only by a sweep during
 * which no create was under way, since a create still waiting for its
 * answer may be the one that made it. */
static void test_abandoned_create(void **state)
{
    (void)state;
    struct err err = ERR_INIT;
    struct reaper *r = new_reaper(0);
    long long now = (long long)time(NULL);
    add("eeeeeeeeee01", now,
        "\"io.mcp-sandboxd.instance\":\"me\",\"io.mcp-sandboxd.expires\":\"%lld\"", now + 600);
    add("eeeeeeeeee02", now,
        "\"io.mcp-sandboxd.instance\":\"me\",\"io.mcp-sandboxd.expires\":\"%lld\"", now + 600);
    reaper_create_begin(r);
    reaper_create_end(r, "eeeeeeeeee01", -1); /* held by its run */
    reaper_create_begin(r);                   /* a create under way */
    assert_int_equal(reaper_sweep(r, &err), 0);
    reaper_create_end(r, NULL, -1); /* the run gave up on it */
    assert_int_equal(reaper_sweep(r, &err), 1);
    wait_drained(r);
    assert_true(was_deleted("eeeeeeeeee02"));
    assert_false(was_deleted("eeeeeeeeee01"));
    /* Once its run is done with it, it goes like any other. */
    reaper_remove(r, "eeeeeeeeee01");
    wait_drained(r);
    assert_true(was_deleted("eeeeeeeeee01"));
    free_reaper(r);
}

/* A sweep the engine cannot answer fails, and queues nothing. */
static void test_sweep_engine_error(void **state)
{
    (void)state;
    struct err err = ERR_INIT;
    struct reaper *r = new_reaper(0);
    fake_engine_fault(F, FAKE_OP_LIST, 500, NULL, 1);
    assert_int_equal(reaper_sweep(r, &err), -1);
    assert_int_equal(err.code, ERR_ENGINE);
    assert_non_null(strstr(err.msg, "injected list failure"));
    err_clear(&err);
    assert_int_equal(reaper_pending(r), 0);
    free_reaper(r);
}

/* With sweeps on, a crashed daemon's orphan goes without any call. */
static void test_periodic_sweep(void **state)
{
    (void)state;
    long long now = (long long)time(NULL);
    add("dddddddddd01", now - 100,
        "\"io.mcp-sandboxd.instance\":\"x\",\"io.mcp-sandboxd.expires\":\"%lld\"", now - 1);
    struct reaper *r = new_reaper(50);
    assert_true(fake_engine_wait_removed(F, "dddddddddd01", GUARD));
    free_reaper(r);
}

/* The sweeper sweeps at start and then once a period: removals coming and
 * going do not wake it. */
static void test_sweep_period(void **state)
{
    (void)state;
    enum { N = 8 };
    char ids[N][16];
    for (int i = 0; i < N; i++) {
        snprintf(ids[i], sizeof(ids[i]), "ffffffffff%02d", i);
        fake_engine_add_container(F, ids[i], 1, NULL, false); /* unlabelled: never listed */
    }
    struct reaper *r = new_reaper(600000); /* no period ends during the test */
    assert_true(fake_engine_wait_count(F, FAKE_OP_LIST, NULL, 1, GUARD));
    for (int i = 0; i < N; i++)
        reaper_remove(r, ids[i]);
    wait_drained(r);
    for (int i = 0; i < N; i++)
        assert_true(was_deleted(ids[i]));
    /* Stopping wakes the sweeper (no 10-minute wait) and joins it: every
     * list it asked for is counted by now. */
    free_reaper(r);
    assert_int_equal(fake_engine_count(F, FAKE_OP_LIST, NULL), 1);
}

/* The engine's answer to a list, as it was before: held until released. */
static bool stale_list(struct fake_engine *fe, int fd, const struct fake_request *req, void *ctx)
{
    if (req->op != FAKE_OP_LIST)
        return false;
    fake_engine_hold(fe);
    fake_engine_respond(fd, 200, ctx);
    return true;
}

struct bg_sweep {
    struct reaper *r;
    struct err err;
    int queued;
    pthread_t th;
};

static void *sweep_main(void *arg)
{
    struct bg_sweep *b = arg;
    b->queued = reaper_sweep(b->r, &b->err);
    return NULL;
}

/* A container removed while a sweep's list was on its way is not taken
 * for one left behind: not queued again, not deleted twice. */
static void test_sweep_skips_just_removed(void **state)
{
    (void)state;
    struct reaper *r = new_reaper(0);
    long long now = (long long)time(NULL);
    /* a run's container, and an expired one an earlier sweep queued */
    add("cafe0000aa01", now,
        "\"io.mcp-sandboxd.instance\":\"me\",\"io.mcp-sandboxd.expires\":\"%lld\"", now + 600);
    add("cafe0000aa02", now - 900,
        "\"io.mcp-sandboxd.instance\":\"far\",\"io.mcp-sandboxd.expires\":\"%lld\"", now - 1);
    char *listed = xasprintf(
        "[{\"Id\":\"cafe0000aa01\",\"Created\":%lld,\"Labels\":{\"io.mcp-sandboxd.managed\":\"1\","
        "\"io.mcp-sandboxd.instance\":\"me\",\"io.mcp-sandboxd.expires\":\"%lld\"}},"
        "{\"Id\":\"cafe0000aa02\",\"Created\":%lld,\"Labels\":{\"io.mcp-sandboxd.managed\":\"1\","
        "\"io.mcp-sandboxd.instance\":\"far\",\"io.mcp-sandboxd.expires\":\"%lld\"}}]",
        now, now + 600, now - 900, now - 1);
    reaper_create_begin(r);
    reaper_create_end(r, "cafe0000aa01", -1);
    fake_engine_set_hook(F, stale_list, listed);
    struct bg_sweep b = {.r = r, .err = ERR_INIT};
    assert_int_equal(pthread_create(&b.th, NULL, sweep_main, &b), 0);
    /* The list is asked for; both go before it is answered (the list's
     * own timeout, 2 s, is far more than two removals take). */
    bool held = fake_engine_wait_held(F, 1, GUARD);
    reaper_remove(r, "cafe0000aa01");
    reaper_remove(r, "cafe0000aa02");
    bool gone = drained(r);
    fake_engine_release(F);
    pthread_join(b.th, NULL);
    assert_true(held);
    assert_true(gone);
    if (b.queued < 0)
        fail_msg("reaper_sweep: %s", err_msg(&b.err));
    assert_int_equal(b.queued, 0);
    wait_drained(r);
    assert_true(was_deleted("cafe0000aa01"));
    assert_true(was_deleted("cafe0000aa02"));
    assert_int_equal(fake_engine_count(F, FAKE_OP_DELETE, "cafe0000aa01"), 1);
    assert_int_equal(fake_engine_count(F, FAKE_OP_DELETE, "cafe0000aa02"), 1);
    free_reaper(r);
    fake_engine_set_hook(F, NULL, NULL);
    free(listed);
}

static void *free_main(void *arg)
{
    reaper_free(arg);
    return NULL;
}

/* Stopping while a sweep is under way: what the sweep queues still gets
 * its try before the reaper ends. */
static void test_free_finishes_sweep(void **state)
{
    (void)state;
    long long now = (long long)time(NULL);
    add("beef0000aa01", now - 900,
        "\"io.mcp-sandboxd.instance\":\"far\",\"io.mcp-sandboxd.expires\":\"%lld\"", now - 1);
    fake_engine_fault(F, FAKE_OP_LIST, FAKE_STALL, NULL, 1);
    struct reaper *r = new_reaper(600000);
    bool held = fake_engine_wait_held(F, 1, GUARD);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, free_main, r), 0);
    /* Not a handshake: the removal must happen with any timing. The pause
     * only lets reaper_free get as far as it can before the list answers,
     * which is where an order that ends the workers first loses it. */
    usleep(100000);
    fake_engine_release(F);
    pthread_join(th, NULL);
    backend_free(E);
    E = NULL;
    assert_true(held);
    assert_true(was_deleted("beef0000aa01"));
    assert_int_equal(fake_engine_count(F, FAKE_OP_DELETE, "beef0000aa01"), 1);
}

/* Stopping, a removal the engine refuses for a moment (Podman's while a
 * container is just exiting) is retried until it is done. */
static void test_stop_retries_refusals(void **state)
{
    (void)state;
    struct reaper *r = new_reaper(0);
    add("abcdef000001", 1, "%s", "");
    reaper_remove_after(r, "abcdef000001", 3600 * 1000L);
    fake_engine_fault(F, FAKE_OP_DELETE, 500, "{\"message\":\"container state improper\"}", 3);
    free_reaper(r);
    assert_true(was_deleted("abcdef000001"));
    assert_int_equal(fake_engine_count(F, FAKE_OP_DELETE, "abcdef000001"), 4);
}

/* A removal the engine keeps refusing does not hold the stop for longer
 * than REAPER_STOP_RETRY_MS (the next daemon's sweep removes it). */
static void test_stop_retries_are_bounded(void **state)
{
    (void)state;
    struct reaper *r = new_reaper(0);
    add("abcdef000002", 1, "%s", "");
    reaper_remove_after(r, "abcdef000002", 3600 * 1000L);
    fake_engine_fault(F, FAKE_OP_DELETE, 500, NULL, -1);
    double t0 = util_now_ms();
    free_reaper(r);
    double took = util_now_ms() - t0;
    assert_false(was_deleted("abcdef000002"));
    int tries = fake_engine_count(F, FAKE_OP_DELETE, "abcdef000002");
    /* 50, 100, 200 ms, then every 250 ms: about 14 in 3 s. */
    assert_in_range(tries, 3, 3 + REAPER_STOP_RETRY_MS / 50);
    assert_true(took < REAPER_STOP_RETRY_MS + GUARD);
}

/* A sandbox's uid comes back once its container is confirmed gone, not
 * when its removal is asked for: a removal the engine refuses keeps it
 * held. */
static void test_uid_back_after_removal(void **state)
{
    (void)state;
    struct uids *u = uids_new(3000, 2);
    struct reaper *r = new_reaper_uids(0, u);
    uid_t a = 0, b = 0, c = 0;
    struct err err = ERR_INIT;
    assert_int_equal(uids_take(u, &a, &err), 0);
    assert_int_equal(uids_take(u, &b, &err), 0);
    add("abab00000001", 1, "%s", "");
    reaper_create_begin(r);
    reaper_create_end(r, "abab00000001", a);
    fake_engine_fault(F, FAKE_OP_DELETE, FAKE_STALL, NULL, 1);
    reaper_remove(r, "abab00000001");
    assert_true(fake_engine_wait_held(F, 1, GUARD));
    /* Asked for, not done: a is still the sandbox's. */
    assert_int_equal(uids_take(u, &c, &err), -1);
    assert_int_equal(err.code, ERR_TOO_BIG);
    err_clear(&err);
    assert_int_equal(uids_held(u), 2);
    fake_engine_release(F);
    wait_drained(r);
    assert_true(was_deleted("abab00000001"));
    assert_int_equal(uids_held(u), 1);
    assert_int_equal(uids_take(u, &c, &err), 0);
    assert_int_equal(c, a);
    free_reaper(r);
    uids_free(u);
}

/* A sandbox of ours past its expiry (a clock that jumped) is queued by the
 * sweep, which knows no uid, while its holder still has it; the holder's
 * own removal then joins that one, and the uid comes back with it. */
static void test_uid_back_after_sweep_then_remove(void **state)
{
    (void)state;
    struct uids *u = uids_new(3000, 1);
    struct reaper *r = new_reaper_uids(0, u);
    uid_t a = 0, b = 0;
    struct err err = ERR_INIT;
    assert_int_equal(uids_take(u, &a, &err), 0);
    long long now = (long long)time(NULL);
    add("abab00000002", now - 900,
        "\"io.mcp-sandboxd.instance\":\"me\",\"io.mcp-sandboxd.owner\":\"%s\","
        "\"io.mcp-sandboxd.expires\":\"%lld\"",
        reaper_owner(r), now - 1);
    reaper_create_begin(r);
    reaper_create_end(r, "abab00000002", a);
    fake_engine_fault(F, FAKE_OP_DELETE, FAKE_STALL, NULL, 1);
    assert_int_equal(reaper_sweep(r, &err), 1);
    assert_true(fake_engine_wait_held(F, 1, GUARD));
    reaper_remove(r, "abab00000002"); /* the run ends while the sweep's removal is under way */
    fake_engine_release(F);
    wait_drained(r);
    assert_int_equal(uids_held(u), 0);
    assert_int_equal(uids_take(u, &b, &err), 0);
    assert_int_equal(b, a);
    free_reaper(r);
    uids_free(u);
}

/* A sweep tells the uids which ones other daemons' containers carry (not
 * this daemon's own, nor labels that are not uids); the next sweep that
 * no longer lists them frees them. */
static void test_sweep_sees_foreign_uids(void **state)
{
    (void)state;
    struct err err = ERR_INIT;
    struct uids *u = uids_new(3000, 3);
    struct reaper *r = new_reaper_uids(0, u);
    long long now = (long long)time(NULL);
    add("acac00000001", now,
        "\"io.mcp-sandboxd.instance\":\"other\",\"io.mcp-sandboxd.expires\":\"%lld\","
        "\"io.mcp-sandboxd.uid\":\"3000\"",
        now + 600);
    add("acac00000002", now,
        "\"io.mcp-sandboxd.instance\":\"other\",\"io.mcp-sandboxd.expires\":\"%lld\","
        "\"io.mcp-sandboxd.uid\":\"3001\"",
        now + 600);
    add("acac00000003", now,
        "\"io.mcp-sandboxd.instance\":\"me\",\"io.mcp-sandboxd.expires\":\"%lld\","
        "\"io.mcp-sandboxd.uid\":\"3002\"",
        now + 600);
    add("acac00000004", now,
        "\"io.mcp-sandboxd.instance\":\"other\",\"io.mcp-sandboxd.expires\":\"%lld\","
        "\"io.mcp-sandboxd.uid\":\"-3002\"",
        now + 600);
    reaper_create_begin(r);
    reaper_create_end(r, "acac00000003", -1);
    assert_int_equal(reaper_sweep(r, &err), 0);
    uid_t got = 0;
    assert_int_equal(uids_take(u, &got, &err), 0);
    assert_int_equal(got, 3002);
    assert_int_equal(uids_take(u, &got, &err), -1);
    assert_non_null(strstr(err.msg, "2 by other containers"));
    err_clear(&err);
    /* The other daemon's first sandbox is gone (removed by anyone). */
    reaper_remove(r, "acac00000001");
    wait_drained(r);
    assert_int_equal(reaper_sweep(r, &err), 0);
    assert_int_equal(uids_take(u, &got, &err), 0);
    assert_int_equal(got, 3000);
    reaper_remove(r, "acac00000003");
    wait_drained(r);
    free_reaper(r);
    uids_free(u);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_owner_values),
        T(test_sweep_decisions),
        T(test_removal_retried),
        T(test_removal_survives_engine_outage),
        T(test_removal_after_delay),
        T(test_abandoned_create),
        T(test_sweep_engine_error),
        T(test_periodic_sweep),
        T(test_sweep_period),
        T(test_sweep_skips_just_removed),
        T(test_free_finishes_sweep),
        T(test_stop_retries_refusals),
        T(test_stop_retries_are_bounded),
        T(test_uid_back_after_removal),
        T(test_uid_back_after_sweep_then_remove),
        T(test_sweep_sees_foreign_uids),
    };
#undef T
    return cmocka_run_group_tests_name("reaper", tests, rig_group_setup, rig_group_teardown);
}
