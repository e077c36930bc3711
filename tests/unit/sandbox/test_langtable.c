#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/config.h"
#include "sandbox/langtable.h"

static struct langtable *load_ok(const char *text)
{
    struct langtable *t = NULL;
    struct err err = ERR_INIT;
    if (langtable_load_text(text, text ? strlen(text) : 0, "test.json", &t, &err) < 0)
        fail_msg("refused: %s", err_msg(&err));
    assert_non_null(t);
    return t;
}

/* The file's bytes must be refused with a message starting with want
 * ("test.json:7: ") and holding needle. */
static void load_bad(const char *text, size_t len, const char *want, const char *needle)
{
    struct langtable *t = NULL;
    struct err err = ERR_INIT;
    if (langtable_load_text(text, len, "test.json", &t, &err) == 0) {
        langtable_free(t);
        fail_msg("accepted: %s", text);
    }
    assert_null(t);
    const char *msg = err_msg(&err);
    if (strncmp(msg, want, strlen(want)) != 0 || !strstr(msg, needle))
        fail_msg("message '%s' does not start with '%s' and mention '%s'", msg, want, needle);
    err_clear(&err);
}

static void bad(const char *text, const char *want, const char *needle)
{
    load_bad(text, strlen(text), want, needle);
}

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
        bool compiles;
        long long pool;
    } want[] = {
        {"python", "mcp-sandboxd-python:latest", "main.py", "python", "python3", "python3", false,
         2},
        {"javascript", "mcp-sandboxd-node:latest", "main.js", "node", "node", "node", false, 2},
        {"typescript", "mcp-sandboxd-node:latest", "main.ts", "generic", "node", "esbuild", true,
         1},
        {"bash", "mcp-sandboxd-bash:latest", "main.sh", "generic", "bash", "bash", false, 1},
        {"c", "mcp-sandboxd-c:latest", "main.c", "generic", "./main", "gcc", true, 1},
        {"cpp", "mcp-sandboxd-cpp:latest", "main.cpp", "generic", "./main", "g++", true, 1},
        {"ruby", "mcp-sandboxd-ruby:latest", "main.rb", "generic", "ruby", "ruby", false, 1},
        {"php", "mcp-sandboxd-php:latest", "main.php", "generic", "php", "php", false, 1},
    };
    struct langtable *t = load_ok(NULL);
    assert_int_equal(langtable_count(t), 8);
    for (size_t i = 0; i < 8; i++) {
        const struct langtable_lang *l = langtable_get(t, i);
        assert_string_equal(l->name, want[i].name);
        assert_string_equal(l->image, want[i].image);
        assert_string_equal(l->source_file, want[i].source);
        assert_string_equal(langtable_runner_name(l->runner), want[i].runner);
        assert_string_equal(l->run.v[0], want[i].run0);
        assert_string_equal(l->version.v[0], want[i].version0);
        assert_int_equal(l->compile.n > 0, want[i].compiles);
        assert_true(want[i].compiles ? l->compile_timeout_ms >= LANGTABLE_COMPILE_TIMEOUT_MIN_MS
                                     : l->compile_timeout_ms == 0);
        assert_int_equal(l->pool_size, want[i].pool);
        assert_true(l->network_allowed);
        assert_true(l->packages.n > 0);
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

/* Python and JavaScript as the daemon runs them today (exec.c's commands,
 * config.c's defaults). */
static void test_builtin_matches_today(void **state)
{
    (void)state;
    struct config cfg;
    config_init(&cfg);
    struct langtable *t = load_ok(NULL);
    const struct langtable_lang *py = langtable_find(t, "python");
    const struct langtable_lang *js = langtable_find(t, "javascript");
    assert_string_equal(py->image, cfg.python_image);
    assert_string_equal(js->image, cfg.js_image);
    assert_string_equal(py->preload_joined, cfg.python_preload);
    assert_string_equal(js->preload_joined, cfg.js_preload);
    assert_int_equal(py->pool_size, cfg.pool_size);
    assert_int_equal(js->pool_size, cfg.pool_size);
    assert_int_equal(py->runner, LANGTABLE_RUNNER_PYTHON);
    assert_int_equal(js->runner, LANGTABLE_RUNNER_NODE);
    const char *py_run[] = {"python3", "-u", "-B", NULL};
    const char *js_run[] = {"node", NULL};
    assert_argv(&py->run, py_run);
    assert_argv(&js->run, js_run);
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
    bad("{\"languages\": [\n\"perl\"]}", "test.json:", "languages[0] must be an object");
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
        cmocka_unit_test(test_builtin),  cmocka_unit_test(test_builtin_matches_today),
        cmocka_unit_test(test_lookup),   cmocka_unit_test(test_add_perl_from_file),
        cmocka_unit_test(test_override), cmocka_unit_test(test_disable),
        cmocka_unit_test(test_bad_json), cmocka_unit_test(test_bad_entries),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
