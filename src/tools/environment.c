#include "tools/environment.h"

#include <string.h>

#include "base/util.h"
#include "sandbox/exec.h"
#include "sandbox/policy.h"
#include "tools/languages.h"
#include "tools/registry.h"

static json_object *preload_json(const char *list)
{
    json_object *a = json_object_new_array();
    for (const char *p = list; p && *p;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        json_object_array_add(a, json_object_new_string_len(p, (int)n));
        p = comma ? comma + 1 : p + n;
    }
    return a;
}

/* Warm sandboxes: what a run of the default limits gets at once, and how
 * the pool has fared (a pooled sandbox is still used for one run only). */
static json_object *pool_json(const struct tools_env *tenv)
{
    const struct config *cfg = tenv->cfg;
    json_object *pool = json_object_new_object();
    json_object_object_add(pool, "size", json_object_new_int64(cfg->pool_size));
    json_object_object_add(pool, "max_age_ms", json_object_new_int64(cfg->pool_max_age_ms));
    json_object_object_add(pool, "refill_delay_ms",
                           json_object_new_int64(cfg->pool_refill_delay_ms));
    json_object *profiles = json_object_new_array();
    const enum exec_language langs[] = {EXEC_PYTHON, EXEC_JAVASCRIPT};
    const char *preloads[] = {cfg->python_preload, cfg->js_preload};
    for (size_t i = 0; i < ARRAY_SIZE(langs); i++) {
        struct exec_pool_stats st;
        if (!tenv->exec || !exec_pool_stats(tenv->exec, langs[i], &st))
            continue;
        json_object *p = json_object_new_object();
        json_object_object_add(p, "language", json_object_new_string(exec_language_name(langs[i])));
        json_object_object_add(p, "memory_mb", json_object_new_int64(cfg->memory_mb));
        json_object_object_add(p, "preload", preload_json(preloads[i]));
        json_object_object_add(p, "size", json_object_new_int64((int64_t)st.size));
        json_object_object_add(p, "ready", json_object_new_int64((int64_t)st.ready));
        json_object_object_add(p, "starting", json_object_new_int64((int64_t)st.starting));
        json_object_object_add(p, "hits", json_object_new_int64((int64_t)st.hits));
        json_object_object_add(p, "misses", json_object_new_int64((int64_t)st.misses));
        json_object_object_add(p, "replaced", json_object_new_int64((int64_t)st.replaced));
        json_object_object_add(p, "recycled", json_object_new_int64((int64_t)st.recycled));
        json_object_object_add(p, "failed", json_object_new_int64((int64_t)st.failed));
        json_object_object_add(p, "without_preload", json_object_new_int64((int64_t)st.lean));
        if (st.last_error[0])
            json_object_object_add(p, "last_error", json_object_new_string(st.last_error));
        json_object_array_add(profiles, p);
    }
    json_object_object_add(pool, "profiles", profiles);
    return pool;
}

json_object *tools_environment_json(const struct tools_env *tenv)
{
    const struct config *cfg = tenv->cfg;
    json_object *env = json_object_new_object();
    json_object *langs = json_object_new_array();
    const char *names[] = {"python", "javascript"};
    const char *images[] = {cfg->python_image, cfg->js_image};
    const char *tools[] = {registry_for_kind(TOOL_PYTHON)->name,
                           registry_for_kind(TOOL_JAVASCRIPT)->name};
    for (size_t i = 0; i < 2; i++) {
        json_object *l = json_object_new_object();
        json_object_object_add(l, "language", json_object_new_string(names[i]));
        json_object_object_add(l, "image", json_object_new_string(images[i]));
        json_object_object_add(l, "tool", json_object_new_string(tools[i]));
        const char *rt = config_runtime(cfg, names[i]);
        json_object_object_add(l, "runtime", json_object_new_string(rt ? rt : "default"));
        /* How its sandboxes' streams reach the daemon (sandbox/launch.h). */
        if (tenv->exec)
            json_object_object_add(l, "sandbox_io",
                                   json_object_new_string(exec_sandbox_io(
                                       tenv->exec, i == 0 ? EXEC_PYTHON : EXEC_JAVASCRIPT)));
        /* list_languages' versions, as known now: a resource read waits
         * for no probe. */
        languages_add_versions(tenv->languages, i == 0 ? EXEC_PYTHON : EXEC_JAVASCRIPT, l, 0);
        json_object_array_add(langs, l);
    }
    json_object_object_add(env, "languages", langs);
    json_object_object_add(env, "limits", languages_limits_json(cfg));
    /* Per language: what its sandboxes can reach (none unless the operator
     * allowed it; a call never can). */
    json_object *net = json_object_new_object();
    static const char *const langs_all[] = {"python", "javascript"};
    for (size_t i = 0; i < 2; i++)
        json_object_object_add(net, langs_all[i],
                               json_object_new_string(config_network_allowed(cfg, langs_all[i])
                                                          ? POLICY_NETWORK_ALLOWED
                                                          : POLICY_NETWORK));
    json_object_object_add(env, "network", net);
    json_object_object_add(env, "working_directory", json_object_new_string(POLICY_WORKDIR));
    json_object_object_add(env, "persistent", json_object_new_boolean(0));
    json_object_object_add(env, "pool", pool_json(tenv));
    return env;
}
