#include "base/config.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "base/netaddr.h"

#define DEFAULT_PYTHON_IMAGE   "mcp-sandboxd-python:latest"
#define DEFAULT_SANDBOX_IO_DIR "/run/mcp-sandboxd-io"
#define DEFAULT_JS_IMAGE       "mcp-sandboxd-node:latest"
/* Far from the host's users and from the subordinate ids useradd hands
 * out (100000 up to 600100000 by default), and from systemd-nspawn's
 * container range (524288 up to 1879048191). */
#define DEFAULT_SANDBOX_UID_BASE      2000000000LL
#define DEFAULT_SANDBOX_UID_BASE_TEXT "2000000000"
#define MAX_CONFIG_LINE               4096
/* The packages the Python tool's description advertises. */
#define DEFAULT_PYTHON_PRELOAD "numpy,pandas,matplotlib,matplotlib.pyplot"

enum opt_type { OPT_STR, OPT_INT, OPT_DOUBLE, OPT_LIST, OPT_FLAG };

struct opt_def {
    const char *name;
    enum opt_type type;
    size_t offset;
    long long min, max;
    const char *arg;
    const char *help;
    int (*check_item)(const char *s, size_t n); /* OPT_LIST items */
};

#define F(field) offsetof(struct config, field)

/* Alphabetical, so --help reads like a reference. Each option can also be
 * set as MCPSANDBOXD_<NAME> (upper case, '-' -> '_') or "name = value" in
 * the config file. */
static int valid_env_name(const char *s, size_t n);
static int valid_token(const char *s, size_t n);
static int valid_label(const char *s, size_t n);
static int valid_language(const char *s, size_t n);

static const struct opt_def options[] = {
    {"allow-network", OPT_LIST, F(allow_network), 0, 0, "LANGUAGE[,...]",
     "give the sandboxes of these languages (names or aliases of the language table whose "
     "network_allowed is true) the engine's default network instead of none; callers can never "
     "turn it on (default: none)",
     valid_language},
    {"allowed-hosts", OPT_LIST, F(allowed_hosts), 0, 0, "HOST[:PORT],...",
     "Host header values accepted besides localhost, 127.0.0.1 and [::1]", valid_token},
    {"allowed-origins", OPT_LIST, F(allowed_origins), 0, 0, "ORIGIN,...",
     "Origin values accepted besides http(s)://localhost, 127.0.0.1 and [::1]", valid_token},
    {"auth-token-file", OPT_STR, F(auth_token_file), 0, 0, "FILE",
     "require 'Authorization: Bearer <token>' on HTTP, token read from FILE (or set "
     "MCPSANDBOXD_AUTH_TOKEN); needed to --http anywhere but loopback, and without it any "
     "local user can call the tools",
     NULL},
    {"config", OPT_STR, F(config_file), 0, 0, "FILE",
     "read options from FILE (lines 'name = value'; see config/mcp-sandboxd.conf)", NULL},
    {"cpus", OPT_DOUBLE, F(cpus), 0, 64, "N", "CPUs per sandbox, fractional allowed (default 1)",
     NULL},
    {"dry-run-create", OPT_STR, F(dry_run_create), 0, 0, "LANGUAGE",
     "print the container create request a run of this language would send, and exit "
     "(it never holds pass-through values: runs send them in their request)",
     NULL},
    {"engine", OPT_STR, F(engine_socket), 0, 0, "unix:///PATH",
     "container engine socket (default: DOCKER_HOST, CONTAINER_HOST, /var/run/docker.sock, "
     "/run/podman/podman.sock)",
     NULL},
    {"help", OPT_FLAG, F(help), 0, 0, NULL, "show this help and exit", NULL},
    {"http", OPT_STR, F(http_listen), 0, 0, "HOST:PORT",
     "serve MCP over streamable HTTP (/mcp) and legacy SSE (/sse) instead of stdio, e.g. "
     "127.0.0.1:8080; an address other than loopback needs --auth-token-file",
     NULL},
    {"http-body-timeout-ms", OPT_INT, F(http_body_timeout_ms), 100, 3600LL * 1000, "MS",
     "an HTTP request's whole body must arrive within this long of its head, however the bytes "
     "trickle; else the connection is closed (default 60000)",
     NULL},
    {"http-head-timeout-ms", OPT_INT, F(http_head_timeout_ms), 100, 3600LL * 1000, "MS",
     "an HTTP connection must send a complete request head within this long of opening (or of "
     "its previous answer, kept alive), however the bytes trickle; else it is closed "
     "(default 10000)",
     NULL},
    {"js-image", OPT_STR, F(js_image), 0, 0, "IMAGE",
     "image for JavaScript (default: the language table's, " DEFAULT_JS_IMAGE ")", NULL},
    {"js-preload", OPT_STR, F(js_preload), 0, 0, "MODULE,...",
     "Node built-in modules a pooled JavaScript sandbox loads before it waits (default: the "
     "language table's, none)",
     NULL},
    {"js-runtime", OPT_STR, F(js_runtime), 0, 0, "NAME",
     "OCI runtime for JavaScript sandboxes only (default: --runtime)", NULL},
    {"languages", OPT_LIST, F(languages), 0, 0, "LANGUAGE[,...]",
     "the languages this daemon offers, names or aliases of the language table (default: all "
     "of them); the others get no pool, no tool entry and no image from make run",
     valid_language},
    {"languages-file", OPT_STR, F(languages_file), 0, 0, "FILE",
     "change the built-in languages with the JSON definitions in FILE: add, override or disable "
     "languages (see src/sandbox/langtable.h); checked at start (default: none)",
     NULL},
    {"list-images", OPT_FLAG, F(list_images), 0, 0, NULL,
     "print each enabled language and its image (a line each: NAME IMAGE), and exit", NULL},
    {"log-level", OPT_STR, F(log_level), 0, 0, "LEVEL",
     "error, warn, info or debug (default info); logs go to stderr", NULL},
    {"max-batch-items", OPT_INT, F(max_batch_items), 1, 100000, "N",
     "messages in one JSON-RPC batch (protocol 2025-03-26); a larger batch is refused whole, "
     "and the answers of one batch together stay under --max-message-bytes (default 64)",
     NULL},
    {"max-code-bytes", OPT_INT, F(max_code_bytes), 1, 64LL << 20, "N",
     "largest accepted code or stdin argument (default 4 MiB)", NULL},
    {"max-concurrent", OPT_INT, F(max_concurrent), 1, 1024, "N",
     "runs at once, each on a worker thread started with the daemon; more wait in a queue "
     "(default 8)",
     NULL},
    {"max-file-in-bytes", OPT_INT, F(max_file_in_bytes), 0, 1LL << 30, "N",
     "largest file of a run's files argument, decoded (default 8 MiB)", NULL},
    {"max-file-out-bytes", OPT_INT, F(max_file_out_bytes), 0, 1LL << 30, "N",
     "largest file a run returns; larger ones are named as left out (default 8 MiB)", NULL},
    {"max-files-in", OPT_INT, F(max_files_in), 0, 100000, "N",
     "files in a run's files argument (default 100)", NULL},
    {"max-files-in-bytes", OPT_INT, F(max_files_in_bytes), 0, 1LL << 30, "N",
     "all files of a run's files argument together, decoded (default 10 MiB)", NULL},
    {"max-files-out", OPT_INT, F(max_files_out), 0, 10000, "N",
     "files a run returns from outputs/ and output_files, plots apart (default 50)", NULL},
    {"max-files-out-bytes", OPT_INT, F(max_files_out_bytes), 0, 1LL << 30, "N",
     "all files and plots a run returns together (default 32 MiB)", NULL},
    {"max-inline-image-bytes", OPT_INT, F(max_inline_image_bytes), 0, 64LL << 20, "N",
     "an image up to this size comes back as image content, a larger one as a resource link "
     "(default 256 KiB)",
     NULL},
    {"max-inline-text-bytes", OPT_INT, F(max_inline_text_bytes), 0, 64LL << 20, "N",
     "a text file up to this size comes back embedded, a larger one as a resource link "
     "(default 64 KiB)",
     NULL},
    {"max-inflight-body-bytes", OPT_INT, F(max_inflight_body_bytes), 1024, 64LL << 30, "N",
     "HTTP request bodies being received or parsed at once, all connections together; a "
     "request that would pass it gets 503 (default 128 MiB)",
     NULL},
    {"max-memory-mb", OPT_INT, F(max_memory_mb), 16, 1 << 20, "N",
     "largest memory_mb a caller may ask for (default 2048)", NULL},
    {"max-message-bytes", OPT_INT, F(max_message_bytes), 1024, 256LL << 20, "N",
     "largest JSON-RPC message accepted (default 16 MiB)", NULL},
    {"max-output-bytes", OPT_INT, F(max_output_bytes), 1024, 256LL << 20, "N",
     "stdout+stderr kept per run; past it the run stops with output_limit (default 1 MiB)", NULL},
    {"label", OPT_LIST, F(labels), 0, 0, "KEY=VALUE[,...]",
     "an engine label for every container, for the operator's own bookkeeping (keys under "
     "io.mcp-sandboxd. are the daemon's); repeatable",
     valid_label},
    {"max-connections", OPT_INT, F(max_connections), 8, 100000, "N",
     "HTTP connections at once (a few KiB each, served by one polling thread per core); near "
     "the limit, the connection that has waited longest without a complete request head is "
     "closed to make room (default 2048)",
     NULL},
    {"max-connections-per-address", OPT_INT, F(max_connections_per_address), 1, 100000, "N",
     "HTTP connections at once from one client address (default 512)", NULL},
    {"max-plot-bytes", OPT_INT, F(max_plot_bytes), 0, 64LL << 20, "N",
     "largest matplotlib figure returned, as PNG (default 4 MiB)", NULL},
    {"max-plots", OPT_INT, F(max_plots), 0, 1000, "N",
     "matplotlib figures a Python run returns (each plt.show(), then those still open); 0 "
     "turns plot capture off (default 10)",
     NULL},
    {"max-queued", OPT_INT, F(max_queued), 0, 100000, "N",
     "calls waiting for one of the --max-concurrent slots, sessions in turn; more get a "
     "'busy' result at once (default 64)",
     NULL},
    {"max-session-inflight", OPT_INT, F(max_session_inflight), 1, 100000, "N",
     "tool calls one HTTP session has under way at once, running or waiting; more get a "
     "'busy' result at once (default 16; over stdio the one session may use every slot and "
     "the whole queue)",
     NULL},
    {"max-session-queued", OPT_INT, F(max_session_queued), 0, 100000, "N",
     "calls of one HTTP session waiting for a run slot; more get a 'busy' result at once "
     "(default 8; over stdio --max-queued)",
     NULL},
    {"max-session-requests", OPT_INT, F(max_session_requests), 1, 100000, "N",
     "HTTP requests one session may have under way at once (each may hold an answer in "
     "memory until its client reads it); more get 429 (default 16)",
     NULL},
    {"max-sessions", OPT_INT, F(max_sessions), 1, 100000, "N",
     "HTTP sessions at once; more get 503 (default 64)", NULL},
    {"max-variables-bytes", OPT_INT, F(max_variables_bytes), 2, 64LL << 20, "N",
     "largest accepted variables argument, as compact JSON (default 1 MiB)", NULL},
    {"max-timeout-ms", OPT_INT, F(max_timeout_ms), 100, 24LL * 3600 * 1000, "MS",
     "largest timeout_ms a caller may ask for (default 300000)", NULL},
    {"memory-mb", OPT_INT, F(memory_mb), 16, 1 << 20, "N",
     "memory per sandbox, no swap (default 512)", NULL},
    {"pass-through-env", OPT_LIST, F(pass_through_env), 0, 0, "NAME[,NAME...]",
     "set these variables from the daemon's environment in every sandboxed program (sent with "
     "each run, never in the container's configuration; echoed values are redacted); "
     "repeatable",
     valid_env_name},
    {"pool-max-age-ms", OPT_INT, F(pool_max_age_ms), 1000, 7LL * 24 * 3600 * 1000, "MS",
     "a waiting pooled sandbox older than this is replaced by a new one (default 600000)", NULL},
    {"pool-refill-delay-ms", OPT_INT, F(pool_refill_delay_ms), 0, 60000, "MS",
     "refills wait up to this long while a run that took a pooled sandbox goes on (they start "
     "as soon as it ends), so setting up the next sandbox does not slow that run down; 0 "
     "refills at once (default 250)",
     NULL},
    {"pool-size", OPT_INT, F(pool_size), 0, 64, "N",
     "started sandboxes kept waiting per language, each used for one run only; 0 creates "
     "every sandbox on demand (default: the language table's pool_size, 2 for python and "
     "javascript, 1 for the others)",
     NULL},
    {"print-engine", OPT_FLAG, F(print_engine), 0, 0, NULL,
     "print the engine socket path the daemon would use, and exit", NULL},
    {"pids-limit", OPT_INT, F(pids_limit), 8, 1 << 20, "N",
     "processes and threads per sandbox (default 256)", NULL},
    {"python-preload", OPT_STR, F(python_preload), 0, 0, "MODULE,...",
     "modules a pooled Python sandbox imports before it waits, so programs importing them "
     "start at once; empty for none (default: the language table's, " DEFAULT_PYTHON_PRELOAD ")",
     NULL},
    {"python-image", OPT_STR, F(python_image), 0, 0, "IMAGE",
     "image for Python (default: the language table's, " DEFAULT_PYTHON_IMAGE ")", NULL},
    {"python-runtime", OPT_STR, F(python_runtime), 0, 0, "NAME",
     "OCI runtime for Python sandboxes only (default: --runtime)", NULL},
    {"queue-timeout-ms", OPT_INT, F(queue_timeout_ms), 100, 24LL * 3600 * 1000, "MS",
     "longest a call waits for a run slot before a 'busy' result; never longer than its own "
     "timeout (default 60000)",
     NULL},
    {"run-store-max-bytes", OPT_INT, F(run_store_max_bytes), 0, 64LL << 30, "N",
     "returned files kept for resources/read, all sessions together; the oldest go first "
     "(default 256 MiB)",
     NULL},
    {"run-store-session-max-bytes", OPT_INT, F(run_store_session_max_bytes), 0, 64LL << 30, "N",
     "returned files kept for one HTTP session; past it the session's own oldest go first, so "
     "no session pushes out another's (default 64 MiB; over stdio --run-store-max-bytes)",
     NULL},
    {"run-store-ttl-ms", OPT_INT, F(run_store_ttl_ms), 1000, 7LL * 24 * 3600 * 1000, "MS",
     "how long a returned file stays readable at its mcp-sandboxd://runs/ URI (default 3600000)",
     NULL},
    {"runtime", OPT_STR, F(runtime), 0, 0, "NAME",
     "OCI runtime for sandboxes, e.g. runsc for gVisor (default: the engine's)", NULL},
    {"sandbox-uid-base", OPT_INT, F(sandbox_uid_base), 1, 0x7ffffffe, "UID",
     "the first of the uids the sandboxes run as, one of its own each (its gid the same "
     "number), so that nproc counts each sandbox apart; keep the range clear of the host's "
     "users and of /etc/subuid (default " DEFAULT_SANDBOX_UID_BASE_TEXT ")",
     NULL},
    {"sandbox-uid-count", OPT_INT, F(sandbox_uid_count), 0, 1 << 20, "N",
     "how many uids from --sandbox-uid-base: at least --max-concurrent plus the pool sizes "
     "plus a margin for sandboxes being removed (the daemon refuses to start with fewer and "
     "says how many); 0 runs every sandbox as --sandbox-user, all counted together by nproc "
     "(default 1048576)",
     NULL},
    {"sandbox-user", OPT_STR, F(sandbox_user), 0, 0, "UID:GID",
     "the user every sandbox runs as when --sandbox-uid-count is 0 (default 10001:10001)", NULL},
    {"sandbox-io", OPT_STR, F(sandbox_io), 0, 0, "socket|attach",
     "how a sandbox's stdin, stdout and stderr reach the daemon: socket, a unix socket of the "
     "daemon's bound read-only into the sandbox (bypasses the engine's stream relay, ~4 ms "
     "less per run; needs CAP_CHOWN (root) and perl in the image, else it falls back to "
     "attach by itself), or attach, the engine's attach stream. gVisor runtimes always "
     "attach (default socket)",
     NULL},
    {"sandbox-io-dir", OPT_STR, F(sandbox_io_dir), 0, 0, "DIR",
     "where --sandbox-io socket makes its sockets, one fresh directory per sandbox, removed "
     "once it connected; must be the engine's host's path (default " DEFAULT_SANDBOX_IO_DIR ")",
     NULL},
    {"session-idle-ms", OPT_INT, F(session_idle_ms), 1000, 7LL * 24 * 3600 * 1000, "MS",
     "an HTTP session with nothing running ends after this long unused (default 1800000)", NULL},
    {"timeout-ms", OPT_INT, F(timeout_ms), 100, 24LL * 3600 * 1000, "MS",
     "default wall-clock limit per run (default 30000)", NULL},
    {"tmpfs-mb", OPT_INT, F(tmpfs_mb), 1, 1 << 20, "N",
     "size of the writable working directory /tmp, counted as memory (default 64)", NULL},
    {"version", OPT_FLAG, F(version), 0, 0, NULL, "print the version and exit", NULL},
};

#undef F

void config_init(struct config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    /* Empty, NULL or -1: not given, the language table's value holds. */
    cfg->python_image = xstrdup("");
    cfg->js_image = xstrdup("");
    cfg->languages.items = xcalloc(1, sizeof(char *));
    cfg->pass_through_env.items = xcalloc(1, sizeof(char *));
    cfg->labels.items = xcalloc(1, sizeof(char *));
    cfg->allow_network.items = xcalloc(1, sizeof(char *));
    cfg->allowed_origins.items = xcalloc(1, sizeof(char *));
    cfg->allowed_hosts.items = xcalloc(1, sizeof(char *));
    cfg->http_listen = xstrdup("");
    cfg->max_sessions = 64;
    cfg->max_session_requests = 16;
    cfg->max_connections = 2048;
    cfg->max_connections_per_address = 512;
    cfg->http_head_timeout_ms = 10000;
    cfg->http_body_timeout_ms = 60000;
    cfg->max_batch_items = 64;
    cfg->max_inflight_body_bytes = 128LL << 20;
    cfg->session_idle_ms = 30LL * 60 * 1000;
    cfg->timeout_ms = 30000;
    cfg->max_timeout_ms = 300000;
    cfg->memory_mb = 512;
    cfg->max_memory_mb = 2048;
    cfg->max_output_bytes = 1 << 20;
    cfg->max_code_bytes = 4 << 20;
    cfg->max_variables_bytes = 1 << 20;
    cfg->max_message_bytes = 16 << 20;
    cfg->max_files_in = 100;
    cfg->max_file_in_bytes = 8 << 20;
    cfg->max_files_in_bytes = 10 << 20;
    cfg->max_files_out = 50;
    cfg->max_file_out_bytes = 8 << 20;
    cfg->max_files_out_bytes = 32 << 20;
    cfg->max_plots = 10;
    cfg->max_plot_bytes = 4 << 20;
    cfg->max_inline_image_bytes = 256 << 10;
    cfg->max_inline_text_bytes = 64 << 10;
    cfg->run_store_ttl_ms = 3600LL * 1000;
    cfg->run_store_max_bytes = 256LL << 20;
    cfg->run_store_session_max_bytes = 64LL << 20;
    cfg->pids_limit = 256;
    cfg->tmpfs_mb = 64;
    cfg->max_concurrent = 8;
    cfg->max_queued = 64;
    cfg->max_session_inflight = 16;
    cfg->max_session_queued = 8;
    cfg->queue_timeout_ms = 60000;
    cfg->cpus = 1.0;
    cfg->runtime = xstrdup("");
    cfg->python_runtime = xstrdup("");
    cfg->js_runtime = xstrdup("");
    cfg->dry_run_create = xstrdup("");
    cfg->pool_size = -1;
    cfg->pool_max_age_ms = 10LL * 60 * 1000;
    cfg->pool_refill_delay_ms = 250;
    cfg->python_preload = NULL;
    cfg->js_preload = NULL;
    cfg->sandbox_user = xstrdup("10001:10001");
    cfg->sandbox_uid_base = DEFAULT_SANDBOX_UID_BASE;
    cfg->sandbox_uid_count = 1 << 20;
    cfg->sandbox_io = xstrdup("socket");
    cfg->sandbox_io_dir = xstrdup(DEFAULT_SANDBOX_IO_DIR);
    cfg->log_level = xstrdup("info");
    cfg->languages_file = xstrdup("");
}

static void free_list(char **list)
{
    if (!list)
        return;
    for (char **p = list; *p; p++)
        free(*p);
    free(list);
}

/* The options' one mention of their languages: each set's language and
 * runner, its options' prefix and fields, and the CONTAINER_LANGUAGE
 * values that pick its image. */
#define AT(field) offsetof(struct config, field)
static const struct legacy_set {
    const char *language, *runner, *prefix;
    const char *container_names[3];
    size_t image, preload, runtime; /* in struct config */
} legacy_sets[CONFIG_LEGACY_LANGUAGES] = {
    {.language = "python",
     .runner = "python",
     .prefix = "python",
     .container_names = {"python"},
     .image = AT(python_image),
     .preload = AT(python_preload),
     .runtime = AT(python_runtime)},
    {.language = "javascript",
     .runner = "node",
     .prefix = "js",
     .container_names = {"javascript", "js", "node"},
     .image = AT(js_image),
     .preload = AT(js_preload),
     .runtime = AT(js_runtime)},
};
#undef AT

static char *const *legacy_slot(const struct config *cfg, size_t offset)
{
    return (char *const *)(const void *)((const char *)cfg + offset);
}

struct config_legacy config_legacy(const struct config *cfg, size_t i)
{
    const struct legacy_set *s = &legacy_sets[i < CONFIG_LEGACY_LANGUAGES ? i : 0];
    return (struct config_legacy){
        .language = s->language,
        .runner = s->runner,
        .prefix = s->prefix,
        .image = *legacy_slot(cfg, s->image),
        .preload = *legacy_slot(cfg, s->preload),
        .runtime = *legacy_slot(cfg, s->runtime),
    };
}

void config_free(struct config *cfg)
{
    free(cfg->engine_socket);
    free(cfg->engine_source);
    free(cfg->python_image);
    free(cfg->js_image);
    free_list(cfg->pass_through_env.items);
    free_list(cfg->labels.items);
    free_list(cfg->allow_network.items);
    free_list(cfg->languages.items);
    free_list(cfg->allowed_origins.items);
    free_list(cfg->allowed_hosts.items);
    free(cfg->http_listen);
    free(cfg->http_host);
    free(cfg->auth_token_file);
    if (cfg->auth_token) {
        explicit_bzero(cfg->auth_token, strlen(cfg->auth_token));
        free(cfg->auth_token);
    }
    free(cfg->runtime);
    free(cfg->python_runtime);
    free(cfg->js_runtime);
    free(cfg->python_preload);
    free(cfg->js_preload);
    free(cfg->dry_run_create);
    free(cfg->sandbox_user);
    free(cfg->sandbox_io);
    free(cfg->sandbox_io_dir);
    free(cfg->log_level);
    free(cfg->config_file);
    free(cfg->languages_file);
    memset(cfg, 0, sizeof(*cfg));
}

void config_usage(FILE *fp, const char *argv0)
{
    fprintf(fp,
            "Usage: %s [OPTION]...\n"
            "MCP server that runs Python and JavaScript in fresh hardened containers.\n"
            "Speaks MCP (JSON-RPC, one message per line) on stdin/stdout, or over HTTP with\n"
            "--http; logs go to stderr.\n\n",
            argv0);
    for (size_t i = 0; i < ARRAY_SIZE(options); i++) {
        const struct opt_def *o = &options[i];
        char left[64];
        snprintf(left, sizeof(left), "--%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        fprintf(fp, "  %-30s %s\n", left, o->help);
    }
    fprintf(fp, "\nEvery option can also be set as MCPSANDBOXD_<OPTION> in the environment\n"
                "(e.g. MCPSANDBOXD_TIMEOUT_MS=10000). CONTAINER_IMAGE with CONTAINER_LANGUAGE\n"
                "(python or javascript) sets the image of that language.\n");
}

/* Actions rather than settings: a config file or a variable left in the
 * environment must never turn a daemon into a one-shot command. */
static bool command_line_only(const struct opt_def *o)
{
    return o->type == OPT_FLAG || strcmp(o->name, "config") == 0 ||
           strcmp(o->name, "dry-run-create") == 0;
}

/* KEY=VALUE: a key of letters, digits, '.', '-', '_' and '/' starting
 * with a letter, not in the daemon's namespace; a value of printable
 * ASCII. */
static int valid_label(const char *s, size_t n)
{
    static const char reserved[] = "io.mcp-sandboxd.";
    const char *eq = memchr(s, '=', n);
    size_t kn = eq ? (size_t)(eq - s) : 0;
    if (!eq || kn == 0 || kn > 128 || n - kn - 1 > 256 || !isalpha((unsigned char)s[0]))
        return 0;
    if (kn >= sizeof(reserved) - 1 && strncmp(s, reserved, sizeof(reserved) - 1) == 0)
        return 0;
    for (size_t i = 0; i < kn; i++)
        if (!(isalnum((unsigned char)s[i]) || strchr(".-_/", s[i])))
            return 0;
    for (size_t i = kn + 1; i < n; i++)
        if (s[i] < 0x20 || s[i] > 0x7e)
            return 0;
    return 1;
}

/* A language's name as the table spells them (sandbox/langtable.h), any
 * case; whether the table has it is checked once the table is loaded. */
static int valid_language(const char *s, size_t n)
{
    if (n == 0 || n > 32 || !isalpha((unsigned char)s[0]))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || strchr("+#-", s[i])))
            return 0;
    return 1;
}

static int valid_env_name(const char *s, size_t n)
{
    if (n == 0 || n > 128 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
            return 0;
    return 1;
}

static int valid_token(const char *s, size_t n)
{
    if (n == 0 || n > 256)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isgraph((unsigned char)s[i]))
            return 0;
    return 1;
}

static int add_list(struct config_list *list, const struct opt_def *o, const char *value,
                    struct err *err)
{
    const char *p = value;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        /* Tolerate "A, B" as operators write it. */
        while (n && isspace((unsigned char)*p))
            p++, n--;
        while (n && isspace((unsigned char)p[n - 1]))
            n--;
        if (n) {
            if (o->check_item && !o->check_item(p, n))
                return err_set(err, ERR_INVALID, "--%s: '%.*s' is not valid", o->name,
                               (int)(n > 64 ? 64 : n), p);
            int dup = 0;
            for (size_t i = 0; i < list->n; i++)
                if (strlen(list->items[i]) == n && memcmp(list->items[i], p, n) == 0)
                    dup = 1;
            if (!dup) {
                list->items = xrealloc(list->items, (list->n + 2) * sizeof(char *));
                list->items[list->n++] = xstrndup(p, n);
                list->items[list->n] = NULL;
            }
        }
        if (!comma)
            break;
        p = comma + 1;
    }
    return 0;
}

static int set_option(struct config *cfg, const struct opt_def *o, const char *value,
                      struct err *err)
{
    char *base = (char *)cfg;
    switch (o->type) {
    case OPT_STR: {
        char **slot = (char **)(void *)(base + o->offset);
        free(*slot);
        *slot = xstrdup(value);
        return 0;
    }
    case OPT_INT: {
        char *end = NULL;
        errno = 0;
        long long v = strtoll(value, &end, 10);
        if (errno || end == value || *end != '\0')
            return err_set(err, ERR_INVALID, "--%s: '%s' is not an integer", o->name, value);
        if (v < o->min || v > o->max)
            return err_set(err, ERR_INVALID, "--%s: %lld is out of range [%lld, %lld]", o->name, v,
                           o->min, o->max);
        *(long long *)(void *)(base + o->offset) = v;
        return 0;
    }
    case OPT_DOUBLE: {
        char *end = NULL;
        errno = 0;
        double v = strtod(value, &end);
        if (errno || end == value || *end != '\0' || !(v > 0) || v > (double)o->max)
            return err_set(err, ERR_INVALID, "--%s: '%s' must be a number in (0, %lld]", o->name,
                           value, o->max);
        *(double *)(void *)(base + o->offset) = v;
        return 0;
    }
    case OPT_LIST:
        return add_list((struct config_list *)(void *)(base + o->offset), o, value, err);
    case OPT_FLAG: {
        bool *slot = (bool *)(void *)(base + o->offset);
        if (!value || !*value || strcmp(value, "1") == 0 || strcmp(value, "true") == 0 ||
            strcmp(value, "yes") == 0)
            *slot = true;
        else if (strcmp(value, "0") == 0 || strcmp(value, "false") == 0 || strcmp(value, "no") == 0)
            *slot = false;
        else
            return err_set(err, ERR_INVALID, "--%s: expected true or false, got '%s'", o->name,
                           value);
        return 0;
    }
    }
    return err_set(err, ERR_INTERNAL, "bad option type");
}

static const struct opt_def *find_option(const char *name, size_t n)
{
    for (size_t i = 0; i < ARRAY_SIZE(options); i++)
        if (strlen(options[i].name) == n && memcmp(options[i].name, name, n) == 0)
            return &options[i];
    return NULL;
}

static const char *env_get(char **envp, const char *name)
{
    const char *entry = util_env_entry(envp, name);
    return entry ? entry + strlen(name) + 1 : NULL;
}

static void env_name_for(const struct opt_def *o, char *out, size_t outsz)
{
    size_t k = (size_t)snprintf(out, outsz, "MCPSANDBOXD_");
    for (const char *p = o->name; *p && k + 1 < outsz; p++)
        out[k++] = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
    out[k] = '\0';
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

static int load_file(struct config *cfg, const char *path, struct err *err)
{
    FILE *fp = fopen(path, "re");
    if (!fp)
        return err_set(err, ERR_IO, "cannot open config file %s: %s", path, strerror(errno));
    char line[MAX_CONFIG_LINE];
    int lineno = 0;
    int rc = 0;
    while (fgets(line, sizeof(line), fp)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(fp)) {
            rc = err_set(err, ERR_INVALID, "%s:%d: line too long", path, lineno);
            break;
        }
        char *s = trim(line);
        if (*s == '\0' || *s == '#')
            continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            rc = err_set(err, ERR_INVALID, "%s:%d: expected 'name = value'", path, lineno);
            break;
        }
        *eq = '\0';
        char *name = trim(s);
        char *value = trim(eq + 1);
        const struct opt_def *o = find_option(name, strlen(name));
        if (!o || command_line_only(o)) {
            rc = err_set(err, ERR_INVALID, "%s:%d: unknown option '%s'", path, lineno, name);
            break;
        }
        if (set_option(cfg, o, value, err) < 0) {
            rc = err_wrap(err, "%s:%d", path, lineno);
            break;
        }
    }
    fclose(fp);
    return rc;
}

int config_resolve_engine(const char *cli_engine, const char *docker_host,
                          const char *container_host, char **socket_path, char **source,
                          struct err *err)
{
    const char *url = NULL;
    const char *from = NULL;
    if (cli_engine && *cli_engine) {
        url = cli_engine;
        from = "--engine";
    } else if (docker_host && *docker_host) {
        url = docker_host;
        from = "DOCKER_HOST";
    } else if (container_host && *container_host) {
        url = container_host;
        from = "CONTAINER_HOST";
    }
    if (url) {
        const char *path = url;
        if (strncmp(url, "unix://", 7) == 0)
            path = url + 7;
        else if (strstr(url, "://"))
            return err_set(err, ERR_INVALID,
                           "%s: only unix:// engine sockets are supported, got '%s'", from, url);
        if (path[0] != '/')
            return err_set(err, ERR_INVALID, "%s: engine socket path must be absolute, got '%s'",
                           from, url);
        *socket_path = xstrdup(path);
        *source = xstrdup(from);
        return 0;
    }
    static const char *const defaults[] = {"/var/run/docker.sock", "/run/podman/podman.sock"};
    struct stat st;
    for (size_t i = 0; i < ARRAY_SIZE(defaults); i++) {
        if (stat(defaults[i], &st) == 0 && S_ISSOCK(st.st_mode)) {
            *socket_path = xstrdup(defaults[i]);
            *source = xstrdup("default");
            return 0;
        }
    }
    *socket_path = xstrdup(defaults[0]);
    *source = xstrdup("default");
    return 0;
}

static int apply_container_image_pair(struct config *cfg, char **envp, struct err *err)
{
    const char *image = env_get(envp, "CONTAINER_IMAGE");
    const char *lang = env_get(envp, "CONTAINER_LANGUAGE");
    if (!image || !*image) {
        if (lang && *lang)
            return err_set(err, ERR_INVALID,
                           "CONTAINER_LANGUAGE is set but CONTAINER_IMAGE is not");
        return 0;
    }
    /* Unset: the first set's (python's). */
    const struct legacy_set *set = lang ? NULL : &legacy_sets[0];
    for (size_t i = 0; i < ARRAY_SIZE(legacy_sets) && !set; i++)
        for (size_t k = 0; k < ARRAY_SIZE(legacy_sets[i].container_names) && !set; k++)
            if (legacy_sets[i].container_names[k] &&
                strcmp(lang, legacy_sets[i].container_names[k]) == 0)
                set = &legacy_sets[i];
    if (!set)
        return err_set(err, ERR_INVALID,
                       "CONTAINER_LANGUAGE must be python or javascript, got '%.64s'", lang);
    char **slot = (char **)(void *)((char *)cfg + set->image);
    free(*slot);
    *slot = xstrdup(image);
    return 0;
}

/* "host:port", "[v6]:port"; port 0 picks a free port (tests). */
static int parse_listen(struct config *cfg, struct err *err)
{
    const char *s = cfg->http_listen;
    const char *colon;
    const char *host = s;
    size_t host_len;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close || close[1] != ':')
            return err_set(err, ERR_INVALID, "--http: expected [ADDRESS]:PORT, got '%s'", s);
        host = s + 1;
        host_len = (size_t)(close - host);
        colon = close + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon)
            return err_set(err, ERR_INVALID, "--http: expected HOST:PORT, got '%s'", s);
        host_len = (size_t)(colon - s);
    }
    char *end = NULL;
    errno = 0;
    unsigned long port = strtoul(colon + 1, &end, 10);
    if (host_len == 0 || !isdigit((unsigned char)colon[1]) || errno || *end != '\0' || port > 65535)
        return err_set(err, ERR_INVALID, "--http: expected HOST:PORT, got '%s'", s);
    free(cfg->http_host);
    cfg->http_host = xstrndup(host, host_len);
    cfg->http_port = (unsigned)port;
    return 0;
}

#define MAX_TOKEN_BYTES 4096

static int load_token(struct config *cfg, char **envp, struct err *err)
{
    const char *env_token = env_get(envp, "MCPSANDBOXD_AUTH_TOKEN");
    char *token = NULL;
    if (cfg->auth_token_file && *cfg->auth_token_file) {
        FILE *fp = fopen(cfg->auth_token_file, "re");
        if (!fp)
            return err_set(err, ERR_IO, "--auth-token-file: cannot open %s: %s",
                           cfg->auth_token_file, strerror(errno));
        char buf[MAX_TOKEN_BYTES + 2];
        size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
        fclose(fp);
        if (n > MAX_TOKEN_BYTES)
            return err_set(err, ERR_INVALID, "--auth-token-file: token longer than %d bytes",
                           MAX_TOKEN_BYTES);
        buf[n] = '\0';
        token = xstrdup(trim(buf));
        explicit_bzero(buf, sizeof(buf));
    } else if (env_token && *env_token) {
        token = xstrdup(env_token);
    }
    if (!token)
        return 0;
    if (!valid_token(token, strlen(token))) {
        explicit_bzero(token, strlen(token));
        free(token);
        return err_set(err, ERR_INVALID,
                       "the auth token must be 1 to 256 visible ASCII characters");
    }
    cfg->auth_token = token;
    return 0;
}

/* Anyone who reaches a listener off loopback could run code with the
 * pass-through secrets: there the daemon does not start without a token.
 * On loopback it serves without one (scripts and tests start it so) and
 * warns at start (main.c). The modes that print and exit bind nothing. */
static int check_listen_auth(const struct config *cfg, struct err *err)
{
    if (!*cfg->http_listen || cfg->auth_token || cfg->print_engine || cfg->list_images ||
        *cfg->dry_run_create)
        return 0;
    bool loopback = false;
    char addr[NETADDR_TEXT_MAX];
    if (netaddr_listen_is_loopback(cfg->http_host, &loopback, addr, sizeof(addr), err) < 0)
        return -1;
    if (loopback)
        return 0;
    return err_set(err, ERR_INVALID,
                   "--http %.300s: %s is not a loopback address, and whoever reaches it could "
                   "run code with this daemon's pass-through secrets, so it needs a bearer "
                   "token: write one to a file only the daemon can read and pass "
                   "--auth-token-file FILE (or set MCPSANDBOXD_AUTH_TOKEN), or bind 127.0.0.1",
                   cfg->http_listen, addr);
}

/* A numeric, non-root "uid:gid": names would depend on the image. */
static int valid_user(const char *s)
{
    char *end = NULL;
    errno = 0;
    unsigned long uid = strtoul(s, &end, 10);
    if (!isdigit((unsigned char)s[0]) || errno || *end != ':' || uid == 0 || uid > 0x7fffffffUL)
        return 0;
    const char *g = end + 1;
    unsigned long gid = strtoul(g, &end, 10);
    if (!isdigit((unsigned char)g[0]) || errno || *end != '\0' || gid == 0 || gid > 0x7fffffffUL)
        return 0;
    return 1;
}

/* The sandboxes' own uids stay below the ids that mean "none" and
 * "nobody" and that tools reading them as signed numbers get wrong, and
 * never include this process's user: a peer of the daemon's uid may use
 * any sandbox's stream socket (backend/channel.h). */
static int check_uid_range(const struct config *cfg, struct err *err)
{
    long long last = cfg->sandbox_uid_base + cfg->sandbox_uid_count - 1;
    if (cfg->sandbox_uid_count == 0)
        return 0;
    if (last > 0x7ffffffeLL)
        return err_set(err, ERR_INVALID,
                       "--sandbox-uid-base %lld with --sandbox-uid-count %lld ends at %lld, past "
                       "the highest uid a sandbox may have (2147483646)",
                       cfg->sandbox_uid_base, cfg->sandbox_uid_count, last);
    long long me = (long long)geteuid();
    if (me >= cfg->sandbox_uid_base && me <= last)
        return err_set(err, ERR_INVALID,
                       "--sandbox-uid-base %lld with --sandbox-uid-count %lld includes this "
                       "process's own uid %lld",
                       cfg->sandbox_uid_base, cfg->sandbox_uid_count, me);
    return 0;
}

/* What any runner's module name is made of (Python's dotted identifiers,
 * a Node built-in's "fs", "node:fs", "fs/promises"); langtable_configure
 * checks each against its language's runner. */
static int valid_module(const char *s, size_t n)
{
    if (n == 0 || n > 128)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!isalnum(c) && c != '_' && c != '.' && c != ':' && c != '/')
            return 0;
    }
    return 1;
}

/* Checks a preload list and rewrites it as "a,b,c" (spaces and empty items
 * dropped), the form the runner takes as one argument. */
static int normalize_preload(char **list, const char *opt, struct err *err)
{
    char *out = xcalloc(1, strlen(*list) + 1);
    size_t k = 0;
    for (const char *p = *list; *p;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        const char *item = p;
        while (n && isspace((unsigned char)*item))
            item++, n--;
        while (n && isspace((unsigned char)item[n - 1]))
            n--;
        if (n) {
            if (!valid_module(item, n)) {
                free(out);
                return err_set(err, ERR_INVALID, "--%s: '%.*s' is not a module name", opt,
                               (int)(n > 64 ? 64 : n), item);
            }
            if (k)
                out[k++] = ',';
            memcpy(out + k, item, n);
            k += n;
        }
        if (!comma)
            break;
        p = comma + 1;
    }
    out[k] = '\0';
    if (k > CONFIG_PRELOAD_MAX) {
        free(out);
        return err_set(err, ERR_INVALID, "--%s: the list is over %d bytes", opt,
                       CONFIG_PRELOAD_MAX);
    }
    free(*list);
    *list = out;
    return 0;
}

static int check_config(struct config *cfg, struct err *err)
{
    if ((cfg->python_preload &&
         normalize_preload(&cfg->python_preload, "python-preload", err) < 0) ||
        (cfg->js_preload && normalize_preload(&cfg->js_preload, "js-preload", err) < 0))
        return -1;
    if (cfg->timeout_ms > cfg->max_timeout_ms)
        return err_set(err, ERR_INVALID, "--timeout-ms (%lld) exceeds --max-timeout-ms (%lld)",
                       cfg->timeout_ms, cfg->max_timeout_ms);
    if (cfg->memory_mb > cfg->max_memory_mb)
        return err_set(err, ERR_INVALID, "--memory-mb (%lld) exceeds --max-memory-mb (%lld)",
                       cfg->memory_mb, cfg->max_memory_mb);
    if (log_level_from_name(cfg->log_level) < 0)
        return err_set(err, ERR_INVALID, "--log-level: '%s' is not error, warn, info or debug",
                       cfg->log_level);
    if (!valid_user(cfg->sandbox_user))
        return err_set(err, ERR_INVALID,
                       "--sandbox-user must be numeric UID:GID other than root, got '%s'",
                       cfg->sandbox_user);
    if (check_uid_range(cfg, err) < 0)
        return -1;
    if (strcmp(cfg->sandbox_io, "socket") != 0 && strcmp(cfg->sandbox_io, "attach") != 0)
        return err_set(err, ERR_INVALID, "--sandbox-io: '%.64s' is not socket or attach",
                       cfg->sandbox_io);
    /* It becomes part of a bind ("HOST:TARGET:ro") and a socket path (108
     * bytes with the directory and socket names). */
    if (cfg->sandbox_io_dir[0] != '/' || strlen(cfg->sandbox_io_dir) > 64 ||
        strpbrk(cfg->sandbox_io_dir, ":,\\\"") || strstr(cfg->sandbox_io_dir, "/.."))
        return err_set(err, ERR_INVALID,
                       "--sandbox-io-dir must be an absolute path of at most 64 bytes without "
                       "':', ',', '\\', '\"' or '..', got '%.64s'",
                       cfg->sandbox_io_dir);
    const struct {
        const char *opt, *val;
    } runtimes[] = {{"runtime", cfg->runtime},
                    {"python-runtime", cfg->python_runtime},
                    {"js-runtime", cfg->js_runtime}};
    for (size_t i = 0; i < ARRAY_SIZE(runtimes); i++)
        for (const char *p = runtimes[i].val; *p; p++)
            if (!(isalnum((unsigned char)*p) || *p == '-' || *p == '_' || *p == '.'))
                return err_set(err, ERR_INVALID, "--%s: '%.64s' is not a valid runtime name",
                               runtimes[i].opt, runtimes[i].val);
    if (*cfg->http_listen && parse_listen(cfg, err) < 0)
        return -1;
    /* Over stdio the daemon has one client, who shares with nobody: its
     * session may use every slot, the whole queue and the whole store. */
    if (!*cfg->http_listen) {
        cfg->max_session_inflight = cfg->max_concurrent + cfg->max_queued;
        cfg->max_session_queued = cfg->max_queued;
        cfg->run_store_session_max_bytes = cfg->run_store_max_bytes;
    }
    /* The message must fit the code it carries plus JSON escaping. */
    if (cfg->max_message_bytes < cfg->max_code_bytes)
        return err_set(err, ERR_INVALID, "--max-message-bytes must be at least --max-code-bytes");
    if (cfg->max_inflight_body_bytes < cfg->max_message_bytes)
        return err_set(err, ERR_INVALID,
                       "--max-inflight-body-bytes must be at least --max-message-bytes");
    return 0;
}

/* MCPSANDBOXD_<OPTION> variables, then the CONTAINER_IMAGE pair. */
static int apply_environment(struct config *cfg, char **envp, struct err *err)
{
    char envname[96];
    for (size_t i = 0; i < ARRAY_SIZE(options); i++) {
        const struct opt_def *o = &options[i];
        if (command_line_only(o))
            continue;
        env_name_for(o, envname, sizeof(envname));
        const char *v = env_get(envp, envname);
        if (v && set_option(cfg, o, v, err) < 0)
            return err_wrap(err, "%s", envname);
    }
    return apply_container_image_pair(cfg, envp, err);
}

/* The command line, last so it wins. --engine is handed back in
 * *cli_engine (allocated) for config_resolve_engine. */
static int apply_command_line(struct config *cfg, int argc, char **argv,
                              const struct option *longopts, char **cli_engine, struct err *err)
{
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "hV", longopts, NULL)) != -1) {
        if (c == 'h') {
            cfg->help = true;
        } else if (c == 'V') {
            cfg->version = true;
        } else if (c >= 1000) {
            const struct opt_def *o = &options[c - 1000];
            if (strcmp(o->name, "config") == 0)
                continue;
            if (strcmp(o->name, "engine") == 0) {
                free(*cli_engine);
                *cli_engine = xstrdup(optarg);
                continue;
            }
            if (set_option(cfg, o, optarg, err) < 0)
                return -1;
        } else {
            const char *arg = argv[optind - 1];
            return err_set(err, ERR_INVALID, "unknown or incomplete option '%s' (see --help)",
                           arg ? arg : "?");
        }
    }
    if (optind < argc)
        return err_set(err, ERR_INVALID, "unexpected argument '%s' (see --help)", argv[optind]);
    return 0;
}

int config_load(struct config *cfg, int argc, char **argv, char **envp, struct err *err)
{
    struct option longopts[ARRAY_SIZE(options) + 1];
    for (size_t i = 0; i < ARRAY_SIZE(options); i++) {
        longopts[i].name = options[i].name;
        longopts[i].has_arg = options[i].type == OPT_FLAG ? no_argument : required_argument;
        longopts[i].flag = NULL;
        longopts[i].val = 1000 + (int)i;
    }
    memset(&longopts[ARRAY_SIZE(options)], 0, sizeof(struct option));

    /* Pass 1 finds --config (and --help/--version, which need no checks). */
    const char *cfgfile = env_get(envp, "MCPSANDBOXD_CONFIG");
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "hV", longopts, NULL)) != -1) {
        if (c >= 1000 && strcmp(options[c - 1000].name, "config") == 0)
            cfgfile = optarg;
    }
    if (cfgfile && *cfgfile) {
        free(cfg->config_file);
        cfg->config_file = xstrdup(cfgfile);
        if (load_file(cfg, cfgfile, err) < 0)
            return -1;
    }

    if (apply_environment(cfg, envp, err) < 0)
        return -1;

    char *cli_engine = NULL;
    int rc = apply_command_line(cfg, argc, argv, longopts, &cli_engine, err);
    if (rc < 0 || cfg->help || cfg->version) {
        free(cli_engine);
        return rc;
    }

    /* --engine and MCPSANDBOXD_ENGINE win over DOCKER_HOST. */
    const char *engine = cli_engine ? cli_engine : cfg->engine_socket;
    char *path = NULL;
    char *source = NULL;
    rc = config_resolve_engine(engine, env_get(envp, "DOCKER_HOST"),
                               env_get(envp, "CONTAINER_HOST"), &path, &source, err);
    free(cli_engine);
    if (rc < 0)
        return -1;
    free(cfg->engine_socket);
    cfg->engine_socket = path;
    free(cfg->engine_source);
    cfg->engine_source = source;
    if (check_config(cfg, err) < 0 || load_token(cfg, envp, err) < 0)
        return -1;
    return check_listen_auth(cfg, err);
}
