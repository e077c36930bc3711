#include "tools/tools.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"

#define MIN_MEMORY_MB 16

enum tool_kind { TOOL_PYTHON, TOOL_JAVASCRIPT, TOOL_EXECUTE };

struct tool_def {
    const char *name;
    const char *title;
    const char *description;
    const char *input_schema;
    enum tool_kind kind;
    const char *const *keys; /* the input schema's properties, NULL-terminated */
};

#define CODE_SCHEMA_PY                                                                             \
    "{\"type\":\"object\",\"properties\":{\"code\":{\"type\":\"string\",\"description\":"          \
    "\"Python 3 source to run as the main program.\"}},\"required\":[\"code\"],"                   \
    "\"additionalProperties\":false}"
#define CODE_SCHEMA_JS                                                                             \
    "{\"type\":\"object\",\"properties\":{\"code\":{\"type\":\"string\",\"description\":"          \
    "\"JavaScript (Node.js) source to run as the main module; CommonJS or ES module syntax.\"}},"  \
    "\"required\":[\"code\"],\"additionalProperties\":false}"
#define EXECUTE_SCHEMA                                                                             \
    "{\"type\":\"object\",\"properties\":{"                                                        \
    "\"language\":{\"type\":\"string\",\"enum\":[\"python\",\"javascript\"],"                      \
    "\"description\":\"Language of the code.\"},"                                                  \
    "\"code\":{\"type\":\"string\",\"description\":\"Source to run as the main program.\"},"       \
    "\"stdin\":{\"type\":\"string\",\"description\":\"Text given to the program on standard "      \
    "input (then end of file).\"},"                                                                \
    "\"timeout_ms\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"Wall-clock limit in "    \
    "milliseconds; capped by the server's maximum.\"},"                                            \
    "\"memory_mb\":{\"type\":\"integer\",\"minimum\":16,\"description\":\"Memory limit in MiB; "   \
    "capped by the server's maximum.\"}},"                                                         \
    "\"required\":[\"language\",\"code\"],\"additionalProperties\":false}"

#define OUTPUT_SCHEMA                                                                              \
    "{\"type\":\"object\",\"properties\":{"                                                        \
    "\"status\":{\"type\":\"string\",\"enum\":[\"ok\",\"error\",\"timeout\",\"oom\","              \
    "\"output_limit\",\"cancelled\",\"busy\"]},"                                                   \
    "\"exit_code\":{\"type\":[\"integer\",\"null\"]},"                                             \
    "\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"},"                           \
    "\"duration_ms\":{\"type\":\"number\"},\"truncated\":{\"type\":\"boolean\"},"                  \
    "\"language\":{\"type\":\"string\",\"enum\":[\"python\",\"javascript\"]},"                     \
    "\"message\":{\"type\":\"string\"}},"                                                          \
    "\"required\":[\"status\",\"exit_code\",\"stdout\",\"stderr\",\"duration_ms\","                \
    "\"truncated\",\"language\"]}"

#define SANDBOX_NOTE                                                                               \
    " Each call runs in a fresh, isolated container with no network access; the working "          \
    "directory /tmp is writable and discarded afterwards. Returns stdout, stderr, the exit code "  \
    "and a status (ok, error, timeout, oom, output_limit, cancelled)."

static const char *const code_keys[] = {"code", NULL};
static const char *const execute_keys[] = {"language",   "code",      "stdin",
                                           "timeout_ms", "memory_mb", NULL};

static const struct tool_def tools[] = {
    {"run_python_code", "Run Python code",
     "Run Python 3 code and return its output. Print what you want to see. numpy, pandas, "
     "scipy, sympy, matplotlib (Agg backend) and requests are installed." SANDBOX_NOTE,
     CODE_SCHEMA_PY, TOOL_PYTHON, code_keys},
    {"run_js_code", "Run JavaScript code",
     "Run JavaScript with Node.js and return its output. Use console.log to print; "
     "CommonJS require and ES module import of Node's built-in modules both work." SANDBOX_NOTE,
     CODE_SCHEMA_JS, TOOL_JAVASCRIPT, code_keys},
    {"execute_code", "Execute code",
     "Run Python or JavaScript code with optional stdin and per-call time and memory limits "
     "(capped by the server's maximums)." SANDBOX_NOTE,
     EXECUTE_SCHEMA, TOOL_EXECUTE, execute_keys},
};

static const struct tool_def *find_tool(const char *name)
{
    for (size_t i = 0; i < ARRAY_SIZE(tools); i++)
        if (strcmp(tools[i].name, name) == 0)
            return &tools[i];
    return NULL;
}

bool tools_exists(const char *name)
{
    return find_tool(name) != NULL;
}

/* One Tool object; schemas are parsed from their texts here, so a bad
 * built-in schema fails tools_env_init, never a request. */
static int tool_json(const struct tool_def *t, const struct config *cfg,
                     const struct tools_features *f, json_object **out, struct err *err)
{
    json_object *schema = json_tokener_parse(t->input_schema);
    json_object *output = f->structured ? json_tokener_parse(OUTPUT_SCHEMA) : NULL;
    if (!schema || (f->structured && !output)) {
        json_object_put(schema);
        json_object_put(output);
        return err_set(err, ERR_INTERNAL, "bad built-in schema for %s", t->name);
    }
    json_object *o = json_object_new_object();
    json_object_object_add(o, "name", json_object_new_string(t->name));
    if (f->structured)
        json_object_object_add(o, "title", json_object_new_string(t->title));
    char *desc = xasprintf("%s Default limits: %lld ms, %lld MiB memory (at most %lld ms, "
                           "%lld MiB); output kept up to %lld bytes.",
                           t->description, cfg->timeout_ms, cfg->memory_mb, cfg->max_timeout_ms,
                           cfg->max_memory_mb, cfg->max_output_bytes);
    json_object_object_add(o, "description", json_object_new_string(desc));
    free(desc);
    json_object_object_add(o, "inputSchema", schema);
    if (output)
        json_object_object_add(o, "outputSchema", output);
    if (f->annotations) {
        json_object *a = json_object_new_object();
        json_object_object_add(a, "title", json_object_new_string(t->title));
        json_object_object_add(a, "readOnlyHint", json_object_new_boolean(0));
        json_object_object_add(a, "destructiveHint", json_object_new_boolean(0));
        json_object_object_add(a, "idempotentHint", json_object_new_boolean(0));
        /* Sandboxes have no network. */
        json_object_object_add(a, "openWorldHint", json_object_new_boolean(0));
        json_object_object_add(o, "annotations", a);
    }
    *out = o;
    return 0;
}

static size_t variant_of(const struct tools_features *f)
{
    return (f->annotations ? 1u : 0u) | (f->structured ? 2u : 0u);
}

int tools_env_init(struct tools_env *env, const struct config *cfg, struct exec_ctx *exec,
                   struct err *err)
{
    memset(env, 0, sizeof(*env));
    env->cfg = cfg;
    env->exec = exec;
    for (size_t v = 0; v < TOOLS_VARIANTS; v++) {
        struct tools_features f = {.annotations = (v & 1u) != 0, .structured = (v & 2u) != 0};
        json_object *arr = json_object_new_array();
        for (size_t i = 0; i < ARRAY_SIZE(tools); i++) {
            json_object *o = NULL;
            if (tool_json(&tools[i], cfg, &f, &o, err) < 0) {
                json_object_put(arr);
                tools_env_cleanup(env);
                return -1;
            }
            json_object_array_add(arr, o);
        }
        size_t len = 0;
        const char *text = json_object_to_json_string_length(
            arr, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
        env->list_json[v] = xstrndup(text, len);
        env->list_len[v] = len;
        json_object_put(arr);
    }
    return 0;
}

void tools_env_cleanup(struct tools_env *env)
{
    for (size_t v = 0; v < TOOLS_VARIANTS; v++) {
        free(env->list_json[v]);
        env->list_json[v] = NULL;
        env->list_len[v] = 0;
    }
}

const char *tools_list_json(const struct tools_env *env, const struct tools_features *f,
                            size_t *len)
{
    size_t v = variant_of(f);
    *len = env->list_len[v];
    return env->list_json[v];
}

/* ---- arguments ----------------------------------------------------------- */

static int get_string(json_object *args, const char *key, bool required, long long max,
                      const char **out, size_t *len, struct err *err)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(args, key, &v) || !v) {
        if (required)
            return err_set(err, ERR_INVALID, "missing required argument '%s'", key);
        return 0;
    }
    if (!json_object_is_type(v, json_type_string))
        return err_set(err, ERR_INVALID, "argument '%s' must be a string", key);
    int n = json_object_get_string_len(v);
    if ((long long)n > max)
        return err_set(err, ERR_TOO_BIG, "argument '%s' is %d bytes; the limit is %lld bytes", key,
                       n, max);
    *out = json_object_get_string(v);
    *len = (size_t)n;
    return 0;
}

/* Integer argument; an integral double such as 5000.0 is accepted. */
static int get_int(json_object *args, const char *key, long long *out, bool *present,
                   struct err *err)
{
    json_object *v = NULL;
    *present = false;
    if (!json_object_object_get_ex(args, key, &v) || !v)
        return 0;
    if (json_object_is_type(v, json_type_int)) {
        *out = json_object_get_int64(v);
    } else if (json_object_is_type(v, json_type_double)) {
        double d = json_object_get_double(v);
        if (!isfinite(d) || d != floor(d) || fabs(d) > 9e15)
            return err_set(err, ERR_INVALID, "argument '%s' must be an integer", key);
        *out = (long long)d;
    } else {
        return err_set(err, ERR_INVALID, "argument '%s' must be an integer", key);
    }
    *present = true;
    return 0;
}

int tools_parse_args(const struct config *cfg, const char *name, json_object *args,
                     struct tools_run_args *out, struct err *err)
{
    const struct tool_def *t = find_tool(name);
    if (!t)
        return err_set(err, ERR_INVALID, "unknown tool '%s'", name);
    memset(out, 0, sizeof(*out));
    out->tool = t->name;
    if (args && !json_object_is_type(args, json_type_object))
        return err_set(err, ERR_INVALID, "arguments must be an object");
    json_object *empty = NULL;
    if (!args)
        args = empty = json_object_new_object();
    int rc = -1;

    /* Unknown keys are refused, as the schemas say (additionalProperties). */
    json_object_object_foreach(args, key, val)
    {
        (void)val;
        bool known = false;
        for (const char *const *k = t->keys; *k && !known; k++)
            known = strcmp(*k, key) == 0;
        if (!known) {
            err_set(err, ERR_INVALID, "unknown argument '%.64s' for %s", key, t->name);
            goto out;
        }
    }

    switch (t->kind) {
    case TOOL_PYTHON:
        out->language = EXEC_PYTHON;
        break;
    case TOOL_JAVASCRIPT:
        out->language = EXEC_JAVASCRIPT;
        break;
    case TOOL_EXECUTE: {
        const char *lang = NULL;
        size_t lang_len = 0;
        if (get_string(args, "language", true, 64, &lang, &lang_len, err) < 0)
            goto out;
        if (strcmp(lang, "python") == 0) {
            out->language = EXEC_PYTHON;
        } else if (strcmp(lang, "javascript") == 0) {
            out->language = EXEC_JAVASCRIPT;
        } else {
            err_set(err, ERR_INVALID,
                    "argument 'language' must be \"python\" or \"javascript\", got \"%.32s\"",
                    lang);
            goto out;
        }
        break;
    }
    }
    if (get_string(args, "code", true, cfg->max_code_bytes, &out->code, &out->code_len, err) < 0)
        goto out;
    if (get_string(args, "stdin", false, cfg->max_code_bytes, &out->stdin_data, &out->stdin_len,
                   err) < 0)
        goto out;

    long long v = 0;
    bool present = false;
    out->timeout_ms = cfg->timeout_ms;
    if (get_int(args, "timeout_ms", &v, &present, err) < 0)
        goto out;
    if (present) {
        if (v < 1) {
            err_set(err, ERR_INVALID, "argument 'timeout_ms' must be at least 1");
            goto out;
        }
        out->timeout_ms = v > cfg->max_timeout_ms ? cfg->max_timeout_ms : v;
    }
    out->memory_mb = cfg->memory_mb;
    if (get_int(args, "memory_mb", &v, &present, err) < 0)
        goto out;
    if (present) {
        if (v < MIN_MEMORY_MB) {
            err_set(err, ERR_INVALID, "argument 'memory_mb' must be at least %d", MIN_MEMORY_MB);
            goto out;
        }
        out->memory_mb = v > cfg->max_memory_mb ? cfg->max_memory_mb : v;
    }
    rc = 0;
out:
    json_object_put(empty);
    return rc;
}

/* ---- results ------------------------------------------------------------- */

static json_object *text_content(const char *text, size_t len)
{
    json_object *c = json_object_new_object();
    json_object_object_add(c, "type", json_object_new_string("text"));
    json_object_object_add(c, "text", json_object_new_string_len(text, (int)len));
    return c;
}

static json_object *error_result_json(const char *message)
{
    json_object *r = json_object_new_object();
    json_object *content = json_object_new_array();
    json_object_array_add(content, text_content(message, strlen(message)));
    json_object_object_add(r, "content", content);
    json_object_object_add(r, "isError", json_object_new_boolean(1));
    return r;
}

static json_object *safe_string(const char *s, size_t n)
{
    size_t len = 0;
    char *clean = util_utf8_sanitize(s, n, &len);
    json_object *o = json_object_new_string_len(clean, (int)len);
    free(clean);
    return o;
}

json_object *tools_result(const struct exec_result *res, enum exec_language lang,
                          const struct tools_features *f)
{
    bool is_error = res->status != EXEC_OK || !res->has_exit_code || res->exit_code != 0;
    json_object *sc = json_object_new_object();
    json_object_object_add(sc, "status", json_object_new_string(exec_status_name(res->status)));
    json_object_object_add(sc, "exit_code",
                           res->has_exit_code ? json_object_new_int(res->exit_code) : NULL);
    json_object *out = safe_string(res->out.data ? res->out.data : "", res->out.len);
    json_object *errs = safe_string(res->err.data ? res->err.data : "", res->err.len);
    json_object_object_add(sc, "stdout", out);
    json_object_object_add(sc, "stderr", errs);
    /* One decimal, written as such (json-c would print %.17g). */
    char ms[48];
    double d = res->duration_ms < 0 ? 0.0 : res->duration_ms > 1e12 ? 1e12 : res->duration_ms;
    long long tenths = llround(d * 10.0);
    snprintf(ms, sizeof(ms), "%lld.%lld", tenths / 10, tenths % 10);
    json_object_object_add(sc, "duration_ms", json_object_new_double_s(strtod(ms, NULL), ms));
    json_object_object_add(sc, "truncated", json_object_new_boolean(res->truncated));
    json_object_object_add(sc, "language", json_object_new_string(exec_language_name(lang)));
    if (res->message)
        json_object_object_add(sc, "message", safe_string(res->message, strlen(res->message)));

    /* The readable text: the output itself, then stderr and the outcome
     * when there is something to say. */
    struct buf text;
    buf_init(&text, (size_t)-1);
    const char *so = json_object_get_string(out);
    size_t so_len = (size_t)json_object_get_string_len(out);
    const char *se = json_object_get_string(errs);
    size_t se_len = (size_t)json_object_get_string_len(errs);
    int rc = buf_add(&text, so, so_len);
    if (se_len) {
        rc |= buf_addf(&text, "%s--- stderr ---\n", text.len && so[so_len - 1] != '\n' ? "\n" : "");
        rc |= buf_add(&text, se, se_len);
    }
    if (is_error || res->truncated) {
        if (text.len && text.data[text.len - 1] != '\n')
            rc |= buf_add(&text, "\n", 1);
        rc |= buf_addf(&text, "--- status: %s", exec_status_name(res->status));
        if (res->has_exit_code)
            rc |= buf_addf(&text, ", exit code %d", res->exit_code);
        if (res->truncated)
            rc |= buf_addf(&text, ", output truncated");
        if (res->message)
            rc |= buf_addf(&text, " (%s)", res->message);
        rc |= buf_add(&text, " ---", 4);
    }
    if (text.len == 0)
        rc |= buf_addf(&text, "(no output)");
    (void)rc; /* text has no cap */

    json_object *r = json_object_new_object();
    json_object *content = json_object_new_array();
    size_t tlen = 0;
    char *t = util_utf8_sanitize(text.data, text.len, &tlen);
    json_object_array_add(content, text_content(t, tlen));
    free(t);
    buf_free(&text);
    json_object_object_add(r, "content", content);
    if (f->structured)
        json_object_object_add(r, "structuredContent", sc);
    else
        json_object_put(sc);
    json_object_object_add(r, "isError", json_object_new_boolean(is_error));
    return r;
}

int tools_prepare(const struct config *cfg, const char *name, json_object *args,
                  struct tools_run_args *out, json_object **error_result)
{
    struct err err = ERR_INIT;
    *error_result = NULL;
    if (tools_parse_args(cfg, name, args, out, &err) < 0) {
        char *msg = xasprintf("Invalid arguments for %s: %s", name, err_msg(&err));
        *error_result = error_result_json(msg);
        free(msg);
        err_clear(&err);
        return -1;
    }
    /* One buffer holds both strings, copied out of the request's JSON. */
    char *own = xmalloc(out->code_len + out->stdin_len + 2);
    memcpy(own, out->code, out->code_len);
    own[out->code_len] = '\0';
    char *in = own + out->code_len + 1;
    if (out->stdin_data)
        memcpy(in, out->stdin_data, out->stdin_len);
    in[out->stdin_len] = '\0';
    out->code = own;
    if (out->stdin_data)
        out->stdin_data = in;
    out->owned = own;
    return 0;
}

void tools_run_args_release(struct tools_run_args *a)
{
    free(a->owned);
    memset(a, 0, sizeof(*a));
}

json_object *tools_run(const struct tools_env *env, const struct tools_run_args *a,
                       const struct tools_features *f, struct exec_cancel *cancel,
                       exec_output_cb on_output, void *on_output_ctx)
{
    struct err err = ERR_INIT;
    struct exec_request req = {
        .language = a->language,
        .code = a->code,
        .code_len = a->code_len,
        .stdin_data = a->stdin_data,
        .stdin_len = a->stdin_len,
        .timeout_ms = a->timeout_ms,
        .memory_mb = a->memory_mb,
        .start_by_ms = a->start_by_ms,
        .on_output = on_output,
        .on_output_ctx = on_output_ctx,
    };
    struct exec_result res;
    exec_result_init(&res);
    if (exec_run(env->exec, &req, cancel, &res, &err) < 0)
        log_warn("%s failed: %s", a->tool, err_msg(&err));
    json_object *r = tools_result(&res, a->language, f);
    exec_result_free(&res);
    err_clear(&err);
    return r;
}

json_object *tools_busy_result(const struct tools_run_args *a, const struct tools_features *f,
                               const char *message, double waited_ms)
{
    struct exec_result res;
    exec_result_init(&res);
    res.status = EXEC_BUSY;
    res.message = xstrdup(message);
    res.duration_ms = waited_ms;
    json_object *r = tools_result(&res, a->language, f);
    exec_result_free(&res);
    return r;
}

json_object *tools_call(const struct tools_env *env, const char *name, json_object *args,
                        const struct tools_features *f, struct exec_cancel *cancel,
                        exec_output_cb on_output, void *on_output_ctx)
{
    struct tools_run_args a;
    json_object *bad = NULL;
    if (tools_prepare(env->cfg, name, args, &a, &bad) < 0)
        return bad;
    json_object *r = tools_run(env, &a, f, cancel, on_output, on_output_ctx);
    tools_run_args_release(&a);
    return r;
}

int tools_backend_ping(const struct tools_env *env, const char **address, struct err *err)
{
    *address = exec_backend_address(env->exec);
    return exec_ping(env->exec, err);
}
