/* Daemon configuration: one table of options (base/config_table.h: name,
 * type, bounds, default, help) drives the defaults, command-line parsing,
 * MCPSANDBOXD_* environment variables, the config file, --help and the
 * sample config file (base/config_doc.h). Precedence: defaults < file <
 * environment < CLI. This file reads the layers in that order; the checks
 * across options once they are read are base/config_check.h's. */
#ifndef MCPSBX_CONFIG_H
#define MCPSBX_CONFIG_H

#include <stdbool.h>
#include <stdio.h>

#include "base/err.h"

/* Longest preload list, as the runner takes it (sandbox/runner/runner.h). */
#define CONFIG_PRELOAD_MAX 1024

/* A NULL-terminated list of strings with its length. */
struct config_list {
    char **items;
    size_t n;
};

struct config {
    /* Which backend runs the sandboxes, and where it is in its own form
     * (backend/backends.h parses it; empty: the backend finds it). */
    char *backend;
    char *engine;
    /* The kubernetes backend's (backend/kubernetes/kubernetes.h). */
    char *kubeconfig;
    char *kube_context;
    char *kube_namespace;
    char *kube_seccomp_profile;
    char *daemon_id; /* names this daemon in its handles (base/handle.h) */
    /* These and the preloads and runtimes are "not given" when empty /
     * NULL / -1: the language table (sandbox/languages/langtable.h) has the defaults
     * and langtable_configure applies what was given (config_legacy). */
    char *python_image;
    char *js_image;
    struct config_list pass_through_env; /* variable names */
    /* --secret: "NAME=HOST[,HOST...]" items (split at ';'; egress/secrets.h
     * reads them): NAME's value is inserted by the egress gateway for
     * those hosts only, and the sandbox holds a placeholder. */
    struct config_list secret;
    struct config_list labels;        /* "KEY=VALUE" for every container */
    struct config_list allow_network; /* languages whose sandboxes get a network */
    struct config_list languages;     /* the enabled subset of the table; none = all */
    /* Egress through the daemon's gateway (src/egress/): per language
     * "LANGUAGE=PATTERN,..." (items split at ';'; langtable_configure
     * reads them), the CIDRs the gateway may reach anyway and the names
     * pinned to an address (egress/settings.h reads both), and every
     * run's caps. */
    struct config_list egress;
    struct config_list egress_allow_cidr;
    struct config_list egress_resolve;
    long long egress_max_connections;       /* open at once */
    long long egress_max_connections_total; /* over a run */
    long long egress_max_bytes_up;
    long long egress_max_bytes_down;
    long long egress_connection_timeout_ms; /* one connection's life */
    char *egress_upstream_ca;               /* more CAs trusted upstream; NULL or "" none */
    /* Packages on demand (sandbox/packages/): per language
     * "LANGUAGE=URL,..." (items split at ';'; langtable_configure reads
     * them), only what is cached, the cache's directory (the engine's
     * host's path) and its size cap. Checked, shown by list_languages;
     * nothing installs yet. */
    struct config_list packages_index;
    struct config_list pool_min; /* LANGUAGE=N */
    struct config_list pool_max; /* LANGUAGE=N */
    bool packages_offline;
    long long packages_ready_installers; /* per language with installs; 0 = none */
    char *packages_cache_dir;
    long long packages_cache_max_bytes;
    long long timeout_ms;
    long long max_timeout_ms;
    long long memory_mb;
    long long max_memory_mb;
    long long max_output_bytes;
    long long max_code_bytes;
    long long max_variables_bytes; /* the variables argument as compact JSON */
    long long max_message_bytes;
    /* files argument: count, one file and all of them (decoded bytes) */
    long long max_files_in, max_file_in_bytes, max_files_in_bytes;
    /* files a run returns: count (plots apart), one file, all with plots */
    long long max_files_out, max_file_out_bytes, max_files_out_bytes;
    long long max_plots;                   /* matplotlib figures returned; 0 = none taken */
    long long max_plot_bytes;              /* one PNG */
    long long max_inline_image_bytes;      /* larger images become resource links */
    long long max_inline_text_bytes;       /* larger text files become resource links */
    long long run_store_ttl_ms;            /* how long returned files stay readable */
    long long task_max_timeout_ms;         /* a task's run: the cap on its timeout_ms */
    long long task_result_ttl_ms;          /* how long an ended task and its result stay */
    long long run_store_max_bytes;         /* all of them; oldest go first */
    long long run_store_session_max_bytes; /* one session's; its own oldest go first */
    long long pids_limit;
    long long tmpfs_mb;
    long long max_concurrent;
    long long max_queued;
    /* One session's share: calls under way (running or waiting), and
     * waiting. Over stdio (one session) config_load makes them the
     * whole daemon's. */
    long long max_session_inflight;
    long long max_session_queued;
    /* Code sessions (sandbox/session/): daemon-wide (0: off), per MCP
     * session, and their idle time and age, ms. */
    long long max_code_sessions;
    long long max_code_sessions_per_owner;
    long long code_session_idle_ms;
    long long code_session_max_age_ms;
    long long max_connections;             /* HTTP connections at once */
    long long max_connections_per_address; /* from one client address */
    long long http_head_timeout_ms;        /* a request head must arrive within */
    long long http_body_timeout_ms;        /* a body must arrive within, after its head */
    long long max_batch_items;             /* messages in one JSON-RPC batch */
    long long max_inflight_body_bytes;     /* HTTP bodies held at once, all together */
    long long queue_timeout_ms;
    double cpus;
    long long pool_size;            /* warm sandboxes per language; 0 = none; -1 = the table's */
    long long pool_max_age_ms;      /* a waiting one older than this is replaced */
    long long pool_max_total;       /* growth above the minimums stops at this many, all pools */
    long long pool_idle_ms;         /* no call this long: a pool is back at its minimum */
    long long pool_refill_delay_ms; /* refills wait this long at most for a pooled run */
    char *python_preload;           /* "mod,mod.sub,..." after checking; may be empty; NULL */
    char *js_preload;               /* Node built-ins, same form */
    char *runtime;                  /* OCI runtime name, e.g. runsc; empty = engine default */
    char *python_runtime;           /* for Python only; empty = the table's, runtime */
    char *js_runtime;               /* for JavaScript only; same */
    char *sandbox_user;             /* "uid:gid": every sandbox's when sandbox_uid_count is 0 */
    long long sandbox_uid_base;     /* each sandbox's own uid (and gid) comes from */
    long long sandbox_uid_count;    /* [base, base + count) (sandbox/pool/uids.h); 0: none */
    char *sandbox_io;               /* "socket" or "attach" (backend/docker/sandbox_io.h) */
    char *sandbox_io_dir;           /* where the sockets are made */
    char *log_level;
    /* HTTP transport; http_listen empty = serve stdio. */
    char *http_listen; /* "HOST:PORT" as given */
    char *http_host;   /* parsed host, brackets removed for IPv6 */
    unsigned http_port;
    struct config_list allowed_origins; /* extra Origin values, e.g. https://app.example */
    struct config_list allowed_hosts;   /* extra Host values, e.g. sandbox.internal:8080 */
    char *auth_token_file;
    char *auth_token; /* from the file or MCPSANDBOXD_AUTH_TOKEN; never logged */
    long long max_sessions;
    long long max_session_requests; /* HTTP requests of one session under way at once */
    long long session_idle_ms;
    char *config_file;
    char *languages_file; /* JSON language definitions (sandbox/languages/langtable.h); "" =
                             built-ins */
    bool help;
    bool version;
    bool print_engine;    /* print the engine socket that would be used, and exit */
    char *dry_run_create; /* a language: print that create request, and exit */
    bool list_images;     /* print "NAME IMAGE" per enabled language, and exit */
};

void config_init(struct config *cfg);
void config_free(struct config *cfg);

/* Reads the config file (if --config or MCPSANDBOXD_CONFIG names one), then
 * the environment, then argv; checks every bound. envp is the daemon's environment. */
int config_load(struct config *cfg, int argc, char **argv, char **envp, struct err *err);

/* The per-language options older than the language table
 * (sandbox/languages/langtable.h): --python-image, --python-preload,
 * --python-runtime and the same for "js", and CONTAINER_IMAGE with
 * CONTAINER_LANGUAGE. Each set names its language, and the in-process
 * runner its image and preload are for; langtable_configure writes what
 * was given into that language's row. */
#define CONFIG_LEGACY_LANGUAGES 2
struct config_legacy {
    const char *language; /* the table's name of it */
    const char *runner;   /* "python", "node" (sandbox/languages/langtable.h) */
    const char *prefix;   /* of the options' names: "js" in --js-image */
    const char *image;    /* "" when not given */
    const char *preload;  /* "a,b,c"; NULL when not given ("" is none) */
    const char *runtime;  /* "" when not given */
};

/* Set i (< CONFIG_LEGACY_LANGUAGES), with cfg's values. */
struct config_legacy config_legacy(const struct config *cfg, size_t i);

#endif
