#include "tools/environment.h"

#include "sandbox/policy.h"
#include "tools/registry.h"

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
        json_object_array_add(langs, l);
    }
    json_object_object_add(env, "languages", langs);
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
    json_object_object_add(env, "limits", lim);
    json_object_object_add(env, "network", json_object_new_string(POLICY_NETWORK));
    json_object_object_add(env, "working_directory", json_object_new_string(POLICY_WORKDIR));
    json_object_object_add(env, "persistent", json_object_new_boolean(0));
    return env;
}
