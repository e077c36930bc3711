#include "mcp/session.h"

const char *const mcp_log_levels[MCP_LOG_LEVELS] = {"debug", "info",     "notice", "warning",
                                                    "error", "critical", "alert",  "emergency"};

struct tools_features mcp_features_of(enum mcp_version v)
{
    struct tools_features f = {
        .annotations = v >= MCP_V_2025_03_26,
        .structured = v >= MCP_V_2025_06_18,
    };
    return f;
}

void session_call_ended(struct mcp_session *s)
{
    pthread_mutex_lock(&s->lock);
    s->inflight--;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
}
