/* uids.c: each sandbox's own uid from the configured range: taken
 * distinct, round the range, given back for reuse, refused with a clear
 * error once all are held (by this daemon or, as the last sweep saw them,
 * by others), never held twice at once under many threads (the TSan
 * build's race check), the start-up check of the count, and the host
 * files whose ids meet the range. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sandbox/pool/uids.h"

static void test_take_distinct_in_range(void **state)
{
    (void)state;
    enum { N = 37 };
    struct uids *u = uids_new(5000, N);
    bool seen[N] = {false};
    struct err err = ERR_INIT;
    uid_t prev = 0;
    for (int i = 0; i < N; i++) {
        uid_t uid = 0;
        assert_int_equal(uids_take(u, &uid, &err), 0);
        assert_in_range(uid, 5000, 5000 + N - 1);
        assert_false(seen[uid - 5000]);
        seen[uid - 5000] = true;
        /* Round the range from wherever it started. */
        if (i > 0)
            assert_int_equal(uid, prev + 1 == 5000 + N ? 5000 : prev + 1);
        prev = uid;
    }
    assert_int_equal(uids_held(u), N);
    uids_free(u);
}

/* A uid given back is taken again, but only after the rest of the range:
 * the one just freed is the last to come back. Anything not held is
 * ignored. */
static void test_give_back(void **state)
{
    (void)state;
    struct uids *u = uids_new(100, 3);
    struct err err = ERR_INIT;
    uid_t a = 0, b = 0, c = 0, d = 0;
    assert_int_equal(uids_take(u, &a, &err), 0);
    assert_int_equal(uids_take(u, &b, &err), 0);
    uids_give_back(u, a);
    uids_give_back(u, a);   /* twice: no effect */
    uids_give_back(u, 99);  /* not of the range */
    uids_give_back(u, 103); /* past it */
    assert_int_equal(uids_held(u), 1);
    assert_int_equal(uids_take(u, &c, &err), 0);
    assert_true(c != a && c != b);
    assert_int_equal(uids_take(u, &d, &err), 0);
    assert_int_equal(d, a);
    assert_int_equal(uids_held(u), 3);
    uids_free(u);
}

/* Every uid held: a clear error naming the range and the option. */
static void test_exhausted(void **state)
{
    (void)state;
    struct uids *u = uids_new(7000, 2);
    struct err err = ERR_INIT;
    uid_t a = 0, b = 0, c = 0;
    assert_int_equal(uids_take(u, &a, &err), 0);
    assert_int_equal(uids_take(u, &b, &err), 0);
    assert_int_equal(uids_take(u, &c, &err), -1);
    assert_int_equal(err.code, ERR_TOO_BIG);
    assert_non_null(strstr(err.msg, "all 2 of 7000-7001 are held"));
    assert_non_null(strstr(err.msg, "2 by this daemon's sandboxes"));
    assert_non_null(strstr(err.msg, "--sandbox-uid-count"));
    err_clear(&err);
    uids_give_back(u, b);
    assert_int_equal(uids_take(u, &c, &err), 0);
    assert_int_equal(c, b);
    uids_free(u);
}

/* Uids other daemons' containers carry are skipped while the last sweep
 * saw them; the next set replaces the last. Out of range ones are fine. */
static void test_seen(void **state)
{
    (void)state;
    struct uids *u = uids_new(10, 3);
    struct err err = ERR_INIT;
    uid_t seen[] = {10, 12, 12, 4, 99999};
    uids_seen(u, seen, ARRAY_SIZE(seen));
    uid_t a = 0, b = 0;
    assert_int_equal(uids_take(u, &a, &err), 0);
    assert_int_equal(a, 11);
    assert_int_equal(uids_take(u, &b, &err), -1);
    assert_non_null(strstr(err.msg, "1 by this daemon's sandboxes"));
    assert_non_null(strstr(err.msg, "2 by other containers"));
    err_clear(&err);
    uid_t later[] = {10};
    uids_seen(u, later, 1);
    assert_int_equal(uids_take(u, &b, &err), 0);
    assert_int_equal(b, 12);
    /* A uid of ours someone else's container also shows stays ours. */
    uid_t ours[] = {11};
    uids_seen(u, ours, 1);
    uids_give_back(u, 11);
    assert_int_equal(uids_take(u, &b, &err), 0);
    assert_int_equal(b, 10);
    assert_int_equal(uids_take(u, &b, &err), -1);
    err_clear(&err);
    uids_seen(u, NULL, 0);
    assert_int_equal(uids_take(u, &b, &err), 0);
    assert_int_equal(b, 11);
    uids_free(u);
}

/* ---- many threads ---------------------------------------------------------- */

#define STRESS_THREADS 8
#define STRESS_ROUNDS  4000
/* Each thread holds one or two at a time, one of them one more all along,
 * and the sweep's set one more: 18 at most, so a take never fails, and the
 * range comes round often. */
#define STRESS_COUNT 20

struct stress {
    struct uids *u;
    atomic_int *owner; /* per uid: 0 free, else the holder's index + 1 */
    int index;
    int clashes, failures;
};

static void release(struct stress *s, uid_t uid)
{
    atomic_store(&s->owner[uid - 9000], 0);
    uids_give_back(s->u, uid);
}

/* Takes and marks one; false (counted) when none was free. */
static bool take_marked(struct stress *s, uid_t *uid)
{
    struct err err = ERR_INIT;
    if (uids_take(s->u, uid, &err) < 0) {
        s->failures++;
        err_clear(&err);
        return false;
    }
    if (atomic_exchange(&s->owner[*uid - 9000], s->index + 1) != 0)
        s->clashes++;
    return true;
}

static void *stress_main(void *arg)
{
    struct stress *s = arg;
    uid_t prev = 0, kept = 0;
    bool have = false;
    /* Thread 0 also keeps one for the whole test, as a long run does:
     * the others come round the range past it many times. */
    bool keeping = s->index == 0 && take_marked(s, &kept);
    for (int i = 0; i < STRESS_ROUNDS; i++) {
        uid_t uid = 0;
        if (!take_marked(s, &uid))
            continue;
        if (i % 7 == 0) {
            uid_t seen[] = {9000 + (uid_t)(i % STRESS_COUNT)};
            uids_seen(s->u, seen, 1);
        }
        if (have)
            release(s, prev);
        prev = uid;
        have = true;
        sched_yield();
    }
    if (have)
        release(s, prev);
    if (keeping)
        release(s, kept);
    return NULL;
}

/* Never one uid with two holders, whatever the interleaving: each holder
 * marks its uid and finds it unmarked. With one uid of the range held by
 * the sweep's set at most, a take never fails. */
static void test_threads(void **state)
{
    (void)state;
    struct uids *u = uids_new(9000, STRESS_COUNT);
    atomic_int owner[STRESS_COUNT];
    for (int i = 0; i < STRESS_COUNT; i++)
        atomic_init(&owner[i], 0);
    struct stress s[STRESS_THREADS];
    pthread_t th[STRESS_THREADS];
    for (int i = 0; i < STRESS_THREADS; i++) {
        s[i] = (struct stress){.u = u, .owner = owner, .index = i};
        assert_int_equal(pthread_create(&th[i], NULL, stress_main, &s[i]), 0);
    }
    int clashes = 0, failures = 0;
    for (int i = 0; i < STRESS_THREADS; i++) {
        pthread_join(th[i], NULL);
        clashes += s[i].clashes;
        failures += s[i].failures;
    }
    assert_int_equal(clashes, 0);
    assert_int_equal(failures, 0);
    assert_int_equal(uids_held(u), 0);
    uids_free(u);
}

/* ---- configuration and the host ------------------------------------------- */

static void test_configure(void **state)
{
    (void)state;
    struct config cfg;
    config_init(&cfg);
    struct uids *u = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(uids_configure(&cfg, 8 + 16, &u, &err), 0);
    assert_non_null(u);
    uid_t uid = 0;
    assert_int_equal(uids_take(u, &uid, &err), 0);
    assert_in_range(uid, cfg.sandbox_uid_base, cfg.sandbox_uid_base + cfg.sandbox_uid_count - 1);
    uids_free(u);
    /* Fewer than the sandboxes alive at once and the margin: refused. */
    cfg.sandbox_uid_count = 8 + 16 + UIDS_MARGIN - 1;
    assert_int_equal(uids_configure(&cfg, 8 + 16, &u, &err), -1);
    assert_null(u);
    assert_int_equal(err.code, ERR_INVALID);
    assert_non_null(strstr(err.msg, "give at least 88"));
    err_clear(&err);
    cfg.sandbox_uid_count = 8 + 16 + UIDS_MARGIN;
    assert_int_equal(uids_configure(&cfg, 8 + 16, &u, &err), 0);
    uids_free(u);
    /* 0: every sandbox as --sandbox-user. */
    cfg.sandbox_uid_count = 0;
    assert_int_equal(uids_configure(&cfg, 8 + 16, &u, &err), 0);
    assert_null(u);
    config_free(&cfg);
}

static void write_file(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

struct found {
    int n;
    char lines[8][200];
};

static void collect(const void *ctx, const char *path, const char *line)
{
    (void)path;
    struct found *f = (struct found *)(uintptr_t)ctx;
    snprintf(f->lines[f->n++], sizeof(f->lines[0]), "%s", line);
}

/* The subordinate ranges and users that meet the range are named; those
 * beside it, comments and malformed lines are not; a missing file is
 * skipped; at most max_found. */
static void test_host_overlaps(void **state)
{
    (void)state;
    char dir[] = "/tmp/uids_host.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char subuid[64], subgid[64], passwd[64];
    snprintf(subuid, sizeof(subuid), "%s/subuid", dir);
    snprintf(subgid, sizeof(subgid), "%s/subgid", dir);
    snprintf(passwd, sizeof(passwd), "%s/passwd", dir);
    write_file(subuid, "alice:100000:65536\n" /* ends just before */
                       "bob:165536:65536\n"   /* meets it */
                       "# carol:200000:1\n"   /* a comment */
                       "dave:x:y\n"           /* malformed */
                       "eve:300000:0\n"       /* empty */
                       "frank:299999:2\n");   /* its last reaches in */
    write_file(passwd, "root:x:0:0:root:/root:/bin/sh\n"
                       "svc:x:250000:250000::/:/usr/sbin/nologin\n"
                       "nobody:x:65534:65534::/:/usr/sbin/nologin\n");
    struct found f = {0};
    size_t n = uids_host_overlaps(200000, 100000, subuid, subgid, passwd, 8, collect, &f);
    assert_int_equal(n, 3);
    assert_string_equal(f.lines[0], "bob:165536:65536");
    assert_string_equal(f.lines[1], "frank:299999:2");
    assert_string_equal(f.lines[2], "svc:x:250000:250000::/:/usr/sbin/nologin");
    f = (struct found){0};
    assert_int_equal(uids_host_overlaps(200000, 100000, subuid, subgid, passwd, 1, collect, &f), 1);
    f = (struct found){0};
    assert_int_equal(uids_host_overlaps(2000000000, 4096, subuid, subgid, passwd, 8, collect, &f),
                     0);
    unlink(subuid);
    unlink(passwd);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_take_distinct_in_range),
        cmocka_unit_test(test_give_back),
        cmocka_unit_test(test_exhausted),
        cmocka_unit_test(test_seen),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_configure),
        cmocka_unit_test(test_host_overlaps),
    };
    return cmocka_run_group_tests_name("uids", tests, NULL, NULL);
}
