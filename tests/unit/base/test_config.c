#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/config.h"
#include "base/config_table.h"

static int load(struct config *cfg, char **argv, char **envp, struct err *err)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    config_init(cfg);
    return config_load(cfg, argc, argv, envp, err);
}

static void test_defaults(void **state)
{
    (void)state;
    char *argv[] = {"d", NULL};
    char *envp[] = {NULL};
    struct config cfg;
    struct err err = ERR_INIT;
    assert_int_equal(load(&cfg, argv, envp, &err), 0);
    assert_int_equal(cfg.timeout_ms, 30000);
    assert_int_equal(cfg.max_output_bytes, 1 << 20);
    /* Not given: the language table's images hold (test_langtable). */
    assert_string_equal(cfg.python_image, "");
    assert_string_equal(cfg.js_image, "");
    assert_int_equal(cfg.languages.n, 0);
    assert_null(cfg.languages.items[0]);
    assert_false(cfg.list_images);
    assert_int_equal(cfg.pass_through_env.n, 0);
    /* The backend finds its engine itself (backend/docker/discover.h). */
    assert_string_equal(cfg.backend, "docker");
    assert_true(cfg.engine == NULL || *cfg.engine == '\0');
    config_free(&cfg);
}

/* Every row's default is what config_init gives its field; a default a
 * file could not write (out of range, NULL) is described in the row; the
 * help leaves defaults to the rows; the rows are sorted. */
static void test_row_defaults(void **state)
{
    (void)state;
    struct config cfg;
    config_init(&cfg);
    for (size_t i = 0; i < config_opts_n; i++) {
        const struct config_opt *o = &config_opts[i];
        const void *slot = (const char *)&cfg + o->offset;
        if (i > 0 && strcmp(config_opts[i - 1].name, o->name) >= 0)
            fail_msg("option rows out of order: %s, %s", config_opts[i - 1].name, o->name);
        if (strstr(o->help, "(default"))
            fail_msg("--%s: its help names a default; the row holds it", o->name);
        const struct config_list *list = slot;
        switch (o->type) {
        case OPT_INT:
            assert_int_equal(*(const long long *)slot, o->def_int);
            if ((o->def_int < o->min || o->def_int > o->max) && !o->def_doc)
                fail_msg("--%s: default %lld out of range, undescribed", o->name, o->def_int);
            break;
        case OPT_DOUBLE:
            assert_true(*(const double *)slot == o->def_real);
            assert_true(o->def_real > 0 && o->def_real <= (double)o->max);
            break;
        case OPT_STR:
            if (!o->def && !o->cli_only && !o->def_doc)
                fail_msg("--%s: no default, undescribed", o->name);
            if (o->def)
                assert_string_equal(*(char *const *)slot, o->def);
            else
                assert_null(*(char *const *)slot);
            break;
        case OPT_LIST: /* all start empty today */
            assert_string_equal(o->def, "");
            assert_int_equal(list->n, 0);
            assert_null(list->items[0]);
            break;
        case OPT_FLAG: /* an action (cli_only), or a setting false unless given */
            assert_false(*(const bool *)slot);
            if (o->cli_only)
                assert_null(o->def);
            else
                assert_string_equal(o->def, "false");
            break;
        }
    }
    /* A few by value, so a changed row is a visible change here. */
    assert_int_equal(cfg.timeout_ms, 30000);
    assert_int_equal(cfg.max_inflight_body_bytes, 128LL << 20);
    assert_int_equal(cfg.pool_size, -1);
    assert_string_equal(cfg.sandbox_io_dir, "/run/mcp-sandboxd-io");
    assert_null(cfg.python_preload);
    config_free(&cfg);
}

static void test_cli_and_env(void **state)
{
    (void)state;
    char *argv[] = {"d",
                    "--pass-through-env",
                    "API_KEY, TOKEN",
                    "--pass-through-env=OTHER,API_KEY",
                    "--timeout-ms",
                    "5000",
                    "--python-image",
                    "py:1",
                    NULL};
    char *envp[] = {"MCPSANDBOXD_TIMEOUT_MS=7000", "MCPSANDBOXD_MEMORY_MB=256",
                    "DOCKER_HOST=unix:///run/x.sock", NULL};
    struct config cfg;
    struct err err = ERR_INIT;
    assert_int_equal(load(&cfg, argv, envp, &err), 0);
    assert_int_equal(cfg.timeout_ms, 5000); /* CLI beats environment */
    assert_int_equal(cfg.memory_mb, 256);
    assert_string_equal(cfg.python_image, "py:1");
    assert_int_equal(cfg.pass_through_env.n, 3);
    assert_string_equal(cfg.pass_through_env.items[0], "API_KEY");
    assert_string_equal(cfg.pass_through_env.items[1], "TOKEN");
    assert_string_equal(cfg.pass_through_env.items[2], "OTHER");
    assert_null(cfg.pass_through_env.items[3]);
    config_free(&cfg);
}

static void expect_error(char **argv, char **envp, const char *needle)
{
    struct config cfg;
    struct err err = ERR_INIT;
    assert_int_equal(load(&cfg, argv, envp, &err), -1);
    if (!strstr(err_msg(&err), needle))
        fail_msg("error '%s' does not mention '%s'", err_msg(&err), needle);
    err_clear(&err);
    config_free(&cfg);
}

static void test_errors(void **state)
{
    (void)state;
    char *none[] = {NULL};
    char *a1[] = {"d", "--pass-through-env", "BAD-NAME", NULL};
    expect_error(a1, none, "BAD-NAME");
    char *a2[] = {"d", "--timeout-ms", "abc", NULL};
    expect_error(a2, none, "not an integer");
    char *a3[] = {"d", "--timeout-ms", "50", NULL};
    expect_error(a3, none, "out of range");
    char *a4[] = {"d", "--timeout-ms", "400000", NULL};
    expect_error(a4, none, "--max-timeout-ms");
    char *a5[] = {"d", "--bogus", NULL};
    expect_error(a5, none, "--bogus");
    /* --engine's form is the backend's to check (test_docker). */
    char *a8[] = {"d", "--sandbox-user", "0:0", NULL};
    expect_error(a8, none, "root");
    char *a8b[] = {"d", "--sandbox-user", " 5:+5", NULL};
    expect_error(a8b, none, "UID:GID");
    char *a9[] = {"d", "--log-level", "loud", NULL};
    expect_error(a9, none, "loud");
    char *a10[] = {"d", "extra", NULL};
    expect_error(a10, none, "extra");
    char *e1[] = {"CONTAINER_IMAGE=img", "CONTAINER_LANGUAGE=cobol", NULL};
    char *a11[] = {"d", NULL};
    expect_error(a11, e1, "CONTAINER_LANGUAGE");
    char *e2[] = {"MCPSANDBOXD_CPUS=-1", NULL};
    expect_error(a11, e2, "MCPSANDBOXD_CPUS");
    /* Labels: KEY=VALUE, never in the daemon's own namespace. */
    char *l1[] = {"d", "--label", "io.mcp-sandboxd.managed=0", NULL};
    expect_error(l1, none, "io.mcp-sandboxd.managed");
    char *l2[] = {"d", "--label", "novalue", NULL};
    expect_error(l2, none, "novalue");
    char *l3[] = {"d", "--label", "=x", NULL};
    expect_error(l3, none, "=x");
    char *l4[] = {"d", "--label", "k y=1", NULL};
    expect_error(l4, none, "k y=1");
    /* Only the form of a language's name here: whether the table has it
     * is langtable_configure's to say (test_langtable). */
    char *n1[] = {"d", "--allow-network", "python,1cobol", NULL};
    expect_error(n1, none, "1cobol");
    char *n2[] = {"d", "--allow-network", "py thon", NULL};
    expect_error(n2, none, "py thon");
    char *n3[] = {"d", "--languages", "python,c/c", NULL};
    expect_error(n3, none, "c/c");
    char *r1[] = {"d", "--js-runtime", "run sc", NULL};
    expect_error(r1, none, "--js-runtime: 'run sc'");
    char *r2[] = {"d", "--runtime", "a/b", NULL};
    expect_error(r2, none, "--runtime: 'a/b'");
    char *e3[] = {"MCPSANDBOXD_PYTHON_RUNTIME=x;y", NULL};
    expect_error(a11, e3, "--python-runtime");
}

/* The per-language options older than the language table, as the table
 * reads them: each set's language, runner and option prefix, and the
 * values given ("" / NULL when not); langtable_configure writes them into
 * the rows (test_langtable). */
static void test_legacy_languages(void **state)
{
    (void)state;
    char *none[] = {NULL};
    struct config cfg;
    struct err err = ERR_INIT;
    char *a1[] = {"d", NULL};
    config_init(&cfg);
    assert_int_equal(config_load(&cfg, 1, a1, none, &err), 0);
    static const char *const want[][3] = {{"python", "python", "python"},
                                          {"javascript", "node", "js"}};
    for (size_t i = 0; i < CONFIG_LEGACY_LANGUAGES; i++) {
        struct config_legacy o = config_legacy(&cfg, i);
        assert_string_equal(o.language, want[i][0]);
        assert_string_equal(o.runner, want[i][1]);
        assert_string_equal(o.prefix, want[i][2]);
        assert_string_equal(o.image, "");
        assert_null(o.preload);
        assert_string_equal(o.runtime, "");
    }
    config_free(&cfg);
    char *a2[] = {"d",         "--runtime",  "runsc",     "--js-runtime",
                  "runc",      "--js-image", "my/node:1", "--python-preload",
                  "json , os", NULL};
    config_init(&cfg);
    assert_int_equal(config_load(&cfg, 9, a2, none, &err), 0);
    struct config_legacy py = config_legacy(&cfg, 0);
    struct config_legacy js = config_legacy(&cfg, 1);
    assert_string_equal(py.runtime, "");
    assert_string_equal(py.preload, "json,os");
    assert_string_equal(js.runtime, "runc");
    assert_string_equal(js.image, "my/node:1");
    assert_null(js.preload);
    assert_string_equal(cfg.runtime, "runsc");
    config_free(&cfg);
    char *e1[] = {"MCPSANDBOXD_PYTHON_RUNTIME=runsc", NULL};
    config_init(&cfg);
    assert_int_equal(config_load(&cfg, 1, a1, e1, &err), 0);
    assert_string_equal(config_legacy(&cfg, 0).runtime, "runsc");
    assert_string_equal(config_legacy(&cfg, 1).runtime, "");
    config_free(&cfg);
}

static void test_labels(void **state)
{
    char *none_env[] = {NULL};
    (void)state;
    struct config cfg;
    struct err err = ERR_INIT;
    char *argv[] = {"d", "--label", "team=ml,cost.center/x=42", "--label", "empty=", NULL};
    char *envp[] = {"MCPSANDBOXD_LABEL=from.env=yes", NULL};
    config_init(&cfg);
    assert_int_equal(config_load(&cfg, 5, argv, envp, &err), 0);
    assert_int_equal(cfg.labels.n, 4);
    assert_string_equal(cfg.labels.items[0], "from.env=yes");
    assert_string_equal(cfg.labels.items[1], "team=ml");
    assert_string_equal(cfg.labels.items[2], "cost.center/x=42");
    assert_string_equal(cfg.labels.items[3], "empty=");
    assert_null(cfg.labels.items[4]);
    assert_int_equal(cfg.allow_network.n, 0);
    config_free(&cfg);
    /* Any language-like name is kept as given (the table checks it at
     * start: langtable_configure, langtable_network). */
    char *argv2[] = {"d", "--allow-network", "javascript,Ruby,c++", NULL};
    config_init(&cfg);
    assert_int_equal(config_load(&cfg, 3, argv2, none_env, &err), 0);
    assert_int_equal(cfg.allow_network.n, 3);
    assert_string_equal(cfg.allow_network.items[0], "javascript");
    assert_string_equal(cfg.allow_network.items[1], "Ruby");
    assert_string_equal(cfg.allow_network.items[2], "c++");
    assert_null(cfg.allow_network.items[3]);
    config_free(&cfg);
}

/* The pool's options: defaults, the preload lists as the runner gets them
 * (one comma list, spaces dropped), and what a module name may be. */
static void test_pool_options(void **state)
{
    (void)state;
    char *none[] = {NULL};
    struct config cfg;
    struct err err = ERR_INIT;
    char *a0[] = {"d", NULL};
    assert_int_equal(load(&cfg, a0, none, &err), 0);
    /* Not given: the language table's pool sizes and preloads hold
     * (test_langtable checks they are today's: 2, numpy,... and none). */
    assert_int_equal(cfg.pool_size, -1);
    assert_int_equal(cfg.pool_max_age_ms, 600000);
    assert_int_equal(cfg.pool_refill_delay_ms, 250);
    assert_null(cfg.python_preload);
    assert_null(cfg.js_preload);
    config_free(&cfg);

    char *a1[] = {"d",
                  "--pool-size",
                  "0",
                  "--python-preload",
                  " numpy , os.path,,_x9 ",
                  "--js-preload",
                  "node:fs,fs/promises,zlib",
                  NULL};
    char *e1[] = {"MCPSANDBOXD_POOL_MAX_AGE_MS=5000", "MCPSANDBOXD_POOL_REFILL_DELAY_MS=0", NULL};
    assert_int_equal(load(&cfg, a1, e1, &err), 0);
    assert_int_equal(cfg.pool_size, 0);
    assert_int_equal(cfg.pool_max_age_ms, 5000);
    assert_int_equal(cfg.pool_refill_delay_ms, 0);
    assert_string_equal(cfg.python_preload, "numpy,os.path,_x9");
    assert_string_equal(cfg.js_preload, "node:fs,fs/promises,zlib");
    config_free(&cfg);

    char *a2[] = {"d", "--python-preload", "", NULL};
    assert_int_equal(load(&cfg, a2, none, &err), 0);
    assert_string_equal(cfg.python_preload, "");
    assert_null(cfg.js_preload);
    assert_int_equal(cfg.pool_size, -1);
    config_free(&cfg);

    char *a3[] = {"d", "--pool-size", "3", NULL};
    assert_int_equal(load(&cfg, a3, none, &err), 0);
    assert_int_equal(cfg.pool_size, 3);
    config_free(&cfg);

    char *b1[] = {"d", "--pool-size", "65", NULL};
    expect_error(b1, none, "out of range");
    char *b1n[] = {"d", "--pool-size", "-1", NULL};
    expect_error(b1n, none, "out of range");
    /* What no runner's module name has; each runner's own form is the
     * table's to check (test_langtable). */
    char *b2[] = {"d", "--python-preload", "os;rm", NULL};
    expect_error(b2, none, "'os;rm' is not a module name");
    char *b6[] = {"d", "--js-preload", "fs --inspect", NULL};
    expect_error(b6, none, "is not a module name");
    char *b7[] = {"d", "--pool-max-age-ms", "10", NULL};
    expect_error(b7, none, "out of range");
}

/* The sandboxes' own uids: defaults far above the host's users, the
 * environment under the command line, and a range that ends past the
 * highest uid or holds this process's own is refused. */
static void test_sandbox_uids(void **state)
{
    (void)state;
    char *none[] = {NULL};
    struct config cfg;
    struct err err = ERR_INIT;
    char *a0[] = {"d", NULL};
    assert_int_equal(load(&cfg, a0, none, &err), 0);
    assert_int_equal(cfg.sandbox_uid_base, 2000000000);
    assert_int_equal(cfg.sandbox_uid_count, 1 << 20);
    assert_string_equal(cfg.sandbox_user, "10001:10001");
    config_free(&cfg);

    char *a1[] = {"d", "--sandbox-uid-base", "300000", NULL};
    char *e1[] = {"MCPSANDBOXD_SANDBOX_UID_BASE=200000", "MCPSANDBOXD_SANDBOX_UID_COUNT=128", NULL};
    assert_int_equal(load(&cfg, a1, e1, &err), 0);
    assert_int_equal(cfg.sandbox_uid_base, 300000);
    assert_int_equal(cfg.sandbox_uid_count, 128);
    config_free(&cfg);

    char *a2[] = {"d", "--sandbox-uid-count", "0", "--sandbox-user", "5000:5001", NULL};
    assert_int_equal(load(&cfg, a2, none, &err), 0);
    assert_int_equal(cfg.sandbox_uid_count, 0);
    config_free(&cfg);

    char *b1[] = {"d", "--sandbox-uid-base", "2147483000", NULL};
    expect_error(b1, none, "past the highest uid");
    char *b2[] = {"d", "--sandbox-uid-base", "0", NULL};
    expect_error(b2, none, "out of range");
    char *b3[] = {"d", "--sandbox-uid-count", "2000000", NULL};
    expect_error(b3, none, "out of range");
    char me[24];
    snprintf(me, sizeof(me), "%u", (unsigned)(geteuid() > 0 ? geteuid() - 1 : 0));
    char *b4[] = {"d", "--sandbox-uid-base", me, NULL};
    if (geteuid() > 0)
        expect_error(b4, none, "own uid");
    /* Root is never in a range (base is at least 1). With count 0 the
     * range is not used: any base loads. */
    char *b5[] = {"d", "--sandbox-uid-count", "0", "--sandbox-uid-base", "2147483000", NULL};
    assert_int_equal(load(&cfg, b5, none, &err), 0);
    config_free(&cfg);
}

static void test_container_image_pair(void **state)
{
    (void)state;
    char *argv[] = {"d", NULL};
    char *envp[] = {"CONTAINER_IMAGE=my/node:1", "CONTAINER_LANGUAGE=javascript", NULL};
    struct config cfg;
    struct err err = ERR_INIT;
    assert_int_equal(load(&cfg, argv, envp, &err), 0);
    assert_string_equal(cfg.js_image, "my/node:1");
    assert_string_equal(cfg.python_image, ""); /* the table's */
    config_free(&cfg);

    /* Its other spellings; unset is python; the pair wins over the
     * environment's option and loses to the command line's. */
    static struct {
        char *lang;
        bool js;
    } cases[] = {{"CONTAINER_LANGUAGE=js", true},
                 {"CONTAINER_LANGUAGE=node", true},
                 {"CONTAINER_LANGUAGE=python", false},
                 {"NOT_CONTAINER_LANGUAGE=x", false}};
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        char *e[] = {"CONTAINER_IMAGE=ci:1", cases[i].lang, "MCPSANDBOXD_JS_IMAGE=env:1",
                     "MCPSANDBOXD_PYTHON_IMAGE=env:1", NULL};
        assert_int_equal(load(&cfg, argv, e, &err), 0);
        assert_string_equal(cases[i].js ? cfg.js_image : cfg.python_image, "ci:1");
        assert_string_equal(cases[i].js ? cfg.python_image : cfg.js_image, "env:1");
        config_free(&cfg);
        char *cli[] = {"d", "--js-image", "cli:1", "--python-image", "cli:1", NULL};
        assert_int_equal(load(&cfg, cli, e, &err), 0);
        assert_string_equal(cfg.js_image, "cli:1");
        assert_string_equal(cfg.python_image, "cli:1");
        config_free(&cfg);
    }
    char *e2[] = {"CONTAINER_LANGUAGE=python", NULL};
    expect_error(argv, e2, "CONTAINER_IMAGE is not");
    char *e3[] = {"CONTAINER_IMAGE=x:1", "CONTAINER_LANGUAGE=py", NULL};
    expect_error(argv, e3, "CONTAINER_LANGUAGE must be python or javascript, got 'py'");
}

static void test_config_file(void **state)
{
    (void)state;
    char path[] = "/tmp/mcpsbx-test-conf-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *fp = fdopen(fd, "w");
    fputs("# comment\n\ntimeout-ms = 9000\npass-through-env = A,B\n", fp);
    fclose(fp);
    char *argv[] = {"d", "--config", path, "--pass-through-env", "C", NULL};
    char *envp[] = {NULL};
    struct config cfg;
    struct err err = ERR_INIT;
    assert_int_equal(load(&cfg, argv, envp, &err), 0);
    assert_int_equal(cfg.timeout_ms, 9000);
    assert_int_equal(cfg.pass_through_env.n, 3);
    config_free(&cfg);

    fp = fopen(path, "w");
    fputs("timeout-ms = 9000\nnope = 1\n", fp);
    fclose(fp);
    assert_int_equal(load(&cfg, argv, envp, &err), -1);
    assert_non_null(strstr(err_msg(&err), ":2:"));
    err_clear(&err);
    config_free(&cfg);
    unlink(path);
}

/* The option names the file; config does not read it (sandbox/langtable
 * does, from main). */
static void test_languages_file(void **state)
{
    (void)state;
    char path[] = "/tmp/mcpsbx-test-conf-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *fp = fdopen(fd, "w");
    fputs("languages-file = /etc/from-file.json\n", fp);
    fclose(fp);
    struct config cfg;
    struct err err = ERR_INIT;
    char *none[] = {NULL};
    char *plain[] = {"d", NULL};
    assert_int_equal(load(&cfg, plain, none, &err), 0);
    assert_string_equal(cfg.languages_file, "");
    config_free(&cfg);

    char *with_file[] = {"d", "--config", path, NULL};
    assert_int_equal(load(&cfg, with_file, none, &err), 0);
    assert_string_equal(cfg.languages_file, "/etc/from-file.json");
    config_free(&cfg);

    char *env[] = {"MCPSANDBOXD_LANGUAGES_FILE=/etc/from-env.json", NULL};
    assert_int_equal(load(&cfg, with_file, env, &err), 0);
    assert_string_equal(cfg.languages_file, "/etc/from-env.json");
    config_free(&cfg);

    char *cli[] = {"d", "--config", path, "--languages-file", "/etc/from-cli.json", NULL};
    assert_int_equal(load(&cfg, cli, env, &err), 0);
    assert_string_equal(cfg.languages_file, "/etc/from-cli.json");
    config_free(&cfg);
    unlink(path);
}

/* Actions, not settings: only the command line asks for them. */
static void test_print_and_dry_run(void **state)
{
    (void)state;
    struct config cfg;
    struct err err = ERR_INIT;
    char *argv[] = {"x", "--print-engine", "--dry-run-create", "javascript", NULL};
    char *none[] = {NULL};
    assert_int_equal(load(&cfg, argv, none, &err), 0);
    assert_true(cfg.print_engine);
    assert_string_equal(cfg.dry_run_create, "javascript");
    config_free(&cfg);

    char *plain[] = {"x", NULL};
    char *env[] = {"MCPSANDBOXD_DRY_RUN_CREATE=python", "MCPSANDBOXD_PRINT_ENGINE=1", NULL};
    assert_int_equal(load(&cfg, plain, env, &err), 0);
    assert_false(cfg.print_engine);
    assert_string_equal(cfg.dry_run_create, "");
    config_free(&cfg);

    /* Any name: the table says at start whether it has it
     * (langtable_configure, test_langtable). */
    char *ruby[] = {"x", "--dry-run-create", "ruby", NULL};
    assert_int_equal(load(&cfg, ruby, none, &err), 0);
    assert_string_equal(cfg.dry_run_create, "ruby");
    config_free(&cfg);

    /* --list-images: a flag, from the command line only. */
    char *list[] = {"x", "--list-images", NULL};
    assert_int_equal(load(&cfg, list, none, &err), 0);
    assert_true(cfg.list_images);
    config_free(&cfg);
    char *env2[] = {"MCPSANDBOXD_LIST_IMAGES=1", NULL};
    assert_int_equal(load(&cfg, plain, env2, &err), 0);
    assert_false(cfg.list_images);
    config_free(&cfg);
}

/* --http off loopback needs a token, from either source; loopback serves
 * without one, and the modes that print and exit never bind. */
static void test_listen_needs_token_off_loopback(void **state)
{
    (void)state;
    char *none[] = {NULL};
    char *w4[] = {"d", "--http", "0.0.0.0:0", NULL};
    expect_error(w4, none, "0.0.0.0 is not a loopback address");
    expect_error(w4, none, "--auth-token-file");
    char *w6[] = {"d", "--http", "[::]:8080", NULL};
    expect_error(w6, none, ":: is not a loopback address");
    char *lan[] = {"d", "--http", "192.0.2.7:8080", NULL};
    expect_error(lan, none, "192.0.2.7 is not a loopback address");
    char *plain[] = {"d", NULL};
    char *env_listen[] = {"MCPSANDBOXD_HTTP=0.0.0.0:8080", NULL};
    expect_error(plain, env_listen, "needs a bearer token");

    struct config cfg;
    struct err err = ERR_INIT;
    char *loopback[] = {"127.0.0.1:0", "localhost:8080", "LOCALHOST:1", "[::1]:0", "127.8.9.10:80"};
    for (size_t i = 0; i < sizeof(loopback) / sizeof(loopback[0]); i++) {
        char *argv[] = {"d", "--http", loopback[i], NULL};
        if (load(&cfg, argv, none, &err) != 0)
            fail_msg("--http %s: %s", loopback[i], err_msg(&err));
        assert_null(cfg.auth_token);
        config_free(&cfg);
    }

    char *env_token[] = {"MCPSANDBOXD_AUTH_TOKEN=s3cret-token", NULL};
    assert_int_equal(load(&cfg, w6, env_token, &err), 0);
    assert_string_equal(cfg.auth_token, "s3cret-token");
    assert_string_equal(cfg.http_host, "::");
    config_free(&cfg);

    char path[] = "/tmp/mcpsbx-test-token-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "file-token\n", 11), 11);
    close(fd);
    char *with_file[] = {"d", "--http", "0.0.0.0:0", "--auth-token-file", path, NULL};
    assert_int_equal(load(&cfg, with_file, none, &err), 0);
    assert_string_equal(cfg.auth_token, "file-token");
    config_free(&cfg);
    /* An empty file is a mistake, not a way to serve without a token. */
    assert_int_equal(truncate(path, 0), 0);
    expect_error(with_file, none, "1 to 256");
    unlink(path);

    char *print[] = {"d", "--http", "0.0.0.0:0", "--print-engine", NULL};
    assert_int_equal(load(&cfg, print, none, &err), 0);
    config_free(&cfg);
    char *list[] = {"d", "--list-images", NULL};
    assert_int_equal(load(&cfg, list, env_listen, &err), 0);
    config_free(&cfg);
    char *dry[] = {"d", "--http", "[::]:1", "--dry-run-create", "python", NULL};
    assert_int_equal(load(&cfg, dry, none, &err), 0);
    config_free(&cfg);
}

/* --languages: a list of names or aliases in any case, from the command
 * line, a config file or the environment; the table checks them. */
static void test_languages_option(void **state)
{
    (void)state;
    struct config cfg;
    struct err err = ERR_INIT;
    char *none[] = {NULL};
    char *argv[] = {"d", "--languages", "python, TS,c++", NULL};
    assert_int_equal(load(&cfg, argv, none, &err), 0);
    assert_int_equal(cfg.languages.n, 3);
    assert_string_equal(cfg.languages.items[0], "python");
    assert_string_equal(cfg.languages.items[1], "TS");
    assert_string_equal(cfg.languages.items[2], "c++");
    assert_null(cfg.languages.items[3]);
    config_free(&cfg);

    char *plain[] = {"d", NULL};
    char *env[] = {"MCPSANDBOXD_LANGUAGES=bash,cobol", NULL};
    assert_int_equal(load(&cfg, plain, env, &err), 0);
    assert_int_equal(cfg.languages.n, 2);
    assert_string_equal(cfg.languages.items[1], "cobol");
    config_free(&cfg);

    char *bad[] = {"d", "--languages", "python,-x", NULL};
    expect_error(bad, none, "-x");
}

/* One session's caps are the options over HTTP; over stdio the one
 * session shares with nobody and gets the whole daemon's. */
static void test_session_shares(void **state)
{
    (void)state;
    char *envp[] = {"MCPSANDBOXD_MAX_SESSION_QUEUED=5", NULL};
    struct config cfg;
    struct err err = ERR_INIT;
    char *http[] = {"d", "--http", "127.0.0.1:0", "--max-session-inflight", "3", NULL};
    assert_int_equal(load(&cfg, http, envp, &err), 0);
    assert_int_equal(cfg.max_session_inflight, 3);
    assert_int_equal(cfg.max_session_queued, 5);
    assert_int_equal(cfg.run_store_session_max_bytes, 64LL << 20);
    config_free(&cfg);
    char *defaults[] = {"d", "--http", "127.0.0.1:0", NULL};
    char *none[] = {NULL};
    assert_int_equal(load(&cfg, defaults, none, &err), 0);
    assert_int_equal(cfg.max_session_inflight, 16);
    assert_int_equal(cfg.max_session_queued, 8);
    config_free(&cfg);
    char *stdio[] = {"d",    "--max-session-inflight",
                     "3",    "--max-concurrent",
                     "4",    "--max-queued",
                     "10",   "--run-store-max-bytes",
                     "1000", NULL};
    assert_int_equal(load(&cfg, stdio, envp, &err), 0);
    assert_int_equal(cfg.max_session_inflight, 14);
    assert_int_equal(cfg.max_session_queued, 10);
    assert_int_equal(cfg.run_store_session_max_bytes, 1000);
    config_free(&cfg);
    char *bad[] = {"d", "--max-session-inflight", "0", NULL};
    expect_error(bad, none, "--max-session-inflight");
}

/* Code sessions: the defaults, the bounds, and the two rules between the
 * options (per-owner within the daemon's, idle within the age), which hold
 * only while sessions are on. */
static void test_code_sessions(void **state)
{
    (void)state;
    char *none[] = {NULL};
    struct config cfg;
    struct err err = ERR_INIT;
    char *defaults[] = {"d", NULL};
    assert_int_equal(load(&cfg, defaults, none, &err), 0);
    assert_int_equal(cfg.max_code_sessions, 16);
    assert_int_equal(cfg.max_code_sessions_per_owner, 4);
    assert_int_equal(cfg.code_session_idle_ms, 900000);
    assert_int_equal(cfg.code_session_max_age_ms, 7200000);
    config_free(&cfg);
    char *envp[] = {"MCPSANDBOXD_MAX_CODE_SESSIONS=3", "MCPSANDBOXD_CODE_SESSION_IDLE_MS=5000",
                    NULL};
    char *given[] = {"d", "--max-code-sessions-per-owner", "2", "--code-session-idle-ms", "4000",
                     NULL};
    assert_int_equal(load(&cfg, given, envp, &err), 0);
    assert_int_equal(cfg.max_code_sessions, 3);
    assert_int_equal(cfg.max_code_sessions_per_owner, 2);
    assert_int_equal(cfg.code_session_idle_ms, 4000); /* CLI beats environment */
    config_free(&cfg);
    /* Off: the per-owner cap is not compared with 0. */
    char *off[] = {"d", "--max-code-sessions", "0", NULL};
    assert_int_equal(load(&cfg, off, none, &err), 0);
    assert_int_equal(cfg.max_code_sessions, 0);
    config_free(&cfg);
    char *a1[] = {"d", "--max-code-sessions", "2", NULL};
    expect_error(a1, none, "--max-code-sessions-per-owner (4) exceeds --max-code-sessions (2)");
    char *a2[] = {"d", "--code-session-idle-ms", "7200001", NULL};
    expect_error(a2, none, "--code-session-idle-ms (7200001) exceeds --code-session-max-age-ms");
    char *a3[] = {"d", "--max-code-sessions", "1025", NULL};
    expect_error(a3, none, "out of range");
    char *a4[] = {"d", "--max-code-sessions-per-owner", "0", NULL};
    expect_error(a4, none, "out of range");
    char *a5[] = {"d", "--code-session-max-age-ms", "999", NULL};
    expect_error(a5, none, "out of range");
    char *a6[] = {"d", "--code-session-max-age-ms", "604800001", NULL};
    expect_error(a6, none, "out of range");
}

/* The egress options: --egress keeps whole "LANGUAGE=PATTERN,..." items
 * (';' between items in one value, as the environment and the file give
 * them), in the order file < environment < command line, so the table
 * applies the later over the earlier (test_langtable_egress); the CIDRs
 * and pins are lists of their own (egress/settings.h parses them:
 * test_settings); the caps' defaults are policy.h's (test_settings too). */
static void test_egress_options(void **state)
{
    (void)state;
    char path[] = "/tmp/mcpsbx-test-conf-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *fp = fdopen(fd, "w");
    fputs("egress = python=pypi.org, *.pythonhosted.org:443\n"
          "egress = ruby=rubygems.org\n"
          "egress-allow-cidr = 10.0.0.0/8\n",
          fp);
    fclose(fp);
    char *argv[] = {"d",
                    "--config",
                    path,
                    "--egress",
                    "python=example.com,[2001:db8::1]:8443",
                    "--egress=c=",
                    "--egress-allow-cidr",
                    "192.168.1.0/24,fd00::/8",
                    "--egress-resolve",
                    "db.example=10.1.2.3,api.example=[2001:db8::2]",
                    "--egress-max-connections",
                    "4",
                    "--egress-max-bytes-up=1024",
                    "--egress-upstream-ca=/etc/cli-ca.pem",
                    NULL};
    char *envp[] = {"MCPSANDBOXD_EGRESS=javascript=registry.npmjs.org,*.npmjs.com;bash = a.example",
                    "MCPSANDBOXD_EGRESS_MAX_CONNECTIONS=9",
                    "MCPSANDBOXD_EGRESS_CONNECTION_TIMEOUT_MS=5000",
                    "MCPSANDBOXD_EGRESS_UPSTREAM_CA=/etc/env-ca.pem", NULL};
    struct config cfg;
    struct err err = ERR_INIT;
    assert_int_equal(load(&cfg, argv, envp, &err), 0);
    const char *want[] = {"python=pypi.org, *.pythonhosted.org:443",   "ruby=rubygems.org",
                          "javascript=registry.npmjs.org,*.npmjs.com", "bash = a.example",
                          "python=example.com,[2001:db8::1]:8443",     "c="};
    assert_int_equal(cfg.egress.n, ARRAY_SIZE(want));
    for (size_t i = 0; i < ARRAY_SIZE(want); i++)
        assert_string_equal(cfg.egress.items[i], want[i]);
    assert_null(cfg.egress.items[ARRAY_SIZE(want)]);
    assert_int_equal(cfg.egress_allow_cidr.n, 3);
    assert_string_equal(cfg.egress_allow_cidr.items[2], "fd00::/8");
    assert_int_equal(cfg.egress_resolve.n, 2);
    assert_string_equal(cfg.egress_resolve.items[1], "api.example=[2001:db8::2]");
    assert_int_equal(cfg.egress_max_connections, 4); /* CLI beats environment */
    assert_int_equal(cfg.egress_max_connections_total, 256);
    assert_int_equal(cfg.egress_max_bytes_up, 1024);
    assert_int_equal(cfg.egress_max_bytes_down, 512LL << 20);
    assert_int_equal(cfg.egress_connection_timeout_ms, 5000);
    assert_string_equal(cfg.egress_upstream_ca, "/etc/cli-ca.pem"); /* CLI beats environment */
    config_free(&cfg);
    unlink(path);
    char *only_env[] = {"d", NULL};
    assert_int_equal(load(&cfg, only_env, envp, &err), 0);
    assert_string_equal(cfg.egress_upstream_ca, "/etc/env-ca.pem");
    config_free(&cfg);
    char *no_env[] = {NULL};
    assert_int_equal(load(&cfg, only_env, no_env, &err), 0);
    assert_null(cfg.egress_upstream_ca);
    config_free(&cfg);

    char *none[] = {NULL};
    char *e1[] = {"d", "--egress", "pypi.org", NULL};
    expect_error(e1, none, "--egress: 'pypi.org' is not valid (LANGUAGE=PATTERN");
    char *e2[] = {"d", "--egress", "1py=pypi.org", NULL};
    expect_error(e2, none, "'1py=pypi.org'");
    char *e3[] = {"d", "--egress", "python=pypi.org\x01", NULL};
    expect_error(e3, none, "--egress");
    char *e4[] = {"d", "--egress-allow-cidr", "10.0.0.0/8 x", NULL};
    expect_error(e4, none, "--egress-allow-cidr");
    char *e5[] = {"d", "--egress-max-connections", "0", NULL};
    expect_error(e5, none, "--egress-max-connections: 0 is out of range");
    char *e6[] = {"d", "--egress-max-connections-total", "100001", NULL};
    expect_error(e6, none, "out of range");
    char *e7[] = {"d", "--egress-max-bytes-down", "0", NULL};
    expect_error(e7, none, "--egress-max-bytes-down");
    char *e8[] = {"d", "--egress-connection-timeout-ms", "86400001", NULL};
    expect_error(e8, none, "--egress-connection-timeout-ms");
    char *env_bad[] = {"MCPSANDBOXD_EGRESS=python=a.example;nolanguage", NULL};
    char *plain[] = {"d", NULL};
    expect_error(plain, env_bad, "MCPSANDBOXD_EGRESS");
}

/* The packages options: --packages-index keeps whole
 * "LANGUAGE=URL,..." items (';' between items in one value) in the order
 * file < environment < command line (the table applies the later over the
 * earlier and checks the URLs: test_langtable_packages); --packages-offline
 * is a setting, true or false in the file and the environment, a flag on
 * the command line; the cache's directory must be usable as a bind's
 * source. */
static void test_packages_options(void **state)
{
    (void)state;
    struct config cfg;
    struct err err = ERR_INIT;
    char *plain[] = {"d", NULL};
    char *no_env[] = {NULL};
    assert_int_equal(load(&cfg, plain, no_env, &err), 0);
    assert_false(cfg.packages_offline);
    assert_string_equal(cfg.packages_cache_dir, "/var/cache/mcp-sandboxd/packages");
    assert_int_equal(cfg.packages_cache_max_bytes, 4LL << 30);
    assert_int_equal(cfg.packages_index.n, 0);
    config_free(&cfg);

    char path[] = "/tmp/mcpsbx-test-conf-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *fp = fdopen(fd, "w");
    fputs("packages-index = python=https://f.example/simple\n"
          "packages-offline = true\n"
          "packages-cache-dir = /srv/file-cache\n",
          fp);
    fclose(fp);
    char *envp[] = {"MCPSANDBOXD_PACKAGES_INDEX=javascript=https://e.example/;typescript=",
                    "MCPSANDBOXD_PACKAGES_OFFLINE=false",
                    "MCPSANDBOXD_PACKAGES_CACHE_MAX_BYTES=1073741824", NULL};
    char *argv[] = {"d",
                    "--config",
                    path,
                    "--packages-index",
                    "py=https://c.example/",
                    "--packages-cache-dir=/srv/cli-cache",
                    NULL};
    assert_int_equal(load(&cfg, argv, envp, &err), 0);
    const char *want[] = {"python=https://f.example/simple", "javascript=https://e.example/",
                          "typescript=", "py=https://c.example/"};
    assert_int_equal(cfg.packages_index.n, ARRAY_SIZE(want));
    for (size_t i = 0; i < ARRAY_SIZE(want); i++)
        assert_string_equal(cfg.packages_index.items[i], want[i]);
    assert_false(cfg.packages_offline); /* the environment beats the file */
    assert_string_equal(cfg.packages_cache_dir, "/srv/cli-cache");
    assert_int_equal(cfg.packages_cache_max_bytes, 1LL << 30);
    config_free(&cfg);
    char *flag[] = {"d", "--config", path, "--packages-offline", NULL};
    assert_int_equal(load(&cfg, flag, envp, &err), 0);
    assert_true(cfg.packages_offline); /* the command line beats both */
    config_free(&cfg);
    char *file_only[] = {"d", "--config", path, NULL};
    assert_int_equal(load(&cfg, file_only, no_env, &err), 0);
    assert_true(cfg.packages_offline);
    assert_string_equal(cfg.packages_cache_dir, "/srv/file-cache");
    config_free(&cfg);
    unlink(path);

    char *e1[] = {"d", "--packages-index", "https://pypi.example/", NULL};
    expect_error(e1, no_env, "--packages-index: 'https://pypi.example/' is not valid");
    char *e2[] = {"d", "--packages-cache-dir", "cache", NULL};
    expect_error(e2, no_env, "--packages-cache-dir must be an absolute path");
    char *e3[] = {"d", "--packages-cache-dir", "/srv/a:b", NULL};
    expect_error(e3, no_env, "--packages-cache-dir");
    char *e4[] = {"d", "--packages-cache-dir", "/srv/../etc", NULL};
    expect_error(e4, no_env, "--packages-cache-dir");
    char *e5[] = {"d", "--packages-cache-dir", "/srv/a\nb", NULL};
    expect_error(e5, no_env, "--packages-cache-dir");
    char *e6[] = {"d", "--packages-cache-max-bytes", "1024", NULL};
    expect_error(e6, no_env, "--packages-cache-max-bytes: 1024 is out of range");
    char *env_bad[] = {"MCPSANDBOXD_PACKAGES_OFFLINE=maybe", NULL};
    expect_error(plain, env_bad,
                 "MCPSANDBOXD_PACKAGES_OFFLINE: --packages-offline: expected "
                 "true or false");
}

/* --secret: whole "NAME=HOST,..." items (';' between items in one value),
 * file < environment < command line; a NAME must be a variable's and may
 * not also be passed through as it is. The hosts are egress/secrets.h's
 * to check (test_secrets). */
static void test_secret_option(void **state)
{
    (void)state;
    char path[] = "/tmp/mcpsbx-test-conf-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *fp = fdopen(fd, "w");
    fputs("secret = FILE_KEY=a.example, b.example:8443\n", fp);
    fclose(fp);
    char *argv[] = {"d", "--config", path, "--secret", "CLI_KEY=*.example.org", NULL};
    char *envp[] = {"MCPSANDBOXD_SECRET=ENV_A=a.example;ENV_B = c.example", NULL};
    struct config cfg;
    struct err err = ERR_INIT;
    assert_int_equal(load(&cfg, argv, envp, &err), 0);
    const char *want[] = {"FILE_KEY=a.example, b.example:8443", "ENV_A=a.example",
                          "ENV_B = c.example", "CLI_KEY=*.example.org"};
    assert_int_equal(cfg.secret.n, ARRAY_SIZE(want));
    for (size_t i = 0; i < ARRAY_SIZE(want); i++)
        assert_string_equal(cfg.secret.items[i], want[i]);
    config_free(&cfg);
    unlink(path);

    char *none[] = {NULL};
    char *e1[] = {"d", "--secret", "a.example", NULL};
    expect_error(e1, none, "--secret");
    char *e2[] = {"d", "--secret", "1KEY=a.example", NULL};
    expect_error(e2, none, "--secret");
    char *e3[] = {"d", "--secret", "KEY=a.example\x01", NULL};
    expect_error(e3, none, "--secret");
    char *e4[] = {"d", "--pass-through-env", "A,KEY", "--secret", "KEY=a.example", NULL};
    expect_error(e4, none, "KEY is in both --pass-through-env and --secret");
    char *e5[] = {"d", "--pass-through-env", "KEY", "--secret", " KEY = a.example", NULL};
    expect_error(e5, none, "KEY is in both");
    char *e6[] = {"d", "--pass-through-env", "KEY2", "--secret", " KEY = a.example", NULL};
    struct config ok;
    assert_int_equal(load(&ok, e6, none, &err), 0);
    config_free(&ok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_row_defaults),
        cmocka_unit_test(test_cli_and_env),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_labels),
        cmocka_unit_test(test_legacy_languages),
        cmocka_unit_test(test_pool_options),
        cmocka_unit_test(test_sandbox_uids),
        cmocka_unit_test(test_container_image_pair),
        cmocka_unit_test(test_config_file),
        cmocka_unit_test(test_languages_file),
        cmocka_unit_test(test_print_and_dry_run),
        cmocka_unit_test(test_languages_option),
        cmocka_unit_test(test_listen_needs_token_off_loopback),
        cmocka_unit_test(test_session_shares),
        cmocka_unit_test(test_code_sessions),
        cmocka_unit_test(test_egress_options),
        cmocka_unit_test(test_secret_option),
        cmocka_unit_test(test_packages_options),
    };
    return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
