#include "tools/environment.h"

#include "base/util.h"
#include "sandbox/sandbox.h"
#include "tools/egress_arg.h"
#include "tools/languages.h"
#include "tools/registry.h"
#include "tools/session_tools.h"

static json_object *preload_json(const struct langtable_strv *v)
{
    json_object *a = json_object_new_array();
    for (size_t i = 0; i < v->n; i++)
        json_object_array_add(a, json_object_new_string(v->v[i]));
    return a;
}

/* One pool profile's figures into p. */
static void add_stats(json_object *p, const struct exec_pool_stats *st)
{
    json_object_object_add(p, "size", json_object_new_int64((int64_t)st->size));
    json_object_object_add(p, "min", json_object_new_int64((int64_t)st->min));
    json_object_object_add(p, "max", json_object_new_int64((int64_t)st->max));
    json_object_object_add(p, "size_why", json_object_new_string(st->why));
    json_object_object_add(p, "ready", json_object_new_int64((int64_t)st->ready));
    json_object_object_add(p, "starting", json_object_new_int64((int64_t)st->starting));
    json_object_object_add(p, "hits", json_object_new_int64((int64_t)st->hits));
    json_object_object_add(p, "misses", json_object_new_int64((int64_t)st->misses));
    json_object_object_add(p, "replaced", json_object_new_int64((int64_t)st->replaced));
    json_object_object_add(p, "recycled", json_object_new_int64((int64_t)st->recycled));
    json_object_object_add(p, "failed", json_object_new_int64((int64_t)st->failed));
    if (st->last_error[0])
        json_object_object_add(p, "last_error", json_object_new_string(st->last_error));
}

/* Each language's warm pool profile, or (installers) its ready
 * installers, with their figures; a language without one is left out. */
static json_object *profiles_json(const struct tools_env *tenv, bool installers)
{
    const struct langtable *lt = tenv->langs;
    json_object *a = json_object_new_array();
    for (size_t i = 0; i < langtable_count(lt); i++) {
        const struct langtable_lang *lang = langtable_get(lt, i);
        struct exec_pool_stats st;
        if (!tenv->exec || !(installers ? exec_installer_stats(tenv->exec, lang, &st)
                                        : exec_pool_stats(tenv->exec, lang, &st)))
            continue;
        json_object *p = json_object_new_object();
        json_object_object_add(p, "language", json_object_new_string(lang->name));
        if (!installers) {
            json_object_object_add(p, "memory_mb", json_object_new_int64(tenv->cfg->memory_mb));
            json_object_object_add(p, "preload", preload_json(&lang->preload));
        }
        add_stats(p, &st);
        if (!installers) {
            json_object_object_add(p, "without_preload", json_object_new_int64((int64_t)st.lean));
            json_object_object_add(p, "trimmed", json_object_new_int64((int64_t)st.trimmed));
        }
        json_object_array_add(a, p);
    }
    return a;
}

/* Whether sandboxes being set up or waiting yield the CPUs to runs (a low
 * CPU weight, raised when a run takes one), and why not when they do not. */
static json_object *weights_json(const struct tools_env *tenv)
{
    char why[160] = "no pool";
    bool on = tenv->exec && exec_pool_weights(tenv->exec, why, sizeof(why));
    json_object *w = json_object_new_object();
    json_object_object_add(w, "on", json_object_new_boolean(on));
    json_object_object_add(
        w, "why",
        json_object_new_string(on ? "waiting sandboxes sit at the least CPU weight, raised to "
                                    "the normal one when a run takes one"
                                  : why));
    return w;
}

/* Warm sandboxes: what a run of the default limits gets at once, and how
 * the pool has fared (a pooled sandbox is still used for one run only). */
static json_object *pool_json(const struct tools_env *tenv)
{
    const struct config *cfg = tenv->cfg;
    json_object *pool = json_object_new_object();
    const struct langtable *lt = tenv->langs;
    /* --pool-size, else the largest of the table's (python's 2 in the
     * built-in one, as before there was a table); profiles have each. */
    long long size = cfg->pool_size;
    for (size_t i = 0; cfg->pool_size < 0 && i < langtable_count(lt); i++)
        if (langtable_get(lt, i)->pool_size > size)
            size = langtable_get(lt, i)->pool_size;
    json_object_object_add(pool, "size", json_object_new_int64(size < 0 ? 0 : size));
    json_object_object_add(pool, "max_age_ms", json_object_new_int64(cfg->pool_max_age_ms));
    json_object_object_add(pool, "refill_delay_ms",
                           json_object_new_int64(cfg->pool_refill_delay_ms));
    json_object_object_add(pool, "max_total", json_object_new_int64(cfg->pool_max_total));
    json_object_object_add(pool, "cpu_weights", weights_json(tenv));
    json_object_object_add(pool, "profiles", profiles_json(tenv, false));
    /* Ready installers (one per language with installs), apart: a
     * profile above is what a run gets. */
    json_object_object_add(pool, "installers", profiles_json(tenv, true));
    return pool;
}

json_object *tools_environment_json(const struct tools_env *tenv, const struct tools_caller *who)
{
    const struct config *cfg = tenv->cfg;
    json_object *env = json_object_new_object();
    json_object *langs = json_object_new_array();
    const struct langtable *lt = tenv->langs;
    for (size_t i = 0; i < langtable_count(lt); i++) {
        const struct langtable_lang *lang = langtable_get(lt, i);
        json_object *l = json_object_new_object();
        json_object_object_add(l, "language", json_object_new_string(lang->name));
        json_object_object_add(l, "image", json_object_new_string(lang->image));
        const struct registry_entry *own = registry_own_tool(lang);
        json_object_object_add(
            l, "tool",
            json_object_new_string(own ? own->name : registry_for_kind(TOOL_EXECUTE)->name));
        const char *rt = langtable_runtime(lang, cfg);
        json_object_object_add(l, "runtime", json_object_new_string(rt ? rt : "default"));
        /* How its sandboxes' streams reach the daemon (backend_io_name, backend/backend.h). */
        if (tenv->exec)
            json_object_object_add(l, "sandbox_io",
                                   json_object_new_string(exec_sandbox_io(tenv->exec, lang)));
        /* list_languages' versions, as known now: a resource read waits
         * for no probe. */
        languages_add_versions(tenv->languages, lang, l, 0);
        json_object_array_add(langs, l);
    }
    json_object_object_add(env, "languages", langs);
    json_object_object_add(env, "limits", languages_limits_json(cfg));
    /* Per language: what its sandboxes can reach (none unless the operator
     * allowed it; a call never can), and which hosts through the egress
     * gateway (a call may narrow that, never widen it). */
    json_object *net = json_object_new_object();
    json_object *egress = json_object_new_object();
    for (size_t i = 0; i < langtable_count(lt); i++) {
        const struct langtable_lang *lang = langtable_get(lt, i);
        json_object_object_add(net, lang->name,
                               json_object_new_string(langtable_network(lang, cfg)
                                                          ? POLICY_NETWORK_ALLOWED
                                                          : POLICY_NETWORK));
        json_object_object_add(egress, lang->name, egress_arg_list_json(lang->egress));
    }
    json_object_object_add(env, "network", net);
    json_object_object_add(env, "egress", egress);
    json_object_object_add(env, "working_directory", json_object_new_string(POLICY_WORKDIR));
    json_object_object_add(env, "persistent", json_object_new_boolean(0));
    json_object_object_add(env, "pool", pool_json(tenv));
    /* Code sessions keep their sandboxes between calls (persistent above
     * is about one-shot runs); with who's share. */
    json_object_object_add(env, "code_sessions", sessions_environment_json(tenv, who));
    return env;
}
