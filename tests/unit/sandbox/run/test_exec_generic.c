/* exec.c with the generic runner's languages, over the fake backend
 * (exec_rig.h): the program a run's request carries (source file,
 * compile, typecheck and run steps, the version probe's command), and
 * the compile errors the runner's completion record reports. The fake
 * sandbox keeps the request's program and answers with the record
 * scripted here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <json-c/json.h>
#include <string.h>

#include "unit/sandbox/run/exec_rig.h"
#include "unit/json_get.h"

/* The next runs' program writes err_text on stderr (NULL: nothing), then
 * the completion record whose JSON is record. */
static void script(struct rig *g, const char *err_text, const char *record)
{
    struct fake_program p = {
        .err = err_text, .err_len = err_text ? strlen(err_text) : 0, .record = record};
    fake_backend_set_program(g->fb, &p);
}

/* The last run's sandbox: the generic runner in lang's image, without a
 * network, removed; its request's program, parsed (NULL: none; the
 * caller puts it). */
static json_object *generic_run(struct rig *g, const struct langtable_lang *lang)
{
    struct fake_sandbox_info info;
    last_info(g, &info);
    assert_true(info.code_received);
    assert_string_equal(info.image, lang->image);
    assert_contains(info.cmd, "[\"perl\",\"-e\",\"");
    assert_false(info.network);
    assert_last_removed(g);
    if (!info.program[0])
        return NULL;
    return json_parse_or_fail("the program", info.program);
}

static const char *word(json_object *argv, size_t i)
{
    return json_object_get_string(json_object_array_get_idx(argv, i));
}

/* A JSON array of strings equals the table's argv. */
static void assert_argv_json(json_object *a, const struct langtable_strv *want)
{
    assert_true(json_object_is_type(a, json_type_array));
    assert_int_equal(json_object_array_length(a), want->n);
    for (size_t i = 0; i < want->n; i++)
        assert_string_equal(word(a, i), want->v[i]);
}

/* C: the request carries the program (source file, compile step, run);
 * the runner's compile_error is the status compile_error with the
 * compiler's exit code, its messages on stderr, and nothing ran. */
static void test_generic_compile_error(void **state)
{
    struct rig *g = *state;
    static const char cc_err[] = "main.c: In function 'main':\n"
                                 "main.c:1:27: error: expected ';' before '}' token\n";
    script(g, cc_err,
           "{\"exit_code\":1,\"memory_error\":false,"
           "\"compile_error\":{\"exit_code\":1,\"timed_out\":false}}");
    rig_open(g);
    const struct langtable_lang *c = test_lang(g->langs, "c");
    struct run req = request("int main(void) { return 0 }");
    req.language = c;
    struct exec_result res;
    exec_result_init(&res);
    run_ok(g, &req, &res);
    assert_int_equal(res.status, EXEC_COMPILE_ERROR);
    assert_string_equal(exec_status_name(res.status), "compile_error");
    assert_true(res.has_exit_code);
    assert_int_equal(res.exit_code, 1);
    assert_contains(res.message, "the compile step failed (exit code 1");
    assert_contains(res.message, "did not run");
    assert_string_equal(buf_cstr(&res.err), cc_err);
    assert_int_equal(res.out.len, 0);

    struct fake_sandbox_info info;
    last_info(g, &info);
    assert_string_equal(info.code, "int main(void) { return 0 }");
    json_object *pg = generic_run(g, c);
    assert_non_null(pg);
    assert_string_equal(json_object_get_string(json_get(pg, "source_file")), "main.c");
    assert_argv_json(json_get(pg, "compile"), &c->compile);
    assert_string_equal(word(json_get(pg, "compile"), 0), "gcc");
    assert_int_equal(json_object_get_int64(json_get(pg, "compile_timeout_ms")),
                     c->compile_timeout_ms);
    assert_argv_json(json_get(pg, "run"), &c->run);
    assert_string_equal(word(json_get(pg, "run"), 0), "./main");
    assert_false(json_object_object_get_ex(pg, "typecheck", NULL));
    assert_false(json_object_object_get_ex(pg, "typecheck_blocks", NULL));
    json_object_put(pg);

    /* A compile step stopped at its own limit says so. */
    script(g, NULL,
           "{\"exit_code\":137,\"memory_error\":false,"
           "\"compile_error\":{\"exit_code\":137,\"timed_out\":true}}");
    const struct langtable_lang *cpp = test_lang(g->langs, "c++");
    req.language = cpp;
    run_ok(g, &req, &res);
    assert_int_equal(res.status, EXEC_COMPILE_ERROR);
    assert_int_equal(res.exit_code, 137);
    char *want = xasprintf("stopped after %lld ms", cpp->compile_timeout_ms);
    assert_contains(res.message, want);
    free(want);
    pg = generic_run(g, cpp);
    assert_string_equal(json_object_get_string(json_get(pg, "source_file")), "main.cpp");
    json_object_put(pg);
    exec_result_free(&res);
}

/* TypeScript: the typecheck step and whether its failure blocks the run
 * (fail_on_type_errors) go in the program; a run that compiled is an
 * ordinary result. */
static void test_generic_typecheck(void **state)
{
    struct rig *g = *state;
    script(g, "main.ts(1,7): error TS2322: Type 'string' is not assignable to type 'number'.\n",
           "{\"exit_code\":0,\"memory_error\":false}");
    rig_open(g);
    const struct langtable_lang *ts = test_lang(g->langs, "ts");
    struct run req = request("const x: number = 'a'; console.log(x)");
    req.language = ts;
    struct exec_result res;
    exec_result_init(&res);
    run_ok(g, &req, &res);
    /* Shown, not blocking: the run went on. */
    assert_int_equal(res.status, EXEC_OK);
    assert_int_equal(res.exit_code, 0);
    assert_contains(buf_cstr(&res.err), "TS2322");
    json_object *pg = generic_run(g, ts);
    assert_string_equal(json_object_get_string(json_get(pg, "source_file")), "main.ts");
    assert_argv_json(json_get(pg, "compile"), &ts->compile);
    assert_argv_json(json_get(pg, "typecheck"), &ts->typecheck);
    assert_false(json_object_get_boolean(json_get(pg, "typecheck_blocks")));
    assert_argv_json(json_get(pg, "run"), &ts->run);
    json_object_put(pg);

    /* fail_on_type_errors: typecheck_blocks, and its failure is a
     * compile error. */
    script(g, "main.ts(1,7): error TS2322\n",
           "{\"exit_code\":2,\"memory_error\":false,"
           "\"compile_error\":{\"exit_code\":2,\"timed_out\":false}}");
    req.typecheck_blocks = true;
    run_ok(g, &req, &res);
    assert_int_equal(res.status, EXEC_COMPILE_ERROR);
    assert_int_equal(res.exit_code, 2);
    pg = generic_run(g, ts);
    assert_true(json_object_get_boolean(json_get(pg, "typecheck_blocks")));
    json_object_put(pg);
    exec_result_free(&res);
}

/* Bash has no compile step; the version probe runs the table's version
 * command instead of the code; python has a runner of its own: no
 * program at all. */
static void test_generic_programs(void **state)
{
    struct rig *g = *state;
    script(g, NULL, "{\"exit_code\":3,\"memory_error\":false}");
    rig_open(g);
    const struct langtable_lang *bash = test_lang(g->langs, "sh");
    struct run req = request("exit 3");
    req.language = bash;
    struct exec_result res;
    exec_result_init(&res);
    run_ok(g, &req, &res);
    assert_int_equal(res.status, EXEC_OK);
    assert_int_equal(res.exit_code, 3);
    assert_null(res.message);
    json_object *pg = generic_run(g, bash);
    assert_string_equal(json_object_get_string(json_get(pg, "source_file")), "main.sh");
    assert_false(json_object_object_get_ex(pg, "compile", NULL));
    assert_false(json_object_object_get_ex(pg, "compile_timeout_ms", NULL));
    assert_false(json_object_object_get_ex(pg, "typecheck", NULL));
    assert_string_equal(word(json_get(pg, "run"), 0), "bash");
    assert_string_equal(word(json_get(pg, "run"), 1), "main.sh");
    json_object_put(pg);

    script(g, NULL, "{\"exit_code\":0,\"memory_error\":false}");
    const struct langtable_lang *c = test_lang(g->langs, "c");
    req = request("");
    req.language = c;
    req.version_probe = true;
    run_ok(g, &req, &res);
    assert_int_equal(res.status, EXEC_OK);
    pg = generic_run(g, c);
    assert_argv_json(json_get(pg, "run"), &c->version);
    assert_false(json_object_object_get_ex(pg, "compile", NULL));
    json_object_put(pg);

    req = request("print(1)");
    run_ok(g, &req, &res);
    assert_int_equal(res.status, EXEC_OK);
    struct fake_sandbox_info info;
    last_info(g, &info);
    assert_true(info.code_received);
    assert_string_equal(info.program, "");
    assert_last_removed(g);
    exec_result_free(&res);
}

/* A compile_error the daemon cannot read is the runner breaking the
 * protocol: an error of the run, not a compile error. */
static void test_generic_bad_compile_error(void **state)
{
    struct rig *g = *state;
    script(g, NULL,
           "{\"exit_code\":1,\"memory_error\":false,\"compile_error\":{\"exit_code\":\"1\"}}");
    rig_open(g);
    struct run req = request("int x");
    req.language = test_lang(g->langs, "c");
    struct exec_result res;
    exec_result_init(&res);
    struct err err = ERR_INIT;
    assert_int_equal(exec_run(g->exec, &req, &res, &err), -1);
    assert_int_equal(err.code, ERR_PROTOCOL);
    assert_int_equal(res.status, EXEC_ERROR);
    assert_contains(res.message, "malformed compile_error");
    err_clear(&err);
    json_object_put(generic_run(g, req.language));
    exec_result_free(&res);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_generic_compile_error),
        T(test_generic_typecheck),
        T(test_generic_programs),
        T(test_generic_bad_compile_error),
    };
#undef T
    return cmocka_run_group_tests_name("exec_generic", tests, NULL, NULL);
}
