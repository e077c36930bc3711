/* The error contract: a function that can fail takes `struct err *err`
 * (may be NULL), returns a negative value on failure and fills err with a
 * category and an allocated, human-readable message. Callers add context on
 * the way up with err_wrap(). One category maps to one JSON-RPC error
 * (err_jsonrpc_code) or one tool result status (err_tool_status): what a
 * client sees of a failure is decided here, not where it is reported.
 * Messages never contain secret values. A result that is not a failure (a
 * callback asking to stop) is a positive value, never an error.
 *
 * The base/ folder, which every layer uses: err.c (this), log.c (stderr
 * logs), buf.c (capped buffers), util.c (allocation, UTF-8, time), json.c
 * (parse exactly one JSON value), the configuration in four files
 * (config_table.c the option table, config.c reading it from defaults, file,
 * environment and command line, config_check.c the checks across options,
 * config_doc.c --help and the sample config file), netaddr.c (whether
 * --http listens on loopback only), admission.c (run slots behind a
 * bounded queue), threads.c (starting and joining a module's threads) and
 * handle.c (the ids clients get back, which name this daemon). */
#ifndef MCPSBX_ERR_H
#define MCPSBX_ERR_H

#include "base/util.h"

enum err_code {
    ERR_OK = 0,
    ERR_INVALID,   /* caller's input is malformed or out of range */
    ERR_TOO_BIG,   /* input or output over a named cap */
    ERR_ENGINE,    /* container engine unreachable or refused a request */
    ERR_NOT_FOUND, /* e.g. image or container missing */
    ERR_IO,        /* local I/O failure */
    ERR_TIMEOUT,   /* an engine request or stream timed out */
    ERR_CANCELLED, /* the operation was cancelled */
    ERR_PROTOCOL,  /* bytes from a peer (a client, the engine, the runner) broke the protocol */
    ERR_INTERNAL,
};

/* The JSON-RPC 2.0 error codes (its section 5.1; -32000 is the first of
 * the server's own), which mcp/jsonrpc.h names for the protocol layer. */
enum err_jsonrpc {
    ERR_JSONRPC_PARSE = -32700,
    ERR_JSONRPC_INVALID_REQUEST = -32600,
    ERR_JSONRPC_METHOD_NOT_FOUND = -32601,
    ERR_JSONRPC_INVALID_PARAMS = -32602,
    ERR_JSONRPC_INTERNAL = -32603,
    ERR_JSONRPC_SERVER = -32000,
};

struct err {
    enum err_code code;
    char *msg;
};

#define ERR_INIT                                                                                   \
    {                                                                                              \
        ERR_OK, NULL                                                                               \
    }

/* Sets err (replacing any previous message); always returns -1. */
int err_set(struct err *err, enum err_code code, const char *fmt, ...) ATTR_PRINTF(3, 4);

/* Prefixes the message with "context: "; returns -1. An error that was
 * never set gets the context alone, as an internal error: nothing ever reads
 * "context: ok". */
int err_wrap(struct err *err, const char *fmt, ...) ATTR_PRINTF(2, 3);

/* Frees the message and resets to ERR_OK. */
void err_clear(struct err *err);

/* Hands src's error to dst (replacing what dst held) and resets src. */
void err_move(struct err *dst, struct err *src);

/* Never NULL. */
const char *err_msg(const struct err *err);
const char *err_code_name(enum err_code code);

/* The JSON-RPC error a message or request refused with code is answered
 * with: ERR_PROTOCOL (not JSON at all) a parse error, ERR_TOO_BIG (refused
 * whole, over a cap) an invalid request, ERR_INVALID invalid params,
 * ERR_INTERNAL an internal error, and a failure of the server's means
 * (engine, I/O, time, cancellation, something missing) a server error.
 * 0 for ERR_OK. */
int err_jsonrpc_code(enum err_code code);

/* The status (the result contract's word) of a tool result for a run that
 * failed with code: "cancelled" for ERR_CANCELLED, else "error" (a
 * failure of the run, not of the program: a program's own timeout, OOM,
 * output limit or failed compile is a status the run reports, never an
 * error). "ok" for ERR_OK. */
const char *err_tool_status(enum err_code code);

#endif
