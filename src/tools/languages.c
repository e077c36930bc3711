#include "tools/languages.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/log.h"
#include "base/threads.h"
#include "base/util.h"
#include "sandbox/sandbox.h"
#include "tools/egress_arg.h"
#include "tools/registry.h"

/* The python and node runners' probes (src/tools/probes/, embedded at
 * build time) print one JSON object: the versions the image's own
 * interpreter reports. A generic language's probe is its table's version
 * command, whose first version-like word is taken. */
extern const char languages_probe_python[];
extern const char languages_probe_node[];

/* What every call has; one row per feature, in the order listed. */
enum feature_when { ALWAYS, WITH_POOL, WITH_PLOTS, WITH_SESSIONS };
static const struct {
    const char *name;
    /* a pool; a language with plots and --max-plots > 0; --max-code-sessions > 0 */
    enum feature_when when;
} features[] = {
    {"stdin", ALWAYS},
    {"variables", ALWAYS},
    {"per_call_limits", ALWAYS},
    {"files_in", ALWAYS},
    {"files_out", ALWAYS},
    {"plots", WITH_PLOTS},
    {"validate_code", ALWAYS},
    {"live_output", ALWAYS},
    {"cancellation", ALWAYS},
    {"warm_pool", WITH_POOL},
    {"code_sessions", WITH_SESSIONS},
};

struct lang_state {
    bool known; /* report holds the image's answer */
    struct languages_report report;
    char error[256]; /* why the last probe failed */
};

struct languages {
    const struct config *cfg;
    const struct langtable *langs;
    size_t n; /* languages in langs */
    struct exec_ctx *exec;
    languages_probe_fn probe; /* NULL: nothing to probe with */
    void *probe_ctx;
    pthread_mutex_t lock;
    pthread_cond_t wake; /* the thread's: a round is wanted, or stop */
    pthread_cond_t done; /* callers': a round ended */
    pthread_t thread;
    bool started, stop, wanted, running;
    double retry_ms;
    double last_round_ms;
    struct exec_cancel *cancel; /* the probe in flight's */
    char start_error[128];
    struct lang_state *state; /* n, by the table's index */
};

/* ---- the probe's answer --------------------------------------------------- */

static bool charset_ok(const char *s, size_t n, size_t max, const char *extra, bool alnum_first)
{
    if (n == 0 || n > max)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        if (!alnum && (c == '\0' || !strchr(extra, c) || (i == 0 && alnum_first)))
            return false;
    }
    return true;
}

static bool version_ok(json_object *v)
{
    return json_object_is_type(v, json_type_string) &&
           charset_ok(json_object_get_string(v), (size_t)json_object_get_string_len(v),
                      LANGUAGES_VERSION_MAX, ".+~_-", true);
}

int languages_parse_probe(const char *text, size_t len, struct languages_report *out,
                          struct err *err)
{
    memset(out, 0, sizeof(*out));
    if (len > LANGUAGES_PROBE_MAX_BYTES)
        return err_set(err, ERR_TOO_BIG, "the probe wrote more than %d bytes",
                       LANGUAGES_PROBE_MAX_BYTES);
    while (len > 0 && strchr(" \t\r\n", text[len - 1]) && text[len - 1] != '\0')
        len--;
    /* json-c cuts a key at an escaped NUL: refused rather than misread. */
    if (memmem(text, len, "\\u0000", 6))
        return err_set(err, ERR_PROTOCOL, "the probe's output holds a NUL character");
    json_object *o = NULL;
    struct json_exact why;
    int rc = -1;
    /* Depth 3: the report, its packages, a version. */
    if (json_parse_exact(text, len, 3, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8, &o, &why) <
            0 ||
        !json_object_is_type(o, json_type_object)) {
        err_set(err, ERR_PROTOCOL, "the probe's output is not one JSON object");
        goto out;
    }
    json_object *version = NULL;
    json_object *packages = NULL;
    json_object_object_foreach(o, key, val)
    {
        if (strcmp(key, "version") == 0) {
            version = val;
        } else if (strcmp(key, "packages") == 0) {
            packages = val;
        } else {
            err_set(err, ERR_PROTOCOL, "the probe's output has an unexpected key");
            goto out;
        }
    }
    if (!version_ok(version)) {
        err_set(err, ERR_PROTOCOL, "the probe's output has no valid version");
        goto out;
    }
    memcpy(out->version, json_object_get_string(version),
           (size_t)json_object_get_string_len(version));
    if (packages && !json_object_is_type(packages, json_type_object)) {
        err_set(err, ERR_PROTOCOL, "the probe's packages are not an object");
        goto out;
    }
    if (packages && json_object_object_length(packages) > LANGUAGES_MAX_PACKAGES) {
        err_set(err, ERR_PROTOCOL, "the probe reported more than %d packages",
                LANGUAGES_MAX_PACKAGES);
        goto out;
    }
    if (packages) {
        json_object_object_foreach(packages, name, pv)
        {
            size_t n = strlen(name);
            if (!charset_ok(name, n, LANGUAGES_NAME_MAX, "._-", false) || !version_ok(pv)) {
                err_set(err, ERR_PROTOCOL, "the probe reported a package it cannot name");
                goto out;
            }
            struct languages_package *p = &out->packages[out->n_packages++];
            memcpy(p->name, name, n);
            memcpy(p->version, json_object_get_string(pv), (size_t)json_object_get_string_len(pv));
        }
    }
    rc = 0;
out:
    json_object_put(o);
    if (rc < 0)
        memset(out, 0, sizeof(*out));
    return rc;
}

/* ---- probing --------------------------------------------------------------- */

static bool alnum(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* A version command's output as a probe's answer: its first word that
 * starts with a digit (or "v" and a digit), holds a dot and is not glued
 * to a word before it ("GNU bash, version 5.2.15(1)-release" -> 5.2.15,
 * "ruby 3.1.2p20 (...)" -> 3.1.2p20, "perl v5.36.0" -> 5.36.0). */
int languages_version_from_text(const char *text, size_t len, struct buf *out, struct err *err)
{
    for (size_t i = 0; i < len; i++) {
        /* "v5.36.0" counts, "x86_64" does not. */
        bool v = i > 0 && text[i - 1] == 'v' && (i < 2 || !alnum(text[i - 2]));
        if (!(text[i] >= '0' && text[i] <= '9') ||
            (i > 0 && !v && (alnum(text[i - 1]) || text[i - 1] == '.')))
            continue;
        size_t n = 0;
        while (i + n < len && (alnum(text[i + n]) || strchr(".+~_-", text[i + n])) &&
               text[i + n] != '\0')
            n++;
        while (n && strchr(".+~_-", text[i + n - 1]))
            n--;
        bool dot = memchr(text + i, '.', n) != NULL; /* "Release 7." has none */
        if (dot && n <= LANGUAGES_VERSION_MAX) {
            if (buf_addf(out, "{\"version\":\"%.*s\",\"packages\":{}}", (int)n, text + i) < 0)
                return err_set(err, ERR_TOO_BIG, "the version is too long");
            return 0;
        }
        i += n;
    }
    return err_set(err, ERR_PROTOCOL, "the version command printed no version number");
}

static int exec_probe(void *ctx, const struct langtable_lang *lang, struct exec_cancel *cancel,
                      struct buf *out, struct err *err)
{
    struct languages *l = ctx;
    bool generic = lang->runner == LANGTABLE_RUNNER_GENERIC;
    const char *code = lang->runner == LANGTABLE_RUNNER_PYTHON ? languages_probe_python
                       : lang->runner == LANGTABLE_RUNNER_NODE ? languages_probe_node
                                                               : "";
    if (generic && lang->version.n == 0)
        return err_set(err, ERR_INVALID, "the language table has no version command for it");
    long long timeout = LANGUAGES_PROBE_TIMEOUT_MS;
    if (timeout > l->cfg->max_timeout_ms)
        timeout = l->cfg->max_timeout_ms;
    /* The default memory: the pool's, so a waiting sandbox serves it. */
    struct run req = {
        .language = lang,
        .code = code,
        .code_len = strlen(code),
        .timeout_ms = timeout,
        .memory_mb = l->cfg->memory_mb,
        .version_probe = generic,
        .cancel = cancel,
    };
    struct exec_result res;
    exec_result_init(&res);
    int rc = -1;
    if (exec_run(l->exec, &req, &res, err) < 0)
        goto out;
    if (res.status == EXEC_CANCELLED) {
        err_set(err, ERR_CANCELLED, "the probe was stopped");
        goto out;
    }
    if (res.status != EXEC_OK) {
        err_set(err, ERR_PROTOCOL, "the probe ended with status %s", exec_status_name(res.status));
        goto out;
    }
    if (!res.has_exit_code) {
        err_set(err, ERR_PROTOCOL, "the probe reported no exit status");
        goto out;
    }
    if (res.exit_code != 0) {
        err_set(err, ERR_PROTOCOL, "the probe exited with code %d", res.exit_code);
        goto out;
    }
    if (generic) {
        /* Some print it on stderr (older gcc, java). */
        struct buf *from = res.out.len ? &res.out : &res.err;
        if (languages_version_from_text(from->data ? from->data : "", from->len, out, err) < 0)
            goto out;
    } else if (buf_add(out, res.out.data ? res.out.data : "", res.out.len) < 0) {
        err_set(err, ERR_TOO_BIG, "the probe wrote more than %zu bytes", out->max);
        goto out;
    }
    rc = 0;
out:
    exec_result_free(&res);
    return rc;
}

/* One language, unlocked; fills *report or why. */
static void probe_one(struct languages *l, const struct langtable_lang *lang,
                      struct exec_cancel *cancel, struct languages_report *report, char *why,
                      size_t why_size)
{
    struct buf out;
    buf_init(&out, LANGUAGES_PROBE_MAX_BYTES);
    struct err err = ERR_INIT;
    why[0] = '\0';
    if (l->probe(l->probe_ctx, lang, cancel, &out, &err) < 0 ||
        languages_parse_probe(out.data ? out.data : "", out.len, report, &err) < 0) {
        /* An engine's message may quote anything: kept short and escaped
         * (the sandbox's words were redacted by exec). */
        const char *m = err_msg(&err);
        util_escape(why, why_size, m, strlen(m));
        if (err.code == ERR_CANCELLED)
            log_debug("reading the %s version from its image: stopped", lang->name);
        else
            log_warn("reading the %s version from its image failed: %s", lang->name, why);
    } else {
        log_info("%s in its image: version %s, %zu packages", lang->name, report->version,
                 report->n_packages);
    }
    err_clear(&err);
    buf_free(&out);
}

static void *probe_main(void *arg)
{
    struct languages *l = arg;
    pthread_mutex_lock(&l->lock);
    for (;;) {
        while (!l->stop && !l->wanted)
            pthread_cond_wait(&l->wake, &l->lock);
        if (l->stop)
            break;
        l->wanted = false;
        l->running = true;
        for (size_t i = 0; i < l->n && !l->stop; i++) {
            if (l->state[i].known)
                continue;
            struct exec_cancel *cancel = exec_cancel_new();
            l->cancel = cancel;
            pthread_mutex_unlock(&l->lock);
            struct languages_report report;
            char why[sizeof(l->state[i].error)];
            probe_one(l, langtable_get(l->langs, i), cancel, &report, why, sizeof(why));
            pthread_mutex_lock(&l->lock);
            l->cancel = NULL;
            exec_cancel_free(cancel);
            if (why[0]) {
                memcpy(l->state[i].error, why, sizeof(why));
            } else {
                l->state[i].report = report;
                l->state[i].known = true;
                l->state[i].error[0] = '\0';
            }
        }
        l->running = false;
        l->last_round_ms = util_now_ms();
        pthread_cond_broadcast(&l->done);
    }
    l->running = false;
    pthread_cond_broadcast(&l->done);
    pthread_mutex_unlock(&l->lock);
    return NULL;
}

struct languages *languages_new_probe(const struct config *cfg, const struct langtable *langs,
                                      languages_probe_fn probe, void *probe_ctx, double retry_ms)
{
    struct languages *l = xcalloc(1, sizeof(*l));
    l->cfg = cfg;
    l->langs = langs;
    l->n = langtable_count(langs);
    l->state = xcalloc(l->n ? l->n : 1, sizeof(*l->state));
    l->probe = probe;
    l->probe_ctx = probe_ctx;
    l->retry_ms = retry_ms;
    l->last_round_ms = -INFINITY;
    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->wake, NULL);
    util_cond_init_monotonic(&l->done);
    return l;
}

struct languages *languages_new(const struct config *cfg, const struct langtable *langs,
                                struct exec_ctx *exec)
{
    struct languages *l =
        languages_new_probe(cfg, langs, exec ? exec_probe : NULL, NULL, LANGUAGES_RETRY_MS);
    l->exec = exec;
    l->probe_ctx = l;
    return l;
}

static int start_locked(struct languages *l, struct err *err)
{
    if (!l->probe || l->started || l->stop)
        return 0;
    static const char what[] = "the language probe thread";
    if (thread_start(&l->thread, &l->started, probe_main, l, what, err) < 0) {
        snprintf(l->start_error, sizeof(l->start_error), "no thread to read it with");
        return -1;
    }
    l->wanted = true;
    pthread_cond_signal(&l->wake);
    return 0;
}

int languages_start(struct languages *l, struct err *err)
{
    pthread_mutex_lock(&l->lock);
    int rc = start_locked(l, err);
    pthread_mutex_unlock(&l->lock);
    return rc;
}

void languages_free(struct languages *l)
{
    if (!l)
        return;
    pthread_mutex_lock(&l->lock);
    l->stop = true;
    if (l->cancel)
        exec_cancel(l->cancel);
    pthread_cond_broadcast(&l->wake);
    bool started = l->started;
    pthread_mutex_unlock(&l->lock);
    thread_join(&l->thread, &started);
    pthread_mutex_destroy(&l->lock);
    pthread_cond_destroy(&l->wake);
    pthread_cond_destroy(&l->done);
    free(l->state);
    free(l);
}

bool languages_all_known(struct languages *l)
{
    pthread_mutex_lock(&l->lock);
    bool known = !l->probe || l->stop;
    if (!known) {
        known = true;
        for (size_t i = 0; i < l->n && known; i++)
            known = l->state[i].known;
    }
    pthread_mutex_unlock(&l->lock);
    return known;
}

void languages_add_versions(struct languages *l, const struct langtable_lang *lang,
                            json_object *obj, double wait_ms)
{
    size_t i = lang->index < l->n ? lang->index : 0;
    struct lang_state st;
    bool probing = false;
    char start_error[sizeof(l->start_error)];
    pthread_mutex_lock(&l->lock);
    if (l->probe && !l->stop) {
        double now = util_now_ms();
        if (l->started && !l->state[i].known && !l->running && !l->wanted &&
            now - l->last_round_ms >= l->retry_ms) {
            l->wanted = true;
            pthread_cond_signal(&l->wake);
        }
        double deadline = now + wait_ms;
        while ((l->running || l->wanted) && !l->state[i].known && !l->stop &&
               (now = util_now_ms()) < deadline)
            util_cond_wait_ms(&l->done, &l->lock, deadline - now);
        probing = (l->running || l->wanted) && !l->state[i].known;
    }
    st = l->state[i];
    memcpy(start_error, l->start_error, sizeof(start_error));
    bool can_probe = l->probe != NULL;
    pthread_mutex_unlock(&l->lock);

    json_object *packages = json_object_new_object();
    if (st.known) {
        json_object_object_add(obj, "version", json_object_new_string(st.report.version));
        for (size_t k = 0; k < st.report.n_packages; k++)
            json_object_object_add(packages, st.report.packages[k].name,
                                   json_object_new_string(st.report.packages[k].version));
    } else {
        json_object_object_add(obj, "version", NULL);
    }
    json_object_object_add(obj, "packages", packages);
    if (st.known)
        return;
    if (probing) {
        json_object_object_add(obj, "probing", json_object_new_boolean(1));
        return;
    }
    const char *why = !can_probe       ? "no sandbox backend to read it from"
                      : start_error[0] ? start_error
                      : st.error[0]    ? st.error
                                       : "not read yet";
    json_object_object_add(obj, "version_error", json_object_new_string(why));
}

/* ---- the facts ------------------------------------------------------------- */

json_object *languages_limits_json(const struct config *cfg)
{
    json_object *lim = json_object_new_object();
    const struct json_int_row rows[] = {
        {"timeout_ms", cfg->timeout_ms},
        {"max_timeout_ms", cfg->max_timeout_ms},
        {"memory_mb", cfg->memory_mb},
        {"max_memory_mb", cfg->max_memory_mb},
        {"max_output_bytes", cfg->max_output_bytes},
        {"max_code_bytes", cfg->max_code_bytes},
        {"pids_limit", cfg->pids_limit},
        {"tmpfs_mb", cfg->tmpfs_mb},
        {"max_files_in", cfg->max_files_in},
        {"max_file_in_bytes", cfg->max_file_in_bytes},
        {"max_files_in_bytes", cfg->max_files_in_bytes},
        {"max_files_out", cfg->max_files_out},
        {"max_file_out_bytes", cfg->max_file_out_bytes},
        {"max_files_out_bytes", cfg->max_files_out_bytes},
        {"max_plots", cfg->max_plots},
        {"max_plot_bytes", cfg->max_plot_bytes},
        {"max_inline_image_bytes", cfg->max_inline_image_bytes},
        {"max_inline_text_bytes", cfg->max_inline_text_bytes},
        {"run_store_ttl_ms", cfg->run_store_ttl_ms},
        {"run_store_max_bytes", cfg->run_store_max_bytes},
        {"run_store_session_max_bytes", cfg->run_store_session_max_bytes},
        {"max_code_sessions", cfg->max_code_sessions},
        {"max_code_sessions_per_owner", cfg->max_code_sessions_per_owner},
        {"code_session_idle_ms", cfg->code_session_idle_ms},
        {"code_session_max_age_ms", cfg->code_session_max_age_ms},
        {"egress_max_connections", cfg->egress_max_connections},
        {"egress_max_connections_total", cfg->egress_max_connections_total},
        {"egress_max_bytes_up", cfg->egress_max_bytes_up},
        {"egress_max_bytes_down", cfg->egress_max_bytes_down},
        {"egress_connection_timeout_ms", cfg->egress_connection_timeout_ms},
    };
    json_add_ints(lim, rows, ARRAY_SIZE(rows));
    json_object_object_add(lim, "cpus", json_object_new_double(cfg->cpus));
    return lim;
}

/* The tools that take lang: its own, and those with a language argument
 * (validate_code only for the in-process runners, which parse the code),
 * of those cfg offers. */
static json_object *tools_of(const struct config *cfg, const struct langtable_lang *lang)
{
    json_object *a = json_object_new_array();
    for (size_t i = 0; registry_at(i); i++)
        if (registry_offered(registry_at(i), cfg) && registry_takes(registry_at(i), lang))
            json_object_array_add(a, json_object_new_string(registry_at(i)->name));
    return a;
}

static json_object *strv_json(const struct langtable_strv *v)
{
    json_object *a = json_object_new_array();
    for (size_t i = 0; i < v->n; i++)
        json_object_array_add(a, json_object_new_string(v->v[i]));
    return a;
}

/* What installs on demand lang has: its installer, index (none: the
 * installer's own), whether install scripts run, whether only the cache
 * serves (--packages-offline); null for none. */
static json_object *installs_json(const struct langtable_lang *lang, const struct config *cfg)
{
    const struct langtable_packages *p = lang->packages;
    if (!p)
        return NULL;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "installer",
                           json_object_new_string(reqs_installer_name(p->installer)));
    json_object_object_add(o, "index", strv_json(&p->index));
    json_object_object_add(o, "scripts", json_object_new_boolean(p->scripts));
    json_object_object_add(o, "offline", json_object_new_boolean(cfg->packages_offline));
    return o;
}

/* The language's warm sandboxes: its bounds and, with a running pool,
 * the target now and how it came (sandbox/pool/demand.h). */
static json_object *pool_json(struct exec_ctx *exec, const struct langtable_lang *lang)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "min", json_object_new_int64(lang->pool_size));
    json_object_object_add(o, "max", json_object_new_int64(lang->pool_max));
    struct exec_pool_stats st;
    if (exec && exec_pool_stats(exec, lang, &st)) {
        json_object_object_add(o, "target", json_object_new_int64((int64_t)st.size));
        json_object_object_add(o, "why", json_object_new_string(st.why));
    }
    return o;
}

json_object *languages_json(struct languages *l, const struct config *cfg, struct exec_ctx *exec,
                            double wait_ms)
{
    json_object *o = json_object_new_object();
    json_object *langs = json_object_new_array();
    double deadline = util_now_ms() + wait_ms;
    bool any_pool = false, any_plots = false;
    for (size_t i = 0; i < l->n; i++) {
        const struct langtable_lang *lang = langtable_get(l->langs, i);
        json_object *x = json_object_new_object();
        json_object_object_add(x, "language", json_object_new_string(lang->name));
        json_object_object_add(x, "aliases", strv_json(&lang->aliases));
        json_object_object_add(x, "tools", tools_of(cfg, lang));
        json_object_object_add(x, "image", json_object_new_string(lang->image));
        json_object_object_add(x, "runner",
                               json_object_new_string(langtable_runner_name(lang->runner)));
        json_object_object_add(x, "source_file", json_object_new_string(lang->source_file));
        json_object_object_add(x, "compile", lang->compile.n ? strv_json(&lang->compile) : NULL);
        if (lang->typecheck.n)
            json_object_object_add(x, "typecheck", strv_json(&lang->typecheck));
        json_object_object_add(x, "run", strv_json(&lang->run));
        const char *rt = langtable_runtime(lang, cfg);
        json_object_object_add(x, "runtime", json_object_new_string(rt ? rt : "default"));
        json_object_object_add(x, "plots",
                               json_object_new_boolean(lang->plots && cfg->max_plots > 0));
        json_object_object_add(x, "environment", strv_json(&lang->environment));
        double left = deadline - util_now_ms();
        languages_add_versions(l, lang, x, left > 0 ? left : 0);
        json_object_object_add(x, "network",
                               json_object_new_string(langtable_network(lang, cfg)
                                                          ? POLICY_NETWORK_ALLOWED
                                                          : POLICY_NETWORK));
        json_object_object_add(x, "egress", egress_arg_list_json(lang->egress));
        json_object_object_add(x, "installs", installs_json(lang, cfg));
        if (exec)
            json_object_object_add(x, "sandbox_io",
                                   json_object_new_string(exec_sandbox_io(exec, lang)));
        json_object_object_add(x, "pool_size", json_object_new_int64(lang->pool_size));
        json_object_object_add(x, "pool", pool_json(exec, lang));
        any_pool |= lang->pool_max > 0;
        any_plots |= lang->plots;
        json_object_array_add(langs, x);
    }
    json_object_object_add(o, "languages", langs);
    json_object_object_add(o, "limits", languages_limits_json(cfg));
    json_object *f = json_object_new_array();
    for (size_t i = 0; i < ARRAY_SIZE(features); i++)
        if (features[i].when == ALWAYS || (features[i].when == WITH_POOL && any_pool) ||
            (features[i].when == WITH_PLOTS && any_plots && cfg->max_plots > 0) ||
            (features[i].when == WITH_SESSIONS && cfg->max_code_sessions > 0))
            json_object_array_add(f, json_object_new_string(features[i].name));
    json_object_object_add(o, "features", f);
    return o;
}
