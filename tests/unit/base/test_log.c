/* base/log.c: level names, the threshold, and that a line goes to stderr
 * (never stdout) in one piece. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <string.h>

#include "base/log.h"

/* Runs fn with stderr redirected to a pipe; returns what was written. */
static char *capture_stderr(void (*fn)(void))
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    int saved = dup(STDERR_FILENO);
    dup2(fds[1], STDERR_FILENO);
    close(fds[1]);
    fn();
    dup2(saved, STDERR_FILENO);
    close(saved);
    char *out = xcalloc(1, 8192);
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    ssize_t n = read(fds[0], out, 8191);
    if (n < 0)
        n = 0;
    out[n] = '\0';
    close(fds[0]);
    return out;
}

static void emit_some(void)
{
    log_error("e %d", 1);
    log_warn("w");
    log_info("i");
    log_debug("d");
}

static void test_levels(void **state)
{
    (void)state;
    assert_int_equal(log_level_from_name("error"), LOG_LVL_ERROR);
    assert_int_equal(log_level_from_name("debug"), LOG_LVL_DEBUG);
    assert_int_equal(log_level_from_name("loud"), -1);
    log_set_threshold(LOG_LVL_WARN);
    char *out = capture_stderr(emit_some);
    assert_non_null(strstr(out, "mcp-sandboxd error: e 1\n"));
    assert_non_null(strstr(out, "mcp-sandboxd warn: w\n"));
    assert_null(strstr(out, " i\n"));
    assert_null(strstr(out, " d\n"));
    free(out);
    log_set_threshold(LOG_LVL_DEBUG);
    out = capture_stderr(emit_some);
    assert_non_null(strstr(out, "mcp-sandboxd debug: d\n"));
    free(out);
    log_set_threshold(LOG_LVL_INFO);
}

static void emit_long(void)
{
    char big[4096];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    log_error("%s", big);
}

static void test_long_line_is_cut_and_ends(void **state)
{
    (void)state;
    char *out = capture_stderr(emit_long);
    size_t n = strlen(out);
    assert_true(n > 100 && n < 2100);
    assert_int_equal(out[n - 1], '\n');
    assert_null(memchr(out, '\n', n - 1));
    free(out);
}

static void emit_outside(void)
{
    const char *name = "evil\n2026-01-01T00:00:00.000Z mcp-sandboxd error: forged\x1b]0;x\x07";
    log_warn("client '%s' said %s", LOG_FIELD(name), LOG_FIELD_N("a\0b\xff", 4));
    char big[2 * LOG_FIELD_MAX];
    memset(big, 'y', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    log_warn("long: %s", LOG_FIELD(big));
    log_warn("none: %s", LOG_FIELD(NULL));
}

/* A client's or a sandbox's text through LOG_FIELD cannot forge a line
 * nor reach the terminal: one line each, escaped, cut. */
static void test_fields_are_escaped(void **state)
{
    (void)state;
    char *out = capture_stderr(emit_outside);
    size_t lines = 0;
    for (const char *c = out; *c; c++) {
        lines += *c == '\n';
        assert_true((unsigned char)*c >= 0x20 || *c == '\n');
        assert_true(*c != 0x7f);
    }
    assert_int_equal(lines, 3);
    assert_non_null(strstr(out, "warn: client 'evil\\n2026-01-01T00:00:00.000Z mcp-sandboxd error: "
                                "forged\\x1b]0;x\\x07' said a\\x00b\\xff\n"));
    const char *lng = strstr(out, "long: ");
    assert_non_null(lng);
    const char *end = strchr(lng, '\n');
    assert_int_equal(end - lng, strlen("long: ") + LOG_FIELD_MAX - 1);
    assert_memory_equal(end - 3, "...", 3);
    assert_non_null(strstr(out, "none: (null)\n"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_levels),
        cmocka_unit_test(test_long_line_is_cut_and_ends),
        cmocka_unit_test(test_fields_are_escaped),
    };
    return cmocka_run_group_tests_name("log", tests, NULL, NULL);
}
