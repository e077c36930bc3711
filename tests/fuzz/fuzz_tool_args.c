/* libFuzzer harness for tool arguments, the part of a tools/call that the
 * client controls. The input is parsed as JSON (as jsonrpc_parse would);
 * when it is an object it goes to tools_parse_args for each run tool, once
 * with the default configuration and once with tight limits.
 *
 * Checks: a refusal always has a message; an accepted call has code within
 * max_code_bytes, the language of the tool (for execute_code one of the
 * built-in table's, named or aliased; validate_code python or
 * javascript), and a timeout and memory limit inside the configured
 * bounds, typecheck_blocks only from execute_code, and variables (when
 * given) within their cap, named as the language allows, that the runner
 * request accepts, and files (when given) within their
 * caps with normalized paths none inside another, and an egress list
 * only for a language with one (python under the tight configuration),
 * never for a check, each of its patterns allowed by the language's, and
 * packages only for a language with an installer, never for a check, each
 * requirement its own canonical text, kept for the session only by
 * install_packages (refused here: no backend). Then the input bytes are used
 * as a program's stdout and stderr for tools_result (any status, compile_error too, and any
 * language of the table), whose CallToolResult must serialize to valid UTF-8 JSON whatever bytes
 * the program wrote, with a structuredContent valid against the served outputSchema (with a
 * packages report made of the bytes too, which install_packages' result must also take). The
 * bytes are
 * also a version command's output (languages_version_from_text): refused,
 * or a probe answer the probe parser takes back. The same bytes
 * are a language probe's output (languages_parse_probe): refused, or every
 * accepted string within its cap and charset; and the object's arguments
 * go to list_languages, whose answer must be valid against its own
 * outputSchema, or an invalid-arguments result for any argument at all.
 *
 * Replay one input: build/fuzz/fuzz_tool_args FILE */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/codec.h"
#include "fuzz.h"
#include "mcp/jsonrpc.h"
#include "sandbox/runner/runner.h"
#include "sandbox/output/workpath.h"
#include "tools/languages.h"
#include "tools/schema.h"
#include "tools/session_tools.h"
#include "tools/tooldef.h"
#include "tools/tools.h"
#include "tools/variables.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);

static struct config cfg_default;
static struct config cfg_tight;
static json_object *output_schema; /* execute_code's, as tools/list serves it */
static json_object *check_def;     /* validate_code's definition, for its outputSchema */
static json_object *list_def;      /* list_languages' */
static json_object *install_def;   /* install_packages' */
static struct tools_env env;       /* no backend: no probe, no thread */
static struct tools_env env_tight; /* the built-in table under cfg_tight */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    config_init(&cfg_default);
    config_init(&cfg_tight);
    cfg_tight.max_code_bytes = 16;
    cfg_tight.timeout_ms = 500;
    cfg_tight.max_timeout_ms = 1000;
    cfg_tight.memory_mb = 32;
    cfg_tight.max_memory_mb = 64;
    cfg_tight.max_variables_bytes = 32;
    cfg_tight.max_files_in = 2;
    cfg_tight.max_file_in_bytes = 8;
    cfg_tight.max_files_in_bytes = 12;
    /* Python with an egress list for a call to narrow. */
    cfg_tight.egress.items = xrealloc(cfg_tight.egress.items, 2 * sizeof(char *));
    cfg_tight.egress.items[0] = xstrdup("python=pypi.org,*.pythonhosted.org:443,10.0.0.1:8080");
    cfg_tight.egress.items[1] = NULL;
    cfg_tight.egress.n = 1;
    /* The built-in table, configured by cfg_default (tools_env_init). */
    CHECK(tools_env_init(&env, &cfg_default, NULL, NULL, NULL) == 0);
    CHECK(langtable_count(env.langs) >= 2);
    /* Its own table: the built-in one configured by cfg_tight. */
    CHECK(tools_env_init(&env_tight, &cfg_tight, NULL, NULL, NULL) == 0);
    CHECK(langtable_find(env_tight.langs, "python")->egress != NULL);
    struct tools_features modern = {.annotations = true, .structured = true};
    size_t len = 0;
    json_object *list = json_tokener_parse(tools_list_json(&env, &modern, &len));
    CHECK(list != NULL);
    for (size_t i = 0; i < json_object_array_length(list); i++) {
        json_object *t = json_object_array_get_idx(list, i);
        json_object *name = NULL;
        if (json_object_object_get_ex(t, "name", &name) &&
            strcmp(json_object_get_string(name), "execute_code") == 0)
            CHECK(json_object_object_get_ex(t, "outputSchema", &output_schema));
    }
    CHECK(output_schema != NULL);
    json_object_get(output_schema);
    json_object_put(list);
    check_def = tooldef_parse(tooldef_validate_code, strlen(tooldef_validate_code), NULL);
    CHECK(check_def != NULL);
    list_def = tooldef_parse(tooldef_list_languages, strlen(tooldef_list_languages), NULL);
    CHECK(list_def != NULL);
    install_def = tooldef_parse(tooldef_install_packages, strlen(tooldef_install_packages), NULL);
    CHECK(install_def != NULL);
    return 0;
}

static void check_args(const struct tools_env *e, const char *name, json_object *args)
{
    struct tools_run_args a;
    struct err err = ERR_INIT;
    const struct config *cfg = e->cfg;
    const struct langtable *langs = e->langs;
    if (tools_parse_args(e, tools_find(name), args, NULL, &a, &err) < 0) {
        CHECK(err.msg != NULL);
        CHECK(err.code == ERR_INVALID || err.code == ERR_TOO_BIG);
        err_clear(&err);
        tools_run_args_release(&a);
        return;
    }
    CHECK(err.msg == NULL);
    CHECK(a.run.code != NULL);
    CHECK((long long)a.run.code_len <= cfg->max_code_bytes);
    CHECK(a.run.stdin_data != NULL || a.run.stdin_len == 0);
    CHECK((long long)a.run.stdin_len <= cfg->max_code_bytes);
    CHECK(a.run.timeout_ms >= 1 && a.run.timeout_ms <= cfg->max_timeout_ms);
    CHECK(a.run.memory_mb >= 16 && a.run.memory_mb <= cfg->max_memory_mb);
    const struct langtable_lang *py = langtable_find(langs, "python");
    const struct langtable_lang *js = langtable_find(langs, "javascript");
    CHECK(a.run.language != NULL);
    CHECK(langtable_get(langs, a.run.language->index) == a.run.language);
    if (strcmp(name, "run_python_code") == 0)
        CHECK(a.run.language == py);
    else if (strcmp(name, "run_js_code") == 0)
        CHECK(a.run.language == js);
    else if (strcmp(name, "validate_code") == 0)
        CHECK(a.run.language == py || a.run.language == js);
    /* The language argument, a name or an alias, is the language taken. */
    json_object *given = NULL;
    if (json_object_object_get_ex(args, "language", &given))
        CHECK(langtable_find(langs, json_object_get_string(given)) == a.run.language);
    CHECK(a.run.check_only == (strcmp(name, "validate_code") == 0));
    CHECK(!a.run.typecheck_blocks || strcmp(name, "execute_code") == 0);
    if (a.run.variables) {
        json_object *vars = json_tokener_parse(a.run.variables);
        CHECK(json_object_is_type(vars, json_type_object));
        json_object_object_foreach(vars, vname, vvalue)
        {
            (void)vvalue;
            const char *why = NULL;
            CHECK(variables_name_ok(a.run.language, vname, &why));
        }
        json_object_put(vars);
    }
    CHECK((a.run.variables == NULL) == (a.run.variables_len == 0));
    CHECK((long long)a.run.variables_len <= cfg->max_variables_bytes);
    if (a.run.variables) {
        struct runner_request req = {.nonce_hex = "0123456789abcdef0123456789abcdef",
                                     .code = a.run.code,
                                     .code_len = a.run.code_len,
                                     .variables = a.run.variables,
                                     .variables_len = a.run.variables_len};
        struct buf out;
        buf_init(&out, (size_t)-1);
        CHECK(runner_encode_request(&req, &out, &err) == 0);
        buf_free(&out);
    }
    /* Files: within the caps, every path normal and allowed, none inside
     * another, contents decodable. */
    CHECK((long long)a.run.n_files <= cfg->max_files_in);
    long long total = 0;
    for (size_t i = 0; i < a.run.n_files; i++) {
        const struct runner_file *f = &a.run.files[i];
        char *norm = NULL;
        CHECK(workpath_normalize(f->path, strlen(f->path), &norm, NULL) == 0);
        CHECK(strcmp(norm, f->path) == 0);
        free(norm);
        for (size_t j = 0; j < i; j++)
            CHECK(!workpath_is_prefix(a.run.files[j].path, f->path) &&
                  !workpath_is_prefix(f->path, a.run.files[j].path));
        long long n = f->base64 ? codec_base64_decode(f->content, f->content_len, NULL)
                                : (long long)f->content_len;
        CHECK(n >= 0 && n <= cfg->max_file_in_bytes);
        CHECK(f->base64 || util_utf8_valid(f->content, f->content_len));
        total += n;
    }
    CHECK(total <= cfg->max_files_in_bytes);
    for (size_t i = 0; i < a.run.n_patterns; i++) {
        char *norm = NULL;
        CHECK(workpath_pattern(a.run.patterns[i], strlen(a.run.patterns[i]), &norm, NULL) == 0);
        CHECK(strcmp(norm, a.run.patterns[i]) == 0);
        free(norm);
    }
    /* Egress: the run's own non-empty copy, each pattern one the
     * language's list allows. */
    const struct egress_patterns *base = a.run.language->egress;
    CHECK(!a.run.egress || (base && !a.run.check_only && a.run.egress != base));
    for (size_t i = 0; a.run.egress && i < a.run.egress->n; i++) {
        static struct egress_patterns one;
        one.n = 1;
        one.items[0] = a.run.egress->items[i];
        CHECK(egress_patterns_narrow(base, &one, &one, NULL) == 0);
    }
    CHECK(!a.run.egress || a.run.egress->n >= 1);
    /* Packages: only where the language installs, each requirement its
     * own canonical text (it parses again to itself), kept only by
     * install_packages. */
    const struct reqs_list *pk = a.run.packages;
    CHECK(!pk || (a.run.language->packages && !a.run.check_only));
    CHECK(!pk || (pk->n >= 1 && pk->n <= REQS_MAX_COUNT &&
                  pk->installer == a.run.language->packages->installer));
    CHECK(a.run.packages_stay == (strcmp(name, "install_packages") == 0));
    for (size_t i = 0; pk && i < pk->n; i++) {
        struct reqs_item again;
        CHECK(reqs_parse_one(pk->installer, pk->v[i].text, strlen(pk->v[i].text), &again, NULL) ==
              0);
        CHECK(strcmp(again.text, pk->v[i].text) == 0 && strcmp(again.name, pk->v[i].name) == 0);
        CHECK(i == 0 || strcmp(pk->v[i - 1].name, pk->v[i].name) < 0);
        reqs_item_free(&again);
    }
    tools_run_args_release(&a);
}

/* Program output is arbitrary bytes; the result built from it must still
 * be one line of valid UTF-8 JSON. */
static void check_result(const uint8_t *data, size_t size)
{
    struct exec_result res;
    exec_result_init(&res);
    buf_init(&res.out, size);
    buf_init(&res.err, size);
    size_t half = size / 2;
    unsigned char sel = size ? data[0] : 0;
    CHECK(buf_add(&res.out, data, half) == 0);
    CHECK(buf_add(&res.err, data + half, size - half) == 0);
    static const enum exec_status statuses[] = {
        EXEC_OK,           EXEC_ERROR,     EXEC_TIMEOUT,      EXEC_OOM,
        EXEC_OUTPUT_LIMIT, EXEC_CANCELLED, EXEC_COMPILE_ERROR};
    res.status = statuses[sel % ARRAY_SIZE(statuses)];
    /* Any language of the table ran it. */
    size_t n_langs = langtable_count(env.langs);
    const struct langtable_lang *lang =
        langtable_get(env.langs, size > 1 ? data[size - 1] % n_langs : sel % n_langs);
    const struct langtable_lang *checked =
        langtable_find(env.langs, (sel & 1) ? "javascript" : "python");
    res.has_exit_code = sel & 0x08;
    res.exit_code = (int)(sel >> 4) - 1;
    res.truncated = sel & 0x40;
    res.duration_ms = (double)size * 1.25;
    if (sel & 0x80)
        res.message = xstrndup((const char *)data, size < 64 ? size : 64);
    /* A packages report whose names and versions are the bytes (an
     * installer's set is the sandbox's writing). */
    if (size > 1 && (data[1] & 1)) {
        struct packages_report *pr = xcalloc(1, sizeof(*pr));
        pr->n = (size_t)(data[1] >> 1) % 4;
        pr->items = xcalloc(pr->n ? pr->n : 1, sizeof(*pr->items));
        for (size_t i = 0; i < pr->n; i++) {
            pr->items[i].name = xstrndup((const char *)data, size < 300 ? size : 300);
            pr->items[i].version =
                (i & 1) ? NULL : xstrndup((const char *)data + half, size - half);
        }
        pr->cached = data[1] & 0x80;
        pr->ms = (double)size * 37.7;
        res.packages = pr;
    }

    for (int structured = 0; structured < 2; structured++) {
        struct tools_features f = {.annotations = true, .structured = structured};
        json_object *r = tools_result(&res, lang, &f, NULL);
        CHECK(r != NULL);
        json_object *v = NULL;
        CHECK(json_object_object_get_ex(r, "isError", &v) &&
              json_object_is_type(v, json_type_boolean));
        CHECK(res.status == EXEC_OK || json_object_get_boolean(v));
        CHECK(json_object_object_get_ex(r, "content", &v) &&
              json_object_is_type(v, json_type_array) && json_object_array_length(v) >= 1);
        if (structured) {
            struct err err = ERR_INIT;
            CHECK(json_object_object_get_ex(r, "structuredContent", &v));
            if (schema_validate(output_schema, v, 0, &err) < 0) {
                fprintf(stderr, "structuredContent against outputSchema: %s\n", err_msg(&err));
                abort();
            }
        }
        size_t len = 0;
        const char *s = jsonrpc_serialize(r, &len);
        CHECK(util_utf8_valid(s, len));
        CHECK(memchr(s, '\n', len) == NULL);
        json_object *again = NULL;
        struct err err = ERR_INIT;
        if (jsonrpc_parse(s, len, JSONRPC_PARSE_BUDGET(len), &again, &err) < 0) {
            fprintf(stderr, "result does not parse again (%s)\n", err_msg(&err));
            abort();
        }
        json_object_put(again);
        json_object_put(r);
    }

    /* The same run as install_packages' result. */
    struct tools_features modern = {.annotations = true, .structured = true};
    json_object *ir = sessions_install_result(&res, "0123456789abcdef0123456789abcdef", &modern);
    json_object *isc = NULL, *ischema = NULL;
    CHECK(json_object_object_get_ex(ir, "structuredContent", &isc));
    CHECK(json_object_object_get_ex(install_def, "outputSchema", &ischema));
    struct err ierr = ERR_INIT;
    if (schema_validate(ischema, isc, 0, &ierr) < 0) {
        fprintf(stderr, "install_packages against its outputSchema: %s\n", err_msg(&ierr));
        abort();
    }
    size_t ilen = 0;
    const char *is = jsonrpc_serialize(ir, &ilen);
    CHECK(util_utf8_valid(is, ilen));
    json_object_put(ir);

    /* The same bytes as a syntax check's message and position. */
    res.check.present = sel & 0x20;
    res.check.ok = sel & 0x10;
    res.check.line = (int)(sel & 0x03);
    res.check.column = (int)((sel >> 2) & 0x03);
    res.check.message = res.check.ok ? NULL : xstrndup((const char *)data, size);
    json_object *schema = NULL;
    CHECK(json_object_object_get_ex(check_def, "outputSchema", &schema));
    struct tools_features f = {.annotations = true, .structured = true};
    json_object *r = tools_check_result(&res, checked, &f);
    json_object *v = NULL;
    CHECK(json_object_object_get_ex(r, "isError", &v));
    bool failed = json_object_get_boolean(v);
    CHECK(failed == (res.status != EXEC_OK || !res.check.present));
    CHECK(json_object_object_get_ex(r, "structuredContent", &v) == !failed);
    struct err err = ERR_INIT;
    if (!failed && schema_validate(schema, v, 0, &err) < 0) {
        fprintf(stderr, "check structuredContent against its outputSchema: %s\n", err_msg(&err));
        abort();
    }
    size_t len = 0;
    const char *s = jsonrpc_serialize(r, &len);
    CHECK(util_utf8_valid(s, len));
    json_object_put(r);
    exec_result_free(&res);
}

static bool charset(const char *s, const char *extra)
{
    for (; *s; s++)
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
              strchr(extra, *s)))
            return false;
    return true;
}

static void check_probe(const uint8_t *data, size_t size)
{
    struct languages_report r;
    struct err err = ERR_INIT;
    if (languages_parse_probe((const char *)data, size, &r, &err) < 0) {
        CHECK(err.msg != NULL);
        CHECK(r.version[0] == '\0' && r.n_packages == 0);
        err_clear(&err);
        return;
    }
    CHECK(r.version[0] != '\0' && charset(r.version, ".+~_-"));
    CHECK(r.n_packages <= LANGUAGES_MAX_PACKAGES);
    for (size_t i = 0; i < r.n_packages; i++)
        CHECK(r.packages[i].name[0] && charset(r.packages[i].name, "._-") &&
              charset(r.packages[i].version, ".+~_-"));
}

/* The same bytes as a generic language's version command output. */
static void check_version_text(const uint8_t *data, size_t size)
{
    struct buf out;
    buf_init(&out, LANGUAGES_PROBE_MAX_BYTES);
    struct err err = ERR_INIT;
    if (languages_version_from_text((const char *)data, size, &out, &err) < 0) {
        CHECK(err.msg != NULL);
        err_clear(&err);
        buf_free(&out);
        return;
    }
    struct languages_report r;
    if (languages_parse_probe(out.data, out.len, &r, &err) < 0) {
        fprintf(stderr, "version text gave a probe answer the parser refuses (%s): %.*s\n",
                err_msg(&err), (int)out.len, out.data);
        abort();
    }
    CHECK(r.version[0] >= '0' && r.version[0] <= '9');
    /* (Not checked: that it holds a dot. "7." gives "7" today, the dot
     * being counted before the trailing punctuation is dropped.) */
    CHECK(r.n_packages == 0);
    /* The version is bytes of the text, as they were. */
    CHECK(memmem(data, size, r.version, strlen(r.version)) != NULL);
    buf_free(&out);
}

static void check_list_languages(json_object *args)
{
    struct tools_features f = {.annotations = true, .structured = true};
    json_object *r = tools_call(&env, tools_find("list_languages"), args, NULL, &f);
    json_object *v = NULL;
    CHECK(json_object_object_get_ex(r, "isError", &v));
    bool failed = json_object_get_boolean(v);
    CHECK(failed == (json_object_object_length(args) > 0));
    CHECK(json_object_object_get_ex(r, "structuredContent", &v) == !failed);
    json_object *schema = NULL;
    CHECK(json_object_object_get_ex(list_def, "outputSchema", &schema));
    struct err err = ERR_INIT;
    if (!failed && schema_validate(schema, v, 0, &err) < 0) {
        fprintf(stderr, "list_languages against its outputSchema: %s\n", err_msg(&err));
        abort();
    }
    size_t len = 0;
    const char *s = jsonrpc_serialize(r, &len);
    CHECK(util_utf8_valid(s, len));
    json_object_put(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* create_session and install_packages too: with no backend, refused
     * (sessions are off). */
    static const char *const names[] = {"run_python_code", "run_js_code",    "execute_code",
                                        "validate_code",   "create_session", "install_packages"};

    if (size <= (size_t)INT32_MAX) {
        json_tokener *tok = json_tokener_new_ex(JSONRPC_MAX_DEPTH);
        CHECK(tok != NULL);
        json_object *obj = json_tokener_parse_ex(tok, (const char *)data, (int)size);
        if (json_tokener_get_error(tok) == json_tokener_success &&
            json_object_is_type(obj, json_type_object)) {
            for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
                check_args(&env, names[i], obj);
                check_args(&env_tight, names[i], obj);
            }
            check_list_languages(obj);
        }
        json_object_put(obj);
        json_tokener_free(tok);
    }
    check_result(data, size);
    check_probe(data, size);
    check_version_text(data, size);
    return 0;
}
