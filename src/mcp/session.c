#include "mcp/session.h"

const char *const mcp_log_levels[MCP_LOG_LEVELS] = {"debug", "info",     "notice", "warning",
                                                    "error", "critical", "alert",  "emergency"};

const char mcp_instructions[] =
    "Runs code in fresh, isolated containers: Python, JavaScript, TypeScript, Bash, C, C++, "
    "Ruby and PHP as built in, or the languages the operator configured (no network unless the "
    "operator allowed it; the environment resource says). Use run_python_code or run_js_code "
    "for a quick run, execute_code for any language, stdin and per-call limits, list_languages "
    "for the languages, compilers' and interpreters' versions and installed packages (the run "
    "tools' packages argument installs more where list_languages shows an installer). "
    "Where offered, create_session keeps one sandbox for later calls (pass its session_id to "
    "the run tools; list_sessions, close_session). "
    "Results carry stdout, stderr, exit_code and status.";

struct tools_features mcp_features_of(enum mcp_version v)
{
    struct tools_features f = {
        .annotations = v >= MCP_V_2025_03_26,
        .structured = v >= MCP_V_2025_06_18,
    };
    return f;
}

json_object *session_capabilities(const struct mcp_server *srv, bool modern, enum mcp_version v)
{
    json_object *caps = json_object_new_object();
    json_object *tools = json_object_new_object();
    json_object_object_add(tools, "listChanged", json_object_new_boolean(0));
    json_object_object_add(caps, "tools", tools);
    json_object_object_add(caps, "logging", json_object_new_object());
    json_object *resources = json_object_new_object();
    /* The modern wire has no resources/subscribe (subscriptions/listen
     * instead, and the one resource never changes). */
    if (!modern)
        json_object_object_add(resources, "subscribe", json_object_new_boolean(1));
    json_object_object_add(resources, "listChanged", json_object_new_boolean(0));
    json_object_object_add(caps, "resources", resources);
    json_object *prompts = json_object_new_object();
    json_object_object_add(prompts, "listChanged", json_object_new_boolean(0));
    json_object_object_add(caps, "prompts", prompts);
    if (modern || v >= MCP_V_2025_03_26)
        json_object_object_add(caps, "completions", json_object_new_object());
    if (!modern && v >= MCP_V_2025_11_25 && srv->tasks) {
        /* 2025-11-25's experimental tasks: tools/call with params.task. */
        json_object *tasks = json_object_new_object();
        json_object_object_add(tasks, "list", json_object_new_object());
        json_object_object_add(tasks, "cancel", json_object_new_object());
        json_object *call = json_object_new_object();
        json_object_object_add(call, "call", json_object_new_object());
        json_object *requests = json_object_new_object();
        json_object_object_add(requests, "tools", call);
        json_object_object_add(tasks, "requests", requests);
        json_object_object_add(caps, "tasks", tasks);
    }
    if (modern && srv->tasks) {
        json_object *ext = json_object_new_object();
        json_object_object_add(ext, "io.modelcontextprotocol/tasks", json_object_new_object());
        json_object_object_add(caps, "extensions", ext);
    }
    return caps;
}

json_object *session_server_info(enum mcp_version v)
{
    json_object *info = json_object_new_object();
    json_object_object_add(info, "name", json_object_new_string(MCP_SERVER_NAME));
    json_object_object_add(info, "version", json_object_new_string(MCPSBX_VERSION));
    if (v >= MCP_V_2025_06_18)
        json_object_object_add(info, "title", json_object_new_string("mcp-sandboxd code sandbox"));
    if (v >= MCP_V_2025_11_25)
        json_object_object_add(
            info, "description",
            json_object_new_string("Runs Python, JavaScript, TypeScript, Bash, C, C++, Ruby, PHP "
                                   "and configured languages in fresh hardened containers"));
    return info;
}

void session_call_ended(struct mcp_session *s)
{
    pthread_mutex_lock(&s->lock);
    s->inflight--;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
}
