#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/config.h"
#include "sandbox/languages/langtable.h"
#include "unit/options.h"
#include "langtable_rig.h"

static void assert_argv(const struct langtable_strv *s, const char *const *want)
{
    size_t n = 0;
    while (want[n])
        n++;
    assert_int_equal(s->n, n);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(s->v[i], want[i]);
    assert_null(s->v[n]);
}

/* ---- the built-in table ------------------------------------------------------ */

static void test_builtin(void **state)
{
    (void)state;
    static const struct {
        const char *name, *image, *source, *runner, *run0, *version0;
        bool compiles, typechecks;
        long long pool;
    } want[] = {
        {"python", "mcp-sandboxd-python:latest", "main.py", "python", "python3", "python3", false,
         false, 2},
        {"javascript", "mcp-sandboxd-node:latest", "main.js", "node", "node", "node", false, false,
         2},
        {"typescript", "mcp-sandboxd-node:latest", "main.ts", "generic", "node", "tsc", true, true,
         1},
        {"bash", "mcp-sandboxd-bash:latest", "main.sh", "generic", "bash", "bash", false, false, 1},
        {"c", "mcp-sandboxd-c:latest", "main.c", "generic", "./main", "gcc", true, false, 1},
        {"cpp", "mcp-sandboxd-cpp:latest", "main.cpp", "generic", "./main", "g++", true, false, 1},
        {"ruby", "mcp-sandboxd-ruby:latest", "main.rb", "generic", "ruby", "ruby", false, false, 1},
        {"php", "mcp-sandboxd-php:latest", "main.php", "generic", "php", "php", false, false, 1},
    };
    struct langtable *t = load_ok(NULL);
    assert_int_equal(langtable_count(t), 8);
    for (size_t i = 0; i < 8; i++) {
        const struct langtable_lang *l = langtable_get(t, i);
        assert_int_equal(l->index, i);
        assert_string_equal(l->name, want[i].name);
        assert_string_equal(l->image, want[i].image);
        assert_string_equal(l->source_file, want[i].source);
        assert_string_equal(langtable_runner_name(l->runner), want[i].runner);
        assert_string_equal(l->run.v[0], want[i].run0);
        assert_string_equal(l->version.v[0], want[i].version0);
        assert_int_equal(l->compile.n > 0, want[i].compiles);
        assert_int_equal(l->typecheck.n > 0, want[i].typechecks);
        assert_non_null(l->typecheck.v);
        assert_null(l->typecheck.v[l->typecheck.n]);
        assert_true(want[i].compiles ? l->compile_timeout_ms >= LANGTABLE_COMPILE_TIMEOUT_MIN_MS
                                     : l->compile_timeout_ms == 0);
        assert_int_equal(l->pool_size, want[i].pool);
        assert_true(l->network_allowed);
        assert_true(l->image_packages.n > 0);
        assert_non_null(l->aliases.v);
        assert_non_null(l->compile.v);
        assert_null(l->compile.v[l->compile.n]);
    }
    assert_null(langtable_get(t, 8));

    const char *c_compile[] = {"gcc", "-O2", "-std=gnu17", "-o", "main", "main.c", "-lm", NULL};
    assert_argv(&langtable_find(t, "c")->compile, c_compile);
    const char *ts_run[] = {"node", "main.js", NULL};
    assert_argv(&langtable_find(t, "typescript")->run, ts_run);
    const char *bash_run[] = {"bash", "main.sh", NULL};
    assert_argv(&langtable_find(t, "bash")->run, bash_run);
    langtable_free(t);
}

/* Python and JavaScript as the daemon ran them before the table: config.c
 * leaves the images, preloads and pool size "not given" (empty, NULL, -1)
 * and the table, configured with no option, has the old defaults. */
static void test_builtin_matches_today(void **state)
{
    (void)state;
    struct config cfg;
    config_init(&cfg);
    assert_string_equal(cfg.python_image, "");
    assert_string_equal(cfg.js_image, "");
    assert_null(cfg.python_preload);
    assert_null(cfg.js_preload);
    assert_int_equal(cfg.pool_size, -1);
    struct langtable *t = load_ok(NULL);
    struct err err = ERR_INIT;
    if (langtable_configure(t, &cfg, &err) < 0)
        fail_msg("%s", err_msg(&err));
    assert_int_equal(langtable_count(t), 8);
    const struct langtable_lang *py = langtable_find(t, "python");
    const struct langtable_lang *js = langtable_find(t, "javascript");
    assert_string_equal(py->image, "mcp-sandboxd-python:latest");
    assert_string_equal(js->image, "mcp-sandboxd-node:latest");
    assert_string_equal(py->preload_joined, "numpy,pandas,matplotlib,matplotlib.pyplot");
    assert_string_equal(js->preload_joined, "");
    assert_int_equal(js->preload.n, 0);
    assert_int_equal(py->pool_size, 2);
    assert_int_equal(js->pool_size, 2);
    assert_int_equal(py->runner, LANGTABLE_RUNNER_PYTHON);
    assert_int_equal(js->runner, LANGTABLE_RUNNER_NODE);
    const char *py_run[] = {"python3", "-u", "-B", NULL};
    const char *js_run[] = {"node", NULL};
    assert_argv(&py->run, py_run);
    assert_argv(&js->run, js_run);
    /* Python's figures come back, and its sandboxes get the variables the
     * daemon once set in every sandbox; the others have none. */
    const char *py_env[] = {"PYTHONDONTWRITEBYTECODE=1", "MPLBACKEND=Agg", "MPLCONFIGDIR=/tmp/.mpl",
                            NULL};
    assert_argv(&py->environment, py_env);
    assert_true(py->plots);
    for (size_t i = 0; i < langtable_count(t); i++) {
        const struct langtable_lang *l = langtable_get(t, i);
        assert_null(l->runtime);
        assert_null(langtable_runtime(l, &cfg));
        if (l != py) {
            assert_false(l->plots);
            assert_int_equal(l->environment.n, 0);
            assert_non_null(l->environment.v);
        }
    }
    /* Nobody gets a network unless the operator names it. */
    for (size_t i = 0; i < langtable_count(t); i++)
        assert_false(langtable_network(langtable_get(t, i), &cfg));
    langtable_free(t);
    config_free(&cfg);
}

static void test_lookup(void **state)
{
    (void)state;
    struct langtable *t = load_ok(NULL);
    static const char *const pairs[][2] = {
        {"js", "javascript"}, {"node", "javascript"}, {"ts", "typescript"}, {"c++", "cpp"},
        {"sh", "bash"},       {"py", "python"},       {"PY", "python"},     {"Ruby", "ruby"},
        {"rb", "ruby"},       {"php", "php"},         {"c", "c"},
    };
    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
        const struct langtable_lang *l = langtable_find(t, pairs[i][0]);
        if (!l)
            fail_msg("no language for '%s'", pairs[i][0]);
        assert_string_equal(l->name, pairs[i][1]);
    }
    assert_null(langtable_find(t, "perl"));
    assert_null(langtable_find(t, ""));
    assert_null(langtable_find(t, NULL));
    assert_null(langtable_find(t, "python "));
    langtable_free(t);
}

/* ---- the operator's file ------------------------------------------------------ */

static const char perl_file[] = "{\n"
                                "  \"languages\": [\n"
                                "    {\n"
                                "      \"name\": \"perl\",\n"
                                "      \"aliases\": [\"pl\"],\n"
                                "      \"image\": \"mcp-sandboxd-perl:latest\",\n"
                                "      \"source_file\": \"main.pl\",\n"
                                "      \"runner\": \"generic\",\n"
                                "      \"run\": [\"perl\", \"main.pl\"],\n"
                                "      \"version\": [\"perl\", \"-e\", \"print $^V\"],\n"
                                "      \"packages\": [\"perl\"]\n"
                                "    }\n"
                                "  ]\n"
                                "}\n";

static void test_add_perl_from_file(void **state)
{
    (void)state;
    char path[] = "/tmp/mcpsbx-test-languages-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *fp = fdopen(fd, "w");
    fputs(perl_file, fp);
    fclose(fp);
    struct langtable *t = NULL;
    struct err err = ERR_INIT;
    if (langtable_load(path, &t, &err) < 0)
        fail_msg("%s", err_msg(&err));
    unlink(path);
    assert_int_equal(langtable_count(t), 9);
    const struct langtable_lang *l = langtable_get(t, 8);
    assert_string_equal(l->name, "perl");
    assert_ptr_equal(langtable_find(t, "PL"), l);
    assert_int_equal(l->runner, LANGTABLE_RUNNER_GENERIC);
    const char *run[] = {"perl", "main.pl", NULL};
    assert_argv(&l->run, run);
    const char *version[] = {"perl", "-e", "print $^V", NULL};
    assert_argv(&l->version, version);
    /* The defaults of a new language. */
    assert_int_equal(l->compile.n, 0);
    assert_int_equal(l->compile_timeout_ms, 0);
    assert_int_equal(l->pool_size, 0);
    assert_false(l->network_allowed);
    assert_string_equal(l->preload_joined, "");
    langtable_free(t);

    /* No path, or an empty one: the built-in table. */
    assert_int_equal(langtable_load("", &t, &err), 0);
    assert_int_equal(langtable_count(t), 8);
    langtable_free(t);
    assert_int_equal(langtable_load(path, &t, &err), -1);
    assert_int_equal(err.code, ERR_IO);
    assert_non_null(strstr(err_msg(&err), path));
    err_clear(&err);
}

static void test_override(void **state)
{
    (void)state;
    struct langtable *t =
        load_ok("{\"languages\": [\n"
                "  {\"name\": \"python\", \"image\": \"my-python:3.12\"},\n"
                "  {\"name\": \"c\", \"compile\": null,\n"
                "   \"run\": [\"tcc\", \"-run\", \"{source}\"]},\n"
                "  {\"name\": \"javascript\", \"preload\": [\"fs\", \"node:path\"],\n"
                "   \"pool_size\": 0, \"network_allowed\": false}\n"
                "]}");
    assert_int_equal(langtable_count(t), 8);
    const struct langtable_lang *py = langtable_find(t, "python");
    assert_string_equal(py->image, "my-python:3.12");
    /* Keys the entry did not list keep the built-in values. */
    assert_string_equal(py->preload_joined, "numpy,pandas,matplotlib,matplotlib.pyplot");
    assert_string_equal(py->aliases.v[0], "py");
    assert_int_equal(py->pool_size, 2);
    const struct langtable_lang *c = langtable_find(t, "c");
    assert_int_equal(c->compile.n, 0);
    assert_int_equal(c->compile_timeout_ms, 0);
    const char *run[] = {"tcc", "-run", "main.c", NULL};
    assert_argv(&c->run, run);
    const struct langtable_lang *js = langtable_find(t, "js");
    assert_string_equal(js->preload_joined, "fs,node:path");
    assert_int_equal(js->pool_size, 0);
    assert_false(js->network_allowed);
    langtable_free(t);

    /* A new source file name moves the placeholders with it. */
    t = load_ok("{\"languages\": [{\"name\": \"cpp\", \"source_file\": \"prog.cc\"}]}");
    const char *compile[] = {"g++", "-O2", "-std=gnu++17", "-o", "prog", "prog.cc", NULL};
    assert_argv(&langtable_find(t, "cpp")->compile, compile);
    const char *cpp_run[] = {"./prog", NULL};
    assert_argv(&langtable_find(t, "cpp")->run, cpp_run);
    langtable_free(t);
}

static void test_disable(void **state)
{
    (void)state;
    struct langtable *t = load_ok("{\"languages\": [\n"
                                  "  {\"name\": \"php\", \"disabled\": true},\n"
                                  "  {\"name\": \"ruby\", \"disabled\": false}\n"
                                  "]}");
    assert_int_equal(langtable_count(t), 7);
    assert_null(langtable_find(t, "php"));
    assert_non_null(langtable_find(t, "ruby"));
    assert_string_equal(langtable_get(t, 6)->name, "ruby");
    langtable_free(t);

    /* Its names are free again. */
    t = load_ok("{\"languages\": [\n"
                "  {\"name\": \"bash\", \"disabled\": true},\n"
                "  {\"name\": \"zsh\", \"aliases\": [\"sh\"], \"image\": \"z:1\",\n"
                "   \"source_file\": \"main.zsh\", \"runner\": \"generic\",\n"
                "   \"run\": [\"zsh\", \"{source}\"]}\n"
                "]}");
    assert_string_equal(langtable_find(t, "sh")->name, "zsh");
    langtable_free(t);

    t = load_ok("{\"languages\": []}");
    assert_int_equal(langtable_count(t), 8);
    langtable_free(t);
}

/* ---- typecheck ---------------------------------------------------------------------- */

static void test_typecheck(void **state)
{
    (void)state;
    /* The built-in TypeScript's, its placeholder expanded. */
    struct langtable *t = load_ok(NULL);
    const struct langtable_lang *ts = langtable_find(t, "ts");
    assert_true(ts->typecheck.n > 2);
    assert_string_equal(ts->typecheck.v[0], "tsc");
    assert_string_equal(ts->typecheck.v[ts->typecheck.n - 1], "main.ts");
    assert_null(ts->typecheck.v[ts->typecheck.n]);
    for (size_t i = 0; i < ts->typecheck.n; i++)
        assert_null(strchr(ts->typecheck.v[i], '{'));
    langtable_free(t);

    /* A new generic language's, placeholders expanded like compile's. */
    t = load_ok("{\"languages\": [{\"name\": \"perl\", \"image\": \"p:1\",\n"
                "  \"source_file\": \"prog.pl\", \"runner\": \"generic\",\n"
                "  \"typecheck\": [\"perl\", \"-c\", \"{source}\", \"--out={stem}.chk\"],\n"
                "  \"run\": [\"perl\", \"{source}\"]}]}");
    const char *perl_check[] = {"perl", "-c", "prog.pl", "--out=prog.chk", NULL};
    assert_argv(&langtable_find(t, "perl")->typecheck, perl_check);
    assert_int_equal(langtable_find(t, "perl")->compile.n, 0);
    langtable_free(t);

    /* null removes the built-in one; the rest stays. */
    t = load_ok("{\"languages\": [{\"name\": \"typescript\", \"typecheck\": null}]}");
    ts = langtable_find(t, "typescript");
    assert_int_equal(ts->typecheck.n, 0);
    assert_non_null(ts->typecheck.v);
    assert_null(ts->typecheck.v[0]);
    assert_true(ts->compile.n > 0);
    langtable_free(t);

    /* An override of the list replaces it; a renamed source moves it. */
    t = load_ok("{\"languages\": [{\"name\": \"typescript\", \"source_file\": \"app.ts\"},\n"
                "  {\"name\": \"c\", \"typecheck\": [\"cppcheck\", \"{source}\"]}]}");
    ts = langtable_find(t, "typescript");
    assert_string_equal(ts->typecheck.v[ts->typecheck.n - 1], "app.ts");
    const char *ts_run[] = {"node", "app.js", NULL};
    assert_argv(&ts->run, ts_run);
    const char *c_check[] = {"cppcheck", "main.c", NULL};
    assert_argv(&langtable_find(t, "c")->typecheck, c_check);
    langtable_free(t);

    /* Generic only, and the same rules as the other argvs. */
    bad("{\"languages\": [\n  {\"name\": \"python\",\n   \"typecheck\": [\"mypy\", "
        "\"{source}\"]}\n]}",
        "test.json:3: ", "'typecheck' needs the generic runner, not python");
    bad("{\"languages\": [\n  {\"name\": \"javascript\",\n   \"typecheck\": [\"tsc\"]}\n]}",
        "test.json:3: ", "'typecheck' needs the generic runner, not node");
    /* A built-in typecheck made wrong by a runner override: the override's line. */
    bad("{\"languages\": [\n  {\"name\": \"typescript\",\n   \"compile\": null,\n"
        "   \"runner\": \"node\"}\n]}",
        "test.json:4: ", "'typecheck' needs the generic runner, not node");
    bad("{\"languages\": [\n  {\"name\": \"typescript\",\n   \"typecheck\": [\"tsc\", "
        "\"{src}\"]}\n]}",
        "test.json:3: ", "'{src}' is not a placeholder");
    bad("{\"languages\": [\n  {\"name\": \"typescript\",\n   \"typecheck\": []}\n]}",
        "test.json:3: ", "'typecheck' must not be empty");
    bad("{\"languages\": [\n  {\"name\": \"typescript\",\n   \"typecheck\": \"tsc\"}\n]}",
        "test.json:3: ", "'typecheck' must be an array of strings");
}

static void test_typecheck_warm(void **state)
{
    (void)state;
    /* TypeScript keeps tsc's checker warm; no other built-in has one. */
    struct langtable *t = load_ok(NULL);
    for (size_t i = 0; i < langtable_count(t); i++) {
        const struct langtable_lang *l = langtable_get(t, i);
        assert_int_equal(l->typecheck_warm, strcmp(l->name, "typescript") == 0
                                                ? LANGTABLE_CHECKER_TSC
                                                : LANGTABLE_CHECKER_NONE);
    }
    assert_string_equal(langtable_checker_name(LANGTABLE_CHECKER_TSC), "tsc");
    assert_string_equal(langtable_checker_name(LANGTABLE_CHECKER_NONE), "none");
    langtable_free(t);

    /* null and "none" turn it off; the typecheck stays. */
    const char *off[] = {"null", "\"none\""};
    for (size_t i = 0; i < 2; i++) {
        char text[128];
        snprintf(text, sizeof(text),
                 "{\"languages\": [{\"name\": \"typescript\", \"typecheck_warm\": %s}]}", off[i]);
        t = load_ok(text);
        const struct langtable_lang *ts = langtable_find(t, "ts");
        assert_int_equal(ts->typecheck_warm, LANGTABLE_CHECKER_NONE);
        assert_true(ts->typecheck.n > 0);
        langtable_free(t);
    }

    /* Removing the typecheck removes the built-in checker; setting one
     * without a typecheck is refused, and it must be a name it knows. */
    t = load_ok("{\"languages\": [{\"name\": \"typescript\", \"typecheck\": null}]}");
    assert_int_equal(langtable_find(t, "ts")->typecheck_warm, LANGTABLE_CHECKER_NONE);
    langtable_free(t);
    bad("{\"languages\": [\n  {\"name\": \"typescript\",\n   \"typecheck\": null,\n"
        "   \"typecheck_warm\": \"tsc\"}\n]}",
        "test.json:4: ", "'typecheck_warm' needs a typecheck");
    bad("{\"languages\": [\n  {\"name\": \"c\",\n   \"typecheck_warm\": \"tsc\"}\n]}",
        "test.json:3: ", "'typecheck_warm' needs a typecheck");
    bad("{\"languages\": [\n  {\"name\": \"typescript\",\n   \"typecheck_warm\": \"mypy\"}\n]}",
        "test.json:3: ", "'typecheck_warm' must be \"tsc\", \"none\" or null");
    bad("{\"languages\": [\n  {\"name\": \"typescript\",\n   \"typecheck_warm\": true}\n]}",
        "test.json:3: ", "'typecheck_warm' must be \"tsc\", \"none\" or null");
}

/* ---- the daemon's options (langtable_configure) ------------------------------------- */

/* --languages: names or aliases in any case; the table keeps its own
 * order, and the indexes are the new places. */
static void test_configure_subset(void **state)
{
    (void)state;
    char *a1[] = {"d", "--languages", "c++,Python,ts", NULL};
    struct langtable *t = configure_ok(a1, NULL);
    assert_int_equal(langtable_count(t), 3);
    const char *names[] = {"python", "typescript", "cpp"};
    for (size_t i = 0; i < 3; i++) {
        const struct langtable_lang *l = langtable_get(t, i);
        assert_string_equal(l->name, names[i]);
        assert_int_equal(l->index, i);
        assert_ptr_equal(langtable_find(t, names[i]), l);
    }
    assert_null(langtable_get(t, 3));
    assert_null(langtable_find(t, "javascript"));
    assert_null(langtable_find(t, "js"));
    assert_null(langtable_find(t, "bash"));
    /* What the kept ones hold is untouched. */
    const struct langtable_lang *cpp = langtable_find(t, "cxx");
    assert_string_equal(cpp->image, "mcp-sandboxd-cpp:latest");
    assert_string_equal(cpp->compile.v[0], "g++");
    assert_string_equal(langtable_find(t, "py")->preload_joined,
                        "numpy,pandas,matplotlib,matplotlib.pyplot");
    langtable_free(t);

    /* One language, named twice (a name and its alias). */
    char *a2[] = {"d", "--languages", "bash,sh", NULL};
    t = configure_ok(a2, NULL);
    assert_int_equal(langtable_count(t), 1);
    assert_string_equal(langtable_get(t, 0)->name, "bash");
    assert_int_equal(langtable_get(t, 0)->index, 0);
    langtable_free(t);

    /* A language from the operator's file can be chosen too. */
    char *a3[] = {"d", "--languages", "pl,ruby", NULL};
    t = configure_ok(a3, perl_file);
    assert_int_equal(langtable_count(t), 2);
    assert_string_equal(langtable_get(t, 0)->name, "ruby");
    assert_string_equal(langtable_get(t, 1)->name, "perl");
    assert_int_equal(langtable_get(t, 1)->index, 1);
    langtable_free(t);

    /* None given: all of them. */
    char *a4[] = {"d", NULL};
    t = configure_ok(a4, NULL);
    assert_int_equal(langtable_count(t), 8);
    langtable_free(t);

    char *b1[] = {"d", "--languages", "python,cobol", NULL};
    configure_bad(b1, NULL, "--languages", "'cobol'");
    /* Disabled by the file: gone from the table, so not a choice. */
    char *b2[] = {"d", "--languages", "php", NULL};
    configure_bad(b2, "{\"languages\": [{\"name\": \"php\", \"disabled\": true}]}", "--languages",
                  "'php'");
}

/* The python and javascript options change those two entries only. */
static void test_configure_options(void **state)
{
    (void)state;
    char *a1[] = {"d",
                  "--python-image",
                  "my/py:3.12",
                  "--js-image",
                  "my/node:22",
                  "--python-preload",
                  "json, decimal",
                  "--js-preload",
                  "zlib,node:fs",
                  NULL};
    struct langtable *t = configure_ok(a1, NULL);
    const struct langtable_lang *py = langtable_find(t, "python");
    const struct langtable_lang *js = langtable_find(t, "javascript");
    assert_string_equal(py->image, "my/py:3.12");
    assert_string_equal(js->image, "my/node:22");
    assert_string_equal(py->preload_joined, "json,decimal");
    const char *py_preload[] = {"json", "decimal", NULL};
    assert_argv(&py->preload, py_preload);
    assert_string_equal(js->preload_joined, "zlib,node:fs");
    const char *js_preload[] = {"zlib", "node:fs", NULL};
    assert_argv(&js->preload, js_preload);
    /* TypeScript shares the node image in the table, not the option. */
    assert_string_equal(langtable_find(t, "typescript")->image, "mcp-sandboxd-node:latest");
    /* --pool-size not given: each its own. */
    assert_int_equal(py->pool_size, 2);
    assert_int_equal(langtable_find(t, "c")->pool_size, 1);
    langtable_free(t);

    /* An empty preload is none; --pool-size is every language's. */
    char *a2[] = {"d", "--python-preload", "", "--pool-size", "3", NULL};
    t = configure_ok(a2, NULL);
    py = langtable_find(t, "python");
    assert_string_equal(py->preload_joined, "");
    assert_int_equal(py->preload.n, 0);
    assert_null(py->preload.v[0]);
    assert_string_equal(py->image, "mcp-sandboxd-python:latest");
    for (size_t i = 0; i < langtable_count(t); i++)
        assert_int_equal(langtable_get(t, i)->pool_size, 3);
    langtable_free(t);

    char *a3[] = {"d", "--pool-size", "0", "--languages", "js,c", NULL};
    t = configure_ok(a3, NULL);
    assert_int_equal(langtable_count(t), 2);
    for (size_t i = 0; i < langtable_count(t); i++)
        assert_int_equal(langtable_get(t, i)->pool_size, 0);
    langtable_free(t);

    /* Python left out: its options change nothing and are no error. */
    char *a4[] = {"d", "--languages", "ruby", "--python-image", "x:1", NULL};
    t = configure_ok(a4, NULL);
    assert_int_equal(langtable_count(t), 1);
    assert_string_equal(langtable_get(t, 0)->image, "mcp-sandboxd-ruby:latest");
    langtable_free(t);

    /* The image options are for the in-process runners: a "python" that
     * the file turned into a generic language is left as the file says. */
    char *a5[] = {"d", "--python-image", "x:1", NULL};
    t = configure_ok(a5, "{\"languages\": [{\"name\": \"python\", \"runner\": \"generic\",\n"
                         "  \"preload\": [], \"image\": \"file:1\"}]}");
    assert_string_equal(langtable_find(t, "python")->image, "file:1");
    langtable_free(t);
}

/* The runtime options write into their language's row whatever its
 * runner; --runtime is the rest's; the table's own runtime is under the
 * option. */
static void test_configure_runtimes(void **state)
{
    (void)state;
    char *a1[] = {"d", "--runtime", "runc", "--python-runtime", "runsc", NULL};
    struct config cfg;
    options_load(&cfg, a1);
    struct err err = ERR_INIT;
    struct langtable *t = load_ok("{\"languages\": [{\"name\": \"ruby\", \"runtime\": \"kata\"},\n"
                                  "  {\"name\": \"javascript\", \"runtime\": \"kata\"}]}");
    assert_int_equal(langtable_configure(t, &cfg, &err), 0);
    assert_string_equal(langtable_runtime(langtable_find(t, "python"), &cfg), "runsc");
    assert_string_equal(langtable_runtime(langtable_find(t, "ruby"), &cfg), "kata");
    assert_string_equal(langtable_runtime(langtable_find(t, "javascript"), &cfg), "kata");
    assert_string_equal(langtable_runtime(langtable_find(t, "c"), &cfg), "runc");
    langtable_free(t);
    config_free(&cfg);

    char *a2[] = {"d", "--js-runtime", "runsc", "--python-runtime", "runc", NULL};
    t = configure_ok(a2, "{\"languages\": [{\"name\": \"python\", \"runner\": \"generic\",\n"
                         "  \"preload\": [], \"runtime\": \"kata\"}]}");
    config_init(&cfg);
    assert_string_equal(langtable_runtime(langtable_find(t, "python"), &cfg), "runc");
    assert_string_equal(langtable_runtime(langtable_find(t, "js"), &cfg), "runsc");
    assert_null(langtable_runtime(langtable_find(t, "ts"), &cfg));
    langtable_free(t);
    config_free(&cfg);

    /* null: --runtime's again. */
    t = load_ok("{\"languages\": [{\"name\": \"ruby\", \"runtime\": null}]}");
    assert_null(langtable_find(t, "ruby")->runtime);
    langtable_free(t);
}

/* A preload option is checked as its runner's modules (config.c only
 * knows what no runner's name holds), enabled or not. */
static void test_configure_preload_forms(void **state)
{
    (void)state;
    char *b1[] = {"d", "--python-preload", "1abc", NULL};
    configure_bad(b1, NULL, "--python-preload: '1abc' is not a module name", "");
    char *b2[] = {"d", "--python-preload", "json,a..b", NULL};
    configure_bad(b2, NULL, "--python-preload: 'a..b'", "");
    char *b3[] = {"d", "--python-preload", "node:fs", NULL};
    configure_bad(b3, NULL, "--python-preload: 'node:fs'", "");
    char *b4[] = {"d", "--languages", "ruby", "--python-preload", "node:fs", NULL};
    configure_bad(b4, NULL, "--python-preload: 'node:fs'", "");
    /* A path the node runner would load as a file: the daemon's alone. */
    char *b5[] = {"d", "--js-preload", "fs,/usr/lib/x.js", NULL};
    configure_bad(b5, NULL, "--js-preload: '/usr/lib/x.js' is not a module name", "");
    char *ok[] = {"d", "--js-preload", "node:fs,fs/promises,1x", NULL};
    struct langtable *t = configure_ok(ok, NULL);
    assert_string_equal(langtable_find(t, "js")->preload_joined, "node:fs,fs/promises,1x");
    langtable_free(t);
}

/* plots is the python runner's: a built-in one goes with a runner the
 * operator changed, one the file sets for another runner is refused. */
static void test_plots_and_environment(void **state)
{
    (void)state;
    struct langtable *t = load_ok("{\"languages\": [{\"name\": \"python\", \"runner\": \"node\",\n"
                                  "  \"preload\": []}]}");
    assert_false(langtable_find(t, "python")->plots);
    langtable_free(t);
    bad("{\"languages\": [\n  {\"name\": \"python\",\n   \"runner\": \"node\", \"preload\": [],\n"
        "   \"plots\": true}\n]}",
        "test.json:4: ", "'plots' needs the python runner, not node");
    bad("{\"languages\": [\n  {\"name\": \"javascript\",\n   \"plots\": true}\n]}",
        "test.json:3: ", "'plots' needs the python runner, not node");
    t = load_ok("{\"languages\": [{\"name\": \"python\", \"plots\": false,\n"
                "  \"environment\": [\"MPLBACKEND=svg\"]},\n"
                " {\"name\": \"ruby\", \"environment\": [\"RUBYOPT=-W0\", \"_X=a=b\"]}]}");
    const struct langtable_lang *py = langtable_find(t, "python");
    assert_false(py->plots);
    const char *py_env[] = {"MPLBACKEND=svg", NULL};
    assert_argv(&py->environment, py_env);
    const char *rb_env[] = {"RUBYOPT=-W0", "_X=a=b", NULL};
    assert_argv(&langtable_find(t, "ruby")->environment, rb_env);
    langtable_free(t);
    t = load_ok("{\"languages\": [{\"name\": \"python\", \"environment\": []}]}");
    assert_int_equal(langtable_find(t, "python")->environment.n, 0);
    langtable_free(t);
}

/* --allow-network and --dry-run-create name languages of the table. */
static void test_configure_network_and_dry_run(void **state)
{
    (void)state;
    char *a1[] = {"d", "--allow-network", "JS,c++", "--dry-run-create", "ts", NULL};
    struct config cfg;
    options_load(&cfg, a1);
    struct err err = ERR_INIT;
    struct langtable *t = load_ok(NULL);
    if (langtable_configure(t, &cfg, &err) < 0)
        fail_msg("%s", err_msg(&err));
    /* Named by an alias, in any case. */
    assert_true(langtable_network(langtable_find(t, "javascript"), &cfg));
    assert_true(langtable_network(langtable_find(t, "cpp"), &cfg));
    assert_false(langtable_network(langtable_find(t, "python"), &cfg));
    assert_false(langtable_network(langtable_find(t, "typescript"), &cfg));
    langtable_free(t);

    /* A language whose table entry forbids it never gets one, even when
     * the operator's options name it (checked again at every run). */
    t = load_ok("{\"languages\": [{\"name\": \"javascript\", \"network_allowed\": false}]}");
    assert_false(langtable_network(langtable_find(t, "javascript"), &cfg));
    assert_true(langtable_network(langtable_find(t, "cpp"), &cfg));
    langtable_free(t);
    config_free(&cfg);

    char *b1[] = {"d", "--allow-network", "python,cobol", NULL};
    configure_bad(b1, NULL, "--allow-network", "'cobol'");
    /* A language the subset left out is not one of the table any more. */
    char *b2[] = {"d", "--languages", "python", "--allow-network", "ruby", NULL};
    configure_bad(b2, NULL, "--allow-network", "'ruby'");
    char *b3[] = {"d", "--allow-network", "rb", NULL};
    configure_bad(b3, "{\"languages\": [{\"name\": \"ruby\", \"network_allowed\": false}]}",
                  "--allow-network", "language 'ruby' never gets a network");
    /* A new language's default is no network. */
    char *b4[] = {"d", "--allow-network", "perl", NULL};
    configure_bad(b4, perl_file, "--allow-network", "network_allowed is false");

    char *b5[] = {"d", "--dry-run-create", "cobol", NULL};
    configure_bad(b5, NULL, "--dry-run-create", "'cobol'");
    char *b6[] = {"d", "--languages", "python", "--dry-run-create", "c", NULL};
    configure_bad(b6, NULL, "--dry-run-create", "'c'");
    char *ok[] = {"d", "--dry-run-create", "Ruby", NULL};
    t = configure_ok(ok, NULL);
    langtable_free(t);
}

/* ---- refused files ---------------------------------------------------------------- */

#define PERL_HEAD                                                                                  \
    "{\n"                                                                                          \
    "  \"languages\": [\n"                                                                         \
    "    {\n"                                                                                      \
    "      \"name\": \"perl\",\n"                                                                  \
    "      \"image\": \"mcp-sandboxd-perl:latest\",\n"                                             \
    "      \"source_file\": \"main.pl\",\n"                                                        \
    "      \"runner\": \"generic\",\n"
#define PERL_TAIL                                                                                  \
    "    }\n"                                                                                      \
    "  ]\n"                                                                                        \
    "}\n"

static void test_bad_json(void **state)
{
    (void)state;
    /* A bare word on line 7. */
    bad("{\n"
        "  \"languages\": [\n"
        "    {\n"
        "      \"name\": \"perl\",\n"
        "      \"image\": \"mcp-sandboxd-perl:latest\",\n"
        "      \"source_file\": \"main.pl\",\n"
        "      \"runner\": generic,\n"
        "      \"run\": [\"perl\", \"main.pl\"]\n" PERL_TAIL,
        "test.json:7: ", "not valid JSON");
    /* A missing comma at the end of line 8: json-c stops on line 9. */
    bad(PERL_HEAD "      \"run\": [\"perl\", \"main.pl\"]\n"
                  "      \"version\": [\"perl\", \"-v\"]\n" PERL_TAIL,
        "test.json:9: ", "not valid JSON");
    bad("{\n  \"languages\": [\n    {\"name\": \"perl\",\n", "test.json:4: ", "ends too early");
    bad("{\"languages\": []}\n}\n", "test.json:2: ", "not valid JSON");
    bad("", "test.json:1: ", "ends too early");
    bad("{\"languages\": [], // no comments\n}", "test.json:1: ", "not valid JSON");
    bad("[]", "test.json:1: ", "must be an object");
    bad("{\"languages\": []}\n{", "test.json:2: ", "not valid JSON");
    bad("{\"langs\": []}", "test.json:1: ", "unknown top-level key 'langs'");
    bad("{}", "test.json:1: ", "no \"languages\" array");
    bad("{\n\"languages\": {}}", "test.json:2: ", "must be an array");
    bad("{\"languages\": [],\n \"languages\": []}", "test.json:2: ", "appears twice");
    bad("{\"languages\": [\n\"perl\"]}", "test.json:2: ", "languages[0] must be an object");
    bad("{\"languages\": [],\n \"x\": 1,\n \"x\": 2}", "test.json:3: ", "appears twice");
    bad("{\"languages\": [],\n \"l\\u0061nguages\": []}", "test.json:2: ", "appears twice");
    bad("{\"languages\": [{\"name\": \"a\\u0000b\"}]}", "test.json:1: ", "\\u0000");
    bad("{\"languages\": [{\"name\": \"\xff\"}]}", "test.json:1: ", "not valid JSON");
    bad("{\"languages\": [[[[[[[[[[]]]]]]]]]]}", "test.json:1: ", "not valid JSON");
    /* Past the size cap. */
    size_t big = LANGTABLE_FILE_MAX_BYTES + 1;
    char *text = malloc(big);
    assert_non_null(text);
    memset(text, ' ', big);
    load_bad(text, big, "test.json: ", "larger than");
    free(text);
}

static void test_bad_entries(void **state)
{
    (void)state;
    const char *run = "      \"run\": [\"perl\", \"main.pl\"]\n";
    char buf[2048];
    /* Each case: extra lines inserted at line 8, before "run". */
    static const struct {
        const char *lines, *want, *needle;
    } cases[] = {
        {"      \"aliases\": [\"py\"],\n",
         "test.json:8: ", "alias 'py' is already taken by language 'python'"},
        {"      \"aliases\": [\"pl\", \"pl\"],\n", "test.json:8: ", "listed twice"},
        {"      \"aliases\": [\"perl\"],\n", "test.json:8: ", "repeats the name"},
        {"      \"colour\": \"blue\",\n", "test.json:8: ", "unknown key 'colour'"},
        {"      \"version\": \"perl -v\",\n",
         "test.json:8: ", "'version' must be an array of strings"},
        {"      \"version\": [],\n", "test.json:8: ", "'version' must not be empty"},
        {"      \"version\": [\"perl\", \"\"],\n", "test.json:8: ", "'version'[1]"},
        {"      \"version\": [\"perl\", 5],\n", "test.json:8: ", "'version'[1] must be a string"},
        {"      \"version\": [\"perl\\n\"],\n", "test.json:8: ", "not a command-line argument"},
        {"      \"pool_size\": 2.5,\n", "test.json:8: ", "'pool_size' must be an integer"},
        {"      \"pool_size\": 65,\n", "test.json:8: ", "'pool_size' must be in [0, 64]"},
        {"      \"network_allowed\": \"yes\",\n", "test.json:8: ", "must be true or false"},
        {"      \"compile_timeout_ms\": 5000,\n", "test.json:8: ", "without a compile step"},
        {"      \"compile\": [\"perlcc\", \"{source}\"],\n      \"compile_timeout_ms\": 50,\n",
         "test.json:9: ", "'compile_timeout_ms' must be in [100, 600000]"},
        {"      \"compile\": [\"perlcc\", \"{src}\"],\n",
         "test.json:8: ", "'{src}' is not a placeholder"},
        {"      \"preload\": [\"strict\"],\n",
         "test.json:8: ", "'preload' needs the python or node runner"},
        {"      \"packages\": [\"Perl\"],\n", "test.json:8: ", "not a Debian package name"},
        {"      \"image\": \"x:1\",\n", "test.json:8: ", "has a key twice"},
        {"      \"im\\u0061ge\": \"x:1\",\n", "test.json:8: ", "has a key twice"},
        {"      \"plots\": true,\n",
         "test.json:8: ", "'plots' needs the python runner, not generic"},
        {"      \"plots\": 1,\n", "test.json:8: ", "'plots' must be true or false"},
        {"      \"environment\": [\"A=1\", \"B\"],\n",
         "test.json:8: ", "'environment'[1]: \"B\" is not a variable (NAME=value"},
        {"      \"environment\": [\"1A=1\"],\n", "test.json:8: ", "is not a variable"},
        {"      \"environment\": [\"A-B=1\"],\n", "test.json:8: ", "is not a variable"},
        {"      \"environment\": [\"A=\\n\"],\n", "test.json:8: ", "is not a variable"},
        {"      \"environment\": [\"A=1\", \"A=2\"],\n",
         "test.json:8: ", "'environment' sets A twice"},
        {"      \"environment\": [\"HOME=/x\"],\n",
         "test.json:8: ", "'environment'[0]: HOME is set by the daemon itself"},
        {"      \"environment\": \"A=1\",\n", "test.json:8: ", "must be an array of strings"},
        {"      \"runtime\": \"run sc\",\n",
         "test.json:8: ", "'runtime': \"run sc\" is not a runtime name"},
        {"      \"runtime\": 1,\n", "test.json:8: ", "'runtime' must be a string"},
        {"      \"disabled\": 1,\n", "test.json:8: ", "must be true or false"},
        {"      \"disabled\": true,\n", "test.json:5: ", "a disabled language takes no other key"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(buf, sizeof(buf), PERL_HEAD "%s%s" PERL_TAIL, cases[i].lines, run);
        bad(buf, cases[i].want, cases[i].needle);
    }
    /* Missing keys: the entry's line. */
    bad("{\"languages\": [\n  {\"name\": \"perl\", \"image\": \"p:1\"}\n]}",
        "test.json:2: ", "language 'perl': 'source_file' is missing");
    bad("{\"languages\": [\n  {\"image\": \"p:1\"}\n]}",
        "test.json:2: ", "languages[0] has no 'name'");
    bad("{\"languages\": [\n  {\n    \"name\": \"per/l\"}\n]}",
        "test.json:3: ", "languages[0]: 'name': \"per/l\" is not a name");
    bad("{\"languages\": [\n  {\"name\": \"Perl\"}\n]}", "test.json:2: ", "is not a name");
    bad("{\"languages\": [\n  {\"name\": \"php\", \"disabled\": true},\n"
        "  {\"name\": \"php\", \"image\": \"p:1\"}\n]}",
        "test.json:3: ", "language 'php' is listed twice (line 2)");
    bad("{\"languages\": [\n  {\"name\": \"cobol\", \"disabled\": true}\n]}",
        "test.json:2: ", "disables a language that does not exist");
    bad("{\"languages\": [\n  {\"name\": \"python\", \"compile\": [\"cython\", \"{source}\"]}\n]}",
        "test.json:2: ", "'compile' needs the generic runner, not python");
    bad("{\"languages\": [\n  {\"name\": \"python\",\n   \"preload\": [\"os..path\"]}\n]}",
        "test.json:3: ", "not a python module name");
    bad("{\"languages\": [\n  {\"name\": \"python\",\n   \"aliases\": [\"a\", \"b\", \"c\", \"d\", "
        "\"e\", \"f\", \"g\", \"h\", \"i\"]}\n]}",
        "test.json:3: ", "more than 8 items");
    bad("{\"languages\": [\n  {\"name\": \"ruby\",\n   \"aliases\": [\"js\"]}\n]}",
        "test.json:3: ", "alias 'js' is already taken by language 'javascript'");
    /* Taken from a built-in language listed after it: still the file's line. */
    bad("{\"languages\": [\n  {\"name\": \"python\",\n   \"aliases\": [\"js\"]}\n]}",
        "test.json:3: ", "alias 'js' is already taken by language 'python'");
    bad("{\"languages\": [\n  {\"name\": \"python\",\n   \"image\": \"two words\"}\n]}",
        "test.json:3: ", "language 'python': 'image': \"two words\" is not an image name");
    bad("{\"languages\": [\n  {\"name\": \"python\",\n   \"source_file\": \"../x.py\"}\n]}",
        "test.json:3: ", "'source_file': \"../x.py\" is not a plain file name");
    bad("{\"languages\": [\n  {\"name\": \"python\",\n   \"source_file\": \".x.py\"}\n]}",
        "test.json:3: ", "is not a plain file name");
    bad("{\"languages\": [\n  {\"name\": \"python\",\n   \"runner\": \"perl\"}\n]}",
        "test.json:3: ", "'runner' must be \"python\", \"node\" or \"generic\"");
    /* A built-in value made wrong by an override: the override's line. */
    bad("{\"languages\": [\n  {\"name\": \"python\",\n   \"runner\": \"generic\"}\n]}",
        "test.json:3: ", "'preload' needs the python or node runner");
    bad("{\"languages\": [\n  {\"name\": \"c\",\n   \"runner\": \"node\"}\n]}",
        "test.json:3: ", "'compile' needs the generic runner, not node");
    /* Every language gone. */
    char all[1024];
    size_t k = (size_t)snprintf(all, sizeof(all), "{\"languages\": [\n");
    const char *names[] = {"python", "javascript", "typescript", "bash", "c", "cpp", "ruby", "php"};
    for (size_t i = 0; i < 8; i++)
        k +=
            (size_t)snprintf(all + k, sizeof(all) - k, "{\"name\": \"%s\", \"disabled\": true}%s\n",
                             names[i], i < 7 ? "," : "");
    snprintf(all + k, sizeof(all) - k, "]}");
    bad(all, "test.json:2: ", "no language is left");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtin),
        cmocka_unit_test(test_builtin_matches_today),
        cmocka_unit_test(test_lookup),
        cmocka_unit_test(test_add_perl_from_file),
        cmocka_unit_test(test_override),
        cmocka_unit_test(test_disable),
        cmocka_unit_test(test_bad_json),
        cmocka_unit_test(test_bad_entries),
        cmocka_unit_test(test_typecheck),
        cmocka_unit_test(test_typecheck_warm),
        cmocka_unit_test(test_configure_subset),
        cmocka_unit_test(test_configure_options),
        cmocka_unit_test(test_configure_network_and_dry_run),
        cmocka_unit_test(test_configure_runtimes),
        cmocka_unit_test(test_configure_preload_forms),
        cmocka_unit_test(test_plots_and_environment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
