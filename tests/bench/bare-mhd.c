/* The physical limit of the HTTP front end for make bench: libmicrohttpd
 * alone, polling with epoll on as many threads as cores (as the daemon
 * does), answering every request with the same bytes (the daemon's
 * tools/list answer, read from a file) and doing nothing else: no parsing,
 * no session, no JSON. The daemon's tools/list throughput is reported as a
 * share of this server's, measured in the same run.
 *
 *   bare-mhd PORT FILE     serve FILE's bytes on 127.0.0.1:PORT (0: any)
 *
 * Prints "port N" on stdout once listening; runs until SIGTERM/SIGINT. */
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_BODY_BYTES (64u << 20)

static char *body;
static size_t body_len;

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls)
{
    (void)cls;
    (void)url;
    (void)method;
    (void)version;
    (void)upload_data;
    if (!*req_cls) {
        *req_cls = c;
        return MHD_YES;
    }
    if (*upload_data_size) {
        *upload_data_size = 0; /* the request body is read and dropped */
        return MHD_YES;
    }
    struct MHD_Response *r =
        MHD_create_response_from_buffer(body_len, body, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "application/json");
    enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}

static int read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    body = malloc(MAX_BODY_BYTES);
    body_len = body ? fread(body, 1, MAX_BODY_BYTES, f) : 0;
    fclose(f);
    return body && body_len > 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    if (argc != 3 || read_file(argv[2]) < 0) {
        fprintf(stderr, "usage: bare-mhd PORT FILE (a non-empty file)\n");
        return 2;
    }
    /* Blocked before MHD's threads start, so they inherit it: sigwait
     * below takes the signal. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigprocmask(SIG_BLOCK, &set, NULL);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_TURBO | MHD_USE_ERROR_LOG, 0,
        NULL, NULL, on_request, NULL, MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)&sin,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)(cores > 0 ? cores : 1), MHD_OPTION_CONNECTION_LIMIT,
        4096u, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "bare-mhd: cannot listen\n");
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    printf("port %u\n", info ? info->port : 0);
    fflush(stdout);
    int sig = 0;
    sigwait(&set, &sig);
    MHD_stop_daemon(d);
    free(body);
    return 0;
}
