#include "base/config_table.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "base/config.h"
#include "base/config_check.h"
#include "base/util.h"

#define F(field) offsetof(struct config, field)

/* One row each; a trailing argument adds designators such as .def_doc. */
#define INT(nm, field, lo, hi, a, d, text, ...)                                                    \
    {                                                                                              \
        .name = (nm), .type = OPT_INT, .offset = F(field), .min = (lo), .max = (hi), .arg = (a),   \
        .def_int = (d), .help = (text), __VA_ARGS__                                                \
    }
#define STR(nm, field, a, d, text, ...)                                                            \
    {                                                                                              \
        .name = (nm), .type = OPT_STR, .offset = F(field), .arg = (a), .def = (d), .help = (text), \
        __VA_ARGS__                                                                                \
    }
#define LIST(nm, field, a, check, text, ...)                                                       \
    {                                                                                              \
        .name = (nm), .type = OPT_LIST, .offset = F(field), .arg = (a), .def = "",                 \
        .check_item = (check), .help = (text), __VA_ARGS__                                         \
    }
#define FLAG(nm, field, text)                                                                      \
    {                                                                                              \
        .name = (nm), .type = OPT_FLAG, .offset = F(field), .help = (text), .cli_only = true       \
    }
/* A setting that is true or false: a flag on the command line, "true" /
 * "false" (1/0, yes/no) in the environment and the file; false unless
 * given. */
#define BOOL(nm, field, text)                                                                      \
    {                                                                                              \
        .name = (nm), .type = OPT_FLAG, .offset = F(field), .def = "false", .help = (text)         \
    }

#define HOUR_MS (3600LL * 1000)
#define DAY_MS  (24 * HOUR_MS)
#define WEEK_MS (7 * DAY_MS)

/* Alphabetical, so --help and the sample file read like a reference
 * (test_config checks it). */
const struct config_opt config_opts[] = {
    LIST("allow-network", allow_network, "LANGUAGE[,...]", config_item_language,
         "give the sandboxes of these languages (names or aliases of the language table whose "
         "network_allowed is true) the engine's default network instead of none; callers can "
         "never turn it on. That network reaches services on the host, the cloud metadata "
         "address 169.254.169.254 and the other sandboxes (the daemon warns at start); --egress "
         "allows named hosts only, and a language takes one or the other",
         .def_doc = "none"),
    LIST("allowed-hosts", allowed_hosts, "HOST[:PORT],...", config_item_token,
         "Host header values accepted besides localhost, 127.0.0.1 and [::1]"),
    LIST("allowed-origins", allowed_origins, "ORIGIN,...", config_item_token,
         "Origin values accepted besides http(s)://localhost, 127.0.0.1 and [::1]"),
    STR("auth-token-file", auth_token_file, "FILE", NULL,
        "require 'Authorization: Bearer <token>' on HTTP, the token (1 to 256 visible ASCII "
        "characters) read from FILE, which only the daemon should be able to read; it wins over "
        "MCPSANDBOXD_AUTH_TOKEN. Needed to --http anywhere but loopback, and without it any "
        "local user can call the tools",
        .def_doc = "none"),
    STR("backend", backend, "NAME", "docker",
        "what runs the sandboxes: docker, the Docker Engine API of Docker or Podman (see "
        "--engine); or kubernetes, Pods of one namespace through a cluster's API server (see "
        "--kubeconfig)"),
    INT("code-session-idle-ms", code_session_idle_ms, 1000, WEEK_MS, "MS", 900000,
        "a code session (create_session) with no call running ends after this long unused; its "
        "sandbox is removed"),
    INT("code-session-max-age-ms", code_session_max_age_ms, 1000, WEEK_MS, "MS", 2 * HOUR_MS,
        "a code session ends this long after it was created, used or not (a call running then "
        "finishes first); pooled sandboxes are labelled to live this much longer, so any can "
        "become a session"),
    STR("config", config_file, "FILE", NULL,
        "read options from FILE (lines 'name = value'; see config/mcp-sandboxd.conf)",
        .cli_only = true),
    {.name = "cpus",
     .type = OPT_DOUBLE,
     .offset = F(cpus),
     .max = 64,
     .arg = "N",
     .def_real = 1.0,
     .help = "CPUs per sandbox, fractional allowed"},
    STR("daemon-id", daemon_id, "NAME", "",
        "this daemon's name in every handle it gives out (a session_id, a run's file URI, a task "
        "id, an Mcp-Session-Id: NAME.<32 hex>), so a front end for several daemons can route a "
        "request that names one to the daemon that holds it; a DNS label (1 to 63 of a-z, 0-9 "
        "and '-'), such as the pod or host name",
        .def_doc = "8 random hex digits, new at each start"),
    STR("dry-run-create", dry_run_create, "LANGUAGE", "",
        "print the container create request a run of this language would send, and exit "
        "(it never holds pass-through values: runs send them in their request)",
        .cli_only = true),
    LIST("egress", egress, "LANGUAGE=PATTERN[,PATTERN...]", config_item_egress,
         "let LANGUAGE's sandboxes (a name or alias of the language table) reach these hosts, "
         "and no other, through the daemon's egress gateway, an HTTP proxy (they still have no "
         "network of their own). A pattern is a DNS name, *.SUFFIX (any name under SUFFIX, not "
         "SUFFIX itself) or an IP address, each with :PORT or else ports 443 and 80. It replaces "
         "the language table's egress list; LANGUAGE= with no pattern removes it, and of two "
         "items for one language the later wins. Repeatable; in one value (the environment, the "
         "config file) ';' separates the items. A call may narrow its language's list, never "
         "widen it; the gateway still refuses private, loopback, link-local and metadata "
         "addresses (see --egress-allow-cidr)",
         .def_doc = "the language table's; the built-in one has none", .sep = ';'),
    LIST("egress-allow-cidr", egress_allow_cidr, "CIDR[,CIDR...]", config_item_token,
         "let the egress gateway connect to addresses in these CIDRs (ADDRESS/PREFIX, or one "
         "ADDRESS) although they are loopback, private, link-local (the cloud metadata address "
         "169.254.169.254 among them), carrier-grade NAT, multicast or IPv6 unique-local or "
         "link-local, which it refuses otherwise; list only what is meant: 0.0.0.0/0 lets the "
         "metadata address through too. Repeatable",
         .def_doc = "none"),
    INT("egress-connection-timeout-ms", egress_connection_timeout_ms, 100, DAY_MS, "MS",
        10LL * 60 * 1000,
        "one connection through the egress gateway is closed this long after it was accepted, "
        "however busy"),
    INT("egress-max-bytes-down", egress_max_bytes_down, 1, 1LL << 40, "N", 512LL << 20,
        "bytes one run may receive from upstream through the egress gateway, all its "
        "connections together; past it they are cut"),
    INT("egress-max-bytes-up", egress_max_bytes_up, 1, 1LL << 40, "N", 64LL << 20,
        "bytes one run may send upstream through the egress gateway, all its connections "
        "together; past it they are cut"),
    INT("egress-max-connections", egress_max_connections, 1, 100000, "N", 16,
        "connections one run may have open through the egress gateway at once; more are "
        "refused (429)"),
    INT("egress-max-connections-total", egress_max_connections_total, 1, 100000, "N", 256,
        "connections one run may make through the egress gateway in all; more are refused (429)"),
    LIST("egress-resolve", egress_resolve, "NAME=ADDRESS[,...]", config_item_token,
         "the egress gateway's resolver answers NAME with ADDRESS (IPv4 or IPv6) and never asks "
         "DNS for it, like curl's --resolve; the address is still judged as any other (see "
         "--egress-allow-cidr). Repeatable",
         .def_doc = "none"),
    STR("egress-upstream-ca", egress_upstream_ca, "FILE", NULL,
        "PEM certificates (a corporate proxy's CA, a test's) the egress gateway trusts, besides "
        "the host's trust store, when it verifies an upstream's TLS certificate; checked at start "
        "(it must hold at least one)",
        .def_doc = "none"),
    STR("engine", engine, "unix:///PATH", NULL,
        "the docker backend's engine socket: Docker's, or Podman's Docker-compatible API",
        .def_doc = "DOCKER_HOST, else CONTAINER_HOST, else the first of /var/run/docker.sock "
                   "and /run/podman/podman.sock that is a socket (the former if neither is)"),
    FLAG("help", help, "show this help and exit"),
    STR("http", http_listen, "HOST:PORT", "",
        "serve MCP over streamable HTTP (/mcp) and legacy SSE (/sse) instead of stdio, e.g. "
        "127.0.0.1:8080; an address other than loopback (127.0.0.0/8, ::1, localhost; 0.0.0.0 "
        "and :: are every interface) needs --auth-token-file",
        .def_doc = "none, stdio"),
    INT("http-body-timeout-ms", http_body_timeout_ms, 100, HOUR_MS, "MS", 60000,
        "an HTTP request's whole body must arrive within this long of its head, however the "
        "bytes trickle; else the connection is closed"),
    INT("http-head-timeout-ms", http_head_timeout_ms, 100, HOUR_MS, "MS", 10000,
        "an HTTP connection must send a complete request head within this long of opening (or "
        "of its previous answer, kept alive), however the bytes trickle; else it is closed"),
    STR("js-image", js_image, "IMAGE", "",
        "image for JavaScript; any image with node works, the runner comes on the command line",
        .def_doc = "the language table's, see --list-images"),
    STR("js-preload", js_preload, "MODULE,...", NULL,
        "Node built-in modules a pooled JavaScript sandbox loads before it waits; empty for none",
        .def_doc = "the language table's"),
    STR("js-runtime", js_runtime, "NAME", "", "OCI runtime for JavaScript sandboxes only",
        .def_doc = "--runtime"),
    STR("kube-context", kube_context, "NAME", NULL,
        "the kubernetes backend's context of the kubeconfig file",
        .def_doc = "the file's current-context"),
    STR("kube-namespace", kube_namespace, "NAME", NULL,
        "the namespace the kubernetes backend makes its sandbox Pods in",
        .def_doc = "the kubeconfig context's, or the daemon's own Pod's, else default"),
    STR("kube-seccomp-profile", kube_seccomp_profile, "FILE", NULL,
        "the project's seccomp profile as the cluster's nodes have it, relative to the "
        "kubelet's seccomp directory (e.g. mcp-sandboxd.json, a copy of "
        "src/backend/docker/seccomp_profile.json); sandbox Pods then run under it (Localhost) "
        "instead of the runtime's default",
        .def_doc = "none, RuntimeDefault"),
    STR("kubeconfig", kubeconfig, "FILE", NULL,
        "the kubernetes backend's cluster, credential and namespace: a kubeconfig file (its "
        "server, CA, and token or client certificate; no exec or auth-provider plugins)",
        .def_doc = "KUBECONFIG, else the service account of the Pod the daemon runs in, else "
                   "~/.kube/config"),
    LIST("label", labels, "KEY=VALUE[,...]", config_item_label,
         "an engine label for every container, for the operator's own bookkeeping (keys under "
         "io.mcp-sandboxd. are the daemon's); repeatable"),
    LIST("languages", languages, "LANGUAGE[,...]", config_item_language,
         "the languages this daemon offers, names or aliases of the language table; the others "
         "get no pool, no tool entry and no image from make run",
         .def_doc = "all of the language table's"),
    STR("languages-file", languages_file, "FILE", "",
        "change the built-in languages with the JSON definitions in FILE: add, override or "
        "disable languages (see src/sandbox/languages/langtable.h); checked at start, an error "
        "names its "
        "file and line. --python-image, --js-image, the preloads and --pool-size, when set, win "
        "over it",
        .def_doc = "none, the built-in languages only"),
    FLAG("list-images", list_images,
         "print each enabled language and its image (a line each: NAME IMAGE), and exit"),
    STR("log-level", log_level, "LEVEL", "info",
        "error, warn, info or debug; logs go to stderr only"),
    INT("max-batch-items", max_batch_items, 1, 100000, "N", 64,
        "messages in one JSON-RPC batch (protocol 2025-03-26); a larger batch is refused whole, "
        "and the answers of one batch together stay under --max-message-bytes"),
    INT("max-code-bytes", max_code_bytes, 1, 64LL << 20, "N", 4 << 20,
        "largest accepted code or stdin argument"),
    INT("max-code-sessions", max_code_sessions, 0, 1024, "N", 16,
        "code sessions (a sandbox kept between calls, create_session) at once, all clients "
        "together; each holds its sandbox's memory while idle, outside --max-concurrent; 0 "
        "turns sessions off and their tools are not listed"),
    INT("max-code-sessions-per-owner", max_code_sessions_per_owner, 1, 1024, "N", 4,
        "code sessions one MCP session may have open at once"),
    INT("max-concurrent", max_concurrent, 1, 1024, "N", 8,
        "runs at once, each on a worker thread started with the daemon; more wait in a queue"),
    INT("max-connections", max_connections, 8, 100000, "N", 2048,
        "HTTP connections at once (a few KiB each, served by one polling thread per core); near "
        "the limit, the connection that has waited longest without a complete request head is "
        "closed to make room"),
    INT("max-connections-per-address", max_connections_per_address, 1, 100000, "N", 512,
        "HTTP connections at once from one client address"),
    INT("max-file-in-bytes", max_file_in_bytes, 0, 1LL << 30, "N", 8 << 20,
        "largest file of a run's files argument, decoded"),
    INT("max-file-out-bytes", max_file_out_bytes, 0, 1LL << 30, "N", 8 << 20,
        "largest file a run returns; larger ones are named as left out"),
    INT("max-files-in", max_files_in, 0, 100000, "N", 100, "files in a run's files argument"),
    INT("max-files-in-bytes", max_files_in_bytes, 0, 1LL << 30, "N", 10 << 20,
        "all files of a run's files argument together, decoded"),
    INT("max-files-out", max_files_out, 0, 10000, "N", 50,
        "files a run returns from outputs/ and output_files, plots apart"),
    INT("max-files-out-bytes", max_files_out_bytes, 0, 1LL << 30, "N", 32 << 20,
        "all files and plots a run returns together"),
    INT("max-inflight-body-bytes", max_inflight_body_bytes, 1024, 64LL << 30, "N", 128LL << 20,
        "HTTP request bodies being received or parsed at once, all connections together; a "
        "request that would pass it gets 503"),
    INT("max-inline-image-bytes", max_inline_image_bytes, 0, 64LL << 20, "N", 256 << 10,
        "an image up to this size comes back as image content, a larger one as a resource link"),
    INT("max-inline-text-bytes", max_inline_text_bytes, 0, 64LL << 20, "N", 64 << 10,
        "a text file up to this size comes back embedded, a larger one as a resource link"),
    INT("max-memory-mb", max_memory_mb, 16, 1 << 20, "N", 2048,
        "largest memory_mb a caller may ask for"),
    INT("max-message-bytes", max_message_bytes, 1024, 256LL << 20, "N", 16 << 20,
        "largest JSON-RPC message accepted"),
    INT("max-output-bytes", max_output_bytes, 1024, 256LL << 20, "N", 1 << 20,
        "stdout+stderr kept per run; past it the run stops with output_limit"),
    INT("max-plot-bytes", max_plot_bytes, 0, 64LL << 20, "N", 4 << 20,
        "largest matplotlib figure returned, as PNG"),
    INT("max-plots", max_plots, 0, 1000, "N", 10,
        "matplotlib figures a Python run returns (each plt.show(), then those still open); 0 "
        "turns plot capture off"),
    INT("max-queued", max_queued, 0, 100000, "N", 64,
        "calls waiting for one of the --max-concurrent slots, sessions in turn, each session's "
        "calls in their order; more get a 'busy' result at once"),
    INT("max-session-inflight", max_session_inflight, 1, 100000, "N", 16,
        "tool calls one HTTP session has under way at once, running or waiting (over stdio the "
        "one session may use every slot and the whole queue); more get a 'busy' result at "
        "once"),
    INT("max-session-queued", max_session_queued, 0, 100000, "N", 8,
        "calls of one HTTP session waiting for a run slot (over stdio: --max-queued); more get "
        "a 'busy' result at once"),
    INT("max-session-requests", max_session_requests, 1, 100000, "N", 16,
        "HTTP requests one session may have under way at once (each may hold an answer in "
        "memory until its client reads it); more get 429"),
    INT("max-sessions", max_sessions, 1, 100000, "N", 64, "HTTP sessions at once; more get 503"),
    INT("max-timeout-ms", max_timeout_ms, 100, DAY_MS, "MS", 300000,
        "largest timeout_ms a caller may ask for"),
    INT("max-variables-bytes", max_variables_bytes, 2, 64LL << 20, "N", 1 << 20,
        "largest accepted variables argument, as compact JSON"),
    INT("memory-mb", memory_mb, 16, 1 << 20, "N", 512,
        "memory per sandbox, no swap; callers may ask for less or more, up to --max-memory-mb"),
    STR("packages-cache-dir", packages_cache_dir, "DIR", "/var/cache/mcp-sandboxd/packages",
        "where installed package sets are kept between runs and restarts (an absolute path on the "
        "engine's host, mounted read-only into the sandboxes of languages with packages); one "
        "daemon per directory"),
    INT("packages-cache-max-bytes", packages_cache_max_bytes, 16LL << 20, 1LL << 44, "N", 4LL << 30,
        "the package cache's size, and the largest one set may be; past it the least recently "
        "used sets go"),
    LIST("packages-index", packages_index, "LANGUAGE=URL[,URL...]", config_item_egress,
         "install LANGUAGE's packages (a name or alias of the language table, one whose "
         "'packages' names an installer) from these index URLs (http:// or https://, a host, "
         "an optional port and path; no credentials, query or fragment) instead of the language "
         "table's index; LANGUAGE= with no URL restores the installer's own (pip's PyPI, npm's "
         "configured registry), and of two items for one language the later wins. Repeatable; "
         "in one value (the environment, the config file) ';' separates the items. Checked at "
         "start and shown by list_languages",
         .def_doc = "the language table's; the built-in one has none: the installer's own",
         .sep = ';'),
    BOOL("packages-offline", packages_offline,
         "install nothing: only package sets already in the cache may be used, and a call "
         "asking for another is refused. Shown by list_languages"),
    INT("packages-ready-installers", packages_ready_installers, 0, 4, "N", 1,
        "installer sandboxes kept started per language with installs (once its warm pool is "
        "full; none while --pool-size is 0 or --packages-offline), so a first install pays no "
        "sandbox start; each is used for one install; 0 starts every install's sandbox when "
        "the install begins"),
    LIST("pass-through-env", pass_through_env, "NAME[,NAME...]", config_item_env_name,
         "set these variables from the daemon's environment in every sandboxed program, and no "
         "other host variable (sent with each run, never in the container's configuration; never "
         "logged; echoed values are redacted, best-effort); repeatable"),
    INT("pids-limit", pids_limit, 8, 1 << 20, "N", 256, "processes and threads per sandbox"),
    INT("pool-idle-ms", pool_idle_ms, 1000, DAY_MS, "MS", 60000,
        "a language's pool with no call this long is back at its minimum; one above what the "
        "calls now ask for gives back the rest after a twelfth of this without a call (the "
        "call rate it follows is averaged over a third of it)"),
    LIST("pool-max", pool_max, "LANGUAGE=N", config_item_pool,
         "the most sandboxes LANGUAGE's pool (a name or alias of the language table) keeps "
         "waiting while calls come fast: its size follows the calls between --pool-min and "
         "this (0 to 64; of two items for one language the later wins). Repeatable; in one "
         "value (the environment, the config file) ';' separates the items",
         .def_doc = "the language table's pool_max (4 x pool_size unless it says)", .sep = ';'),
    INT("pool-max-age-ms", pool_max_age_ms, 1000, WEEK_MS, "MS", 600000,
        "a waiting pooled sandbox older than this is replaced by a new one"),
    INT("pool-max-total", pool_max_total, 0, 1024, "N", 16,
        "the most sandboxes all the pools together keep waiting or starting above their "
        "minimums (each holds its memory while it waits): when the calls ask for more, the "
        "largest pools grow no further; the minimums are always kept"),
    LIST("pool-min", pool_min, "LANGUAGE=N", config_item_pool,
         "the fewest sandboxes LANGUAGE's pool keeps waiting, also while no call comes (0 to "
         "64, at most its --pool-max; of two items for one language the later wins). "
         "Repeatable; ';' separates the items in one value",
         .def_doc = "the language table's pool_size", .sep = ';'),
    INT("pool-refill-delay-ms", pool_refill_delay_ms, 0, 60000, "MS", 250,
        "refills wait up to this long while a run that took a pooled sandbox goes on (they "
        "start as soon as it ends), so setting up the next sandbox does not slow that run down; "
        "0 refills at once"),
    /* -1, out of range on purpose: not given, the table's sizes hold. */
    INT("pool-size", pool_size, 0, 64, "N", -1,
        "started sandboxes kept waiting per language, each used for one run only, a fixed "
        "number (the least and the most for every language; --pool-min and --pool-max items "
        "still change single languages); only runs with the default --memory-mb take one; 0 "
        "creates every sandbox on demand",
        .def_doc = "each language's pool_size to pool_max in the language table, following "
                   "the calls"),
    FLAG("print-engine", print_engine,
         "print the engine socket path the daemon would use, and exit"),
    STR("python-image", python_image, "IMAGE", "",
        "image for Python; any image with python3 works, the runner comes on the command line",
        .def_doc = "the language table's, see --list-images"),
    STR("python-preload", python_preload, "MODULE,...", NULL,
        "modules a pooled Python sandbox imports before it waits, so programs importing them "
        "start at once; empty for none",
        .def_doc = "the language table's"),
    STR("python-runtime", python_runtime, "NAME", "", "OCI runtime for Python sandboxes only",
        .def_doc = "--runtime"),
    INT("queue-timeout-ms", queue_timeout_ms, 100, DAY_MS, "MS", 60000,
        "longest a call waits for a run slot before a 'busy' result; never longer than its own "
        "timeout"),
    INT("run-store-max-bytes", run_store_max_bytes, 0, 64LL << 30, "N", 256LL << 20,
        "returned files kept for resources/read, all sessions together; the oldest go first"),
    INT("run-store-session-max-bytes", run_store_session_max_bytes, 0, 64LL << 30, "N", 64LL << 20,
        "returned files kept for one HTTP session (over stdio: --run-store-max-bytes); past it "
        "the session's own oldest go first, so no session pushes out another's"),
    INT("run-store-ttl-ms", run_store_ttl_ms, 1000, WEEK_MS, "MS", HOUR_MS,
        "how long a returned file stays readable at its mcp-sandboxd://runs/ URI"),
    STR("runtime", runtime, "NAME", "", "OCI runtime for sandboxes, e.g. runsc for gVisor",
        .def_doc = "the engine's"),
    STR("sandbox-io", sandbox_io, "socket|attach", "socket",
        "how a sandbox's stdin, stdout and stderr reach the daemon: socket, a unix socket of the "
        "daemon's bound read-only into the sandbox (bypasses the engine's stream relay, ~4 ms "
        "less per run; needs CAP_CHOWN (root) and perl in the image, else it falls back to "
        "attach by itself), or attach, the engine's attach stream. gVisor runtimes always "
        "attach"),
    STR("sandbox-io-dir", sandbox_io_dir, "DIR", "/run/mcp-sandboxd-io",
        "where the sandboxes' sockets are made (--sandbox-io socket's, and the egress "
        "gateway's), one fresh directory each, removed once the sandbox connected (an egress "
        "socket's: with the sandbox), and with --secret the daemon's CA's public certificate; "
        "must be the engine's host's path"),
    /* Far from the host's users and from the subordinate ids useradd hands
     * out (100000 up to 600100000 by default), and from systemd-nspawn's
     * container range (524288 up to 1879048191). */
    INT("sandbox-uid-base", sandbox_uid_base, 1, 0x7ffffffe, "UID", 2000000000,
        "the first of the uids the sandboxes run as, one of its own each (its gid the same "
        "number), so that nproc counts each sandbox apart and a fork bomb in one cannot make "
        "another's fork fail; keep the range clear of the host's users and of /etc/subuid and "
        "/etc/subgid (the daemon warns when it is not), and under a rootless or userns-remap "
        "engine inside its mapping, which often has only 65536 uids"),
    INT("sandbox-uid-count", sandbox_uid_count, 0, 1 << 20, "N", 1 << 20,
        "how many uids from --sandbox-uid-base: at least --max-concurrent plus the pool sizes "
        "plus a margin for sandboxes being removed (the daemon refuses to start with fewer and "
        "says how many); 0 runs every sandbox as --sandbox-user, all counted together by nproc"),
    STR("sandbox-user", sandbox_user, "UID:GID", "10001:10001",
        "the numeric user every sandbox runs as when --sandbox-uid-count is 0"),
    LIST("secret", secret, "NAME=HOST[,HOST...]", config_item_secret,
         "bind the daemon's variable NAME to these hosts (egress patterns, as --egress's): a "
         "sandbox with egress gets a placeholder of the value's length in NAME instead of the "
         "value, and the egress gateway puts the value in its place in request field values and "
         "the URL's query, only on plain-HTTP requests to these hosts; anywhere else the "
         "placeholder stays. The value is never in the sandbox, a log line or a result (an echo "
         "of it is redacted). Not with --pass-through-env for the same NAME. Repeatable; in one "
         "value (the environment, the config file) ';' separates the items",
         .def_doc = "none", .sep = ';'),
    INT("session-idle-ms", session_idle_ms, 1000, WEEK_MS, "MS", 30LL * 60 * 1000,
        "an HTTP session with nothing running ends after this long unused"),
    INT("task-max-timeout-ms", task_max_timeout_ms, 100, WEEK_MS, "MS", HOUR_MS,
        "longest timeout_ms a run that is a task may ask for (tasks outlive their request; at "
        "least --max-timeout-ms); a code session's calls keep the session's limits"),
    INT("task-result-ttl-ms", task_result_ttl_ms, 1000, WEEK_MS, "MS", HOUR_MS,
        "how long a task and its result are kept once it ended (its result counts in the run "
        "store's bytes)"),
    INT("timeout-ms", timeout_ms, 100, DAY_MS, "MS", 30000,
        "wall-clock limit per run when the caller gives none; callers may ask for less or more, "
        "up to --max-timeout-ms"),
    INT("tmpfs-mb", tmpfs_mb, 1, 1 << 20, "N", 64,
        "size of the writable working directory /tmp, counted as memory"),
    FLAG("version", version, "print the version and exit"),
};

const size_t config_opts_n = ARRAY_SIZE(config_opts);

#undef F
#undef INT
#undef STR
#undef LIST
#undef FLAG
#undef BOOL

const struct config_opt *config_opt_find(const char *name, size_t n)
{
    for (size_t i = 0; i < config_opts_n; i++)
        if (strlen(config_opts[i].name) == n && memcmp(config_opts[i].name, name, n) == 0)
            return &config_opts[i];
    return NULL;
}

void config_opt_env_name(const struct config_opt *o, char *out, size_t outsz)
{
    size_t k = (size_t)snprintf(out, outsz, "MCPSANDBOXD_");
    for (const char *p = o->name; *p && k + 1 < outsz; p++)
        out[k++] = *p == '-' ? '_' : (char)toupper((unsigned char)*p);
    out[k] = '\0';
}
