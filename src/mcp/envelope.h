/* The request envelope of MCP 2026-07-28. With no initialize to remember
 * them, every request on that wire carries in params._meta its protocol
 * version, the client's capabilities and, optionally, the client's
 * identity, a log level and W3C trace context (traceparent, tracestate).
 * envelope_read reads one request's envelope, a client's and untrusted,
 * into plain C data that may cross threads, or says which of the
 * revision's errors answers it.
 *
 * Which era a request is in: a params._meta naming a protocolVersion makes
 * it modern; without one it is the 2025 wire's (initialize and sessions).
 * Order of the checks, as the revision's conformance suite probes them:
 * the envelope's own form (-32602), then the transport's headers against
 * it (-32020, the transport's to check), then the version
 * (-32022), then the method (-32601), then what the method needs of the
 * client's capabilities (-32021). */
#ifndef MCPSBX_ENVELOPE_H
#define MCPSBX_ENVELOPE_H

#include <json-c/json.h>
#include <stdbool.h>

#define ENVELOPE_KEY_VERSION  "io.modelcontextprotocol/protocolVersion"
#define ENVELOPE_KEY_CAPS     "io.modelcontextprotocol/clientCapabilities"
#define ENVELOPE_KEY_INFO     "io.modelcontextprotocol/clientInfo"
#define ENVELOPE_KEY_LOGLEVEL "io.modelcontextprotocol/logLevel"
#define ENVELOPE_TASKS_EXT    "io.modelcontextprotocol/tasks"

/* The revision's own error codes. */
#define ENVELOPE_ERR_HEADER_MISMATCH     (-32020)
#define ENVELOPE_ERR_MISSING_CAPABILITY  (-32021)
#define ENVELOPE_ERR_UNSUPPORTED_VERSION (-32022)

/* A protocol version as a client may name one: what is kept, and quoted
 * back in an error, at most. */
#define ENVELOPE_VERSION_MAX 32
/* W3C trace context: traceparent is exactly "vv-<32 hex>-<16 hex>-ff";
 * tracestate at most 512 bytes (the recommendation's limit). */
#define ENVELOPE_TRACEPARENT_LEN 55
#define ENVELOPE_TRACESTATE_MAX  512
/* clientInfo's name and version as kept for a log line. */
#define ENVELOPE_INFO_MAX 64

/* The capabilities the daemon may ask of a client. */
enum envelope_cap {
    ENVELOPE_CAP_SAMPLING = 1u << 0,
    ENVELOPE_CAP_ELICITATION = 1u << 1,
    ENVELOPE_CAP_ROOTS = 1u << 2,
    ENVELOPE_CAP_TASKS = 1u << 3, /* extensions["io.modelcontextprotocol/tasks"] */
};

/* The logging levels, in the revision's order (debug the lowest). */
enum envelope_level {
    ENVELOPE_LEVEL_NONE = -1, /* no level: no notifications/message at all */
    ENVELOPE_LEVEL_DEBUG,
    ENVELOPE_LEVEL_INFO,
    ENVELOPE_LEVEL_NOTICE,
    ENVELOPE_LEVEL_WARNING,
    ENVELOPE_LEVEL_ERROR,
    ENVELOPE_LEVEL_CRITICAL,
    ENVELOPE_LEVEL_ALERT,
    ENVELOPE_LEVEL_EMERGENCY,
};

struct envelope {
    bool modern; /* params._meta names a protocolVersion */
    char version[ENVELOPE_VERSION_MAX + 1];
    unsigned caps; /* enum envelope_cap bits */
    enum envelope_level level;
    char client_name[ENVELOPE_INFO_MAX + 1]; /* printable; "" when not given */
    char client_version[ENVELOPE_INFO_MAX + 1];
    char traceparent[ENVELOPE_TRACEPARENT_LEN + 1]; /* "" when absent or malformed */
    char tracestate[ENVELOPE_TRACESTATE_MAX + 1];   /* "" likewise; kept with traceparent only */
};

/* Why a modern request's envelope is refused: the JSON-RPC code and its
 * message (static or in msg). */
struct envelope_error {
    int code;
    char msg[160];
};

/* Reads params (a request's, may be NULL) into *out. A request without a
 * protocolVersion in params._meta is not modern: 0 with out->modern false
 * (its _meta, if any, is the 2025 wire's to read). A modern one: 0, or -1
 * with *e: -32602 for a missing or malformed required field (protocol
 * version a non-empty string of at most ENVELOPE_VERSION_MAX printable
 * bytes, capabilities an object) or a logLevel that is none of the levels.
 * Optional fields that are malformed (clientInfo, traceparent, tracestate)
 * are dropped, never an error: trace context is the client's help, not
 * its request. */
int envelope_read(json_object *params, struct envelope *out, struct envelope_error *e);

/* The level's name ("debug", ...). */
const char *envelope_level_name(enum envelope_level level);

/* The -32021 answer's data for the capabilities in need (bits):
 * {"requiredCapabilities": {...}}. Caller owns it. */
json_object *envelope_missing_caps_data(unsigned need);

#endif
