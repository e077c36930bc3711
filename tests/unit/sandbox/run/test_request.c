/* request.c: request_cap, the named cap exec_run gives a run's request,
 * holds the request encode_request makes of the most escaping input
 * there is, for an in-process runner and for the generic one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "sandbox/run/request.h"
#include "unit/langs.h"

#define N 4096

struct fixture {
    struct config cfg;
    struct langtable *langs;
};

static int setup(void **state)
{
    struct fixture *f = xcalloc(1, sizeof(*f));
    config_init(&f->cfg);
    f->langs = test_langs(&f->cfg);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    langtable_free(f->langs);
    config_free(&f->cfg);
    free(f);
    return 0;
}

/* Every byte of the code, stdin, files and variables is one JSON escapes
 * to six (\u0001); the variables' text is mostly escapes already; the
 * pass-through secret's value is secret (NULL: a short one); kind: the
 * session part (a Python begin request also carries the session runner). */
static void encode_worst_as(const struct langtable_lang *lang, char *secret,
                            enum runner_session_kind kind)
{
    static char ctl[N], vars[6 * N + 16];
    memset(ctl, 1, sizeof(ctl));
    size_t vlen = (size_t)snprintf(vars, sizeof(vars), "{\"v\":\"");
    for (size_t i = 0; i < N; i++, vlen += 6)
        memcpy(vars + vlen, "\\u0001", 6);
    vlen += (size_t)snprintf(vars + vlen, sizeof(vars) - vlen, "\"}");
    struct runner_file files[] = {{.path = "in/a.txt", .content = ctl, .content_len = N},
                                  {.path = "in/b.txt", .content = ctl, .content_len = N}};
    char *patterns[] = {"out/*.txt", "*.png"};
    char *names[] = {"TOKEN", NULL}, *values[] = {secret ? secret : "s3cret", NULL};
    struct exec_ctx ctx = {.secrets = {.n = 1, .names = names, .values = values}};
    struct run req = {.language = lang,
                      .code = ctl,
                      .code_len = N,
                      .stdin_data = ctl,
                      .stdin_len = N,
                      .variables = vars,
                      .variables_len = vlen,
                      .files = files,
                      .n_files = ARRAY_SIZE(files),
                      .returns = true,
                      .outputs = {.patterns = patterns, .n_patterns = ARRAY_SIZE(patterns)}};
    struct buf request;
    buf_init(&request, request_cap(&ctx, &req, NULL));
    struct err err = ERR_INIT;
    if (encode_request(&ctx, &req, NULL, NULL, "0123456789abcdef0123456789abcdef", kind, &request,
                       &err) < 0)
        fail_msg("%s: %s", lang->name, err_msg(&err));
    /* The escapes were made: the cap was not met by a short request. */
    assert_true(request.len > 6 * N);
    buf_free(&request);
}

static void encode_worst(const struct langtable_lang *lang, char *secret)
{
    encode_worst_as(lang, secret, RUNNER_SESSION_NONE);
}

static void test_cap_in_process(void **state)
{
    struct fixture *f = *state;
    encode_worst(test_lang(f->langs, "python"), NULL);
}

static void test_cap_generic(void **state)
{
    struct fixture *f = *state;
    encode_worst(test_lang(f->langs, "bash"), NULL);
}

/* A secret longer than the cap's fixed margin, of the most escaping bytes:
 * every request carries it, so the cap counts it. */
static void test_cap_long_secret(void **state)
{
    struct fixture *f = *state;
    static char secret[5 * N + 1];
    memset(secret, 1, sizeof(secret) - 1);
    encode_worst(test_lang(f->langs, "python"), secret);
    encode_worst(test_lang(f->langs, "bash"), secret);
}

/* A Python session's begin request carries runner_session.py as its
 * session "source" (and the cap holds it); cells, one-shot runs and the
 * other runners' begin requests do not. */
static void test_session_source(void **state)
{
    struct fixture *f = *state;
    encode_worst_as(test_lang(f->langs, "python"), NULL, RUNNER_SESSION_BEGIN);
    static const struct {
        const char *lang;
        enum runner_session_kind kind;
        bool source;
    } cases[] = {
        {"python", RUNNER_SESSION_BEGIN, true}, {"python", RUNNER_SESSION_CELL, false},
        {"python", RUNNER_SESSION_NONE, false}, {"javascript", RUNNER_SESSION_BEGIN, false},
        {"bash", RUNNER_SESSION_BEGIN, false},
    };
    struct exec_ctx ctx = {0};
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        struct run req = {.language = test_lang(f->langs, cases[i].lang), .code = ""};
        struct buf request;
        buf_init(&request, request_cap(&ctx, &req, NULL));
        struct err err = ERR_INIT;
        if (encode_request(&ctx, &req, NULL, NULL, "0123456789abcdef0123456789abcdef",
                           cases[i].kind, &request, &err) < 0)
            fail_msg("%s: %s", cases[i].lang, err_msg(&err));
        /* The source's first line, JSON-escaped as the request holds it. */
        const char *mark = "# mcp-sandboxd session runner for Python";
        assert_int_equal(strstr(buf_cstr(&request), mark) != NULL, cases[i].source);
        assert_int_equal(strstr(buf_cstr(&request), "\"source\":") != NULL, cases[i].source);
        buf_free(&request);
    }
}

/* A run's --secret placeholders go in its env after the pass-through
 * variables, within the cap; the real value never does. */
static void test_placeholders(void **state)
{
    struct fixture *f = *state;
    char *env[] = {"API_KEY=the-real-value-0123456789", NULL};
    char *items[] = {"API_KEY=api.example.com"};
    struct egress_secrets *t = NULL;
    struct egress_run_secrets *rs = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(egress_secrets_new(items, 1, env, NULL, &t, &err), 0);
    assert_int_equal(egress_run_secrets_new(t, &rs, &err), 0);
    char *names[] = {"TOKEN", NULL}, *values[] = {"s3cret", NULL};
    struct exec_ctx ctx = {.secrets = {.n = 1, .names = names, .values = values}};
    struct run req = {.language = test_lang(f->langs, "python"), .code = ""};
    struct buf request;
    buf_init(&request, request_cap(&ctx, &req, rs));
    assert_int_equal(encode_request(&ctx, &req, rs, NULL, "0123456789abcdef0123456789abcdef",
                                    RUNNER_SESSION_NONE, &request, &err),
                     0);
    char want[128];
    snprintf(want, sizeof(want), "\"env\":{\"TOKEN\":\"s3cret\",\"API_KEY\":\"%s\"}",
             rs->placeholders[0]);
    if (!strstr(buf_cstr(&request), want))
        fail_msg("no '%s' in '%s'", want, buf_cstr(&request));
    assert_null(strstr(buf_cstr(&request), "the-real-value"));
    buf_free(&request);
    egress_run_secrets_free(rs);
    egress_secrets_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_cap_in_process, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cap_generic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cap_long_secret, setup, teardown),
        cmocka_unit_test_setup_teardown(test_session_source, setup, teardown),
        cmocka_unit_test_setup_teardown(test_placeholders, setup, teardown),
    };
    return cmocka_run_group_tests_name("request", tests, NULL, NULL);
}
