#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "mcp/jsonrpc.h"
#include "mcp/mcp.h"
#include "sandbox/run/exec.h"
#include "tools/tools.h"
#include "unit/langs.h"
#include "unit/server_rig.h"
#include "unit/options.h"
#include "unit/json_get.h"

/* A channel that records every message sent on it. Replies to tools/call
 * come from the call's own thread, where cmocka must not assert (it
 * longjmps): capture_send only records, and the test's thread checks. */
struct capture {
    struct mcp_channel ch;
    pthread_mutex_t lock;
    pthread_cond_t cond; /* a message arrived */
    json_object *msgs;   /* array */
    char problem[256];   /* the first malformed message, or "" */
};

static int capture_send(struct mcp_channel *ch, const char *json, size_t len)
{
    struct capture *c = (struct capture *)ch;
    json_object *o = json_tokener_parse(json);
    pthread_mutex_lock(&c->lock);
    if (!c->problem[0] && memchr(json, '\n', len))
        snprintf(c->problem, sizeof(c->problem), "a newline in a message: %.200s", json);
    if (!c->problem[0] && !o)
        snprintf(c->problem, sizeof(c->problem), "a message that is not JSON: %.200s", json);
    if (o)
        json_object_array_add(c->msgs, o);
    pthread_cond_broadcast(&c->cond);
    pthread_mutex_unlock(&c->lock);
    return 0;
}

struct fixture {
    struct rig g;
    struct mcp_session *s;
    struct capture cap;
};

static int setup(void **state)
{
    struct fixture *f = xcalloc(1, sizeof(*f));
    rig_init(&f->g, RIG_DOWN);
    rig_start(&f->g);
    f->s = mcp_session_new(f->g.srv, "stdio");
    mcp_session_serve_modern(f->s);
    mcp_channel_init(&f->cap.ch, capture_send, NULL);
    pthread_mutex_init(&f->cap.lock, NULL);
    util_cond_init_monotonic(&f->cap.cond);
    f->cap.msgs = json_object_new_array();
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    mcp_session_free(f->s);
    rig_fini(&f->g);
    json_object_put(f->cap.msgs);
    pthread_cond_destroy(&f->cap.cond);
    pthread_mutex_destroy(&f->cap.lock);
    free(f);
    return 0;
}

static size_t count(struct fixture *f)
{
    pthread_mutex_lock(&f->cap.lock);
    size_t n = json_object_array_length(f->cap.msgs);
    pthread_mutex_unlock(&f->cap.lock);
    return n;
}

/* Fails the test (from its own thread) when a message was malformed. */
static void check_capture(struct fixture *f)
{
    pthread_mutex_lock(&f->cap.lock);
    char problem[sizeof(f->cap.problem)];
    memcpy(problem, f->cap.problem, sizeof(problem));
    pthread_mutex_unlock(&f->cap.lock);
    if (problem[0])
        fail_msg("%s", problem);
}

/* Sends text and returns the one reply it must produce (borrowed). */
static json_object *send1(struct fixture *f, const char *text)
{
    size_t before = count(f);
    mcp_session_receive(f->s, text, strlen(text), &f->cap.ch);
    /* tools/call answers from its own thread; the deadline is a hang guard. */
    double deadline = util_now_ms() + 20000;
    pthread_mutex_lock(&f->cap.lock);
    while (json_object_array_length(f->cap.msgs) == before && util_now_ms() < deadline)
        util_cond_wait_ms(&f->cap.cond, &f->cap.lock, deadline - util_now_ms());
    size_t n = json_object_array_length(f->cap.msgs);
    json_object *reply = n > before ? json_object_array_get_idx(f->cap.msgs, before) : NULL;
    pthread_mutex_unlock(&f->cap.lock);
    check_capture(f);
    assert_int_equal(n, before + 1);
    return reply;
}

static void send0(struct fixture *f, const char *text)
{
    size_t before = count(f);
    mcp_session_receive(f->s, text, strlen(text), &f->cap.ch);
    check_capture(f);
    assert_int_equal(count(f), before);
}

static int error_code(json_object *reply)
{
    return json_object_get_int(json_get(json_get(reply, "error"), "code"));
}

static void init(struct fixture *f, const char *version)
{
    char *msg = xasprintf("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
                          "\"protocolVersion\":\"%s\",\"capabilities\":{},\"clientInfo\":{"
                          "\"name\":\"t\",\"version\":\"1\"}}}",
                          version);
    json_object *r = send1(f, msg);
    free(msg);
    json_get(r, "result");
    send0(f, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
}

static void test_initialize_negotiation(void **state)
{
    struct fixture *f = *state;
    json_object *r = send1(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
                              "\"protocolVersion\":\"1999-01-01\",\"capabilities\":{}}}");
    json_object *res = json_get(r, "result");
    assert_string_equal(json_object_get_string(json_get(res, "protocolVersion")), "2025-11-25");
    assert_string_equal(json_object_get_string(json_get(json_get(res, "serverInfo"), "name")),
                        MCP_SERVER_NAME);
    json_get(json_get(res, "capabilities"), "tools");
    json_get(json_get(res, "capabilities"), "logging");
    /* A session initializes once. */
    r = send1(f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"initialize\",\"params\":{"
                 "\"protocolVersion\":\"2025-06-18\"}}");
    assert_int_equal(error_code(r), JSONRPC_INVALID_REQUEST);
}

/* The initialize log line quotes the client's name and version: a newline
 * in either cannot forge a line, an escape cannot reach a terminal. */
static void test_initialize_log_line(void **state)
{
    struct fixture *f = *state;
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    int saved = dup(STDERR_FILENO);
    dup2(fds[1], STDERR_FILENO);
    close(fds[1]);
    json_object *r = send1(
        f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
           "\"protocolVersion\":\"2025-06-18\\r\\n2026-01-01T00:00:00.000Z mcp-sandboxd error: v\","
           "\"capabilities\":{},\"clientInfo\":{\"name\":\"evil\\n2026-01-01T00:00:00.000Z "
           "mcp-sandboxd error: forged\\u001b[2J\\u2028\",\"version\":\"1\"}}}");
    dup2(saved, STDERR_FILENO);
    close(saved);
    char out[4096] = "";
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    ssize_t n = read(fds[0], out, sizeof(out) - 1);
    close(fds[0]);
    json_get(r, "result");
    assert_true(n > 0);
    out[n] = '\0';
    assert_non_null(strchr(out, '\n'));
    assert_int_equal(strchr(out, '\n') - out, n - 1); /* one line */
    assert_null(strchr(out, '\r'));
    assert_null(strchr(out, '\x1b'));
    assert_non_null(strstr(out, "client 'evil\\n2026-01-01T00:00:00.000Z mcp-sandboxd error: "
                                "forged\\x1b[2J\\u2028' initialized with protocol 2025-11-25 "
                                "(asked 2025-06-18\\r\\n2026-01-01T00:00:00.000Z mcp-sandboxd "
                                "error: v)\n"));
}

static void test_each_version_echoed(void **state)
{
    (void)state;
    const char *versions[] = {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"};
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(mcp_negotiate(versions[i]), (int)i);
        assert_string_equal(mcp_version_name(mcp_negotiate(versions[i])), versions[i]);
    }
    assert_int_equal(mcp_negotiate("2026-07-28"), MCP_V_LATEST);
    assert_int_equal(mcp_negotiate(NULL), MCP_V_LATEST);
    assert_string_equal(mcp_versions_text(), "2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25");
}

static void test_before_initialize(void **state)
{
    struct fixture *f = *state;
    json_object *r = send1(f, "{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"ping\"}");
    assert_string_equal(json_object_get_string(json_get(r, "id")), "p");
    json_get(r, "result");
    r = send1(f, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}");
    assert_int_equal(error_code(r), JSONRPC_INVALID_REQUEST);
    r = send1(f, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"initialize\",\"params\":{}}");
    assert_int_equal(error_code(r), JSONRPC_INVALID_PARAMS);
}

static void test_errors(void **state)
{
    struct fixture *f = *state;
    init(f, "2025-11-25");
    json_object *r = send1(f, "{not json");
    assert_int_equal(error_code(r), JSONRPC_PARSE_ERROR);
    assert_true(json_object_is_type(json_get(r, "id"), json_type_null));
    r = send1(f, "{\"jsonrpc\":\"2.0\",\"id\":5}");
    assert_int_equal(error_code(r), JSONRPC_INVALID_REQUEST);
    assert_int_equal(json_object_get_int(json_get(r, "id")), 5);
    r = send1(f, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"no/such\"}");
    assert_int_equal(error_code(r), JSONRPC_METHOD_NOT_FOUND);
    /* The echoed name is cut at 128 bytes, never inside a character: a euro
     * sign straddling the cut goes whole. */
    char long_method[300];
    snprintf(long_method, sizeof(long_method),
             "{\"jsonrpc\":\"2.0\",\"id\":61,\"method\":\"%0127d\xe2\x82\xac tail\"}", 0);
    r = send1(f, long_method);
    assert_int_equal(error_code(r), JSONRPC_METHOD_NOT_FOUND);
    const char *msg = json_object_get_string(json_get(json_get(r, "error"), "message"));
    assert_true(util_utf8_valid(msg, strlen(msg)));
    assert_int_equal(strlen(msg), strlen("Method not found: ") + 127);
    send0(f, "{\"jsonrpc\":\"2.0\",\"method\":\"no/such/notification\"}");
    send0(f, "{\"jsonrpc\":\"2.0\",\"id\":99,\"result\":{}}");
    r = send1(f, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"logging/setLevel\",\"params\":{"
                 "\"level\":\"loud\"}}");
    assert_int_equal(error_code(r), JSONRPC_INVALID_PARAMS);
    r = send1(f, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"logging/setLevel\",\"params\":{"
                 "\"level\":\"warning\"}}");
    assert_int_equal(json_object_object_length(json_get(r, "result")), 0);
    r = send1(f, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":{"
                 "\"name\":\"nope\"}}");
    assert_int_equal(error_code(r), JSONRPC_INVALID_PARAMS);
    r = send1(f, "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"tools/list\",\"params\":{"
                 "\"cursor\":\"zzz\"}}");
    assert_int_equal(error_code(r), JSONRPC_INVALID_PARAMS);
    /* Batches are only for 2025-03-26 sessions. */
    r = send1(f, "[{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"ping\"}]");
    assert_int_equal(error_code(r), JSONRPC_INVALID_REQUEST);
}

static void test_batch_2025_03_26(void **state)
{
    struct fixture *f = *state;
    init(f, "2025-03-26");
    json_object *r = send1(f, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},"
                              "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"},"
                              "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"nope\"},"
                              "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\","
                              "\"params\":{\"name\":\"run_python_code\",\"arguments\":{}}}]");
    assert_true(json_object_is_type(r, json_type_array));
    assert_int_equal(json_object_array_length(r), 3);
    json_object *call = json_object_array_get_idx(r, 2);
    assert_int_equal(json_object_get_int(json_get(call, "id")), 3);
    assert_true(json_object_get_boolean(json_get(json_get(call, "result"), "isError")));
    send0(f, "[{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}]");
    r = send1(f, "[]");
    assert_int_equal(error_code(r), JSONRPC_INVALID_REQUEST);
    r = send1(f, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/list\"}");
    json_object *tool = json_object_array_get_idx(json_get(json_get(r, "result"), "tools"), 0);
    /* 2025-03-26 has annotations but no outputSchema. */
    json_get(tool, "annotations");
    assert_false(json_object_object_get_ex(tool, "outputSchema", NULL));
}

/* A batch is capped in items (refused whole past --max-batch-items) and
 * its answers together in bytes (--max-message-bytes): answers past the
 * cap become errors naming their request, the batch stays valid. */
static void test_batch_caps(void **state)
{
    struct fixture *f = *state;
    init(f, "2025-03-26");
    f->g.cfg.max_batch_items = 3;
    json_object *r = send1(f, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},"
                              "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"},"
                              "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"},"
                              "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}]");
    assert_int_equal(error_code(r), JSONRPC_INVALID_REQUEST);
    assert_non_null(strstr(json_object_get_string(json_get(json_get(r, "error"), "message")),
                           "--max-batch-items"));
    /* One tools/list answer fits, the next ones do not. */
    size_t one = strlen(json_object_to_json_string_ext(
        send1(f, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/list\"}"),
        JSON_C_TO_STRING_PLAIN));
    f->g.cfg.max_message_bytes = (long long)(one + one / 2);
    r = send1(f, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"},"
                 "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"},"
                 "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}]");
    assert_true(json_object_is_type(r, json_type_array));
    assert_int_equal(json_object_array_length(r), 3);
    size_t total = strlen(json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN));
    assert_true(total < one + one / 2 + 1024);
    json_get(json_get(json_object_array_get_idx(r, 0), "result"), "tools");
    json_object *e = json_object_array_get_idx(r, 1);
    assert_int_equal(json_object_get_int(json_get(e, "id")), 2);
    assert_int_equal(error_code(e), JSONRPC_SERVER_ERROR);
    assert_non_null(
        strstr(json_object_get_string(json_get(json_get(e, "error"), "message")), "on its own"));
    json_get(json_object_array_get_idx(r, 2), "result");
}

/* No network is what tools/list says by default; with --allow-network the
 * descriptions, openWorldHint and the environment resource say which. */
static void test_network_declared(void **state)
{
    struct fixture *f = *state;
    init(f, "2025-06-18");
    json_object *r = send1(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
    json_object *tool = json_object_array_get_idx(json_get(json_get(r, "result"), "tools"), 0);
    assert_non_null(strstr(json_object_get_string(json_get(tool, "description")),
                           "No network access; a call cannot change that."));
    assert_false(json_object_get_boolean(json_get(json_get(tool, "annotations"), "openWorldHint")));

    mcp_session_free(f->s);
    mcp_server_free(f->g.srv);
    set_list(&f->g.cfg.allow_network, (const char *const[]){"python"}, 1);
    struct err err = ERR_INIT;
    f->g.srv = mcp_server_new(&f->g.cfg, f->g.exec, &err);
    assert_non_null(f->g.srv);
    f->s = mcp_session_new(f->g.srv, "stdio");
    init(f, "2025-06-18");
    r = send1(f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
    tool = json_object_array_get_idx(json_get(json_get(r, "result"), "tools"), 0);
    assert_non_null(strstr(json_object_get_string(json_get(tool, "description")),
                           "Network access for python only (the operator allows it)"));
    assert_true(json_object_get_boolean(json_get(json_get(tool, "annotations"), "openWorldHint")));
    r = send1(f, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"resources/read\",\"params\":{"
                 "\"uri\":\"mcp-sandboxd://environment\"}}");
    json_object *c0 = json_object_array_get_idx(json_get(json_get(r, "result"), "contents"), 0);
    json_object *env = json_tokener_parse(json_object_get_string(json_get(c0, "text")));
    assert_string_equal(json_object_get_string(json_get(json_get(env, "network"), "python")),
                        "bridge");
    assert_string_equal(json_object_get_string(json_get(json_get(env, "network"), "javascript")),
                        "none");
    /* One entry per language of the table. */
    assert_int_equal(json_object_object_length(json_get(env, "network")), 8);
    assert_string_equal(json_object_get_string(json_get(json_get(env, "network"), "typescript")),
                        "none");
    json_object_put(env);

    /* Named by aliases, in any case: the table's names in the text. */
    mcp_session_free(f->s);
    mcp_server_free(f->g.srv);
    set_list(&f->g.cfg.allow_network, (const char *const[]){"SH"}, 1);
    f->g.srv = mcp_server_new(&f->g.cfg, f->g.exec, &err);
    assert_non_null(f->g.srv);
    f->s = mcp_session_new(f->g.srv, "stdio");
    init(f, "2025-06-18");
    r = send1(f, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/list\"}");
    tool = json_object_array_get_idx(json_get(json_get(r, "result"), "tools"), 0);
    assert_non_null(strstr(json_object_get_string(json_get(tool, "description")),
                           "Network access for bash only (the operator allows it)"));
}

static void test_call_without_engine(void **state)
{
    struct fixture *f = *state;
    init(f, "2025-06-18");
    json_object *r = send1(f, "{\"jsonrpc\":\"2.0\",\"id\":\"c1\",\"method\":\"tools/call\","
                              "\"params\":{\"name\":\"run_python_code\",\"arguments\":{"
                              "\"code\":\"print(1)\"}}}");
    json_object *res = json_get(r, "result");
    assert_true(json_object_get_boolean(json_get(res, "isError")));
    json_object *sc = json_get(res, "structuredContent");
    assert_string_equal(json_object_get_string(json_get(sc, "status")), "error");
    const char *msg = json_object_get_string(json_get(sc, "message"));
    if (!strstr(msg, "fake backend: down"))
        fail_msg("message does not say what the backend said: %s", msg);
    r = send1(f, "{\"jsonrpc\":\"2.0\",\"id\":\"c2\",\"method\":\"tools/call\","
                 "\"params\":{\"name\":\"execute_code\",\"arguments\":{\"code\":\"1\"}}}");
    res = json_get(r, "result");
    assert_true(json_object_get_boolean(json_get(res, "isError")));
    assert_false(json_object_object_get_ex(res, "structuredContent", NULL));
    const char *text = json_object_get_string(
        json_get(json_object_array_get_idx(json_get(res, "content"), 0), "text"));
    assert_non_null(strstr(text, "language"));
}

static void test_resources_prompts_completion(void **state)
{
    struct fixture *f = *state;
    init(f, "2025-11-25");
    json_object *r = send1(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/list\"}");
    json_object *res0 = json_object_array_get_idx(json_get(json_get(r, "result"), "resources"), 0);
    assert_string_equal(json_object_get_string(json_get(res0, "uri")),
                        "mcp-sandboxd://environment");
    r = send1(f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"resources/read\",\"params\":{"
                 "\"uri\":\"mcp-sandboxd://environment\"}}");
    json_object *c0 = json_object_array_get_idx(json_get(json_get(r, "result"), "contents"), 0);
    json_object *env = json_tokener_parse(json_object_get_string(json_get(c0, "text")));
    assert_string_equal(json_object_get_string(json_get(json_get(env, "network"), "python")),
                        "none");
    assert_string_equal(json_object_get_string(json_get(json_get(env, "network"), "javascript")),
                        "none");
    json_object_put(env);
    r = send1(f, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"resources/read\",\"params\":{"
                 "\"uri\":\"file:///etc/passwd\"}}");
    assert_int_equal(error_code(r), MCP_RESOURCE_NOT_FOUND);
    r = send1(f, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"resources/subscribe\",\"params\":{"
                 "\"uri\":\"test://watched-resource\"}}");
    json_get(r, "result");
    r = send1(f, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"prompts/list\"}");
    assert_int_equal(json_object_array_length(json_get(json_get(r, "result"), "prompts")), 0);
    r = send1(f, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"prompts/get\",\"params\":{"
                 "\"name\":\"x\"}}");
    assert_int_equal(error_code(r), JSONRPC_INVALID_PARAMS);
    r = send1(f, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"completion/complete\",\"params\":{"
                 "\"ref\":{\"type\":\"ref/prompt\",\"name\":\"p\"},\"argument\":{\"name\":\"a\","
                 "\"value\":\"t\"}}}");
    assert_int_equal(
        json_object_array_length(json_get(json_get(json_get(r, "result"), "completion"), "values")),
        0);
    r = send1(f, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"completion/complete\"}");
    assert_int_equal(error_code(r), JSONRPC_INVALID_PARAMS);
}

/* params for a 2026-07-28 request: its envelope, then more members. */
#define MODERN_META(version)                                                                       \
    "\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"" version "\","                      \
    "\"io.modelcontextprotocol/clientCapabilities\":{}}"
#define MODERN(id, method, more)                                                                   \
    "{\"jsonrpc\":\"2.0\",\"id\":" id ",\"method\":\"" method                                      \
    "\",\"params\":{" more MODERN_META("2026-07-28") "}}"

static const char *str_at(json_object *o, const char *key)
{
    return json_object_get_string(json_get(o, key));
}

/* Modern requests on a stream that never initialized are served beside
 * the 2025 rules, which still hold for the same stream. */
static void test_modern_beside_legacy(void **state)
{
    struct fixture *f = *state;
    json_object *r = json_get(send1(f, MODERN("1", "server/discover", "")), "result");
    assert_string_equal(str_at(r, "resultType"), "complete");
    assert_string_equal(
        json_object_get_string(json_object_array_get_idx(json_get(r, "supportedVersions"), 0)),
        "2026-07-28");
    assert_string_equal(str_at(r, "cacheScope"), "public");
    assert_true(json_object_get_int(json_get(r, "ttlMs")) > 0);
    json_get(json_get(r, "capabilities"), "tools");
    assert_string_equal(
        str_at(json_get(json_get(r, "_meta"), "io.modelcontextprotocol/serverInfo"), "name"),
        "mcp-sandboxd");
    /* The spliced tool list gains the wire's members and stays JSON. */
    r = json_get(send1(f, MODERN("2", "tools/list", "")), "result");
    assert_string_equal(str_at(r, "resultType"), "complete");
    assert_string_equal(str_at(r, "cacheScope"), "public");
    assert_true(json_object_array_length(json_get(r, "tools")) > 0);
    r = json_get(send1(f, MODERN("3", "resources/templates/list", "")), "result");
    assert_int_equal(json_object_get_int(json_get(r, "ttlMs")), 300000);
    assert_int_equal(error_code(send1(f, MODERN("4", "ping", ""))), JSONRPC_METHOD_NOT_FOUND);
    assert_int_equal(error_code(send1(f, MODERN("5", "initialize", ""))), JSONRPC_METHOD_NOT_FOUND);
    assert_int_equal(error_code(send1(f, MODERN("6", "logging/setLevel", "\"level\":\"info\","))),
                     JSONRPC_METHOD_NOT_FOUND);
    assert_int_equal(error_code(send1(f, MODERN("7", "resources/subscribe", "\"uri\":\"a:b\","))),
                     JSONRPC_METHOD_NOT_FOUND);
    /* Nothing of that initialized the 2025 session. */
    r = send1(f, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/list\"}");
    assert_int_equal(error_code(r), JSONRPC_INVALID_REQUEST);
    assert_int_equal(
        error_code(send1(f, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"server/discover\"}")),
        JSONRPC_METHOD_NOT_FOUND);
    init(f, "2025-11-25");
    r = json_get(send1(f, "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"tools/list\"}"), "result");
    assert_false(json_object_object_get_ex(r, "resultType", NULL));
    assert_false(json_object_object_get_ex(r, "ttlMs", NULL));
}

static void test_modern_errors(void **state)
{
    struct fixture *f = *state;
    /* The envelope's form first, then the version. */
    json_object *r = send1(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\","
                              "\"params\":{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":"
                              "\"v999.0.0\"}}}");
    assert_int_equal(error_code(r), JSONRPC_INVALID_PARAMS);
    assert_int_equal(json_object_get_int(json_get(r, "id")), 1);
    r = send1(
        f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"server/discover\",\"params\":{" MODERN_META(
               "v999.0.0") "}}");
    assert_int_equal(error_code(r), -32022);
    json_object *data = json_get(json_get(r, "error"), "data");
    assert_string_equal(str_at(data, "requested"), "v999.0.0");
    assert_string_equal(
        json_object_get_string(json_object_array_get_idx(json_get(data, "supported"), 0)),
        "2026-07-28");
    r = send1(f, MODERN("3", "resources/read", "\"uri\":\"file:///etc/passwd\","));
    assert_int_equal(error_code(r), JSONRPC_INVALID_PARAMS);
    assert_string_equal(str_at(json_get(json_get(r, "error"), "data"), "uri"),
                        "file:///etc/passwd");
    r = send1(f, MODERN("4", "nope/nothing", ""));
    assert_int_equal(error_code(r), JSONRPC_METHOD_NOT_FOUND);
    /* A bad log level is the envelope's. */
    r = send1(f, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\",\"params\":{\"_meta\":{"
                 "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
                 "\"io.modelcontextprotocol/clientCapabilities\":{},"
                 "\"io.modelcontextprotocol/logLevel\":\"loud\"}}}");
    assert_int_equal(error_code(r), JSONRPC_INVALID_PARAMS);
}

/* What an HTTP transport checks: the headers against the body, before the
 * version and the method. */
static void test_modern_headers(void **state)
{
    (void)state;
    static const struct {
        const char *msg, *version, *method, *name;
        int code; /* 0: may be dispatched */
    } cases[] = {
        {MODERN("1", "tools/list", ""), "2026-07-28", "tools/list", NULL, 0},
        {MODERN("1", "tools/list", ""), " 2026-07-28\t", " tools/list ", NULL, 0},
        {MODERN("1", "tools/list", ""), NULL, "tools/list", NULL, -32020},
        {MODERN("1", "tools/list", ""), "2026-07-28", NULL, NULL, -32020},
        {MODERN("1", "tools/list", ""), "2026-07-28", "tools/call", NULL, -32020},
        {MODERN("1", "tools/call", "\"name\":\"run_python_code\","), "2026-07-28", "tools/call",
         NULL, -32020},
        {MODERN("1", "tools/call", "\"name\":\"run_python_code\","), "2026-07-28", "tools/call",
         "run_python_code", 0},
        {MODERN("1", "tools/call", "\"name\":\"run_python_code\","), "2026-07-28", "tools/call",
         "=?base64?cnVuX3B5dGhvbl9jb2Rl?=", 0},
        {MODERN("1", "tools/call", "\"name\":\"run_python_code\","), "2026-07-28", "tools/call",
         "=?base64?cnVuX2pzX2NvZGU=?=", -32020},
        {MODERN("1", "tools/call", "\"name\":\"run_python_code\","), "2026-07-28", "tools/call",
         "=?base64?!!!?=", -32020},
        {MODERN("1", "resources/read", "\"uri\":\"a:b\","), "2026-07-28", "resources/read", "a:c",
         -32020},
        /* The header is checked before the version. */
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{" MODERN_META(
             "v999.0.0") "}}",
         "2026-07-28", "tools/list", NULL, -32020},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{" MODERN_META(
             "v999.0.0") "}}",
         "v999.0.0", "tools/list", NULL, -32022},
        {MODERN("1", "ping", ""), "2026-07-28", "ping", NULL, JSONRPC_METHOD_NOT_FOUND},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        json_object *msg = json_tokener_parse(cases[i].msg);
        assert_non_null(msg);
        assert_true(mcp_message_is_modern(msg));
        struct mcp_wire_headers h = {cases[i].version, cases[i].method, cases[i].name};
        json_object *e = mcp_modern_refusal(msg, &h);
        if (cases[i].code == 0 ? e != NULL : !e || error_code(e) != cases[i].code)
            fail_msg("case %zu: %s", i,
                     e ? json_object_to_json_string(e) : "dispatched; expected a refusal");
        json_object_put(e);
        json_object_put(msg);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_initialize_negotiation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_initialize_log_line, setup, teardown),
        cmocka_unit_test(test_each_version_echoed),
        cmocka_unit_test_setup_teardown(test_before_initialize, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch_2025_03_26, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch_caps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_call_without_engine, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resources_prompts_completion, setup, teardown),
        cmocka_unit_test_setup_teardown(test_network_declared, setup, teardown),
        cmocka_unit_test_setup_teardown(test_modern_beside_legacy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_modern_errors, setup, teardown),
        cmocka_unit_test(test_modern_headers),
    };
    return cmocka_run_group_tests_name("mcp", tests, NULL, NULL);
}
