/* tools/runstore.c: files kept per session, for a time, under a size cap
 * for each session and one for all, a session's own oldest out first, then
 * the oldest of all; a stress test with putters and readers at once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/runstore.h"

static bool has(struct runstore *rs, const char *owner, const char *uri, const char *want)
{
    char *mime = NULL;
    char *data = NULL;
    size_t size = 0;
    if (runstore_get(rs, owner, uri, &mime, &data, &size) < 0) {
        assert_null(mime);
        assert_null(data);
        return false;
    }
    assert_string_equal(mime, "text/plain");
    assert_int_equal(size, strlen(want));
    assert_memory_equal(data, want, size);
    assert_int_equal(data[size], '\0');
    free(mime);
    free(data);
    return true;
}

static void test_owner(void **state)
{
    (void)state;
    struct runstore *rs = runstore_new(60000, 1 << 20, 0);
    assert_int_equal(runstore_put(rs, "alice", "u1", "text/plain", "hello", 5), 0);
    assert_true(has(rs, "alice", "u1", "hello"));
    assert_false(has(rs, "bob", "u1", "hello"));
    assert_false(has(rs, "alice", "u2", ""));
    assert_int_equal(runstore_bytes(rs), 5 + RUNSTORE_ENTRY_OVERHEAD);
    runstore_free(rs);
}

static void test_evicts_oldest(void **state)
{
    (void)state;
    size_t cap = 3 * (100 + RUNSTORE_ENTRY_OVERHEAD);
    struct runstore *rs = runstore_new(60000, (long long)cap, 0);
    char data[101];
    memset(data, 'x', 100);
    data[100] = '\0';
    char uri[16];
    for (int i = 0; i < 5; i++) {
        snprintf(uri, sizeof(uri), "u%d", i);
        assert_int_equal(runstore_put(rs, "o", uri, "text/plain", data, 100), 0);
    }
    assert_false(has(rs, "o", "u0", data));
    assert_false(has(rs, "o", "u1", data));
    assert_true(has(rs, "o", "u2", data));
    assert_true(has(rs, "o", "u4", data));
    assert_true(runstore_bytes(rs) <= cap);
    /* Larger than the whole store: refused, nothing evicted for it. */
    char *big = calloc(1, cap);
    assert_int_equal(runstore_put(rs, "o", "big", "text/plain", big, cap), -1);
    assert_true(has(rs, "o", "u2", data));
    free(big);
    runstore_free(rs);

    /* A store of 0 bytes keeps nothing. */
    rs = runstore_new(60000, 0, 0);
    assert_int_equal(runstore_put(rs, "o", "u", "text/plain", "", 0), -1);
    runstore_free(rs);
}

/* What one put100 entry takes of a store's room. */
#define ONE (100 + RUNSTORE_ENTRY_OVERHEAD)

/* A store with room for all entries of put100 and for session of one
 * session's. */
static struct runstore *store_of(size_t all, size_t session)
{
    return runstore_new(60000, (long long)(all * ONE), (long long)(session * ONE));
}

static void put100(struct runstore *rs, const char *owner, const char *uri)
{
    char data[100];
    memset(data, 'x', sizeof(data));
    assert_int_equal(runstore_put(rs, owner, uri, "text/plain", data, sizeof(data)), 0);
}

static bool has100(struct runstore *rs, const char *owner, const char *uri)
{
    char want[101];
    memset(want, 'x', 100);
    want[100] = '\0';
    return has(rs, owner, uri, want);
}

/* A session over its share evicts its own oldest, never another's. */
static void test_session_evicts_its_own(void **state)
{
    (void)state;
    struct runstore *rs = store_of(10, 3);
    put100(rs, "bob", "b0");
    put100(rs, "bob", "b1");
    char uri[16];
    for (int i = 0; i < 6; i++) {
        snprintf(uri, sizeof(uri), "a%d", i);
        put100(rs, "alice", uri);
    }
    assert_true(has100(rs, "bob", "b0"));
    assert_true(has100(rs, "bob", "b1"));
    for (int i = 0; i < 6; i++) {
        snprintf(uri, sizeof(uri), "a%d", i);
        assert_int_equal(has100(rs, "alice", uri), i >= 3);
    }
    assert_int_equal(runstore_owner_bytes(rs, "alice"), 3 * ONE);
    assert_int_equal(runstore_owner_bytes(rs, "bob"), 2 * ONE);
    assert_int_equal(runstore_bytes(rs), 5 * ONE);
    /* Larger than a session's share, though not than the store: refused,
     * nothing evicted for it. */
    char *big = calloc(1, 3 * ONE);
    assert_int_equal(runstore_put(rs, "alice", "big", "text/plain", big, 3 * ONE), -1);
    free(big);
    assert_true(has100(rs, "alice", "a3"));
    assert_int_equal(runstore_owner_bytes(rs, "nobody"), 0);
    runstore_free(rs);
}

/* Sessions within their shares can still fill the store together: then
 * the oldest of all go, whoever put them. */
static void test_store_full_evicts_oldest_of_all(void **state)
{
    (void)state;
    struct runstore *rs = store_of(4, 3);
    put100(rs, "alice", "a0");
    put100(rs, "alice", "a1");
    put100(rs, "bob", "b0");
    put100(rs, "carol", "c0");
    put100(rs, "bob", "b1");
    assert_false(has100(rs, "alice", "a0"));
    assert_true(has100(rs, "alice", "a1"));
    assert_true(has100(rs, "bob", "b0"));
    assert_true(has100(rs, "bob", "b1"));
    assert_true(has100(rs, "carol", "c0"));
    assert_int_equal(runstore_bytes(rs), 4 * ONE);
    runstore_free(rs);
}

/* A session's share of entries is its byte share's fraction of them, so
 * that tiny files cannot push out others' through the entry cap. */
static void test_session_entry_share(void **state)
{
    (void)state;
    /* 1/16384 of the store: 4 of RUNSTORE_MAX_ENTRIES entries. */
    struct runstore *rs = runstore_new(60000, 1LL << 30, 1LL << 16);
    char uri[16];
    for (int i = 0; i < 6; i++) {
        snprintf(uri, sizeof(uri), "u%d", i);
        assert_int_equal(runstore_put(rs, "alice", uri, "text/plain", "", 0), 0);
    }
    for (int i = 0; i < 6; i++) {
        snprintf(uri, sizeof(uri), "u%d", i);
        assert_int_equal(has(rs, "alice", uri, ""), i >= 2);
    }
    assert_int_equal(runstore_owner_bytes(rs, "alice"), 4 * RUNSTORE_ENTRY_OVERHEAD);
    runstore_free(rs);
}

static void test_expires(void **state)
{
    (void)state;
    struct runstore *rs = runstore_new(30, 1 << 20, 0);
    assert_int_equal(runstore_put(rs, "o", "u", "text/plain", "x", 1), 0);
    assert_true(has(rs, "o", "u", "x"));
    usleep(60 * 1000);
    assert_false(has(rs, "o", "u", "x"));
    assert_int_equal(runstore_bytes(rs), 0);
    runstore_free(rs);
}

/* An entry with a shorter time of its own is gone at its time, though an
 * older entry with the store's time is still there. */
static void test_expires_own_time(void **state)
{
    (void)state;
    struct runstore *rs = runstore_new(60000, 1 << 20, 0);
    assert_int_equal(runstore_put(rs, "o", "long", "text/plain", "a", 1), 0);
    assert_int_equal(runstore_put_for(rs, "o", "short", "text/plain", "b", 1, 30), 0);
    assert_true(has(rs, "o", "short", "b"));
    usleep(60 * 1000);
    assert_false(has(rs, "o", "short", "b"));
    assert_true(has(rs, "o", "long", "a"));
    runstore_free(rs);
}

#define STRESS_THREADS 4
#define STRESS_ROUNDS  2000

static void *stress(void *arg)
{
    struct runstore *rs = arg;
    char owner[16];
    char uri[32];
    snprintf(owner, sizeof(owner), "o%lu", (unsigned long)pthread_self() % 97);
    for (int i = 0; i < STRESS_ROUNDS; i++) {
        snprintf(uri, sizeof(uri), "%s/%d", owner, i);
        assert_int_equal(runstore_put(rs, owner, uri, "text/plain", uri, strlen(uri)), 0);
        char *mime = NULL;
        char *data = NULL;
        size_t size = 0;
        /* Found unless already evicted; never another's bytes. */
        if (runstore_get(rs, owner, uri, &mime, &data, &size) == 0) {
            assert_int_equal(size, strlen(uri));
            assert_memory_equal(data, uri, size);
        }
        free(mime);
        free(data);
        snprintf(uri, sizeof(uri), "%s/%d", owner, i / 2);
        (void)has(rs, "nobody", uri, uri);
    }
    return NULL;
}

static void test_concurrent(void **state)
{
    (void)state;
    /* Small: eviction, a session's own and the whole store's, runs all
     * the time. */
    struct runstore *rs = runstore_new(60000, 64 * (RUNSTORE_ENTRY_OVERHEAD + 16),
                                       24 * (RUNSTORE_ENTRY_OVERHEAD + 16));
    pthread_t t[STRESS_THREADS];
    for (int i = 0; i < STRESS_THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, stress, rs), 0);
    for (int i = 0; i < STRESS_THREADS; i++)
        pthread_join(t[i], NULL);
    assert_true(runstore_bytes(rs) <= 64 * (RUNSTORE_ENTRY_OVERHEAD + 16));
    runstore_free(rs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_owner),
        cmocka_unit_test(test_evicts_oldest),
        cmocka_unit_test(test_session_evicts_its_own),
        cmocka_unit_test(test_store_full_evicts_oldest_of_all),
        cmocka_unit_test(test_session_entry_share),
        cmocka_unit_test(test_expires),
        cmocka_unit_test(test_expires_own_time),
        cmocka_unit_test(test_concurrent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
