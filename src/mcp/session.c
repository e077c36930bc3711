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
