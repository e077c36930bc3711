/* The stdio transport: newline-delimited JSON-RPC on stdin/stdout. Nothing
 * but protocol messages is ever written to stdout. */
#ifndef MCPSBX_TRANSPORT_STDIO_H
#define MCPSBX_TRANSPORT_STDIO_H

#include "mcp/mcp.h"

/* Serves one session on in_fd/out_fd until end of input or until stop_fd
 * becomes readable (a signal). In-flight calls are then cancelled and
 * waited for. Returns 0, or -1 on a read error. */
int transport_stdio_run(struct mcp_server *srv, const struct config *cfg, int in_fd, int out_fd,
                        int stop_fd, struct err *err);

#endif
