#include "tools/languages.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/log.h"
#include "base/util.h"
#include "sandbox/policy.h"
#include "tools/registry.h"

/* The probes print one JSON object and read nothing else: the versions
 * the image's own interpreter reports. Python asks the installed
 * distributions' metadata, which imports none of the packages. */
static const char probe_python[] =
    "import json, sys\n"
    "from importlib import metadata\n"
    "packages = {}\n"
    "for name in ('numpy', 'pandas', 'scipy', 'matplotlib', 'sympy', 'requests', 'pillow'):\n"
    "    try:\n"
    "        packages[name] = metadata.version(name)\n"
    "    except Exception:\n"
    "        pass\n"
    "print(json.dumps({'version': '%d.%d.%d' % sys.version_info[:3], 'packages': packages}))\n";

/* Node has no package list of its own: the global module folders (empty
 * in the stock image, which has no npm). */
static const char probe_node[] =
    "const fs = require('fs');\n"
    "const path = require('path');\n"
    "const packages = {};\n"
    "for (const dir of ['/usr/local/lib/node_modules', '/usr/lib/node_modules', "
    "'/usr/share/nodejs']) {\n"
    "  let names = [];\n"
    "  try { names = fs.readdirSync(dir).sort(); } catch (e) {}\n"
    "  for (const name of names) {\n"
    "    if (Object.keys(packages).length >= 16) break;\n"
    "    try {\n"
    "      const m = JSON.parse(fs.readFileSync(path.join(dir, name, 'package.json'), 'utf8'));\n"
    "      if (typeof m.version === 'string') packages[name] = m.version;\n"
    "    } catch (e) {}\n"
    "  }\n"
    "}\n"
    "console.log(JSON.stringify({ version: process.version, packages }));\n";

/* What every call has; one row per feature, in the order listed. */
enum feature_when { ALWAYS, WITH_POOL, WITH_PLOTS };
static const struct {
    const char *name;
    enum feature_when when; /* --pool-size > 0, --max-plots > 0 */
} features[] = {
    {"stdin", ALWAYS},         {"variables", ALWAYS},   {"per_call_limits", ALWAYS},
    {"files_in", ALWAYS},      {"files_out", ALWAYS},   {"plots", WITH_PLOTS},
    {"validate_code", ALWAYS}, {"live_output", ALWAYS}, {"cancellation", ALWAYS},
    {"warm_pool", WITH_POOL},
};

static const enum exec_language all_languages[] = {EXEC_PYTHON, EXEC_JAVASCRIPT};
#define N_LANGUAGES ARRAY_SIZE(all_languages)

struct lang_state {
    bool known; /* report holds the image's answer */
    struct languages_report report;
    char error[256]; /* why the last probe failed */
};

struct languages {
    const struct config *cfg;
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
    struct lang_state state[N_LANGUAGES];
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

static int exec_probe(void *ctx, enum exec_language lang, struct exec_cancel *cancel,
                      struct buf *out, struct err *err)
{
    struct languages *l = ctx;
    const char *code = lang == EXEC_PYTHON ? probe_python : probe_node;
    long long timeout = LANGUAGES_PROBE_TIMEOUT_MS;
    if (timeout > l->cfg->max_timeout_ms)
        timeout = l->cfg->max_timeout_ms;
    /* The default memory: the pool's, so a waiting sandbox serves it. */
    struct exec_request req = {
        .language = lang,
        .code = code,
        .code_len = strlen(code),
        .timeout_ms = timeout,
        .memory_mb = l->cfg->memory_mb,
    };
    struct exec_result res;
    exec_result_init(&res);
    int rc = -1;
    if (exec_run(l->exec, &req, cancel, &res, err) < 0)
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
    if (buf_add(out, res.out.data ? res.out.data : "", res.out.len) < 0) {
        err_set(err, ERR_TOO_BIG, "the probe wrote more than %zu bytes", out->max);
        goto out;
    }
    rc = 0;
out:
    exec_result_free(&res);
    return rc;
}

/* One language, unlocked; fills *report or why. */
static void probe_one(struct languages *l, enum exec_language lang, struct exec_cancel *cancel,
                      struct languages_report *report, char *why, size_t why_size)
{
    struct buf out;
    buf_init(&out, LANGUAGES_PROBE_MAX_BYTES);
    struct err err = ERR_INIT;
    why[0] = '\0';
    if (l->probe(l->probe_ctx, lang, cancel, &out, &err) < 0 ||
        languages_parse_probe(out.data ? out.data : "", out.len, report, &err) < 0) {
        /* An engine's message may quote anything: kept short and clean. */
        size_t n = 0;
        const char *m = err_msg(&err);
        char *clean = util_utf8_sanitize(m, strnlen(m, why_size - 1), &n);
        snprintf(why, why_size, "%s", clean);
        free(clean);
        if (err.code == ERR_CANCELLED)
            log_debug("reading the %s version from its image: stopped", exec_language_name(lang));
        else
            log_warn("reading the %s version from its image failed: %s", exec_language_name(lang),
                     why);
    } else {
        log_info("%s in its image: version %s, %zu packages", exec_language_name(lang),
                 report->version, report->n_packages);
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
        for (size_t i = 0; i < N_LANGUAGES && !l->stop; i++) {
            if (l->state[i].known)
                continue;
            struct exec_cancel *cancel = exec_cancel_new();
            l->cancel = cancel;
            pthread_mutex_unlock(&l->lock);
            struct languages_report report;
            char why[sizeof(l->state[i].error)];
            probe_one(l, all_languages[i], cancel, &report, why, sizeof(why));
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

struct languages *languages_new_probe(const struct config *cfg, languages_probe_fn probe,
                                      void *probe_ctx, double retry_ms)
{
    struct languages *l = xcalloc(1, sizeof(*l));
    l->cfg = cfg;
    l->probe = probe;
    l->probe_ctx = probe_ctx;
    l->retry_ms = retry_ms;
    l->last_round_ms = -INFINITY;
    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->wake, NULL);
    util_cond_init_monotonic(&l->done);
    return l;
}

struct languages *languages_new(const struct config *cfg, struct exec_ctx *exec)
{
    struct languages *l =
        languages_new_probe(cfg, exec ? exec_probe : NULL, NULL, LANGUAGES_RETRY_MS);
    l->exec = exec;
    l->probe_ctx = l;
    return l;
}

static int start_locked(struct languages *l, struct err *err)
{
    if (!l->probe || l->started || l->stop)
        return 0;
    if (pthread_create(&l->thread, NULL, probe_main, l) != 0) {
        snprintf(l->start_error, sizeof(l->start_error), "no thread to read it with");
        return err_set(err, ERR_INTERNAL, "cannot start the language probe thread");
    }
    l->started = true;
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
    if (started)
        pthread_join(l->thread, NULL);
    pthread_mutex_destroy(&l->lock);
    pthread_cond_destroy(&l->wake);
    pthread_cond_destroy(&l->done);
    free(l);
}

static size_t index_of(enum exec_language lang)
{
    for (size_t i = 0; i < N_LANGUAGES; i++)
        if (all_languages[i] == lang)
            return i;
    return 0;
}

void languages_add_versions(struct languages *l, enum exec_language lang, json_object *obj,
                            double wait_ms)
{
    size_t i = index_of(lang);
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
    json_object_object_add(lim, "timeout_ms", json_object_new_int64(cfg->timeout_ms));
    json_object_object_add(lim, "max_timeout_ms", json_object_new_int64(cfg->max_timeout_ms));
    json_object_object_add(lim, "memory_mb", json_object_new_int64(cfg->memory_mb));
    json_object_object_add(lim, "max_memory_mb", json_object_new_int64(cfg->max_memory_mb));
    json_object_object_add(lim, "max_output_bytes", json_object_new_int64(cfg->max_output_bytes));
    json_object_object_add(lim, "max_code_bytes", json_object_new_int64(cfg->max_code_bytes));
    json_object_object_add(lim, "cpus", json_object_new_double(cfg->cpus));
    json_object_object_add(lim, "pids_limit", json_object_new_int64(cfg->pids_limit));
    json_object_object_add(lim, "tmpfs_mb", json_object_new_int64(cfg->tmpfs_mb));
    const struct {
        const char *name;
        long long v;
    } files[] = {
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
    };
    for (size_t i = 0; i < ARRAY_SIZE(files); i++)
        json_object_object_add(lim, files[i].name, json_object_new_int64(files[i].v));
    return lim;
}

/* The tools that take lang: its own, and those with a language argument. */
static json_object *tools_of(enum exec_language lang)
{
    json_object *a = json_object_new_array();
    enum tool_kind own = lang == EXEC_PYTHON ? TOOL_PYTHON : TOOL_JAVASCRIPT;
    for (size_t i = 0; registry_at(i); i++) {
        const struct tool_def *t = registry_at(i);
        if (t->kind == own || t->kind == TOOL_EXECUTE || t->kind == TOOL_VALIDATE)
            json_object_array_add(a, json_object_new_string(t->name));
    }
    return a;
}

json_object *languages_json(struct languages *l, const struct config *cfg, struct exec_ctx *exec,
                            double wait_ms)
{
    json_object *o = json_object_new_object();
    json_object *langs = json_object_new_array();
    double deadline = util_now_ms() + wait_ms;
    for (size_t i = 0; i < N_LANGUAGES; i++) {
        enum exec_language lang = all_languages[i];
        const char *name = exec_language_name(lang);
        json_object *x = json_object_new_object();
        json_object_object_add(x, "language", json_object_new_string(name));
        json_object_object_add(x, "tools", tools_of(lang));
        json_object_object_add(
            x, "image",
            json_object_new_string(lang == EXEC_PYTHON ? cfg->python_image : cfg->js_image));
        const char *rt = config_runtime(cfg, name);
        json_object_object_add(x, "runtime", json_object_new_string(rt ? rt : "default"));
        double left = deadline - util_now_ms();
        languages_add_versions(l, lang, x, left > 0 ? left : 0);
        json_object_object_add(x, "network",
                               json_object_new_string(config_network_allowed(cfg, name)
                                                          ? POLICY_NETWORK_ALLOWED
                                                          : POLICY_NETWORK));
        if (exec)
            json_object_object_add(x, "sandbox_io",
                                   json_object_new_string(exec_sandbox_io(exec, lang)));
        json_object_object_add(x, "pool_size", json_object_new_int64(cfg->pool_size));
        json_object_array_add(langs, x);
    }
    json_object_object_add(o, "languages", langs);
    json_object_object_add(o, "limits", languages_limits_json(cfg));
    json_object *f = json_object_new_array();
    for (size_t i = 0; i < ARRAY_SIZE(features); i++)
        if (features[i].when == ALWAYS || (features[i].when == WITH_POOL && cfg->pool_size > 0) ||
            (features[i].when == WITH_PLOTS && cfg->max_plots > 0))
            json_object_array_add(f, json_object_new_string(features[i].name));
    json_object_object_add(o, "features", f);
    return o;
}
