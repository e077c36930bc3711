/* Unit tests for src/sandbox/runner/runner_packages.c and the request's
 * "packages" / "add_packages" (runner.c): which set directories may be
 * named, how many, and that they travel as a JSON array of strings, in
 * order, "add_packages" in a session cell only, neither in a begin. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <json-c/json.h>

#include "sandbox/runner/runner.h"
#include "sandbox/runner/runner_packages.h"

#define NONCE "0123456789abcdef0123456789abcdef"
#define SET_A RUNNER_PACKAGES_ROOT "/pip-3f2a9c"
#define SET_B RUNNER_PACKAGES_ROOT "/npm/ab_C-1.2"

static void test_dir_valid(void **state)
{
    (void)state;
    static const char *const good[] = {
        SET_A,
        SET_B,
        RUNNER_PACKAGES_ROOT "/a",
        RUNNER_PACKAGES_ROOT "/...",
        RUNNER_PACKAGES_ROOT "/.hidden",
    };
    static const char *const bad[] = {
        NULL,
        "",
        RUNNER_PACKAGES_ROOT,
        RUNNER_PACKAGES_ROOT "/",
        RUNNER_PACKAGES_ROOT "/a/",
        RUNNER_PACKAGES_ROOT "//a",
        RUNNER_PACKAGES_ROOT "/a//b",
        RUNNER_PACKAGES_ROOT "/..",
        RUNNER_PACKAGES_ROOT "/../etc",
        RUNNER_PACKAGES_ROOT "/a/../../etc",
        RUNNER_PACKAGES_ROOT "/a/.",
        RUNNER_PACKAGES_ROOT "/./a",
        RUNNER_PACKAGES_ROOT "x/a",
        RUNNER_PACKAGES_ROOT "-other/a",
        "/opt/other/a",
        "opt/mcpsbx-packages/a",
        RUNNER_PACKAGES_ROOT "/a b",
        RUNNER_PACKAGES_ROOT "/a\nb",
        RUNNER_PACKAGES_ROOT "/caf\xc3\xa9",
        RUNNER_PACKAGES_ROOT "/a\\b",
        RUNNER_PACKAGES_ROOT "/a:b",
    };
    for (size_t i = 0; i < ARRAY_SIZE(good); i++)
        assert_true(runner_package_dir_valid(good[i]));
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
        assert_false(runner_package_dir_valid(bad[i]));

    /* The length cap counts the whole name. */
    char longest[RUNNER_MAX_PACKAGE_PATH + 2];
    size_t root = strlen(RUNNER_PACKAGES_ROOT "/");
    memcpy(longest, RUNNER_PACKAGES_ROOT "/", root);
    memset(longest + root, 'k', RUNNER_MAX_PACKAGE_PATH - root);
    longest[RUNNER_MAX_PACKAGE_PATH] = '\0';
    assert_true(runner_package_dir_valid(longest));
    longest[RUNNER_MAX_PACKAGE_PATH] = 'k';
    longest[RUNNER_MAX_PACKAGE_PATH + 1] = '\0';
    assert_false(runner_package_dir_valid(longest));
}

static json_object *encode(const struct runner_request *req)
{
    struct buf out;
    buf_init(&out, 1 << 20);
    assert_int_equal(runner_encode_request(req, &out, NULL), 0);
    const char *nl = memchr(out.data, '\n', out.len);
    assert_non_null(nl);
    json_object *obj = json_tokener_parse(nl + 1);
    assert_non_null(obj);
    buf_free(&out);
    return obj;
}

/* key's array in obj: exactly want[0..n), in order. */
static void assert_dirs(json_object *obj, const char *key, const char *const *want, size_t n)
{
    json_object *a = NULL;
    assert_true(json_object_object_get_ex(obj, key, &a));
    assert_true(json_object_is_type(a, json_type_array));
    assert_int_equal(json_object_array_length(a), n);
    for (size_t i = 0; i < n; i++) {
        json_object *s = json_object_array_get_idx(a, i);
        assert_true(json_object_is_type(s, json_type_string));
        assert_string_equal(json_object_get_string(s), want[i]);
    }
}

static void test_encode(void **state)
{
    (void)state;
    char *sets[] = {(char *)SET_A, (char *)SET_B};
    char *adds[] = {(char *)SET_B};

    /* None: neither member. */
    struct runner_request plain = {.nonce_hex = NONCE, .code = "x", .code_len = 1};
    json_object *obj = encode(&plain);
    assert_false(json_object_object_get_ex(obj, "packages", NULL));
    assert_false(json_object_object_get_ex(obj, "add_packages", NULL));
    json_object_put(obj);

    /* A one-shot run's sets, in order. */
    struct runner_request run = {
        .nonce_hex = NONCE, .code = "x", .code_len = 1, .packages = sets, .n_packages = 2};
    obj = encode(&run);
    assert_dirs(obj, "packages", (const char *const[]){SET_A, SET_B}, 2);
    assert_false(json_object_object_get_ex(obj, "add_packages", NULL));
    json_object_put(obj);

    /* A session cell: both lists, each as given. */
    struct runner_request cell = {.nonce_hex = NONCE,
                                  .session = RUNNER_SESSION_CELL,
                                  .code = "",
                                  .packages = sets,
                                  .n_packages = 1,
                                  .add_packages = adds,
                                  .n_add_packages = 1};
    obj = encode(&cell);
    assert_dirs(obj, "packages", (const char *const[]){SET_A}, 1);
    assert_dirs(obj, "add_packages", (const char *const[]){SET_B}, 1);
    json_object_put(obj);
}

static void assert_refused(const struct runner_request *req)
{
    struct buf out;
    buf_init(&out, 1 << 20);
    assert_int_equal(buf_add(&out, "kept", 4), 0);
    struct err err = ERR_INIT;
    assert_int_equal(runner_encode_request(req, &out, &err), -1);
    assert_int_equal(err.code, ERR_INVALID);
    assert_non_null(err.msg);
    /* The name itself is never echoed: only its place in the list. */
    assert_null(strstr(err.msg, "/etc"));
    err_clear(&err);
    assert_int_equal(out.len, 4);
    buf_free(&out);
}

static void test_encode_refuses(void **state)
{
    (void)state;
    char *bad[] = {(char *)SET_A, (char *)RUNNER_PACKAGES_ROOT "/../etc"};
    char *many[RUNNER_MAX_PACKAGE_SETS + 1];
    for (size_t i = 0; i < ARRAY_SIZE(many); i++)
        many[i] = (char *)SET_A;

    struct runner_request r1 = {
        .nonce_hex = NONCE, .code = "x", .code_len = 1, .packages = bad, .n_packages = 2};
    assert_refused(&r1);
    struct runner_request r2 = {.nonce_hex = NONCE,
                                .session = RUNNER_SESSION_CELL,
                                .code = "",
                                .add_packages = bad,
                                .n_add_packages = 2};
    assert_refused(&r2);
    struct runner_request r3 = {.nonce_hex = NONCE,
                                .code = "x",
                                .code_len = 1,
                                .packages = many,
                                .n_packages = RUNNER_MAX_PACKAGE_SETS + 1};
    assert_refused(&r3);
    /* The cap itself is allowed. */
    struct runner_request r4 = r3;
    r4.n_packages = RUNNER_MAX_PACKAGE_SETS;
    json_object_put(encode(&r4));
    /* add_packages only in a session cell. */
    static const enum runner_session_kind not_cell[] = {RUNNER_SESSION_NONE, RUNNER_SESSION_BEGIN};
    for (size_t i = 0; i < ARRAY_SIZE(not_cell); i++) {
        struct runner_request r = {.nonce_hex = NONCE,
                                   .session = not_cell[i],
                                   .code = "",
                                   .add_packages = bad,
                                   .n_add_packages = 1};
        assert_refused(&r);
    }
    /* A begin request runs nothing: no sets for it. */
    struct runner_request begin = {.nonce_hex = NONCE,
                                   .session = RUNNER_SESSION_BEGIN,
                                   .code = "",
                                   .packages = bad,
                                   .n_packages = 1};
    assert_refused(&begin);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dir_valid),
        cmocka_unit_test(test_encode),
        cmocka_unit_test(test_encode_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
