#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/config.h"
#include "base/config_doc.h"
#include "base/config_table.h"

static char *usage_text(void)
{
    char *text = NULL;
    size_t n = 0;
    FILE *fp = open_memstream(&text, &n);
    config_usage(fp, "mcp-sandboxd");
    fclose(fp);
    return text;
}

static char *sample_text(void)
{
    char *text = NULL;
    size_t n = 0;
    FILE *fp = open_memstream(&text, &n);
    config_print_sample(fp);
    fclose(fp);
    return text;
}

/* s[0..n) with every run of white space one space. */
static char *squeeze(const char *s, size_t n)
{
    char *out = calloc(1, n + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        bool space = s[i] == ' ' || s[i] == '\n';
        if (!space)
            out[k++] = s[i];
        else if (k && out[k - 1] != ' ')
            out[k++] = ' ';
    }
    out[k] = '\0';
    return out;
}

/* The entry of --name in --help, its lines joined. */
static char *usage_entry(const char *text, const char *name)
{
    char needle[96];
    int len = snprintf(needle, sizeof(needle), "\n  --%s", name);
    const char *p = text;
    while ((p = strstr(p, needle)) && p[len] != ' ' && p[len] != '\n')
        p += len;
    if (!p)
        fail_msg("--help has no entry for --%s", name);
    const char *end = strstr(p + 1, "\n  --");
    if (!end)
        end = strstr(p + 1, "\n\n");
    assert_non_null(end);
    return squeeze(p + 1, (size_t)(end - p - 1));
}

/* What --help must show as o's default, written apart from config_doc. */
static void expected_default(const struct config_opt *o, char *out, size_t cap)
{
    out[0] = '\0';
    if (o->def_doc)
        snprintf(out, cap, "(default: %s)", o->def_doc);
    else if (o->type == OPT_INT)
        snprintf(out, cap, "(default %lld", o->def_int);
    else if (o->type == OPT_DOUBLE)
        snprintf(out, cap, "(default %g)", o->def_real);
    else if (o->def && *o->def)
        snprintf(out, cap, "(default %s)", o->def);
}

/* --help shows every option with its help and the row's default. */
static void test_help(void **state)
{
    (void)state;
    char *argv[] = {"d", "--help", NULL};
    char *envp[] = {NULL};
    struct config cfg;
    struct err err = ERR_INIT;
    config_init(&cfg);
    assert_int_equal(config_load(&cfg, 2, argv, envp, &err), 0);
    assert_true(cfg.help);
    config_free(&cfg);

    char *text = usage_text();
    for (size_t i = 0; i < config_opts_n; i++) {
        const struct config_opt *o = &config_opts[i];
        char *entry = usage_entry(text, o->name);
        char def[256];
        expected_default(o, def, sizeof(def));
        if (!strstr(entry, o->help))
            fail_msg("--%s: help missing from '%s'", o->name, entry);
        if (*def && !strstr(entry, def))
            fail_msg("--%s: '%s' missing from '%s'", o->name, def, entry);
        if (!*def && strstr(entry, "(default"))
            fail_msg("--%s: a default shown but none in the row: '%s'", o->name, entry);
        free(entry);
    }
    /* A few as an operator reads them. */
    const struct {
        const char *name, *shows;
    } seen[] = {
        {"timeout-ms", "--timeout-ms MS "},
        {"timeout-ms", "(default 30000)"},
        {"max-output-bytes", "(default 1048576 = 1 MiB)"},
        {"run-store-max-bytes", "(default 268435456 = 256 MiB)"},
        {"cpus", "(default 1)"},
        {"log-level", "(default info)"},
        {"runtime", "(default: the engine's)"},
        {"pool-size", "(default: each language's pool_size to pool_max in the language table"},
    };
    for (size_t i = 0; i < sizeof(seen) / sizeof(seen[0]); i++) {
        char *entry = usage_entry(text, seen[i].name);
        if (!strstr(entry, seen[i].shows))
            fail_msg("--%s: '%s' missing from '%s'", seen[i].name, seen[i].shows, entry);
        free(entry);
    }
    char *all = squeeze(text, strlen(text));
    assert_non_null(strstr(all, "Every option but --config, --dry-run-create, --help, "
                                "--list-images, --print-engine, --version can also be set"));
    free(all);
    free(text);
}

static void write_file(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

/* Loads with no argument but --config path (none when NULL). */
static void load_with(struct config *cfg, char *path)
{
    char *argv[] = {"d", "--config", path, NULL};
    char *envp[] = {NULL};
    struct err err = ERR_INIT;
    config_init(cfg);
    if (config_load(cfg, path ? 3 : 1, argv, envp, &err) != 0)
        fail_msg("loading %s: %s", path ? path : "nothing", err_msg(&err));
}

/* Every field an option sets, --config apart, is the same in a and b. */
static void assert_same(const struct config *a, const struct config *b)
{
    for (size_t i = 0; i < config_opts_n; i++) {
        const struct config_opt *o = &config_opts[i];
        const void *x = (const char *)a + o->offset;
        const void *y = (const char *)b + o->offset;
        const char *const *sx = x;
        const char *const *sy = y;
        const struct config_list *lx = x;
        const struct config_list *ly = y;
        if (o->cli_only)
            continue;
        switch (o->type) {
        case OPT_INT:
            if (*(const long long *)x != *(const long long *)y)
                fail_msg("--%s: %lld, not %lld", o->name, *(const long long *)y,
                         *(const long long *)x);
            break;
        case OPT_DOUBLE:
            assert_true(*(const double *)x == *(const double *)y);
            break;
        case OPT_STR:
            if (*sx || *sy) {
                if (!*sx || !*sy || strcmp(*sx, *sy) != 0)
                    fail_msg("--%s: '%s', not '%s'", o->name, *sy ? *sy : "(null)",
                             *sx ? *sx : "(null)");
            }
            break;
        case OPT_LIST:
            assert_int_equal(lx->n, ly->n);
            for (size_t k = 0; k < lx->n; k++)
                assert_string_equal(lx->items[k], ly->items[k]);
            break;
        case OPT_FLAG:
            assert_true(*(const bool *)x == *(const bool *)y);
            break;
        }
    }
}

/* Whether the sample's line for o shows its default (else the form a
 * value takes, as the row's default cannot be written). */
static bool default_writable(const struct config_opt *o)
{
    if (o->type == OPT_INT)
        return o->def_int >= o->min && o->def_int <= o->max;
    return o->type == OPT_DOUBLE || o->def != NULL;
}

/* The sample's line for o: its default, or the form a value takes. */
static void expected_line(const struct config_opt *o, char *out, size_t cap)
{
    char value[128];
    if (!default_writable(o))
        snprintf(value, sizeof(value), " %s", o->arg);
    else if (o->type == OPT_INT)
        snprintf(value, sizeof(value), " %lld", o->def_int);
    else if (o->type == OPT_DOUBLE)
        snprintf(value, sizeof(value), " %g", o->def_real);
    else
        snprintf(value, sizeof(value), "%s%s", *o->def ? " " : "", o->def);
    snprintf(out, cap, "# %s =%s", o->name, value);
}

/* The row a sample line "# name = value" is for, else NULL. */
static const struct config_opt *setting_line(const char *line, size_t n)
{
    if (n < 4 || strncmp(line, "# ", 2) != 0)
        return NULL;
    const char *eq = memchr(line, '=', n);
    if (!eq || eq - line < 4 || eq[-1] != ' ')
        return NULL;
    return config_opt_find(line + 2, (size_t)(eq - 1 - (line + 2)));
}

/* The sample is all comments: read as it is, it leaves every default;
 * with each line that shows a default uncommented, too. */
static void test_sample_round_trip(void **state)
{
    (void)state;
    char *text = sample_text();
    size_t len = strlen(text);
    char *uncommented = calloc(1, len + 1);
    size_t k = 0, shown = 0, lines_for[256] = {0};
    assert_true(config_opts_n <= 256);
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        assert_non_null(nl); /* every line ends */
        size_t n = (size_t)(nl - p);
        if (n && p[0] != '#')
            fail_msg("not a comment: '%.*s'", (int)n, p);
        const struct config_opt *o = setting_line(p, n);
        if (o) {
            char want[256];
            lines_for[o - config_opts]++;
            expected_line(o, want, sizeof(want));
            if (strlen(want) != n || strncmp(p, want, n) != 0)
                fail_msg("--%s: line '%.*s', not '%s'", o->name, (int)n, p, want);
        }
        bool uncomment = o && default_writable(o);
        shown += uncomment;
        memcpy(uncommented + k, p + (uncomment ? 2 : 0), n + 1 - (uncomment ? 2 : 0));
        k += n + 1 - (uncomment ? 2 : 0);
        p = nl + 1;
    }
    size_t writable = 0;
    for (size_t i = 0; i < config_opts_n; i++) {
        const struct config_opt *o = &config_opts[i];
        if (lines_for[i] != (o->cli_only ? 0u : 1u))
            fail_msg("--%s: %zu lines in the sample", o->name, lines_for[i]);
        writable += !o->cli_only && default_writable(o);
    }
    assert_int_equal(shown, writable);
    assert_true(shown > 50);

    struct config plain, from_file;
    load_with(&plain, NULL);
    char path[] = "/tmp/mcpsbx-test-sample-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    write_file(path, text);
    load_with(&from_file, path);
    assert_same(&plain, &from_file);
    config_free(&from_file);

    write_file(path, uncommented);
    load_with(&from_file, path);
    assert_same(&plain, &from_file);
    assert_int_equal(from_file.timeout_ms, 30000);
    config_free(&from_file);
    config_free(&plain);
    unlink(path);
    free(uncommented);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help),
        cmocka_unit_test(test_sample_round_trip),
    };
    return cmocka_run_group_tests_name("config_doc", tests, NULL, NULL);
}
