/* reaper.c against the fake backend (tests/fake_backend): which sandboxes
 * a sweep removes (expired, orphaned by a dead daemon, stale without an
 * expiry) and which it must leave alone (another live daemon's, and those
 * this daemon has just removed), removals retried after failures and
 * across a backend outage, when the sweeper sweeps, what stopping
 * finishes and how long it retries, and the owner mark's parsing of
 * hostile values. How the Docker backend reads its labels into a list is
 * tests/unit/backend/docker/test_engine.c's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fake_backend/fake_backend.h"
#include "sandbox/pool/reaper.h"

#define GUARD 20000

static struct fake_backend *F;
static struct backend *E;

/* Instance "me"; sandboxes without an expiry are stale after 600 s;
 * sweep_ms 0 means sweeps only by hand. uids may be NULL. */
static struct reaper *new_reaper_uids(long sweep_ms, struct uids *uids)
{
    struct err err = ERR_INIT;
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
}

static int setup(void **state)
{
    (void)state;
    F = fake_backend_new();
    E = fake_backend_get(F);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fake_backend_release(F);
    backend_free(E);
    F = NULL;
    E = NULL;
    return 0;
}

/* A sandbox that exists already, with these marks (NULL: none); its uid
 * unknown. */
static void add_uid(const char *id, long long created, const char *instance, const char *owner,
                    long long expires, long long uid)
{
    struct fake_existing e = {.id = id,
                              .created = created,
                              .expires = expires,
                              .instance = instance,
                              .owner = owner,
                              .uid = uid};
    fake_backend_add(F, &e);
}

static void add(const char *id, long long created, const char *instance, const char *owner,
                long long expires)
{
    add_uid(id, created, instance, owner, expires, -1);
}

static bool was_deleted(const char *id)
{
    struct fake_sandbox_info info;
    assert_true(fake_backend_info(F, id, &info));
    return info.removed;
}

static int removals(const char *id)
{
    return fake_backend_count(F, FAKE_STEP_REMOVE, id);
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
    add("aaaaaaaaaa01", now, "me", self, now + 600);     /* ours, live */
    add("aaaaaaaaaa02", now - 900, "me", self, now - 1); /* ours, expired (a stuck run) */
    add("aaaaaaaaaa03", now, "other", self, now + 600);  /* another live daemon's */
    add("aaaaaaaaaa04", now, "gone", dead, now + 600);   /* a crashed daemon's orphan */
    /* a daemon on another host: only its expiry counts */
    add("aaaaaaaaaa05", now, "far", "00000000-0000-0000-0000-000000000000:1:1:1", now + 600);
    add("aaaaaaaaaa06", now - 900, "far", NULL, now - 1); /* expired, whoever made it */
    add("aaaaaaaaaa07", now - 3600, "old", NULL, 0);      /* no expiry: by age */
    add("aaaaaaaaaa08", now - 10, "young", NULL, 0);
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
    assert_int_equal(removals(NULL), 4);
    free_reaper(r);
}

/* Refusals (Podman's while a removal is under way) retried by the reaper
 * until the backend confirms; one removal queued however often it is
 * asked for. */
static void test_removal_retried(void **state)
{
    (void)state;
    struct reaper *r = new_reaper(0);
    add("bbbbbbbbbb01", 1, NULL, NULL, 0);
    fake_backend_fail(F, FAKE_STEP_REMOVE, ERR_ENGINE, 2);
    reaper_remove(r, "bbbbbbbbbb01");
    reaper_remove(r, "bbbbbbbbbb01"); /* queued once */
    wait_drained(r);
    assert_true(was_deleted("bbbbbbbbbb01"));
    assert_int_equal(removals("bbbbbbbbbb01"), 3);
    free_reaper(r);
}

/* The removal of a run interrupted by a backend outage happens once the
 * backend is back, without anyone asking again: the reaper's retries. */
static void test_removal_survives_engine_outage(void **state)
{
    (void)state;
    struct reaper *r = new_reaper(0);
    add("cccccccccc01", 1, NULL, NULL, 0);
    fake_backend_set_outage(F, true);
    reaper_remove(r, "cccccccccc01");
    bool tried = fake_backend_wait_count(F, FAKE_STEP_REMOVE, "cccccccccc01", 3, GUARD);
    size_t pending = reaper_pending(r);
    fake_backend_set_outage(F, false);
    assert_true(tried);
    assert_int_equal(pending, 1);
    assert_true(fake_backend_wait_removed(F, "cccccccccc01", GUARD));
    wait_drained(r);
    free_reaper(r);
}

/* A removal asked for later waits for its time while others go ahead, and
 * stopping the reaper does not wait for it: it is removed at once. */
static void test_removal_after_delay(void **state)
{
    (void)state;
    struct reaper *r = new_reaper(0);
    add("dddddddddd01", 1, NULL, NULL, 0);
    add("dddddddddd02", 1, NULL, NULL, 0);
    reaper_remove_after(r, "dddddddddd01", 3600 * 1000L);
    reaper_remove(r, "dddddddddd02");
    assert_true(fake_backend_wait_removed(F, "dddddddddd02", GUARD));
    /* The worker unqueues 02 just after the backend confirmed it. */
    double deadline = util_now_ms() + GUARD;
    while (reaper_pending(r) > 1 && util_now_ms() < deadline)
        usleep(2000);
    assert_int_equal(reaper_pending(r), 1);
    assert_false(was_deleted("dddddddddd01"));
    free_reaper(r);
    assert_true(was_deleted("dddddddddd01"));
}

/* A sandbox of ours that no run holds was created after its run gave up
 * (a stalled backend answering late): removed, but only by a sweep during
 * which no create was under way, since a create still waiting for its
 * answer may be the one that made it. */
static void test_abandoned_create(void **state)
{
    (void)state;
    struct err err = ERR_INIT;
    struct reaper *r = new_reaper(0);
    long long now = (long long)time(NULL);
    add("eeeeeeeeee01", now, "me", NULL, now + 600);
    add("eeeeeeeeee02", now, "me", NULL, now + 600);
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

/* A sweep the backend cannot answer fails, and queues nothing. */
static void test_sweep_engine_error(void **state)
{
    (void)state;
    struct err err = ERR_INIT;
    struct reaper *r = new_reaper(0);
    fake_backend_fail(F, FAKE_STEP_LIST, ERR_ENGINE, 1);
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
    add("dddddddddd01", now - 100, "x", NULL, now - 1);
    struct reaper *r = new_reaper(50);
    assert_true(fake_backend_wait_removed(F, "dddddddddd01", GUARD));
    free_reaper(r);
}

/* The sweeper sweeps at start and then once a period: removals coming and
 * going do not wake it. */
static void test_sweep_period(void **state)
{
    (void)state;
    enum { N = 8 };
    char ids[N][16];
    long long now = (long long)time(NULL);
    for (int i = 0; i < N; i++) {
        snprintf(ids[i], sizeof(ids[i]), "ffffffffff%02d", i);
        add(ids[i], now, "other", NULL, now + 600); /* not the sweep's to remove */
    }
    struct reaper *r = new_reaper(600000); /* no period ends during the test */
    assert_true(fake_backend_wait_count(F, FAKE_STEP_LIST, NULL, 1, GUARD));
    for (int i = 0; i < N; i++)
        reaper_remove(r, ids[i]);
    wait_drained(r);
    for (int i = 0; i < N; i++)
        assert_true(was_deleted(ids[i]));
    /* Stopping wakes the sweeper (no 10-minute wait) and joins it: every
     * list it asked for is counted by now. */
    free_reaper(r);
    assert_int_equal(fake_backend_count(F, FAKE_STEP_LIST, NULL), 1);
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

/* A sandbox removed while a sweep's list was on its way is not taken for
 * one left behind: not queued again, not removed twice. */
static void test_sweep_skips_just_removed(void **state)
{
    (void)state;
    struct reaper *r = new_reaper(0);
    long long now = (long long)time(NULL);
    /* a run's sandbox, and an expired one an earlier sweep queued */
    add("cafe0000aa01", now, "me", NULL, now + 600);
    add("cafe0000aa02", now - 900, "far", NULL, now - 1);
    reaper_create_begin(r);
    reaper_create_end(r, "cafe0000aa01", -1);
    fake_backend_stall_stale_list(F, 1);
    struct bg_sweep b = {.r = r, .err = ERR_INIT};
    assert_int_equal(pthread_create(&b.th, NULL, sweep_main, &b), 0);
    /* The list is taken; both go before it is answered (the list's own
     * timeout, 2 s, is far more than two removals take). */
    bool held = fake_backend_wait_held(F, 1, GUARD);
    reaper_remove(r, "cafe0000aa01");
    reaper_remove(r, "cafe0000aa02");
    bool gone = drained(r);
    fake_backend_release(F);
    pthread_join(b.th, NULL);
    assert_true(held);
    assert_true(gone);
    if (b.queued < 0)
        fail_msg("reaper_sweep: %s", err_msg(&b.err));
    assert_int_equal(b.queued, 0);
    wait_drained(r);
    assert_true(was_deleted("cafe0000aa01"));
    assert_true(was_deleted("cafe0000aa02"));
    assert_int_equal(removals("cafe0000aa01"), 1);
    assert_int_equal(removals("cafe0000aa02"), 1);
    free_reaper(r);
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
    add("beef0000aa01", now - 900, "far", NULL, now - 1);
    fake_backend_stall(F, FAKE_STEP_LIST, 1);
    struct reaper *r = new_reaper(600000);
    bool held = fake_backend_wait_held(F, 1, GUARD);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, free_main, r), 0);
    /* Not a handshake: the removal must happen with any timing. The pause
     * only lets reaper_free get as far as it can before the list answers,
     * which is where an order that ends the workers first loses it. */
    usleep(100000);
    fake_backend_release(F);
    pthread_join(th, NULL);
    assert_true(held);
    assert_true(was_deleted("beef0000aa01"));
    assert_int_equal(removals("beef0000aa01"), 1);
}

/* Stopping, a removal the backend refuses for a moment (Podman's while a
 * container is just exiting) is retried until it is done. */
static void test_stop_retries_refusals(void **state)
{
    (void)state;
    struct reaper *r = new_reaper(0);
    add("abcdef000001", 1, NULL, NULL, 0);
    reaper_remove_after(r, "abcdef000001", 3600 * 1000L);
    fake_backend_fail(F, FAKE_STEP_REMOVE, ERR_ENGINE, 3);
    free_reaper(r);
    assert_true(was_deleted("abcdef000001"));
    assert_int_equal(removals("abcdef000001"), 4);
}

/* A removal the backend keeps refusing does not hold the stop for longer
 * than REAPER_STOP_RETRY_MS (the next daemon's sweep removes it). */
static void test_stop_retries_are_bounded(void **state)
{
    (void)state;
    struct reaper *r = new_reaper(0);
    add("abcdef000002", 1, NULL, NULL, 0);
    reaper_remove_after(r, "abcdef000002", 3600 * 1000L);
    fake_backend_fail(F, FAKE_STEP_REMOVE, ERR_ENGINE, -1);
    double t0 = util_now_ms();
    free_reaper(r);
    double took = util_now_ms() - t0;
    fake_backend_fail(F, FAKE_STEP_REMOVE, ERR_ENGINE, 0);
    assert_false(was_deleted("abcdef000002"));
    int tries = removals("abcdef000002");
    /* 50, 100, 200 ms, then every 250 ms: about 14 in 3 s. */
    assert_in_range(tries, 3, 3 + REAPER_STOP_RETRY_MS / 50);
    assert_true(took < REAPER_STOP_RETRY_MS + GUARD);
}

/* A sandbox's uid comes back once its removal is confirmed, not when it
 * is asked for: a removal not yet done keeps it held. */
static void test_uid_back_after_removal(void **state)
{
    (void)state;
    struct uids *u = uids_new(3000, 2);
    struct reaper *r = new_reaper_uids(0, u);
    uid_t a = 0, b = 0, c = 0;
    struct err err = ERR_INIT;
    assert_int_equal(uids_take(u, &a, &err), 0);
    assert_int_equal(uids_take(u, &b, &err), 0);
    add("abab00000001", 1, NULL, NULL, 0);
    reaper_create_begin(r);
    reaper_create_end(r, "abab00000001", a);
    fake_backend_stall(F, FAKE_STEP_REMOVE, 1);
    reaper_remove(r, "abab00000001");
    assert_true(fake_backend_wait_held(F, 1, GUARD));
    /* Asked for, not done: a is still the sandbox's. */
    assert_int_equal(uids_take(u, &c, &err), -1);
    assert_int_equal(err.code, ERR_TOO_BIG);
    err_clear(&err);
    assert_int_equal(uids_held(u), 2);
    fake_backend_release(F);
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
    add("abab00000002", now - 900, "me", reaper_owner(r), now - 1);
    reaper_create_begin(r);
    reaper_create_end(r, "abab00000002", a);
    fake_backend_stall(F, FAKE_STEP_REMOVE, 1);
    assert_int_equal(reaper_sweep(r, &err), 1);
    assert_true(fake_backend_wait_held(F, 1, GUARD));
    reaper_remove(r, "abab00000002"); /* the run ends while the sweep's removal is under way */
    fake_backend_release(F);
    wait_drained(r);
    assert_int_equal(uids_held(u), 0);
    assert_int_equal(uids_take(u, &b, &err), 0);
    assert_int_equal(b, a);
    free_reaper(r);
    uids_free(u);
}

/* A sweep tells the uids which ones other daemons' sandboxes carry (not
 * this daemon's own, nor those whose uid is unknown); the next sweep that
 * no longer lists them frees them. */
static void test_sweep_sees_foreign_uids(void **state)
{
    (void)state;
    struct err err = ERR_INIT;
    struct uids *u = uids_new(3000, 3);
    struct reaper *r = new_reaper_uids(0, u);
    long long now = (long long)time(NULL);
    add_uid("acac00000001", now, "other", NULL, now + 600, 3000);
    add_uid("acac00000002", now, "other", NULL, now + 600, 3001);
    add_uid("acac00000003", now, "me", NULL, now + 600, 3002);
    add_uid("acac00000004", now, "other", NULL, now + 600, -1);
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
    return cmocka_run_group_tests_name("reaper", tests, NULL, NULL);
}
