/* libFuzzer harness for tool arguments, the part of a tools/call that the
 * client controls. The input is parsed as JSON (as jsonrpc_parse would);
 * when it is an object it goes to tools_parse_args for each run tool, once
 * with the default configuration and once with tight limits.
 *
 * Checks: a refusal always has a message; an accepted call has code within
 * max_code_bytes, the language of the tool, and a timeout and memory limit
 * inside the configured bounds, and variables (when given) within their cap
 * that the runner request accepts, and files (when given) within their
 * caps with normalized paths none inside another. Then the input bytes are used as a
 * program's stdout and stderr for tools_result, whose CallToolResult must
 * serialize to valid UTF-8 JSON whatever bytes the program wrote, with a
 * structuredContent valid against the served outputSchema. The same bytes
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
#include "sandbox/runner.h"
#include "sandbox/workpath.h"
#include "tools/languages.h"
#include "tools/schema.h"
#include "tools/tooldef.h"
#include "tools/tools.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);

static struct config cfg_default;
static struct config cfg_tight;
static json_object *output_schema;
static json_object *check_def; /* validate_code's definition, for its outputSchema */
static json_object *list_def;  /* list_languages' */
static struct tools_env env;   /* no backend: no probe, no thread */

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
    output_schema = tooldef_parse(tooldef_output_schema, strlen(tooldef_output_schema), NULL);
    CHECK(output_schema != NULL);
    check_def = tooldef_parse(tooldef_validate_code, strlen(tooldef_validate_code), NULL);
    CHECK(check_def != NULL);
    list_def = tooldef_parse(tooldef_list_languages, strlen(tooldef_list_languages), NULL);
    CHECK(list_def != NULL);
    CHECK(tools_env_init(&env, &cfg_default, NULL, NULL) == 0);
    return 0;
}

static void check_args(const struct config *cfg, const char *name, json_object *args)
{
    struct tools_run_args a;
    struct err err = ERR_INIT;
    if (tools_parse_args(cfg, name, args, &a, &err) < 0) {
        CHECK(err.msg != NULL);
        CHECK(err.code == ERR_INVALID || err.code == ERR_TOO_BIG);
        err_clear(&err);
        tools_run_args_release(&a);
        return;
    }
    CHECK(err.msg == NULL);
    CHECK(a.code != NULL);
    CHECK((long long)a.code_len <= cfg->max_code_bytes);
    CHECK(a.stdin_data != NULL || a.stdin_len == 0);
    CHECK((long long)a.stdin_len <= cfg->max_code_bytes);
    CHECK(a.timeout_ms >= 1 && a.timeout_ms <= cfg->max_timeout_ms);
    CHECK(a.memory_mb >= 16 && a.memory_mb <= cfg->max_memory_mb);
    if (strcmp(name, "run_python_code") == 0)
        CHECK(a.language == EXEC_PYTHON);
    else if (strcmp(name, "run_js_code") == 0)
        CHECK(a.language == EXEC_JAVASCRIPT);
    else
        CHECK(a.language == EXEC_PYTHON || a.language == EXEC_JAVASCRIPT);
    CHECK(a.check_only == (strcmp(name, "validate_code") == 0));
    CHECK((a.variables == NULL) == (a.variables_len == 0));
    CHECK((long long)a.variables_len <= cfg->max_variables_bytes);
    if (a.variables) {
        struct runner_request req = {.nonce_hex = "0123456789abcdef0123456789abcdef",
                                     .code = a.code,
                                     .code_len = a.code_len,
                                     .variables = a.variables,
                                     .variables_len = a.variables_len};
        struct buf out;
        buf_init(&out, (size_t)-1);
        CHECK(runner_encode_request(&req, &out, &err) == 0);
        buf_free(&out);
    }
    /* Files: within the caps, every path normal and allowed, none inside
     * another, contents decodable. */
    CHECK((long long)a.files.n_files <= cfg->max_files_in);
    long long total = 0;
    for (size_t i = 0; i < a.files.n_files; i++) {
        const struct runner_file *f = &a.files.files[i];
        char *norm = NULL;
        CHECK(workpath_normalize(f->path, strlen(f->path), &norm, NULL) == 0);
        CHECK(strcmp(norm, f->path) == 0);
        free(norm);
        for (size_t j = 0; j < i; j++)
            CHECK(!workpath_is_prefix(a.files.files[j].path, f->path) &&
                  !workpath_is_prefix(f->path, a.files.files[j].path));
        long long n = f->base64 ? codec_base64_decode(f->content, f->content_len, NULL)
                                : (long long)f->content_len;
        CHECK(n >= 0 && n <= cfg->max_file_in_bytes);
        CHECK(f->base64 || util_utf8_valid(f->content, f->content_len));
        total += n;
    }
    CHECK(total <= cfg->max_files_in_bytes);
    for (size_t i = 0; i < a.files.n_patterns; i++) {
        char *norm = NULL;
        CHECK(workpath_pattern(a.files.patterns[i], strlen(a.files.patterns[i]), &norm, NULL) == 0);
        CHECK(strcmp(norm, a.files.patterns[i]) == 0);
        free(norm);
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
    res.status = (enum exec_status)(sel % 6);
    res.has_exit_code = sel & 0x08;
    res.exit_code = (int)(sel >> 4) - 1;
    res.truncated = sel & 0x40;
    res.duration_ms = (double)size * 1.25;
    if (sel & 0x80)
        res.message = xstrndup((const char *)data, size < 64 ? size : 64);

    for (int structured = 0; structured < 2; structured++) {
        struct tools_features f = {.annotations = true, .structured = structured};
        json_object *r = tools_result(&res, (sel & 1) ? EXEC_JAVASCRIPT : EXEC_PYTHON, &f, NULL);
        CHECK(r != NULL);
        json_object *v = NULL;
        CHECK(json_object_object_get_ex(r, "isError", &v) &&
              json_object_is_type(v, json_type_boolean));
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
        if (jsonrpc_parse(s, len, &again, &err) < 0) {
            fprintf(stderr, "result does not parse again (%s)\n", err_msg(&err));
            abort();
        }
        json_object_put(again);
        json_object_put(r);
    }

    /* The same bytes as a syntax check's message and position. */
    res.check.present = sel & 0x20;
    res.check.ok = sel & 0x10;
    res.check.line = (int)(sel & 0x03);
    res.check.column = (int)((sel >> 2) & 0x03);
    res.check.message = res.check.ok ? NULL : xstrndup((const char *)data, size);
    json_object *schema = NULL;
    CHECK(json_object_object_get_ex(check_def, "outputSchema", &schema));
    struct tools_features f = {.annotations = true, .structured = true};
    json_object *r = tools_check_result(&res, (sel & 1) ? EXEC_JAVASCRIPT : EXEC_PYTHON, &f);
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

static void check_list_languages(json_object *args)
{
    struct tools_features f = {.annotations = true, .structured = true};
    json_object *r = tools_call(&env, "list_languages", args, &f, NULL, NULL, NULL);
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
    static const char *const names[] = {"run_python_code", "run_js_code", "execute_code",
                                        "validate_code"};

    if (size <= (size_t)INT32_MAX) {
        json_tokener *tok = json_tokener_new_ex(JSONRPC_MAX_DEPTH);
        CHECK(tok != NULL);
        json_object *obj = json_tokener_parse_ex(tok, (const char *)data, (int)size);
        if (json_tokener_get_error(tok) == json_tokener_success &&
            json_object_is_type(obj, json_type_object)) {
            for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
                check_args(&cfg_default, names[i], obj);
                check_args(&cfg_tight, names[i], obj);
            }
            check_list_languages(obj);
        }
        json_object_put(obj);
        json_tokener_free(tok);
    }
    check_result(data, size);
    check_probe(data, size);
    return 0;
}
