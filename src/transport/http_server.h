/* Shared by the HTTP transport's files (http_*.c): the transport object.
 * http_server.c describes the files, the threads and the locking. */
#ifndef MCPSBX_HTTP_SERVER_H
#define MCPSBX_HTTP_SERVER_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "transport/http_response.h"
#include "transport/transport_http.h"

struct session;

struct transport_http {
    struct mcp_server *srv;
    const struct config *cfg;
    struct MHD_Daemon *daemon;
    unsigned port;
    char *self_host; /* the bind address as a Host header names it; NULL for wildcards */
    struct mcp_channel discard;
    pthread_mutex_t lock;
    pthread_cond_t janitor_cond;
    struct session *sessions;
    size_t n_sessions;
    int active;          /* requests between their first call and completion */
    atomic_bool started; /* read by MHD's logger from any thread */
    bool stopping;
    bool janitor_running;
    pthread_t janitor;
};

#endif
