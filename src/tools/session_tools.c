#include "tools/session_tools.h"

#include <stdlib.h>
#include <string.h>

#include "base/handle.h"
#include "base/log.h"
#include "base/util.h"
#include "tools/packages_arg.h"
#include "tools/packages_result.h"
#include "tools/schema.h"

void sessions_owner_of(const struct tools_caller *who, struct code_session_owner *out)
{
    const char *owner = who && who->owner && *who->owner ? who->owner : TOOLS_INTERNAL;
    const char *principal = !who                                ? TOOLS_INTERNAL
                            : who->principal && *who->principal ? who->principal
                                                                : "none";
    memset(out, 0, sizeof(*out));
    /* Cut to the registry's sizes; longer is not valid there anyway, and
     * then nothing matches it. */
    memcpy(out->owner, owner, strnlen(owner, sizeof(out->owner) - 1));
    memcpy(out->principal, principal, strnlen(principal, sizeof(out->principal) - 1));
}

static const char *string_arg(json_object *args, const char *key)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(args, key, &v) || !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

/* An integer argument the schema has checked, clamped to max; false when
 * absent. */
static bool clamped_arg(json_object *args, const char *key, long long max, long long *out)
{
    json_object *v = NULL;
    long long n = 0;
    if (!json_object_object_get_ex(args, key, &v) || !schema_integer(v, &n))
        return false;
    *out = n > max ? max : n;
    return true;
}

/* The session's language for t: its own tool's language, or the language
 * argument's (a name or an alias) when given; then what t takes. */
static int session_language(const struct tools_env *env, const tools_tool *t, json_object *args,
                            const char *have, const struct langtable_lang **out, struct err *err)
{
    const struct langtable_lang *l = langtable_find(env->langs, have);
    if (!l) /* the table is fixed for the daemon's life: never, but said */
        return err_set(err, ERR_INVALID, "this session's language %s is not enabled", have);
    if (t->kind == TOOL_LANGUAGE && strcmp(t->language, l->name) != 0)
        return err_set(err, ERR_INVALID, "%s needs a %s session; this one is %s", t->name,
                       t->language, l->name);
    const char *asked = string_arg(args, "language");
    const struct langtable_lang *want = asked ? langtable_find(env->langs, asked) : l;
    if (want != l)
        return err_set(err, ERR_INVALID, "%s was given language %.32s; this session is %s", t->name,
                       asked, l->name);
    /* install_packages: packages_arg_parse says why a language without an
     * installer is refused, as for a run tool's packages. */
    if (t->kind != TOOL_INSTALL_PACKAGES && !registry_takes(t, l))
        return err_set(err, ERR_INVALID, "%s cannot take a %s session (it needs %s)", t->name,
                       l->name, t->kind == TOOL_VALIDATE ? "python or javascript" : "another");
    *out = l;
    return 0;
}

/* -1 with ERR_INVALID naming the daemon that holds id when that is not
 * this one; 0 for anything else. The name is a valid DNS label: safe to echo. */
static int held_elsewhere(const char *id, struct err *err)
{
    char daemon[HANDLE_DAEMON_MAX + 1];
    if (!id || handle_parse(id, daemon) != HANDLE_OTHER)
        return 0;
    return err_set(err, ERR_INVALID, SESSIONS_ELSEWHERE ", \"%s\" (this is \"%s\")", daemon,
                   handle_daemon());
}

int sessions_parse_call(const struct tools_env *env, const tools_tool *t, json_object *args,
                        struct tools_run_args *out, struct err *err)
{
    const struct config *cfg = env->cfg;
    if (cfg->max_code_sessions <= 0 || !env->exec)
        return err_set(err, ERR_INVALID, "session_id: %s", SESSIONS_OFF);
    const char *id = string_arg(args, "session_id");
    if (held_elsewhere(id, err) < 0)
        return -1;
    bool lost = false;
    out->session = id ? code_session_get(env->exec, id, &out->who, &lost) : NULL;
    if (!out->session)
        return err_set(err, ERR_INVALID, SESSIONS_NO_SUCH);
    out->lost = lost;
    struct run *run = &out->run;
    if (session_language(env, t, args, code_session_language(out->session), &run->language, err) <
        0)
        return -1;
    long long timeout_ms = 0, memory_mb = 0;
    code_session_limits(out->session, &timeout_ms, &memory_mb);
    long long asked = 0;
    if (!lost && clamped_arg(args, "memory_mb", cfg->max_memory_mb, &asked) && asked != memory_mb)
        return err_set(err, ERR_INVALID,
                       "memory_mb: this session has %lld MiB for its whole life; give none or "
                       "that",
                       memory_mb);
    run->memory_mb = memory_mb;
    run->timeout_ms = timeout_ms > 0 ? timeout_ms : cfg->timeout_ms;
    clamped_arg(args, "timeout_ms", cfg->max_timeout_ms, &run->timeout_ms);
    return 0;
}

int sessions_parse_create(const struct tools_env *env, const tools_tool *t, json_object *args,
                          struct tools_run_args *out, struct err *err)
{
    const struct config *cfg = env->cfg;
    if (cfg->max_code_sessions <= 0 || !env->exec)
        return err_set(err, ERR_INVALID, SESSIONS_OFF);
    struct run *run = &out->run;
    const char *lang = string_arg(args, "language");
    run->language = lang ? langtable_find(env->langs, lang) : NULL;
    if (!run->language)
        return err_set(err, ERR_INVALID, "language '%.32s' is not enabled on this server",
                       lang ? lang : "");
    const char *name = string_arg(args, "name");
    if (name) {
        if (session_check_name(name, err) < 0)
            return -1;
        memcpy(out->name, name, strlen(name)); /* checked: it fits */
    }
    (void)t;
    /* The begin request runs no code. */
    run->code = "";
    run->code_len = 0;
    run->timeout_ms = cfg->timeout_ms;
    clamped_arg(args, "timeout_ms", cfg->max_timeout_ms, &run->timeout_ms);
    run->memory_mb = cfg->memory_mb;
    clamped_arg(args, "memory_mb", cfg->max_memory_mb, &run->memory_mb);
    return 0;
}

int sessions_parse_install(const struct tools_env *env, const tools_tool *t, json_object *args,
                           struct tools_run_args *out, struct err *err)
{
    if (sessions_parse_call(env, t, args, out, err) < 0)
        return -1;
    /* A session call that runs no code: the set is made ready for it, and
     * stays on the session's import path. */
    struct run *run = &out->run;
    run->code = "";
    run->code_len = 0;
    run->packages_stay = true;
    if (packages_arg_parse(args, run, err) < 0)
        return -1;
    if (!run->packages) /* the schema's minItems: never, but said */
        return err_set(err, ERR_INVALID, "argument 'packages' must name at least one requirement");
    return 0;
}

/* ---- answers ------------------------------------------------------------- */

static json_object *time_json(long long wall_ms)
{
    char text[UTIL_RFC3339_CAP];
    util_rfc3339_ms(text, wall_ms);
    return json_object_new_string(text);
}

/* sc's JSON as the text too, as list_languages answers. */
static json_object *object_result(json_object *sc, const struct tools_features *f)
{
    size_t n = 0;
    const char *text = json_object_to_json_string_length(
        sc, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
    char *copy = xstrndup(text, n);
    json_object *r = tools_text_result(copy, n, sc, f, false);
    free(copy);
    return r;
}

static json_object *error_result(const char *message, const struct tools_features *f)
{
    return tools_text_result(message, strlen(message), NULL, f, true);
}

static json_object *clean_string(const char *s)
{
    size_t len = 0;
    char *clean = util_utf8_sanitize(s, strlen(s), &len);
    json_object *o = json_object_new_string_len(clean, (int)len);
    free(clean);
    return o;
}

/* Why an install failed: the run's message (the installer's, which names
 * the package and quotes its last lines), and why the session was lost
 * when it was. */
static char *install_failure(const struct exec_result *res)
{
    const char *m = res->message ? res->message : exec_status_name(res->status);
    if (res->session_lost && res->lost_reason && strcmp(m, res->lost_reason) != 0)
        return xasprintf("could not install the packages: %s; the session was lost: %s", m,
                         res->lost_reason);
    if (!res->message && res->status == EXEC_OK && res->has_exit_code)
        return xasprintf("could not install the packages: the session's program exited with %d",
                         res->exit_code);
    return xasprintf("could not install the packages: %s", m);
}

json_object *sessions_install_result(const struct exec_result *res, const char *session_id,
                                     const struct tools_features *f)
{
    bool failed =
        res->status != EXEC_OK || res->session_lost || (res->has_exit_code && res->exit_code != 0);
    json_object *sc = json_object_new_object();
    json_object_object_add(sc, "session_id", json_object_new_string(session_id));
    packages_result_add(res->packages, sc);
    if (!failed) {
        struct buf line;
        buf_init(&line, PACKAGES_RESULT_TEXT_MAX);
        /* The packages' line reads better; the JSON when there is none. */
        json_object *r = packages_result_text(res->packages, &line) == 0 && line.len
                             ? tools_text_result(line.data, line.len, sc, f, false)
                             : object_result(sc, f);
        buf_free(&line);
        return r;
    }
    char *msg = install_failure(res);
    json_object_object_add(sc, "message", clean_string(msg));
    if (res->session_lost)
        json_object_object_add(sc, "session_lost", json_object_new_boolean(1));
    json_object *r = tools_text_result(msg, strlen(msg), sc, f, true);
    free(msg);
    return r;
}

json_object *sessions_install(const struct tools_env *env, const struct tools_run_args *a,
                              const struct tools_features *f)
{
    struct exec_result res;
    exec_result_init(&res);
    sessions_run(env, a, &res);
    json_object *r = sessions_install_result(&res, code_session_id(a->session), f);
    exec_result_free(&res);
    return r;
}

json_object *sessions_create(const struct tools_env *env, const struct tools_run_args *a,
                             const struct tools_features *f)
{
    struct err err = ERR_INIT;
    enum runner_session_mode mode = RUNNER_SESSION_MODE_NONE;
    struct code_session *cs =
        code_session_open(env->exec, &a->run, a->name[0] ? a->name : NULL, &a->who, &mode, &err);
    if (!cs) {
        char *msg = xasprintf("could not create the session: %s", err_msg(&err));
        json_object *r = error_result(msg, f);
        free(msg);
        err_clear(&err);
        return r;
    }
    struct code_session_info info;
    code_session_info(env->exec, cs, &info);
    json_object *sc = json_object_new_object();
    json_object_object_add(sc, "session_id", json_object_new_string(info.session_id));
    json_object_object_add(sc, "language", json_object_new_string(info.language));
    json_object_object_add(sc, "name", json_object_new_string(info.name));
    json_object_object_add(sc, "idle_timeout_ms", json_object_new_int64(info.idle_timeout_ms));
    json_object_object_add(sc, "expires_at", time_json(info.expires_at));
    json_object_object_add(sc, "persistence", json_object_new_string(code_session_mode_name(mode)));
    code_session_put(env->exec, cs);
    return object_result(sc, f);
}

static json_object *list_sessions(const struct tools_env *env, const struct code_session_owner *o,
                                  const struct tools_features *f)
{
    struct code_session_info *v = NULL;
    size_t n = env->exec ? code_session_list(env->exec, o, &v) : 0;
    json_object *list = json_object_new_array();
    for (size_t i = 0; i < n; i++) {
        json_object *x = json_object_new_object();
        json_object_object_add(x, "session_id", json_object_new_string(v[i].session_id));
        json_object_object_add(x, "language", json_object_new_string(v[i].language));
        json_object_object_add(x, "name", json_object_new_string(v[i].name));
        json_object_object_add(x, "created_at", time_json(v[i].created_at));
        json_object_object_add(x, "last_used_at", time_json(v[i].last_used_at));
        json_object_object_add(x, "busy", json_object_new_boolean(v[i].busy));
        json_object_object_add(x, "idle_timeout_ms", json_object_new_int64(v[i].idle_timeout_ms));
        json_object_object_add(x, "expires_at", time_json(v[i].expires_at));
        json_object_array_add(list, x);
    }
    free(v);
    json_object *sc = json_object_new_object();
    json_object_object_add(sc, "sessions", list);
    return object_result(sc, f);
}

static json_object *close_session(const struct tools_env *env, json_object *args,
                                  const struct code_session_owner *o,
                                  const struct tools_features *f)
{
    const char *id = string_arg(args, "session_id");
    struct err err = ERR_INIT;
    if (held_elsewhere(id, &err) < 0) {
        json_object *r = error_result(err_msg(&err), f);
        err_clear(&err);
        return r;
    }
    bool lost = false;
    struct code_session *cs = id ? code_session_get(env->exec, id, o, &lost) : NULL;
    /* A tombstone is gone once shown: nothing is left to close. */
    enum code_session_closed what =
        cs && !lost ? code_session_close(env->exec, cs) : CODE_SESSION_GONE;
    code_session_put(env->exec, cs);
    if (what == CODE_SESSION_GONE)
        return error_result(SESSIONS_NO_SUCH, f);
    json_object *sc = json_object_new_object();
    json_object_object_add(sc, "closed", json_object_new_boolean(1));
    return object_result(sc, f);
}

json_object *sessions_answer(const struct tools_env *env, const tools_tool *t, json_object *args,
                             const struct tools_caller *who, const struct tools_features *f)
{
    if (env->cfg->max_code_sessions <= 0 || !env->exec)
        return error_result(SESSIONS_OFF, f);
    struct code_session_owner o;
    sessions_owner_of(who, &o);
    if (t->kind == TOOL_LIST_SESSIONS)
        return list_sessions(env, &o, f);
    return close_session(env, args, &o, f);
}

void sessions_run(const struct tools_env *env, const struct tools_run_args *a,
                  struct exec_result *res)
{
    if (a->lost) {
        /* Lost while idle: this call is where its owner learns why. */
        res->status = EXEC_ERROR;
        res->session_lost = true;
        res->lost_reason = xstrdup(code_session_lost_reason(a->session));
        res->message = xstrdup(res->lost_reason);
        return;
    }
    struct err err = ERR_INIT;
    if (code_session_run(env->exec, a->session, &a->run, res, &err) < 0)
        log_info("%s in code session %.8s failed: %s", a->tool, code_session_tag(a->session),
                 LOG_FIELD(err_msg(&err)));
    err_clear(&err);
}

void sessions_decorate(json_object *r, const struct tools_run_args *a,
                       const struct exec_result *res)
{
    json_object *sc = NULL;
    if (!a->session || !json_object_object_get_ex(r, "structuredContent", &sc))
        return;
    json_object_object_add(sc, "session_id", json_object_new_string(code_session_id(a->session)));
    if (res->session_lost)
        json_object_object_add(sc, "session_lost", json_object_new_boolean(1));
}

json_object *sessions_environment_json(const struct tools_env *env, const struct tools_caller *who)
{
    const struct config *cfg = env->cfg;
    struct code_session_owner o;
    sessions_owner_of(who, &o);
    struct code_sessions_counts n = {0};
    if (env->exec)
        n = code_session_counts(env->exec, &o);
    json_object *x = json_object_new_object();
    json_object_object_add(x, "max", json_object_new_int64(cfg->max_code_sessions));
    json_object_object_add(x, "per_owner", json_object_new_int64(cfg->max_code_sessions_per_owner));
    json_object_object_add(x, "idle_ms", json_object_new_int64(cfg->code_session_idle_ms));
    json_object_object_add(x, "max_age_ms", json_object_new_int64(cfg->code_session_max_age_ms));
    json_object_object_add(x, "active", json_object_new_int64((int64_t)n.active));
    json_object_object_add(x, "yours", json_object_new_int64((int64_t)n.yours));
    return x;
}
