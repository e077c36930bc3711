/* base/err.c: the error contract (set, wrap, move, clear), that no
 * unset error is ever shown as "ok", and what a client sees of each
 * category (the JSON-RPC code, the tool result's status). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "base/err.h"

static void test_set_and_wrap(void **state)
{
    (void)state;
    struct err err = ERR_INIT;
    assert_string_equal(err_msg(&err), "ok");
    assert_int_equal(err_set(&err, ERR_ENGINE, "engine said %d", 500), -1);
    assert_int_equal(err.code, ERR_ENGINE);
    assert_string_equal(err_msg(&err), "engine said 500");
    assert_int_equal(err_wrap(&err, "create %s", "x"), -1);
    assert_string_equal(err_msg(&err), "create x: engine said 500");
    assert_int_equal(err.code, ERR_ENGINE);
    /* Setting again replaces the message. */
    err_set(&err, ERR_TIMEOUT, "late");
    assert_string_equal(err_msg(&err), "late");
    err_clear(&err);
    assert_int_equal(err.code, ERR_OK);
    assert_null(err.msg);
    /* A NULL err is allowed everywhere. */
    assert_int_equal(err_set(NULL, ERR_IO, "x"), -1);
    assert_int_equal(err_wrap(NULL, "x"), -1);
    err_clear(NULL);
    assert_string_equal(err_msg(NULL), "");
}

static void test_wrap_of_unset_error(void **state)
{
    (void)state;
    struct err err = ERR_INIT;
    assert_int_equal(err_wrap(&err, "reading the program's output"), -1);
    assert_int_equal(err.code, ERR_INTERNAL);
    assert_string_equal(err_msg(&err), "reading the program's output");
    assert_null(strstr(err_msg(&err), "ok"));
    err_clear(&err);
}

static void test_move(void **state)
{
    (void)state;
    struct err from = ERR_INIT, to = ERR_INIT;
    err_set(&from, ERR_PROTOCOL, "bad frame");
    err_set(&to, ERR_IO, "older");
    err_move(&to, &from);
    assert_int_equal(to.code, ERR_PROTOCOL);
    assert_string_equal(err_msg(&to), "bad frame");
    assert_int_equal(from.code, ERR_OK);
    assert_null(from.msg);
    err_move(&to, &to);
    assert_string_equal(err_msg(&to), "bad frame");
    err_move(NULL, &to);
    err_move(&to, NULL);
    err_clear(&to);
}

static void test_code_names(void **state)
{
    (void)state;
    assert_string_equal(err_code_name(ERR_NOT_FOUND), "not found");
    assert_string_equal(err_code_name((enum err_code)999), "error");
    assert_string_equal(err_code_name((enum err_code) - 1), "error");
}

/* Every category, with the JSON-RPC code and the tool status a client
 * sees for it: the numbers are the wire's (JSON-RPC 2.0), written out. */
static void test_client_mapping(void **state)
{
    (void)state;
    static const struct {
        enum err_code code;
        int jsonrpc;
        const char *status;
    } want[] = {
        {ERR_OK, 0, "ok"},
        {ERR_INVALID, -32602, "error"},
        {ERR_TOO_BIG, -32600, "error"},
        {ERR_ENGINE, -32000, "error"},
        {ERR_NOT_FOUND, -32000, "error"},
        {ERR_IO, -32000, "error"},
        {ERR_TIMEOUT, -32000, "error"},
        {ERR_CANCELLED, -32000, "cancelled"},
        {ERR_PROTOCOL, -32700, "error"},
        {ERR_INTERNAL, -32603, "error"},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        assert_int_equal(want[i].code, (enum err_code)i); /* each category once */
        assert_int_equal(err_jsonrpc_code(want[i].code), want[i].jsonrpc);
        assert_string_equal(err_tool_status(want[i].code), want[i].status);
    }
    assert_int_equal(ERR_INTERNAL + 1, (int)(sizeof(want) / sizeof(want[0])));
    /* Not a category: an internal error, never "ok". */
    assert_int_equal(err_jsonrpc_code((enum err_code)999), -32603);
    assert_string_equal(err_tool_status((enum err_code)999), "error");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_and_wrap),   cmocka_unit_test(test_wrap_of_unset_error),
        cmocka_unit_test(test_move),           cmocka_unit_test(test_code_names),
        cmocka_unit_test(test_client_mapping),
    };
    return cmocka_run_group_tests_name("err", tests, NULL, NULL);
}
