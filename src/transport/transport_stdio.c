#include "transport/transport_stdio.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>

#include "base/buf.h"
#include "mcp/jsonrpc.h"
#include "base/log.h"

#define READ_CHUNK 65536

struct stdio_channel {
    struct mcp_channel ch; /* first: the channel pointer is the struct */
    int fd;
    pthread_mutex_t lock;
    bool broken;
};

static int stdio_send(struct mcp_channel *ch, const char *json, size_t len)
{
    struct stdio_channel *sc = (struct stdio_channel *)ch;
    int rc = 0;
    pthread_mutex_lock(&sc->lock);
    if (sc->broken) {
        rc = -1;
    } else if (util_write_line(sc->fd, json, len) < 0) {
        sc->broken = true;
        rc = -1;
    }
    pthread_mutex_unlock(&sc->lock);
    return rc;
}

static void handle_line(struct mcp_session *s, struct stdio_channel *sc, char *line, size_t len)
{
    if (len && line[len - 1] == '\r')
        len--;
    size_t i = 0;
    while (i < len && (line[i] == ' ' || line[i] == '\t'))
        i++;
    if (i == len)
        return; /* blank lines are not messages */
    mcp_session_receive(s, line + i, len - i, &sc->ch);
}

int transport_stdio_run(struct mcp_server *srv, const struct config *cfg, int in_fd, int out_fd,
                        int stop_fd, struct err *err)
{
    struct stdio_channel sc;
    memset(&sc, 0, sizeof(sc));
    mcp_channel_init(&sc.ch, stdio_send, NULL);
    sc.fd = out_fd;
    pthread_mutex_init(&sc.lock, NULL);

    struct mcp_session *s = mcp_session_new(srv, "stdio");
    mcp_session_serve_modern(s); /* a dual-era stream: MCP 2026-07-28 beside 2025 */
    size_t max = (size_t)cfg->max_message_bytes;
    struct buf in;
    buf_init(&in, max + READ_CHUNK);
    char *chunk = xmalloc(READ_CHUNK);
    bool skipping = false; /* inside an over-long line, dropping bytes */
    int rc = 0;

    for (;;) {
        struct pollfd pfd[2] = {{.fd = in_fd, .events = POLLIN}, {.fd = stop_fd, .events = POLLIN}};
        int pr = poll(pfd, stop_fd >= 0 ? 2 : 1, -1);
        if (pr < 0) {
            if (errno == EINTR)
                continue;
            rc = err_set(err, ERR_IO, "poll: %s", strerror(errno));
            break;
        }
        if (stop_fd >= 0 && (pfd[1].revents & POLLIN)) {
            log_info("stopping on signal");
            break;
        }
        ssize_t n = read(in_fd, chunk, READ_CHUNK);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            rc = err_set(err, ERR_IO, "reading stdin: %s", strerror(errno));
            break;
        }
        if (n == 0) {
            if (!skipping && in.len)
                handle_line(s, &sc, in.data, in.len);
            log_debug("end of input");
            break;
        }
        const char *p = chunk;
        size_t left = (size_t)n;
        while (left) {
            const char *nl = memchr(p, '\n', left);
            size_t take = nl ? (size_t)(nl - p) : left;
            if (skipping) {
                if (nl)
                    skipping = false;
            } else if (in.len + take > max) {
                char *msg = xasprintf("Invalid Request: message exceeds %zu bytes "
                                      "(--max-message-bytes)",
                                      max);
                mcp_session_reject(s, JSONRPC_INVALID_REQUEST, msg, &sc.ch);
                free(msg);
                buf_reset(&in);
                skipping = nl == NULL;
            } else {
                if (buf_add(&in, p, take) < 0) {
                    rc = err_set(err, ERR_INTERNAL, "stdin buffer");
                    goto out;
                }
                if (nl) {
                    handle_line(s, &sc, in.data, in.len);
                    buf_reset(&in);
                }
            }
            if (!nl)
                break;
            p = nl + 1;
            left -= take + 1;
        }
    }
out:
    mcp_session_free(s);
    free(chunk);
    buf_free(&in);
    pthread_mutex_destroy(&sc.lock);
    return rc;
}
