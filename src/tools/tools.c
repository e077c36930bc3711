#include "tools/tools.h"

#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/log.h"
#include "tools/egress_arg.h"
#include "tools/egress_result.h"
#include "tools/languages.h"
#include "tools/packages_arg.h"
#include "tools/packages_result.h"
#include "tools/registry.h"
#include "tools/schema.h"
#include "tools/session_tools.h"
#include "tools/tooldef.h"
#include "tools/variables.h"

int tools_env_init(struct tools_env *env, const struct config *cfg, const struct langtable *langs,
                   struct exec_ctx *exec, struct err *err)
{
    memset(env, 0, sizeof(*env));
    env->cfg = cfg;
    env->exec = exec;
    if (!langs && exec)
        langs = exec_languages(exec);
    if (!langs) {
        /* Nothing to run with (tests, tools): the built-in table. */
        if (langtable_load(NULL, &env->own_langs, err) < 0 ||
            langtable_configure(env->own_langs, cfg, err) < 0) {
            langtable_free(env->own_langs);
            env->own_langs = NULL;
            return -1;
        }
        langs = env->own_langs;
    }
    env->langs = langs;
    if (registry_serialize(cfg, langs, env->list_json, env->list_len, env->inputs, err) < 0) {
        langtable_free(env->own_langs);
        env->own_langs = NULL;
        return -1;
    }
    for (size_t v = 0; v < TOOLS_VARIANTS; v++) {
        env->result_json[v] = xasprintf("{\"tools\":%s}", env->list_json[v]);
        env->result_len[v] = strlen(env->result_json[v]);
    }
    env->store = runstore_new(cfg->run_store_ttl_ms, cfg->run_store_max_bytes,
                              cfg->run_store_session_max_bytes);
    env->languages = languages_new(cfg, langs, exec);
    return 0;
}

void tools_env_cleanup(struct tools_env *env)
{
    languages_free(env->languages);
    env->languages = NULL;
    registry_serialized_free(env->list_json, env->list_len);
    registry_serialized_free(env->result_json, env->result_len);
    registry_inputs_free(env->inputs);
    runstore_free(env->store);
    env->store = NULL;
    langtable_free(env->own_langs);
    env->own_langs = NULL;
}

const char *tools_list_json(const struct tools_env *env, const struct tools_features *f,
                            size_t *len)
{
    size_t v = registry_variant(f);
    *len = env->list_len[v];
    return env->list_json[v];
}

const char *tools_list_result_json(const struct tools_env *env, const struct tools_features *f,
                                   size_t *len)
{
    size_t v = registry_variant(f);
    *len = env->result_len[v];
    return env->result_json[v];
}

const tools_tool *tools_find(const char *name)
{
    return registry_find(name);
}

bool tools_answers_at_once(const tools_tool *t)
{
    return t && (t->kind == TOOL_LIST_LANGUAGES || t->kind == TOOL_LIST_SESSIONS ||
                 t->kind == TOOL_CLOSE_SESSION);
}

/* ---- arguments ----------------------------------------------------------- */

/* A string argument the schema has checked; *out stays NULL when absent.
 * The cap is the operator's, so it is not in the schema. */
static int get_string(json_object *args, const char *key, long long max, const char **out,
                      size_t *len, struct err *err)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(args, key, &v) || !v)
        return 0;
    int n = json_object_get_string_len(v);
    if ((long long)n > max)
        return err_set(err, ERR_TOO_BIG, "argument '%s' is %d bytes; the limit is %lld bytes", key,
                       n, max);
    *out = json_object_get_string(v);
    *len = (size_t)n;
    return 0;
}

/* An integer argument the schema has checked, clamped to the operator's
 * maximum; *out is untouched when absent. */
static void get_clamped(json_object *args, const char *key, long long max, long long *out)
{
    json_object *v = NULL;
    long long n = 0;
    if (json_object_object_get_ex(args, key, &v) && schema_integer(v, &n))
        *out = n > max ? max : n;
}

/* name's language in the table, which t must take: the one-language
 * tools need the runner their description promises, validate_code an
 * in-process runner (it parses with it). */
static int language_of(const struct langtable *langs, const char *name,
                       const struct registry_entry *t, const struct langtable_lang **out,
                       struct err *err)
{
    const struct langtable_lang *l = langtable_find(langs, name);
    if (!l)
        return err_set(err, ERR_INVALID, "language '%s' is not enabled on this server", name);
    if (!registry_takes(t, l))
        return err_set(
            err, ERR_INVALID, "%s needs the %s runner, and this server runs %s with the %s runner",
            t->name, t->kind == TOOL_LANGUAGE ? langtable_runner_name(t->runner) : "python or node",
            l->name, langtable_runner_name(l->runner));
    *out = l;
    return 0;
}

/* What run returns after the program: its patterns, the operator's caps. */
static void set_outputs(const struct config *cfg, struct run *run)
{
    run->returns = true;
    run->outputs = (struct runner_outputs){
        .patterns = run->patterns,
        .n_patterns = run->n_patterns,
        .max_files = cfg->max_files_out,
        .max_file_bytes = cfg->max_file_out_bytes,
        .max_total_bytes = cfg->max_files_out_bytes,
        .plots = run->language->plots && cfg->max_plots > 0,
        .max_plots = cfg->max_plots,
        .max_plot_bytes = cfg->max_plot_bytes,
    };
}

/* The run's language and limits, for a call in no session: the tool's
 * language or the language argument, the operator's default limits or
 * the call's. */
static int one_shot(const struct tools_env *env, const tools_tool *t, json_object *args, bool task,
                    struct run *run, struct err *err)
{
    const struct config *cfg = env->cfg;
    json_object *lang = NULL;
    if (t->kind != TOOL_LANGUAGE && (!json_object_object_get_ex(args, "language", &lang) || !lang))
        return err_set(err, ERR_INVALID, "%s needs a language, or a session_id", t->name);
    const char *name = t->kind == TOOL_LANGUAGE ? t->language : json_object_get_string(lang);
    if (language_of(env->langs, name, t, &run->language, err) < 0)
        return -1;
    /* The schemas hold the lower bounds; the maximums are the operator's. */
    run->timeout_ms = cfg->timeout_ms;
    get_clamped(args, "timeout_ms", task ? cfg->task_max_timeout_ms : cfg->max_timeout_ms,
                &run->timeout_ms);
    run->memory_mb = cfg->memory_mb;
    get_clamped(args, "memory_mb", cfg->max_memory_mb, &run->memory_mb);
    return 0;
}

int tools_parse_args(const struct tools_env *env, const tools_tool *t, json_object *args,
                     const struct tools_caller *who, struct tools_run_args *out, struct err *err)
{
    const struct config *cfg = env->cfg;
    memset(out, 0, sizeof(*out));
    struct run *run = &out->run;
    run_init(run);
    out->tool = t->name;
    out->kind = t->kind;
    out->exec = env->exec;
    sessions_owner_of(who, &out->who);
    memcpy(out->owner, out->who.owner, sizeof(out->who.owner));
    run->check_only = t->kind == TOOL_VALIDATE;
    if (tools_answers_at_once(t))
        return err_set(err, ERR_INVALID, "%s runs no code: it is answered at once", t->name);
    json_object *empty = NULL;
    if (!args)
        args = empty = json_object_new_object();
    int rc = -1;
    if (schema_node_validate(env->inputs[registry_index(t)], args, SCHEMA_NULL_IS_ABSENT, err) < 0)
        goto out;
    if (t->kind == TOOL_CREATE_SESSION || t->kind == TOOL_INSTALL_PACKAGES) {
        rc = t->kind == TOOL_CREATE_SESSION ? sessions_parse_create(env, t, args, out, err)
                                            : sessions_parse_install(env, t, args, out, err);
        goto out;
    }
    json_object *sid = NULL;
    bool in_session = json_object_object_get_ex(args, "session_id", &sid) && sid;
    if ((in_session ? sessions_parse_call(env, t, args, out, err)
                    : one_shot(env, t, args, who && who->task, run, err)) < 0 ||
        egress_arg_parse(args, run, err) < 0 || packages_arg_parse(args, run, err) < 0)
        goto out;
    json_object *ft = NULL;
    run->typecheck_blocks =
        json_object_object_get_ex(args, "fail_on_type_errors", &ft) && json_object_get_boolean(ft);
    if (get_string(args, "code", cfg->max_code_bytes, &run->code, &run->code_len, err) < 0)
        goto out;
    if (!run->code) {
        err_set(err, ERR_INTERNAL, "the schema of %s does not require code", t->name);
        goto out;
    }
    if (get_string(args, "stdin", cfg->max_code_bytes, &run->stdin_data, &run->stdin_len, err) < 0)
        goto out;
    json_object *vars = NULL;
    if (json_object_object_get_ex(args, "variables", &vars) && vars &&
        variables_encode(vars, run->language, cfg->max_variables_bytes, &run->variables,
                         &run->variables_len, err) < 0)
        goto out;
    if (!run->check_only) {
        if (files_arg_parse(cfg, args, run, err) < 0)
            goto out;
        set_outputs(cfg, run);
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

/* A CallToolResult: the text (made valid UTF-8 here: it may quote the
 * client, the engine or the sandbox), then the blocks of blocks (an array,
 * taken; may be NULL), structuredContent sc (taken; dropped for versions
 * without it; may be NULL), isError. */
static json_object *call_result(const char *text, size_t len, json_object *blocks, json_object *sc,
                                const struct tools_features *f, bool is_error)
{
    json_object *r = json_object_new_object();
    json_object *content = json_object_new_array();
    size_t clean_len = 0;
    char *clean = util_utf8_sanitize(text, len, &clean_len);
    json_object_array_add(content, text_content(clean, clean_len));
    free(clean);
    for (size_t i = 0; blocks && i < json_object_array_length(blocks); i++)
        json_object_array_add(content, json_object_get(json_object_array_get_idx(blocks, i)));
    json_object_put(blocks);
    json_object_object_add(r, "content", content);
    if (sc && f->structured)
        json_object_object_add(r, "structuredContent", sc);
    else
        json_object_put(sc);
    json_object_object_add(r, "isError", json_object_new_boolean(is_error));
    return r;
}

static json_object *error_result_json(const char *message)
{
    return call_result(message, strlen(message), NULL, NULL, NULL, true);
}

json_object *tools_text_result(const char *text, size_t len, json_object *sc,
                               const struct tools_features *f, bool is_error)
{
    return call_result(text, len, NULL, sc, f, is_error);
}

json_object *tools_error_result(const char *message, const struct tools_features *f)
{
    (void)f;
    return error_result_json(message);
}

static json_object *safe_string(const char *s, size_t n)
{
    size_t len = 0;
    char *clean = util_utf8_sanitize(s, n, &len);
    json_object *o = json_object_new_string_len(clean, (int)len);
    free(clean);
    return o;
}

/* The result text's own words beyond the output, stderr and message it
 * quotes: the stderr heading, the status line (a status, an exit code),
 * "(no output)". */
#define TEXT_WORDS_MAX 128

/* The result's message: the run's, and why its code session was lost
 * when it was (*owned is what to free). */
static const char *result_message(const struct exec_result *res, char **owned)
{
    *owned = NULL;
    const char *m = res->message;
    const char *why = res->lost_reason;
    if (!res->session_lost || !why || (m && strcmp(m, why) == 0))
        return m;
    *owned = m ? xasprintf("%s; the session was lost: %s", m, why)
               : xasprintf("the session was lost: %s", why);
    return *owned;
}

json_object *tools_result(const struct exec_result *res, const struct langtable_lang *lang,
                          const struct tools_features *f, const struct files_result_ctx *fc)
{
    bool is_error =
        res->status != EXEC_OK || !res->has_exit_code || res->exit_code != 0 || res->session_lost;
    char *own_message = NULL;
    const char *message = result_message(res, &own_message);
    json_object *sc = json_object_new_object();
    json_object_object_add(sc, "status", json_object_new_string(exec_status_name(res->status)));
    json_object_object_add(sc, "exit_code",
                           res->has_exit_code ? json_object_new_int(res->exit_code) : NULL);
    json_object *out = safe_string(res->out.data ? res->out.data : "", res->out.len);
    json_object *errs = safe_string(res->err.data ? res->err.data : "", res->err.len);
    json_object_object_add(sc, "stdout", out);
    json_object_object_add(sc, "stderr", errs);
    json_object_object_add(sc, "duration_ms", json_new_ms(res->duration_ms));
    json_object_object_add(sc, "truncated", json_object_new_boolean(res->truncated));
    json_object_object_add(sc, "language", json_object_new_string(lang->name));
    if (message)
        json_object_object_add(sc, "message", safe_string(message, strlen(message)));

    /* The readable text: the output itself, then stderr and the outcome
     * when there is something to say; its cap is all of those and what
     * files_result_add says about the files. */
    const char *so = json_object_get_string(out);
    size_t so_len = (size_t)json_object_get_string_len(out);
    const char *se = json_object_get_string(errs);
    size_t se_len = (size_t)json_object_get_string_len(errs);
    struct buf text;
    buf_init(&text, so_len + se_len + (message ? strlen(message) : 0) + TEXT_WORDS_MAX +
                        files_result_text_max(&res->files) + EGRESS_RESULT_TEXT_MAX +
                        PACKAGES_RESULT_TEXT_MAX);
    int rc = buf_add(&text, so, so_len);
    if (se_len) {
        rc |= buf_addf(&text, "%s--- stderr ---\n", text.len && so[so_len - 1] != '\n' ? "\n" : "");
        rc |= buf_add(&text, se, se_len);
    }
    if (res->packages) {
        packages_result_add(res->packages, sc);
        rc |= packages_result_text(res->packages, &text);
    }
    if (res->egress) {
        egress_result_add(res->egress, sc);
        rc |= egress_result_text(res->egress, &text);
    }
    if (is_error || res->truncated) {
        if (text.len && text.data[text.len - 1] != '\n')
            rc |= buf_add(&text, "\n", 1);
        rc |= buf_addf(&text, "--- status: %s", exec_status_name(res->status));
        if (res->has_exit_code)
            rc |= buf_addf(&text, ", exit code %d", res->exit_code);
        if (res->truncated)
            rc |= buf_addf(&text, ", output truncated");
        if (message)
            rc |= buf_addf(&text, " (%s)", message);
        rc |= buf_add(&text, " ---", 4);
    }
    json_object *blocks = json_object_new_array();
    struct err err = ERR_INIT;
    rc |= files_result_add(&res->files, fc, f, blocks, sc, &text, &err);
    if (text.len == 0)
        rc |= buf_addf(&text, "(no output)");
    json_object *r;
    if (rc < 0) {
        /* Not the program's doing: said as such, not as a cut text. */
        if (!err.msg)
            err_set(&err, ERR_INTERNAL, "the result's text passed %zu bytes", text.max);
        json_object_put(blocks);
        json_object_put(sc);
        r = error_result_json(err_msg(&err));
    } else {
        r = call_result(text.data, text.len, blocks, sc, f, is_error);
    }
    err_clear(&err);
    buf_free(&text);
    free(own_message);
    return r;
}

json_object *tools_check_result(const struct exec_result *res, const struct langtable_lang *lang,
                                const struct tools_features *f)
{
    /* The check itself could not be made: say why, as a failed call. */
    if (res->status != EXEC_OK || !res->check.present) {
        const char *why = res->message             ? res->message
                          : res->status == EXEC_OK ? "the sandbox gave no answer"
                                                   : exec_status_name(res->status);
        char *msg =
            xasprintf("could not check the code (%s): %s", exec_status_name(res->status), why);
        json_object *r = error_result_json(msg);
        free(msg);
        return r;
    }
    const struct runner_check *c = &res->check;
    json_object *sc = json_object_new_object();
    json_object_object_add(sc, "valid", json_object_new_boolean(c->ok));
    json_object_object_add(sc, "language", json_object_new_string(lang->name));
    char *text = NULL;
    if (c->ok) {
        json_object_object_add(sc, "error", NULL);
        text = xasprintf("valid %s: no syntax error", lang->name);
    } else {
        const char *m = c->message ? c->message : "";
        json_object *e = json_object_new_object();
        json_object_object_add(e, "message", safe_string(m, strlen(m)));
        json_object_object_add(e, "line", c->line > 0 ? json_object_new_int(c->line) : NULL);
        json_object_object_add(e, "column", c->column > 0 ? json_object_new_int(c->column) : NULL);
        json_object_object_add(sc, "error", e);
        if (c->line > 0 && c->column > 0)
            text =
                xasprintf("invalid %s: line %d, column %d: %s", lang->name, c->line, c->column, m);
        else if (c->line > 0)
            text = xasprintf("invalid %s: line %d: %s", lang->name, c->line, m);
        else
            text = xasprintf("invalid %s: %s", lang->name, m);
    }
    json_object_object_add(sc, "duration_ms", json_new_ms(res->duration_ms));
    /* The check was made: invalid code is its answer, not a failure. */
    json_object *r = call_result(text, strlen(text), NULL, sc, f, false);
    free(text);
    return r;
}

int tools_prepare(const struct tools_env *env, const tools_tool *t, json_object *args,
                  const struct tools_caller *who, struct tools_run_args *out,
                  json_object **error_result)
{
    struct err err = ERR_INIT;
    *error_result = NULL;
    if (tools_parse_args(env, t, args, who, out, &err) < 0) {
        /* A session id that is not the caller's reads the same whatever
         * the tool: SESSIONS_NO_SUCH alone, or whose it is. */
        bool whose = strcmp(err_msg(&err), SESSIONS_NO_SUCH) == 0 ||
                     strncmp(err_msg(&err), SESSIONS_ELSEWHERE, strlen(SESSIONS_ELSEWHERE)) == 0;
        char *msg = whose ? xstrdup(err_msg(&err))
                          : xasprintf("Invalid arguments for %s: %s", t->name, err_msg(&err));
        *error_result = error_result_json(msg);
        free(msg);
        err_clear(&err);
        tools_run_args_release(out);
        return -1;
    }
    /* One buffer holds both strings, copied out of the request's JSON. */
    struct run *run = &out->run;
    char *own = xmalloc(run->code_len + run->stdin_len + 2);
    memcpy(own, run->code, run->code_len);
    own[run->code_len] = '\0';
    char *in = own + run->code_len + 1;
    if (run->stdin_data)
        memcpy(in, run->stdin_data, run->stdin_len);
    in[run->stdin_len] = '\0';
    run->code = own;
    if (run->stdin_data)
        run->stdin_data = in;
    run->text = own;
    run->cancel = exec_cancel_new();
    return 0;
}

void tools_run_args_release(struct tools_run_args *a)
{
    if (a->session)
        code_session_put(a->exec, a->session);
    run_free(&a->run);
    memset(a, 0, sizeof(*a));
}

const void *tools_run_session(const struct tools_run_args *a)
{
    return a->session;
}

void tools_sessions_end_owner(const struct tools_env *env, const struct tools_caller *who)
{
    if (!env->exec || env->cfg->max_code_sessions <= 0)
        return;
    struct code_session_owner o;
    sessions_owner_of(who, &o);
    size_t n = code_session_end_owner(env->exec, &o);
    if (n)
        log_debug("ended %zu code sessions of a closing MCP session", n);
}

json_object *tools_run(const struct tools_env *env, const struct tools_run_args *a,
                       const struct tools_features *f)
{
    if (a->kind == TOOL_CREATE_SESSION)
        return sessions_create(env, a, f);
    if (a->kind == TOOL_INSTALL_PACKAGES)
        return sessions_install(env, a, f);
    struct err err = ERR_INIT;
    const struct run *run = &a->run;
    struct exec_result res;
    exec_result_init(&res);
    if (a->session)
        sessions_run(env, a, &res);
    else if (exec_run(env->exec, run, &res, &err) < 0)
        log_warn("%s failed: %s", a->tool, LOG_FIELD(err_msg(&err)));
    struct files_result_ctx fc = {.cfg = env->cfg, .store = env->store, .owner = a->owner};
    json_object *r = run->check_only ? tools_check_result(&res, run->language, f)
                                     : tools_result(&res, run->language, f, &fc);
    sessions_decorate(r, a, &res);
    exec_result_free(&res);
    err_clear(&err);
    return r;
}

json_object *tools_busy_result(const struct tools_run_args *a, const struct tools_features *f,
                               const char *message, double waited_ms)
{
    /* create_session's and install_packages' results are no run's: their
     * words only. */
    if (a->kind == TOOL_CREATE_SESSION || a->kind == TOOL_INSTALL_PACKAGES)
        return error_result_json(message);
    struct exec_result res;
    exec_result_init(&res);
    res.status = EXEC_BUSY;
    res.message = xstrdup(message);
    res.duration_ms = waited_ms;
    json_object *r = a->run.check_only ? tools_check_result(&res, a->run.language, f)
                                       : tools_result(&res, a->run.language, f, NULL);
    sessions_decorate(r, a, &res);
    exec_result_free(&res);
    return r;
}

/* Checks args against t's inputSchema; NULL, or an isError result. */
static json_object *check_args(const struct tools_env *env, const tools_tool *t, json_object *args)
{
    struct err err = ERR_INIT;
    json_object *empty = NULL;
    json_object *bad = NULL;
    if (!args)
        args = empty = json_object_new_object();
    if (schema_node_validate(env->inputs[registry_index(t)], args, SCHEMA_NULL_IS_ABSENT, &err) <
        0) {
        char *msg = xasprintf("Invalid arguments for %s: %s", t->name, err_msg(&err));
        bad = error_result_json(msg);
        free(msg);
    }
    err_clear(&err);
    json_object_put(empty);
    return bad;
}

json_object *tools_answer(const struct tools_env *env, const tools_tool *t, json_object *args,
                          const struct tools_caller *who, const struct tools_features *f)
{
    if (!tools_answers_at_once(t))
        return error_result_json("this tool is not answered at once");
    json_object *bad = check_args(env, t, args);
    if (bad)
        return bad;
    if (t->kind != TOOL_LIST_LANGUAGES)
        return sessions_answer(env, t, args, who, f);
    /* The first question starts the probes: a daemon that is never asked
     * makes no container for them, and its pool's counters stay its runs'. */
    languages_start(env->languages, NULL);
    json_object *sc = languages_json(env->languages, env->cfg, env->exec, LANGUAGES_WAIT_MS);
    size_t n = 0;
    const char *text = json_object_to_json_string_length(
        sc, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
    return call_result(text, n, NULL, sc, f, false);
}

bool tools_answer_may_wait(const struct tools_env *env, const tools_tool *t)
{
    return t && t->kind == TOOL_LIST_LANGUAGES && !languages_all_known(env->languages);
}

json_object *tools_call(const struct tools_env *env, const tools_tool *t, json_object *args,
                        const struct tools_caller *who, const struct tools_features *f)
{
    if (tools_answers_at_once(t))
        return tools_answer(env, t, args, who, f);
    struct tools_run_args a;
    json_object *bad = NULL;
    if (tools_prepare(env, t, args, who, &a, &bad) < 0)
        return bad;
    json_object *r = tools_run(env, &a, f);
    tools_run_args_release(&a);
    return r;
}

int tools_backend_ping(const struct tools_env *env, const char **address, struct err *err)
{
    *address = exec_backend_address(env->exec);
    return exec_ping(env->exec, err);
}
