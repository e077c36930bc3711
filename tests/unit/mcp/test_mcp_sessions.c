/* Code sessions as the protocol layer sees them: one call at a time per
 * code session (later calls parked in order, with their own cap, and
 * cancellable while parked), and an MCP session's end ending its code
 * sessions. Over the fake backend with a session runner. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "fake_backend/fake_backend.h"
#include "unit/langs.h"
#include "unit/server_rig.h"
#include "unit/json_get.h"
#include "unit/mcp/sink.h"

static struct rig *rig_up(const struct fake_program *p, long long session_queued)
{
    struct rig *g = xcalloc(1, sizeof(*g));
    rig_init(g, RIG_UP);
    g->cfg.max_session_queued = session_queued;
    fake_backend_set_program(g->fake, p);
    rig_start(g);
    return g;
}

/* Whether n sandboxes are left within a hang guard: removal is the
 * reaper's, on its own thread. */
static bool live_becomes(struct rig *g, size_t n)
{
    double until = util_now_ms() + 10000;
    while (fake_backend_live(g->fake) != n && util_now_ms() < until) {
        const struct timespec pause = {0, 5 * 1000000L};
        nanosleep(&pause, NULL);
    }
    return fake_backend_live(g->fake) == n;
}

static void rig_free(struct rig *g)
{
    rig_fini(g);
    free(g);
}

/* A python code session of s; its id in id. */
static void create(struct mcp_session *s, char id[65])
{
    struct sink k;
    sink_init(&k);
    send_text(s, &k,
              "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
              "\"create_session\",\"arguments\":{\"language\":\"python\"}}}");
    assert_int_equal(sink_wait(&k, 1), 1);
    json_object *r = parsed(&k, 0);
    const char *got = json_object_get_string(
        json_get(json_get(json_get(r, "result"), "structuredContent"), "session_id"));
    if (!got)
        fail_msg("create_session: %s", k.texts[0]);
    snprintf(id, 65, "%s", got);
    json_object_put(r);
    sink_free(&k);
}

static void send_cell(struct mcp_session *s, struct sink *k, int rid, const char *id,
                      const char *code, long long timeout_ms)
{
    send_fmt(s, k,
             "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"execute_code\",\"arguments\":{\"session_id\":\"%s\",\"code\":\"%s\","
             "\"timeout_ms\":%lld}}}",
             rid, id, code, timeout_ms);
}

static const char *stdout_of(json_object *reply)
{
    return json_object_get_string(
        json_get(json_get(json_get(reply, "result"), "structuredContent"), "stdout"));
}

/* The first cell waits to be interrupted (at its 300 ms timeout); the two
 * sent right after it wait their turn instead of being refused busy, and
 * answer in the order sent; a third waiting one is over the cap. */
static void test_calls_wait_their_turn(void **state)
{
    (void)state;
    struct fake_program p = {.session = true, .n_cells = 1};
    p.cells[0] = FAKE_CELL_UNTIL_INTERRUPT;
    struct rig *g = rig_up(&p, 2);
    struct mcp_session *s = mcp_session_new(g->srv, "stdio");
    initialize(s);
    char id[65];
    create(s, id);
    struct sink k;
    sink_init(&k);
    send_cell(s, &k, 2, id, "first", 300);
    send_cell(s, &k, 3, id, "second", 5000);
    send_cell(s, &k, 4, id, "third", 5000);
    send_cell(s, &k, 5, id, "fourth", 5000);
    assert_int_equal(sink_wait(&k, 1), 1);
    assert_int_equal(id_at(&k, 0, "--max-session-queued"), 5);
    assert_int_equal(sink_wait(&k, 4), 4);
    assert_int_equal(id_at(&k, 1, NULL), 2);
    assert_int_equal(id_at(&k, 2, NULL), 3);
    assert_int_equal(id_at(&k, 3, NULL), 4);
    json_object *r = reply_for(&k, 2);
    assert_string_equal(status_of(r), "timeout");
    json_object_put(r);
    r = reply_for(&k, 3);
    assert_string_equal(status_of(r), "ok");
    assert_string_equal(stdout_of(r), "second");
    json_object_put(r);
    r = reply_for(&k, 4);
    assert_string_equal(stdout_of(r), "third");
    json_object_put(r);
    assert_true(live_becomes(g, 1));
    sink_free(&k);
    /* The MCP session's end ends its code session: nothing left. */
    mcp_session_free(s);
    assert_true(live_becomes(g, 0));
    rig_free(g);
}

/* A parked call cancelled gets no answer and never runs; the running one
 * cancelled ends; the next call runs at once. */
static void test_parked_call_cancelled(void **state)
{
    (void)state;
    struct fake_program p = {.session = true, .n_cells = 1};
    p.cells[0] = FAKE_CELL_UNTIL_INTERRUPT;
    struct rig *g = rig_up(&p, 4);
    struct mcp_session *s = mcp_session_new(g->srv, "stdio");
    initialize(s);
    char id[65];
    create(s, id);
    struct sink k;
    sink_init(&k);
    send_cell(s, &k, 2, id, "first", 30000);
    send_cell(s, &k, 3, id, "parked", 30000);
    send_text(s, &k,
              "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
              "\"requestId\":3}}");
    send_text(s, &k,
              "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
              "\"requestId\":2}}");
    send_cell(s, &k, 4, id, "after", 30000);
    assert_int_equal(sink_wait(&k, 1), 1);
    json_object *r = reply_for(&k, 4);
    assert_non_null(r);
    assert_string_equal(status_of(r), "ok");
    assert_string_equal(stdout_of(r), "after");
    json_object_put(r);
    /* Only the third call was answered (cancelled requests get none). */
    assert_int_equal(k.n, 1);
    sink_free(&k);
    mcp_session_free(s);
    assert_true(live_becomes(g, 0));
    rig_free(g);
}

/* Another MCP session's calls are not queued behind s's code session,
 * and its own code sessions stay when s ends. */
static void test_sessions_apart(void **state)
{
    (void)state;
    struct fake_program p = {.session = true, .n_cells = 1};
    p.cells[0] = FAKE_CELL_UNTIL_INTERRUPT;
    struct rig *g = rig_up(&p, 4);
    struct mcp_session *a = mcp_session_new(g->srv, "stdio");
    struct mcp_session *b = mcp_session_new(g->srv, "stdio");
    initialize(a);
    initialize(b);
    char ida[65], idb[65];
    create(a, ida);
    create(b, idb);
    struct sink k;
    sink_init(&k);
    send_cell(a, &k, 2, ida, "a", 30000);
    send_cell(b, &k, 3, ida, "b", 30000); /* not b's: refused at once */
    assert_int_equal(sink_wait(&k, 1), 1);
    assert_int_equal(id_at(&k, 0, NULL), 3);
    assert_non_null(strstr(k.texts[0], "no such session"));
    mcp_session_free(a); /* cancels a's call and ends its code session */
    assert_true(live_becomes(g, 1));
    send_cell(b, &k, 4, idb, "still", 30000);
    send_text(b, &k,
              "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
              "\"requestId\":4}}");
    sink_free(&k);
    mcp_session_free(b);
    assert_true(live_becomes(g, 0));
    rig_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_calls_wait_their_turn),
        cmocka_unit_test(test_parked_call_cancelled),
        cmocka_unit_test(test_sessions_apart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
