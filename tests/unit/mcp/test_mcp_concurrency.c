/* mcp.c under concurrency, run plain, under ASan (LeakSanitizer at exit)
 * and under TSan by make test:
 *  - many threads answering tools/list on one session at once (the shared
 *    schema objects once crashed the daemon);
 *  - bursts of tools/call that fail fast, answered exactly once each with
 *    nothing leaked, and no thread created per call;
 *  - calls beyond --max-concurrent waiting in the queue rather than
 *    failing; busy only past --max-queued or --queue-timeout-ms; a queued
 *    call cancelled before it starts;
 *  - one session's share: busy past --max-session-inflight and
 *    --max-session-queued while another session still gets in, and a
 *    second session's call taking the next slot ahead of the first's
 *    backlog;
 *  - a list_languages that waits for the versions' probe answered aside,
 *    the receiving thread free meanwhile.
 * (Somewhat over 600 lines: one rig serves every concurrent path of mcp.)
 * Channels here never assert: cmocka must not longjmp from another thread,
 * so they record what they saw and the test thread checks it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "mcp/jsonrpc.h"
#include "mcp/mcp.h"
#include "tools/registry.h"
#include "sandbox/run/exec.h"
#include "unit/threads.h"
#include "unit/langs.h"
#include "unit/server_rig.h"
#include "unit/json_get.h"
#include "unit/mcp/sink.h"

/* ---- a channel that keeps every reply as text ----------------------------- */

static struct rig *rig_new_shared(const char *engine, long long max_concurrent,
                                  long long max_queued, long long queue_timeout_ms,
                                  long long session_inflight, long long session_queued)
{
    struct rig *g = xcalloc(1, sizeof(*g));
    rig_init(g, strcmp(engine, "stalled") == 0 ? RIG_STALLED : RIG_DOWN);
    g->cfg.max_concurrent = max_concurrent;
    g->cfg.max_queued = max_queued;
    g->cfg.queue_timeout_ms = queue_timeout_ms;
    g->cfg.max_session_inflight =
        session_inflight < 0 ? max_concurrent + max_queued : session_inflight;
    g->cfg.max_session_queued = session_queued < 0 ? max_queued : session_queued;
    rig_start(g);
    return g;
}

static struct rig *rig_new(const char *engine, long long max_concurrent, long long max_queued,
                           long long queue_timeout_ms)
{
    return rig_new_shared(engine, max_concurrent, max_queued, queue_timeout_ms, -1, -1);
}

static void rig_free(struct rig *g)
{
    rig_fini(g);
    free(g);
}

static void send_call(struct mcp_session *s, struct sink *k, int id, long long timeout_ms)
{
    char *msg = xasprintf("{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{"
                          "\"name\":\"execute_code\",\"arguments\":{\"language\":\"python\","
                          "\"code\":\"print(%d)\",\"timeout_ms\":%lld}}}",
                          id, id, timeout_ms);
    send_text(s, k, msg);
    free(msg);
}

/* ---- tools/list from many threads on one session ------------------------- */

#define LIST_THREADS 8
#define LIST_ROUNDS  500

struct lister {
    struct mcp_session *s;
    struct sink k;
    int id;
};

static void *lister_main(void *arg)
{
    struct lister *l = arg;
    for (int i = 0; i < LIST_ROUNDS; i++) {
        char msg[96];
        snprintf(msg, sizeof(msg), "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/list\"}",
                 l->id);
        send_text(l->s, &l->k, msg);
    }
    return NULL;
}

static void test_tools_list_many_threads(void **state)
{
    (void)state;
    struct rig *g = rig_new("missing", 8, 64, 60000);
    struct mcp_session *s = mcp_session_new(g->srv, "stdio");
    initialize(s);
    struct lister *ls = xcalloc(LIST_THREADS, sizeof(*ls));
    pthread_t th[LIST_THREADS];
    for (int t = 0; t < LIST_THREADS; t++) {
        ls[t].s = s;
        ls[t].id = t + 1;
        sink_init(&ls[t].k);
        assert_int_equal(pthread_create(&th[t], NULL, lister_main, &ls[t]), 0);
    }
    for (int t = 0; t < LIST_THREADS; t++)
        pthread_join(th[t], NULL);
    /* Every reply is the same tool list, byte for byte but for its id. */
    assert_true(ls[0].k.n > 0);
    const char *res0 = strstr(ls[0].k.texts[0], "\"result\"");
    assert_non_null(res0);
    char *first = xstrdup(res0);
    json_object *o = parsed(&ls[0].k, 0);
    assert_int_equal(json_object_array_length(json_get(json_get(o, "result"), "tools")),
                     REGISTRY_TOOLS);
    json_object_put(o);
    for (int t = 0; t < LIST_THREADS; t++) {
        assert_int_equal(ls[t].k.n, LIST_ROUNDS);
        for (size_t i = 0; i < ls[t].k.n; i++) {
            const char *res = strstr(ls[t].k.texts[i], "\"result\"");
            if (!res || strcmp(res, first) != 0)
                fail_msg("thread %d reply %zu differs:\n%s\n%s", t, i, ls[t].k.texts[i], first);
        }
        sink_free(&ls[t].k);
    }
    free(first);
    free(ls);
    mcp_session_free(s);
    rig_free(g);
}

/* ---- bursts of failing calls from many threads ---------------------------- */

#define BURST_THREADS 8
#define BURST_CALLS   4 /* per thread: 32 at once */

struct caller {
    struct mcp_session *s;
    struct sink *k;
    int first_id;
    atomic_int *max_threads;
};

static void *caller_main(void *arg)
{
    struct caller *c = arg;
    for (int i = 0; i < BURST_CALLS; i++) {
        send_call(c->s, c->k, c->first_id + i, 30000);
        int n = count_threads();
        int cur = atomic_load(c->max_threads);
        while (n > cur && !atomic_compare_exchange_weak(c->max_threads, &cur, n))
            ;
    }
    return NULL;
}

static void test_call_burst_answered_once(void **state)
{
    (void)state;
    struct rig *g = rig_new("missing", 8, 64, 60000);
    int before = count_threads();
    struct mcp_session *s = mcp_session_new(g->srv, "stdio");
    initialize(s);
    struct sink k;
    sink_init(&k);
    atomic_int max_threads;
    atomic_init(&max_threads, 0);
    struct caller cs[BURST_THREADS];
    pthread_t th[BURST_THREADS];
    for (int t = 0; t < BURST_THREADS; t++) {
        cs[t] = (struct caller){
            .s = s, .k = &k, .first_id = 100 * (t + 1), .max_threads = &max_threads};
        assert_int_equal(pthread_create(&th[t], NULL, caller_main, &cs[t]), 0);
    }
    for (int t = 0; t < BURST_THREADS; t++)
        pthread_join(th[t], NULL);
    assert_int_equal(sink_wait(&k, BURST_THREADS * BURST_CALLS), BURST_THREADS * BURST_CALLS);
    for (int t = 0; t < BURST_THREADS; t++) {
        for (int i = 0; i < BURST_CALLS; i++) {
            json_object *r = reply_for(&k, 100 * (t + 1) + i);
            if (!r)
                fail_msg("no reply for call %d", 100 * (t + 1) + i);
            assert_string_equal(status_of(r), "error");
            json_object_put(r);
        }
    }
    mcp_session_free(s);
    /* No call got a thread of its own: only the callers came and went. */
    assert_true(atomic_load(&max_threads) <= before + BURST_THREADS);
    assert_int_equal(k.n, BURST_THREADS * BURST_CALLS);
    sink_free(&k);
    rig_free(g);
}

/* ---- the admission queue ---------------------------------------------------- */

static void test_calls_beyond_slots_wait(void **state)
{
    (void)state;
    /* Two slots; runs hold theirs until the stalled engine's deadline. */
    struct rig *g = rig_new("stalled", 2, 8, 60000);
    struct mcp_session *s = mcp_session_new(g->srv, "stdio");
    initialize(s);
    struct sink k;
    sink_init(&k);
    /* Waves that end well before the next wave's own deadline. */
    send_call(s, &k, 1, 300);
    send_call(s, &k, 2, 300);
    send_call(s, &k, 3, 2000);
    send_call(s, &k, 4, 2000);
    send_call(s, &k, 5, 4000);
    send_call(s, &k, 6, 4000);
    assert_int_equal(sink_wait(&k, 2), 2);
    /* The queued calls got their slots in turn: none was turned away. */
    assert_int_equal(sink_wait(&k, 6), 6);
    for (int id = 1; id <= 6; id++) {
        json_object *r = reply_for(&k, id);
        assert_non_null(r);
        const char *st = status_of(r);
        /* Each call's own timeout_ms ended its wait for the stalled engine. */
        if (strcmp(st, "timeout") != 0)
            fail_msg("call %d: status %s, want timeout (stalled engine)", id, st);
        const char *msg = json_object_get_string(
            json_get(json_get(json_get(r, "result"), "structuredContent"), "message"));
        if (!strstr(msg, "fake backend"))
            fail_msg("call %d: message does not say what the backend said: %s", id, msg);
        json_object_put(r);
    }
    sink_free(&k);
    mcp_session_free(s);
    rig_free(g);
}

static void test_busy_past_the_queue(void **state)
{
    (void)state;
    struct rig *g = rig_new("stalled", 2, 1, 60000);
    struct mcp_session *s = mcp_session_new(g->srv, "stdio");
    initialize(s);
    struct sink k;
    sink_init(&k);
    send_call(s, &k, 1, 600);
    send_call(s, &k, 2, 600);
    for (int id = 3; id <= 6; id++)
        send_call(s, &k, id, 3000);
    /* 2 run, 1 waits, 3 are turned away at once. */
    assert_true(sink_wait(&k, 3) >= 3);
    assert_int_equal(sink_wait(&k, 6), 6);
    int busy = 0;
    for (int id = 1; id <= 6; id++) {
        json_object *r = reply_for(&k, id);
        assert_non_null(r);
        if (strcmp(status_of(r), "busy") == 0) {
            busy++;
            assert_true(json_object_get_boolean(json_get(json_get(r, "result"), "isError")));
        }
        json_object_put(r);
    }
    assert_int_equal(busy, 3);
    sink_free(&k);
    mcp_session_free(s);
    rig_free(g);
}

static void test_queue_timeout_and_cancel(void **state)
{
    (void)state;
    struct rig *g = rig_new("stalled", 1, 4, 150);
    struct mcp_session *s = mcp_session_new(g->srv, "stdio");
    initialize(s);
    struct sink k;
    sink_init(&k);
    send_call(s, &k, 1, 1500); /* holds the one slot */
    send_call(s, &k, 2, 5000); /* waits, then busy at the queue timeout */
    send_call(s, &k, 3, 5000); /* waits, then is cancelled */
    send_text(s, &k,
              "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
              "\"requestId\":3}}");
    assert_int_equal(sink_wait(&k, 1), 1);
    json_object *r = reply_for(&k, 2);
    assert_non_null(r);
    assert_string_equal(status_of(r), "busy");
    json_object_put(r);
    assert_int_equal(sink_wait(&k, 2), 2);
    r = reply_for(&k, 1);
    assert_non_null(r);
    json_object_put(r);
    /* A cancelled request gets no response. */
    assert_null(reply_for(&k, 3));
    /* A call's answer goes out just before it stops counting as in flight. */
    for (int i = 0; i < 2000 && mcp_session_inflight(s) > 0; i++)
        usleep(1000);
    assert_int_equal(mcp_session_inflight(s), 0);
    sink_free(&k);
    mcp_session_free(s);
    rig_free(g);
}

/* Closing a session takes its queued calls back unanswered. */
static void test_close_with_queued_calls(void **state)
{
    (void)state;
    struct rig *g = rig_new("stalled", 1, 8, 60000);
    struct mcp_session *s = mcp_session_new(g->srv, "stdio");
    initialize(s);
    struct sink k;
    sink_init(&k);
    for (int id = 1; id <= 5; id++)
        send_call(s, &k, id, 1000);
    mcp_session_close(s);
    assert_int_equal(mcp_session_inflight(s), 0);
    assert_int_equal(k.n, 0);
    sink_free(&k);
    mcp_session_free(s);
    rig_free(g);
}

/* ---- sharing between sessions ---------------------------------------------- */

/* One slot, a queue of 8; a session may have 1 call waiting. */
static void test_session_queued_cap(void **state)
{
    (void)state;
    struct rig *g = rig_new_shared("stalled", 1, 8, 60000, 16, 1);
    struct mcp_session *a = mcp_session_new(g->srv, "stdio");
    struct mcp_session *b = mcp_session_new(g->srv, "stdio");
    initialize(a);
    initialize(b);
    struct sink k;
    sink_init(&k);
    send_call(a, &k, 1, 400); /* runs */
    send_call(a, &k, 2, 400); /* waits */
    send_call(a, &k, 3, 400); /* a second waiting call: busy at once */
    assert_int_equal(sink_wait(&k, 1), 1);
    assert_int_equal(id_at(&k, 0, "--max-session-queued"), 3);
    send_call(b, &k, 4, 400); /* another session still gets in */
    send_call(b, &k, 5, 400);
    assert_int_equal(sink_wait(&k, 2), 2);
    assert_int_equal(id_at(&k, 1, "--max-session-queued"), 5);
    assert_int_equal(sink_wait(&k, 5), 5);
    sink_free(&k);
    mcp_session_free(a);
    mcp_session_free(b);
    rig_free(g);
}

/* Four slots; a session may have 3 calls under way. */
static void test_session_inflight_cap(void **state)
{
    (void)state;
    struct rig *g = rig_new_shared("stalled", 4, 8, 60000, 3, 8);
    struct mcp_session *a = mcp_session_new(g->srv, "stdio");
    struct mcp_session *b = mcp_session_new(g->srv, "stdio");
    initialize(a);
    initialize(b);
    struct sink k;
    sink_init(&k);
    for (int id = 1; id <= 4; id++)
        send_call(a, &k, id, 400);
    assert_int_equal(sink_wait(&k, 1), 1);
    assert_int_equal(id_at(&k, 0, "--max-session-inflight"), 4);
    send_call(b, &k, 5, 400); /* the fourth slot is b's */
    assert_int_equal(sink_wait(&k, 5), 5);
    json_object *r = reply_for(&k, 5);
    assert_string_equal(status_of(r), "timeout");
    json_object_put(r);
    sink_free(&k);
    mcp_session_free(a);
    mcp_session_free(b);
    rig_free(g);
}

/* One slot. Session a has a run going and three calls waiting; session b's
 * one call, sent after them, runs next. With the engine stalled each run
 * holds the slot until its call's own deadline, so b's call (1500 ms)
 * ends with timeout, having run, if it went first; behind a's next (2000
 * ms) it would be refused as busy at 1500 ms without having run. */
static void test_sessions_take_turns(void **state)
{
    (void)state;
    struct rig *g = rig_new_shared("stalled", 1, 8, 60000, 16, 8);
    struct mcp_session *a = mcp_session_new(g->srv, "stdio");
    struct mcp_session *b = mcp_session_new(g->srv, "stdio");
    initialize(a);
    initialize(b);
    struct sink k;
    sink_init(&k);
    send_call(a, &k, 1, 300);
    send_call(a, &k, 2, 2000);
    send_call(a, &k, 3, 2100);
    send_call(a, &k, 4, 2200);
    send_call(b, &k, 10, 1500);
    assert_int_equal(sink_wait(&k, 5), 5);
    int order[5];
    for (size_t i = 0; i < 5; i++)
        order[i] = id_at(&k, i, NULL);
    json_object *r = reply_for(&k, 10);
    assert_string_equal(status_of(r), "timeout");
    json_object_put(r);
    assert_int_equal(order[0], 1);
    assert_int_equal(order[1], 10);
    assert_int_equal(order[2], 2);
    sink_free(&k);
    mcp_session_free(a);
    mcp_session_free(b);
    rig_free(g);
}

/* ---- an answer that may wait goes aside -------------------------------- */

/* list_languages while the versions' probe hangs on a stalled engine: the
 * receiving thread is not held (a ping sent after it is answered first),
 * and the answer comes from the aside thread once its wait is over. */
static void test_list_languages_aside(void **state)
{
    (void)state;
    struct rig *g = rig_new("stalled", 2, 8, 60000);
    struct mcp_session *s = mcp_session_new(g->srv, "stdio");
    initialize(s);
    struct sink k;
    sink_init(&k);
    send_text(s, &k,
              "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{"
              "\"name\":\"list_languages\",\"arguments\":{}}}");
    send_text(s, &k, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\"}");
    assert_int_equal(sink_wait(&k, 1), 1);
    json_object *first = parsed(&k, 0);
    assert_int_equal(json_object_get_int(json_get(first, "id")), 6);
    json_object_put(first);
    assert_int_equal(sink_wait(&k, 2), 2);
    json_object *langs = reply_for(&k, 5);
    assert_non_null(langs);
    assert_false(json_object_get_boolean(json_get(json_get(langs, "result"), "isError")));
    json_object_put(langs);
    mcp_session_free(s);
    sink_free(&k);
    rig_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tools_list_many_threads),
        cmocka_unit_test(test_call_burst_answered_once),
        cmocka_unit_test(test_calls_beyond_slots_wait),
        cmocka_unit_test(test_busy_past_the_queue),
        cmocka_unit_test(test_list_languages_aside),
        cmocka_unit_test(test_queue_timeout_and_cancel),
        cmocka_unit_test(test_close_with_queued_calls),
        cmocka_unit_test(test_session_queued_cap),
        cmocka_unit_test(test_session_inflight_cap),
        cmocka_unit_test(test_sessions_take_turns),
    };
    return cmocka_run_group_tests_name("mcp_concurrency", tests, NULL, NULL);
}
