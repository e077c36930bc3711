/* sandbox/output/outfiles.c: the file frames a runner sends, checked against the
 * caps and the protocol; anything else is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "base/codec.h"
#include "base/util.h"
#include "sandbox/output/outfiles.h"
#include "sandbox/output/redact.h"

/* redactor_new, which must succeed. */
static struct redactor *make_redactor(const char *const *names, const char *const *values, size_t n)
{
    struct redactor *r = NULL;
    assert_int_equal(redactor_new(names, values, n, &r, NULL), 0);
    assert_non_null(r);
    return r;
}

static const struct outfiles_caps CAPS = {.max_files = 2,
                                          .max_file_bytes = 10,
                                          .max_plots = 1,
                                          .max_plot_bytes = 20,
                                          .max_total_bytes = 25};

static int frame(struct outfiles *o, const char *line, enum err_code *code)
{
    struct err err = ERR_INIT;
    int rc = outfiles_frame(o, line, strlen(line), &err);
    *code = err.code;
    if (rc < 0)
        assert_non_null(strstr(err_msg(&err), " ") ? err_msg(&err) : NULL);
    err_clear(&err);
    return rc;
}

/* A whole file's frames. */
static int send_file(struct outfiles *o, const char *path, const char *kind, const char *data)
{
    char line[512];
    enum err_code code;
    snprintf(line, sizeof(line), "F{\"path\":\"%s\",\"size\":%zu,\"kind\":\"%s\"}", path,
             strlen(data), kind);
    if (frame(o, line, &code) < 0)
        return -1;
    struct buf b;
    buf_init(&b, 1024);
    assert_int_equal(codec_base64_encode(data, strlen(data), &b), 0);
    snprintf(line, sizeof(line), "D%s", b.data ? b.data : "");
    buf_free(&b);
    if (frame(o, line, &code) < 0)
        return -1;
    char hex[CODEC_SHA256_HEX_LEN + 1];
    codec_sha256_hex(data, strlen(data), hex);
    snprintf(line, sizeof(line), "E%s", hex);
    return frame(o, line, &code);
}

static void test_files_and_plots(void **state)
{
    (void)state;
    struct outfiles o;
    outfiles_init(&o, &CAPS, NULL);
    assert_int_equal(send_file(&o, "plot-1.png", "plot", "PNGDATA"), 0);
    assert_int_equal(send_file(&o, "outputs/a.txt", "file", "hello"), 0);
    assert_int_equal(send_file(&o, "main.py", "file", ""), 0);
    enum err_code code;
    assert_int_equal(
        frame(&o, "L{\"path\":\"outputs/l\\u0000ink\",\"reason\":\"a symbolic link\"}", &code), 0);
    struct err err = ERR_INIT;
    assert_int_equal(outfiles_finish(&o, 3, 7, 0, false, &err), 0);
    assert_int_equal(o.n, 3);
    assert_int_equal(o.n_plots, 1);
    assert_true(o.v[0].plot);
    assert_string_equal(o.v[1].path, "outputs/a.txt");
    assert_int_equal(o.v[1].size, 5);
    assert_memory_equal(o.v[1].data, "hello", 5);
    assert_string_equal(o.v[1].sha256,
                        "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
    assert_int_equal(o.n_left, 1);
    assert_int_equal(o.left_total, 7);
    assert_int_equal(o.left[0].size, -1);
    assert_string_equal(o.left[0].path, "outputs/l\\x00ink"); /* no control byte */
    outfiles_free(&o);
}

static void test_refused(void **state)
{
    (void)state;
    static const char *const bad[][3] = {
        /* frames before, the bad one, nothing after */
        {"F{\"path\":\"../x\",\"size\":1,\"kind\":\"file\"}", NULL, NULL},
        {"F{\"path\":\"/x\",\"size\":1,\"kind\":\"file\"}", NULL, NULL},
        {"F{\"path\":\"a//b\",\"size\":1,\"kind\":\"file\"}", NULL, NULL},
        {"F{\"path\":\"x.png\",\"size\":1,\"kind\":\"plot\"}", NULL, NULL},
        {"F{\"path\":\"plot-0.png\",\"size\":1,\"kind\":\"plot\"}", NULL, NULL},
        {"F{\"path\":\"a\",\"size\":1,\"kind\":\"dir\"}", NULL, NULL},
        {"F{\"path\":\"a\",\"size\":-1,\"kind\":\"file\"}", NULL, NULL},
        {"F{\"path\":\"a\",\"size\":11,\"kind\":\"file\"}", NULL, NULL}, /* per-file cap */
        {"F{\"path\":\"a\",\"size\":1}", NULL, NULL},
        {"F[1]", NULL, NULL},
        {"Fnot json", NULL, NULL},
        {"DAAAA", NULL, NULL},                                              /* no file open */
        {"E0000", NULL, NULL},                                              /* no file open */
        {"F{\"path\":\"a\",\"size\":2,\"kind\":\"file\"}", "DAAAA", NULL},  /* more than declared */
        {"F{\"path\":\"a\",\"size\":3,\"kind\":\"file\"}", "DAA=A", NULL},  /* not base64 */
        {"F{\"path\":\"a\",\"size\":3,\"kind\":\"file\"}", "DAAAA", "E00"}, /* bad digest */
        {"F{\"path\":\"a\",\"size\":4,\"kind\":\"file\"}", "DAAAA", "E"},   /* short */
        {"F{\"path\":\"a\",\"size\":0,\"kind\":\"file\"}",
         "F{\"path\":\"b\",\"size\":0,\"kind\":\"file\"}", NULL}, /* nested */
        {"X", NULL, NULL},
        {"L{\"path\":1,\"reason\":\"r\"}", NULL, NULL},
    };
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        struct outfiles o;
        outfiles_init(&o, &CAPS, NULL);
        enum err_code code = ERR_OK;
        int rc = 0;
        for (size_t j = 0; j < 3 && bad[i][j] && rc == 0; j++)
            rc = frame(&o, bad[i][j], &code);
        if (rc != -1)
            fail_msg("case %zu was accepted", i);
        assert_int_equal(code, ERR_PROTOCOL);
        outfiles_free(&o);
    }
    assert_int_equal(frame(&(struct outfiles){0}, "", &(enum err_code){0}), -1);
}

static void test_caps(void **state)
{
    (void)state;
    struct outfiles o;
    outfiles_init(&o, &CAPS, NULL);
    assert_int_equal(send_file(&o, "a", "file", "0123456789"), 0);
    assert_int_equal(send_file(&o, "a", "file", "x"), -1); /* twice */
    outfiles_free(&o);

    outfiles_init(&o, &CAPS, NULL);
    assert_int_equal(send_file(&o, "a", "file", "1"), 0);
    assert_int_equal(send_file(&o, "b", "file", "2"), 0);
    assert_int_equal(send_file(&o, "c", "file", "3"), -1); /* count */
    assert_int_equal(send_file(&o, "plot-1.png", "plot", "p"), 0);
    assert_int_equal(send_file(&o, "plot-2.png", "plot", "p"), -1); /* plot count */
    outfiles_free(&o);

    outfiles_init(&o, &CAPS, NULL);
    assert_int_equal(send_file(&o, "plot-1.png", "plot", "01234567890123456789"), 0);
    assert_int_equal(send_file(&o, "a", "file", "0123456"), -1); /* 20 + 7 > 25 in all */
    outfiles_free(&o);
}

static void test_finish(void **state)
{
    (void)state;
    struct outfiles o;
    struct err err = ERR_INIT;
    outfiles_init(&o, &CAPS, NULL);
    assert_int_equal(send_file(&o, "a", "file", "1"), 0);
    assert_int_equal(outfiles_finish(&o, 2, 0, 0, false, &err), -1); /* one lost */
    err_clear(&err);
    assert_int_equal(outfiles_finish(&o, 1, 0, 20000, true, &err), 0);
    assert_int_equal(o.walk_stopped, 20000);
    assert_true(o.cwd_gone);
    enum err_code code;
    assert_int_equal(frame(&o, "F{\"path\":\"b\",\"size\":1,\"kind\":\"file\"}", &code), 0);
    assert_int_equal(outfiles_finish(&o, 1, 0, 0, false, &err), -1); /* cut short */
    assert_int_equal(err.code, ERR_PROTOCOL);
    err_clear(&err);
    outfiles_free(&o);

    outfiles_init(&o, &CAPS, NULL);
    assert_int_equal(frame(&o, "L{\"path\":\"x\",\"reason\":\"r\",\"size\":3}", &code), 0);
    assert_int_equal(outfiles_finish(&o, 0, 0, 0, false, &err), -1); /* named more than counted */
    err_clear(&err);
    outfiles_free(&o);
}

/* What a program returns is redacted, whatever its encoding: the bytes of
 * a file that is not UTF-8, a file's name (two names that become one are
 * told apart), a left-out file's name and reason, and the name in an
 * error; control characters in names and reasons are escaped. */
static void test_redacted(void **state)
{
    (void)state;
    const char *names[] = {"KEY"};
    const char *values[] = {"s3cr3t-value"};
    struct redactor *red = make_redactor(names, values, 1);
    static const struct outfiles_caps caps = {
        .max_files = 4, .max_file_bytes = 100, .max_total_bytes = 400};
    struct outfiles o;
    outfiles_init(&o, &caps, red);
    assert_int_equal(send_file(&o, "outputs/s3cr3t-value.txt", "file", "\xff s3cr3t-value \xfe"),
                     0);
    assert_int_equal(send_file(&o, "outputs/[REDACTED:KEY].txt", "file", "x"), 0);
    assert_int_equal(send_file(&o, "outputs/czNjcjN0LXZhbHVl", "file", "y"), 0); /* base64 */
    enum err_code code;
    assert_int_equal(frame(&o,
                           "L{\"path\":\"outputs/"
                           "s3cr3t-value\\n\",\"reason\":\"%73%33%63%72%33%74%2d%76%61%6c%75%65 "
                           "is \\u001b[1mbig\",\"size\":3}",
                           &code),
                     0);
    assert_int_equal(o.n, 3);
    assert_string_equal(o.v[0].path, "outputs/[REDACTED:KEY].txt");
    static const char want[] = "\xff [REDACTED:KEY] \xfe";
    assert_int_equal(o.v[0].size, sizeof(want) - 1);
    assert_memory_equal(o.v[0].data, want, sizeof(want) - 1);
    char hex[CODEC_SHA256_HEX_LEN + 1];
    codec_sha256_hex(want, sizeof(want) - 1, hex);
    assert_string_equal(o.v[0].sha256, hex);
    assert_string_equal(o.v[1].path, "outputs/[REDACTED:KEY].txt~2");
    assert_string_equal(o.v[2].path, "outputs/[REDACTED:KEY]");
    assert_int_equal(o.n_left, 1);
    assert_string_equal(o.left[0].path, "outputs/[REDACTED:KEY]\\n");
    assert_string_equal(o.left[0].reason, "[REDACTED:KEY] is \\x1b[1mbig");
    assert_int_equal(frame(&o, "F{\"path\":\"s3cr3t-value\",\"size\":1,\"kind\":\"file\"}", &code),
                     0);
    struct err err = ERR_INIT;
    assert_int_equal(outfiles_finish(&o, 3, 1, 0, false, &err), -1); /* cut short */
    assert_null(strstr(err_msg(&err), "s3cr3t"));
    assert_non_null(strstr(err_msg(&err), "[REDACTED:KEY]"));
    err_clear(&err);
    outfiles_free(&o);
    redactor_free(red);
}

/* Marks can be longer than what they stand for: a file that outgrows the
 * caps once redacted is left out (named, with why), and what is kept stays
 * under the caps; the record's counts still add up. */
static void test_redaction_keeps_caps(void **state)
{
    (void)state;
    const char *names[] = {"PASSWORD"};
    const char *values[] = {"pw42"};
    struct redactor *red = make_redactor(names, values, 1);
    static const struct outfiles_caps caps = {
        .max_files = 4, .max_file_bytes = 64, .max_total_bytes = 100};
    struct outfiles o;
    outfiles_init(&o, &caps, red);
    assert_int_equal(send_file(&o, "outputs/many.txt", "file", "pw42pw42pw42pw42pw42pw42"), 0);
    assert_int_equal(send_file(&o, "outputs/one.txt", "file", "a pw42 b"), 0);
    assert_int_equal(o.n, 1);
    assert_string_equal(o.v[0].path, "outputs/one.txt");
    assert_true(o.shown_total <= caps.max_total_bytes);
    assert_int_equal(o.n_left, 1);
    assert_string_equal(o.left[0].path, "outputs/many.txt");
    assert_non_null(strstr(o.left[0].reason, "redacted"));
    struct err err = ERR_INIT;
    assert_int_equal(outfiles_finish(&o, 2, 0, 0, false, &err), 0);
    assert_int_equal(o.left_total, 1);
    outfiles_free(&o);
    redactor_free(red);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_files_and_plots),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_caps),
        cmocka_unit_test(test_finish),
        cmocka_unit_test(test_redacted),
        cmocka_unit_test(test_redaction_keeps_caps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
