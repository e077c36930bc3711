/* mcp-sandboxd: argv -> config -> backend -> exec -> MCP over stdio or HTTP ->
 * ordered shutdown that removes every container this process created.
 *
 * Threads, what each owns, and how they hand off
 * ----------------------------------------------
 * main        parses the configuration, starts everything below, then
 *             either runs the stdio transport itself (reads stdin, parses
 *             and dispatches each line) or waits for a signal while HTTP
 *             serves; on the way out it stops the transport (which closes
 *             every session, cancelling and waiting for its calls), then
 *             the workers, then the pool (removing what waits), then the
 *             reaper.
 * HTTP        (--http only) libmicrohttpd's polling threads, one per core
 *             (up to 16), each an epoll loop over its share of the
 *             connections: a connection costs a few KiB, not a thread,
 *             so --max-connections idle or trickling clients add no
 *             thread. A polling thread reads a request, parses its body
 *             and dispatches it to mcp; a quick answer goes out at once,
 *             one that waits (a run's JSON answer, a DELETE, an SSE
 *             stream with nothing to send) suspends its connection until
 *             a worker or the transport's own threads resume it. Nothing
 *             on a polling thread waits for a run or the engine.
 *             + 1 janitor (head and body deadlines, idle and never
 *             initialized sessions, SSE keep-alives and hang-ups, and the
 *             engine's health for /healthz, asked at most once a second
 *             while health checks come) and
 *             1 closer (ends sessions: cancels their runs and waits for
 *             them). Sessions, streams and events belong to the transport
 *             under its one lock (src/transport/http_server.c describes
 *             its files).
 * workers     --max-concurrent threads started with the server (admission.c).
 *             A tools/call is validated and copied into plain C data on the
 *             thread that received it, takes a free run slot at once or
 *             waits in the queue (at most --max-queued calls, of one session
 *             at most --max-session-queued, and --max-session-inflight
 *             under way), and runs on a worker, which builds the answer
 *             and sends it on the request's channel (bytes, under the
 *             channel's own lock). The queue is a FIFO per session, and
 *             sessions take turns: a freed slot goes to the session served
 *             least recently (its place, struct admission_owner, lives in
 *             the session, under the queue's lock). + 1 timer thread that
 *             refuses calls that waited past --queue-timeout-ms or their
 *             own timeout.
 * aside       1 thread (mcp/aside.c) that answers a list_languages whose
 *             versions are still being probed (it may wait up to 5 s),
 *             so no receiving thread waits for it.
 * reaper      4 removal threads and 1 sweep thread (reaper.c): containers
 *             are removed off the request's path and retried until gone;
 *             leftovers of crashed daemons are swept every few seconds.
 * probe       1 thread (tools/languages.c), started by the first
 *             list_languages, that reads each interpreter's version and
 *             packages from its image as a run (exec_run, a pooled sandbox
 *             when one waits), and again when list_languages finds a
 *             failed read older than 5 s; it keeps them as plain C data
 *             under its lock. Its runs take no run slot: one at a time,
 *             one per language.
 * pool        with --pool-size: 2 filler threads and 1 watcher (pool.c).
 *             Fillers create, connect and start warm containers and wait for
 *             their runner's ready mark; the watcher polls the waiting ones'
 *             streams and ages. Waiting containers (id + stream)
 *             belong to the pool under its lock; a worker that takes one
 *             owns it from then on and hands it to the reaper after its run.
 * egress      per run of a language with an egress list (egress/acceptor.c):
 *             1 acceptor taking its sandbox's connections, and 1 thread per
 *             connection being served, at most --egress-max-connections + 2
 *             (past that the connections wait in the listener's backlog).
 *             The run's worker begins and ends them; the policy is
 *             read-only, the usage counters are atomic or under its lock,
 *             the summary under its lock, copied out at the run's end.
 * A sandbox's stream socket (backend/docker/channel.c) belongs to the
 * thread setting that sandbox up (a worker or a filler; sandbox/run/launch.c),
 * then travels with its stream: no thread of its own. The docker
 * backend's list of images that attach is under its lock
 * (backend/docker/sandbox_io.c). The files runs return are kept
 * by the run store (tools/runstore.c) as bytes under its lock, each
 * session's under its own quota: workers put them, the threads answering
 * resources/read copy them out.
 * So the daemon runs at most 1 + 2 + max-concurrent + 10 threads on stdio,
 * plus the cores (up to 16) + 2 over HTTP, whatever clients send, plus
 * (egress-max-connections + 3) per running run whose language has egress,
 * whatever its sandbox does.
 *
 * json-c objects never cross threads (Debian's json-c has non-atomic
 * reference counts): see mcp.h. Everything else shared is immutable after
 * start (the configuration, the serialized tool list), atomic (the log
 * threshold, channel reference counts, cancel flags) or under a lock. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "base/config.h"
#include "base/config_doc.h"
#include "base/handle.h"
#include "backend/backends.h"
#include "egress/settings.h"
#include "sandbox/sandbox.h"
#include "base/log.h"
#include "mcp/mcp.h"
#include "transport/transport_http.h"
#include "transport/transport_stdio.h"

static int stop_pipe[2] = {-1, -1};

static void on_signal(int sig)
{
    (void)sig;
    int saved = errno;
    ssize_t w = write(stop_pipe[1], "x", 1);
    (void)w;
    errno = saved;
}

static void wait_for_stop(void)
{
    char c;
    for (;;) {
        struct pollfd pfd = {.fd = stop_pipe[0], .events = POLLIN};
        if (poll(&pfd, 1, -1) > 0 && read(stop_pipe[0], &c, 1) == 1)
            return;
    }
}

static int serve_http(struct mcp_server *srv, const struct config *cfg, struct err *err)
{
    struct transport_http *http = NULL;
    if (transport_http_start(srv, cfg, &http, err) < 0)
        return -1;
    bool v6 = strchr(cfg->http_host, ':') != NULL;
    log_info("serving MCP over HTTP at http://%s%s%s:%u/mcp (legacy SSE at /sse, health at "
             "/healthz; %u polling threads)%s",
             v6 ? "[" : "", cfg->http_host, v6 ? "]" : "", transport_http_port(http),
             transport_http_threads(http), cfg->auth_token ? "; bearer token required" : "");
    /* Only loopback gets here without one (config.c refuses the rest). */
    if (!cfg->auth_token)
        log_warn("serving without authentication: any local user or process can call the tools, "
                 "with the pass-through secrets; --auth-token-file FILE requires a bearer token "
                 "(make run sets one)");
    wait_for_stop();
    log_info("stopping on signal");
    transport_http_stop(http);
    return 0;
}

static int setup_signals(void)
{
    if (pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
        return -1;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

/* Every HTTP connection is a descriptor, and systemd's soft limit is
 * 1024: take what the hard limit allows, up to what --max-connections and
 * the runs can use. */
static void raise_nofile(const struct config *cfg)
{
    struct rlimit rl;
    rlim_t want = (rlim_t)cfg->max_connections + 1024;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= want)
        return;
    rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
        log_warn("cannot raise the open file limit: %s", strerror(errno));
}

static void check_engine(struct backend *backend)
{
    struct err err = ERR_INIT;
    char *name = NULL;
    char *version = NULL;
    /* An engine's socket path, or a cluster's API server URL. */
    const char *where = backend_address(backend);
    const char *scheme = where[0] == '/' ? "unix://" : "";
    if (backend_version(backend, &name, &version, &err) < 0) {
        log_warn("no container engine answers at %s%s (from %s): %s; tool calls will fail "
                 "until one does",
                 scheme, where, backend_address_source(backend), err_msg(&err));
        err_clear(&err);
        return;
    }
    log_info("engine: %s %s at %s%s", name, version, scheme, where);
    free(name);
    free(version);
}

/* --print-engine, --list-images and --dry-run-create: what the scripts
 * ask, so they never carry their own copy of the discovery rules, the
 * language table or the create request. */
static int print_and_exit(const struct config *cfg, const struct langtable *langs,
                          struct backend *backend)
{
    if (cfg->print_engine) {
        printf("%s\n", backend_address(backend));
        return 0;
    }
    if (cfg->list_images) {
        for (size_t i = 0; i < langtable_count(langs); i++) {
            const struct langtable_lang *l = langtable_get(langs, i);
            printf("%s %s\n", l->name, l->image);
        }
        return 0;
    }
    const struct langtable_lang *lang = langtable_find(langs, cfg->dry_run_create);
    char *text = exec_describe_create(cfg, backend, lang);
    printf("%s\n", text);
    free(text);
    return 0;
}

/* The configuration, the language table, the egress settings and the
 * backend, checked before anything starts: a bad one stops the start
 * (exit status 2) naming it. */
static int setup(struct config *cfg, int argc, char **argv, char **envp,
                 struct langtable **languages, struct egress_settings **egress,
                 struct backend **backend)
{
    struct err err = ERR_INIT;
    int rc = -1;
    if (config_load(cfg, argc, argv, envp, &err) < 0)
        goto out;
    rc = 0;
    if (cfg->help || cfg->version)
        goto out;
    rc = -1;
    /* A bad --languages-file stops the start with its FILE:LINE. */
    if (langtable_load(cfg->languages_file, languages, &err) < 0 ||
        langtable_configure(*languages, cfg, &err) < 0 ||
        egress_settings_new(cfg, egress, &err) < 0)
        goto out;
    *backend = backends_open(cfg, envp, &err);
    if (*backend)
        rc = 0;
out:
    if (rc < 0)
        fprintf(stderr, "mcp-sandboxd: %s\n", err_msg(&err));
    err_clear(&err);
    return rc;
}

/* Each language's line at start; a warning for each that the operator
 * gave the engine's network, which reaches far more than named hosts. */
static void log_languages(const struct config *cfg, const struct langtable *languages)
{
    for (size_t i = 0; i < langtable_count(languages); i++) {
        const struct langtable_lang *l = langtable_get(languages, i);
        log_info("language %s: image %s, %s runner, pool %lld to %lld", l->name, l->image,
                 langtable_runner_name(l->runner), l->pool_size, l->pool_max);
        if (l->egress) {
            char *list = egress_patterns_format(l->egress);
            log_info("language %s: egress to %s", l->name, list);
            free(list);
        }
        if (langtable_network(l, cfg))
            log_warn("--allow-network: %s sandboxes get the engine's bridge network: services "
                     "on the host, the cloud metadata address 169.254.169.254, the other "
                     "sandboxes; --egress allows named hosts only",
                     l->name);
    }
}

/* The daemon's CA, when a --secret binds hosts that a language may reach
 * (HTTPS to them is terminated in the gateway), in a fresh directory
 * under --sandbox-io-dir: the backend shows its public files inside. */
static int egress_tls_start(const struct config *cfg, const struct langtable *languages,
                            struct egress_settings *egress, struct err *err)
{
    bool any_egress = false, any_packages = false;
    for (size_t i = 0; i < langtable_count(languages); i++) {
        any_egress = any_egress || langtable_get(languages, i)->egress;
        any_packages = any_packages || langtable_get(languages, i)->packages;
    }
    bool secrets = cfg->secret.n > 0 && any_egress;
    /* Installs read the bundle (the host's roots and the CA) so that an
     * index behind the host's own CA verifies inside their sandboxes. */
    if (!secrets && (!any_packages || cfg->packages_offline))
        return 0;
    if (egress_settings_tls_ca_under(egress, cfg->sandbox_io_dir, err) < 0) {
        if (secrets)
            return -1;
        log_warn("packages: no CA bundle for the installers' sandboxes (%s): an index behind "
                 "this host's own CA will not verify there",
                 err_msg(err));
        err_clear(err);
        return 0;
    }
    if (secrets)
        log_info("egress: HTTPS to the hosts bound to a --secret is terminated with the daemon's "
                 "CA, %s",
                 egress_tls_ca_path(egress->ca));
    return 0;
}

/* Serves MCP until a signal or the end of stdin; 0 on a clean stop. */
static int serve(const struct config *cfg, const struct langtable *languages,
                 struct egress_settings *egress, struct backend *backend, char **envp)
{
    struct err err = ERR_INIT;
    struct exec_ctx *exec = NULL;
    struct mcp_server *srv = NULL;
    int status = 1;
    if (*cfg->languages_file)
        log_info("languages file %s", cfg->languages_file);
    if (setup_signals() < 0) {
        log_error("cannot set up signal handling: %s", strerror(errno));
        goto out;
    }
    if (backends_init(&err) < 0)
        goto out;
    check_engine(backend);
    if (handle_set_daemon(cfg->daemon_id, &err) < 0)
        goto out;
    log_info("daemon id %s", handle_daemon());
    if (egress_tls_start(cfg, languages, egress, &err) < 0)
        goto out;
    exec = exec_ctx_new(cfg, languages, backend, egress, envp, &err);
    if (!exec)
        goto out;
    for (size_t i = 0; i < cfg->pass_through_env.n; i++)
        log_debug("passing %s through to sandboxes", cfg->pass_through_env.items[i]);
    srv = mcp_server_new(cfg, exec, &err);
    if (!srv)
        goto out;
    log_languages(cfg, languages);
    if (*cfg->http_listen) {
        if (serve_http(srv, cfg, &err) < 0)
            goto out;
    } else {
        log_info("serving MCP on stdio");
        if (transport_stdio_run(srv, cfg, STDIN_FILENO, STDOUT_FILENO, stop_pipe[0], &err) < 0)
            goto out;
    }
    status = 0;
out:
    if (err.code != ERR_OK)
        log_error("%s", err_msg(&err));
    mcp_server_free(srv);
    exec_ctx_free(exec);
    backends_cleanup();
    err_clear(&err);
    return status;
}

int main(int argc, char **argv, char **envp)
{
    struct config cfg;
    struct langtable *languages = NULL;
    struct egress_settings *egress = NULL;
    struct backend *backend = NULL;
    int status = 2;
    config_init(&cfg);
    if (setup(&cfg, argc, argv, envp, &languages, &egress, &backend) < 0)
        goto out;
    status = 0;
    if (cfg.help) {
        config_usage(stdout, "mcp-sandboxd");
        goto out;
    }
    if (cfg.version) {
        printf("mcp-sandboxd %s\n", MCPSBX_VERSION);
        goto out;
    }
    log_set_threshold((enum log_level)log_level_from_name(cfg.log_level));
    raise_nofile(&cfg);
    if (cfg.print_engine || cfg.list_images || *cfg.dry_run_create)
        status = print_and_exit(&cfg, languages, backend);
    else
        status = serve(&cfg, languages, egress, backend, envp);
    log_debug("exited cleanly");
out:
    backend_free(backend);
    egress_settings_free(egress);
    langtable_free(languages);
    config_free(&cfg);
    return status;
}
