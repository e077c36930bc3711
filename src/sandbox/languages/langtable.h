/* The languages as data: one table, built from the built-in definitions
 * (src/sandbox/languages/builtin.json, embedded at build time) and the
 * operator's optional --languages-file, in the same JSON form:
 *
 *   {"languages": [
 *     {"name": "perl", "aliases": ["pl"], "image": "mcp-sandboxd-perl:latest",
 *      "source_file": "main.pl", "runner": "generic", "run": ["perl", "{source}"],
 *      "version": ["perl", "-e", "print $^V"], "image_packages": ["perl"]},
 *     {"name": "python", "image": "my-python:3"},
 *     {"name": "php", "disabled": true}
 *   ]}
 *
 * An entry whose name is new adds a language (name, image, source_file,
 * runner and run are required); an entry naming an existing language
 * overrides only the keys it lists (a list replaces the whole list;
 * "compile": null removes the compile step); "disabled": true, with the
 * name alone, removes one. Languages keep the built-in order, new ones
 * follow in the file's order. The files are strict JSON (no comments), at
 * most LANGTABLE_FILE_MAX_BYTES; every error names the file and the line
 * ("FILE:LINE: ..."): of the syntax error, or of the key (else the entry)
 * a semantic error is about.
 *
 * The keys of an entry:
 *   name             canonical name, what results report: lowercase
 *                    [a-z][a-z0-9+#-]*, at most LANGTABLE_NAME_MAX bytes.
 *   aliases          other names a caller may use ("js", "c++"); same form.
 *                    Names and aliases are one namespace: unique across the
 *                    table. Lookups ignore ASCII case.
 *   image            the container image (printable ASCII, no spaces).
 *   source_file      the program's file name in the working directory: no
 *                    '/', not starting with '.', [A-Za-z0-9._+-].
 *   runner           how the program is run inside the sandbox:
 *                    "python" / "node": the daemon's in-process runners
 *                    (sandbox/runner/runner.h) execute the code themselves; "run"
 *                    is then the interpreter's command, to which the daemon
 *                    appends its runner (-c / -e) and the preload list.
 *                    "generic": a runner that writes source_file, runs
 *                    compile (if any), then run, with the same framed
 *                    request and completion record (src/sandbox/runner/runner.pl).
 *   compile          argv of the compile step (generic only), or null.
 *   typecheck        argv of a check after compile whose failure only
 *                    shows on stderr, unless the call asks it to stop the
 *                    run (generic only), or null.
 *   typecheck_warm   "tsc": a warm sandbox keeps the daemon's TypeScript
 *                    checker (src/sandbox/runner/tscheck.js, on the image's
 *                    node and typescript module) ready, given the
 *                    typecheck's arguments but the first and the source
 *                    file, so a pooled run's check skips the cold start;
 *                    a cold sandbox, or a checker that fails, runs the
 *                    typecheck command. "none" or null: no such checker.
 *   compile_timeout_ms  its own limit, counted inside the run's deadline
 *                    (default LANGTABLE_COMPILE_TIMEOUT_DEFAULT_MS); a
 *                    failed compile is the status compile_error.
 *   run              argv that runs the program (see runner).
 *   version          argv whose output names the version list_languages
 *                    shows (optional). The python and node runners keep
 *                    their richer in-process probes (tools/languages.c).
 *   pool_size        warm sandboxes kept by default, the least the pool
 *                    keeps while the language is idle (default 0 for a new
 *                    language).
 *   pool_max         the most it keeps while calls come fast (default
 *                    LANGTABLE_POOL_GROWTH x pool_size, at most
 *                    LANGTABLE_POOL_MAX; not below pool_size). Equal to
 *                    pool_size: a fixed size.
 *   preload          modules a warm python/node runner loads before it
 *                    waits (python: dotted names; node: built-ins).
 *   plots            true: the python runner returns the program's
 *                    matplotlib figures as PNG images (up to --max-plots);
 *                    python runner only (default false; a built-in true
 *                    goes with a runner the operator's file changes).
 *   environment      "NAME=value" items set in this language's sandboxes,
 *                    after the daemon's own (HOME, TMPDIR, LANG: never
 *                    these), at most LANGTABLE_ENV_MAX; a name once. Not
 *                    for secrets: the engine shows a container's
 *                    environment to whoever may inspect it, and
 *                    list_languages shows it to clients (--pass-through-env
 *                    is for secrets).
 *   runtime          the OCI runtime its sandboxes run under ("runsc"),
 *                    [A-Za-z0-9._-]; null or absent: --runtime's.
 *   network_allowed  whether --allow-network may give this language a
 *                    network at all (default false for a new language).
 *   egress           the hosts its sandboxes may reach through the
 *                    daemon's egress gateway (src/egress/), with no
 *                    network of their own: an array of patterns, each an
 *                    exact DNS name, "*.SUFFIX" or an IP literal, with
 *                    ":PORT" or else ports 443 and 80 (egress/pattern.h),
 *                    at most EGRESS_PATTERNS_MAX; [] or null: none (the
 *                    default; the built-in table gives none). --egress
 *                    replaces it; a call may narrow it, never widen it.
 *                    A language with a list is never also given the
 *                    engine's network (--allow-network): choose one.
 *   image_packages   the notable Debian packages in its image (the
 *                    image's Dockerfile installs them). An array given as
 *                    "packages", the key's older name, is read as this.
 *   packages         installs on demand: an object, or null for none
 *                    (the calls' packages arguments are then refused):
 *                      installer   "pip" (python runner), "npm" (node
 *                                  runner, or generic running node) or
 *                                  "gem" (generic running ruby);
 *                                  default: the runner's
 *                      index       the index URLs, at most
 *                                  LANGTABLE_INDEX_MAX (langtable_packages.h
 *                                  says their form); [] (the default): the
 *                                  installer's own (pip's PyPI, npm's
 *                                  configured registry). --packages-index
 *                                  replaces it.
 *                      allow, deny package names, exact or "PREFIX*"
 *                                  (sandbox/packages/reqs.h): a denied
 *                                  name, or one not allowed by a non-empty
 *                                  allow list, is refused before any run
 *                      scripts     whether install scripts run (npm's
 *                                  lifecycle scripts; pip building from
 *                                  source); default true
 *                      timeout_ms, max_bytes  an install's limits
 *                      preinstall  requirements installed at start
 *                    The object replaces the built-in one whole (keys it
 *                    leaves out take their defaults). A call's packages
 *                    are installed by sandbox/run/packages_run.h.
 *   disabled         true: remove the language.
 * In compile, run and version, "{source}" stands for source_file and
 * "{stem}" for it without its last extension ("main"); the table holds
 * the argvs with them replaced. Any other "{word}" is refused as a typo.
 *
 * The options older than the table (--python-image, --js-preload,
 * --python-runtime, CONTAINER_IMAGE with CONTAINER_LANGUAGE, ...) name
 * their language (base/config.h, config_legacy) and write into its row:
 * the image and preload only where its runner is the one those options
 * were made for (a "python" the file turned generic keeps the file's),
 * the runtime whatever its runner.
 *
 * How it is used: main loads the table once, applies the daemon's own
 * options to it (langtable_configure) and hands it down read-only;
 * execute_code's and validate_code's language enums, list_languages and
 * the environment resource list it, and which tools take a language is
 * its runner's (tools/registry.h); exec resolves a request's language to
 * its runner by kind (python/node: run + the runner + preload_joined;
 * generic: the generic runner with source_file, compile, typecheck and run
 * in its request), keeps one pool per language sized by pool_size, gives
 * its sandboxes its environment and runtime (sandbox/run/policy.h), gives
 * a network only to a language that allows it and the operator names in
 * --allow-network, and the egress gateway to one with an egress list (a
 * run's own copy, narrowed by its call: sandbox/run/run.h);
 * scripts/images.sh builds the images of the languages enabled
 * (mcp-sandboxd --list-images).
 *
 * The code: langtable_read.c reads one file (json-c parses, base/jsonpos.h
 * finds the lines), langtable_merge.c puts the two files together and
 * checks each language whole, langtable.c is this API and the options.
 *
 * The table is immutable once loaded: plain C data, no json-c object kept,
 * so any thread may read it without a lock. */
#ifndef MCPSBX_LANGTABLE_H
#define MCPSBX_LANGTABLE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "egress/pattern.h"
#include "sandbox/packages/reqs.h"

#define LANGTABLE_MAX_LANGUAGES   64
#define LANGTABLE_MAX_ALIASES     8
#define LANGTABLE_NAME_MAX        32
#define LANGTABLE_IMAGE_MAX       255
#define LANGTABLE_SOURCE_FILE_MAX 64
#define LANGTABLE_ARGV_MAX        32
#define LANGTABLE_ARG_MAX         1024
#define LANGTABLE_PRELOAD_MAX     64
#define LANGTABLE_MODULE_MAX      128
#define LANGTABLE_PACKAGES_MAX    64
#define LANGTABLE_PACKAGE_MAX     64
#define LANGTABLE_POOL_MAX        64
/* A language's pool_max when the table gives none: room for a pool to
 * follow a few calls a second (sandbox/pool/demand.h) without holding
 * more memory than that while idle, which pool_size bounds. */
#define LANGTABLE_POOL_GROWTH                4
#define LANGTABLE_ENV_MAX                    32
#define LANGTABLE_RUNTIME_MAX                64
#define LANGTABLE_COMPILE_TIMEOUT_MIN_MS     100
#define LANGTABLE_COMPILE_TIMEOUT_MAX_MS     600000
#define LANGTABLE_COMPILE_TIMEOUT_DEFAULT_MS 10000
#define LANGTABLE_FILE_MAX_BYTES             (256 * 1024)
#define LANGTABLE_INDEX_MAX                  4
#define LANGTABLE_URL_MAX                    512
#define LANGTABLE_PKG_TIMEOUT_MIN_MS         1000
#define LANGTABLE_PKG_TIMEOUT_MAX_MS         3600000
#define LANGTABLE_PKG_TIMEOUT_DEFAULT_MS     120000
#define LANGTABLE_PKG_MAX_BYTES_MIN          (1LL << 20)
#define LANGTABLE_PKG_MAX_BYTES_MAX          (64LL << 30)
#define LANGTABLE_PKG_MAX_BYTES_DEFAULT      (512LL << 20)
/* The name errors about the embedded table show. */
#define LANGTABLE_BUILTIN_NAME "src/sandbox/languages/builtin.json"

/* A checker a warm sandbox keeps ready for the typecheck (typecheck_warm). */
enum langtable_checker {
    LANGTABLE_CHECKER_NONE,
    LANGTABLE_CHECKER_TSC, /* the daemon's TypeScript checker (runner_tscheck_src) */
};

enum langtable_runner {
    LANGTABLE_RUNNER_PYTHON,
    LANGTABLE_RUNNER_NODE,
    LANGTABLE_RUNNER_GENERIC,
};

/* A NULL-terminated list of strings; n == 0 means none. */
struct langtable_strv {
    char **v;
    size_t n;
};

/* A language's installs on demand (the "packages" key). */
struct langtable_packages {
    enum reqs_installer installer;
    struct langtable_strv index; /* URLs; n == 0: the installer's own */
    /* reqs_rule_normalize's texts */
    struct langtable_strv allow;
    struct langtable_strv deny;
    bool scripts; /* install scripts run */
    long long timeout_ms;
    long long max_bytes;
    struct langtable_strv preinstall; /* canonical requirements, sorted (reqs.h) */
};

struct langtable_lang {
    size_t index; /* its place in the table: langtable_get(t, index) */
    char *name;
    struct langtable_strv aliases;
    char *image;
    char *source_file;
    enum langtable_runner runner;
    struct langtable_strv compile; /* n == 0: no compile step */
    long long compile_timeout_ms;  /* 0 without a compile step */
    /* argv of a check run after compile whose failure is reported on
     * stderr but does not stop the run unless the call asks (generic only;
     * n == 0: none). It shares compile_timeout_ms (or the default). */
    struct langtable_strv typecheck;
    enum langtable_checker typecheck_warm; /* needs a typecheck */
    struct langtable_strv run;
    struct langtable_strv version; /* n == 0: no probe */
    long long pool_size;           /* the least kept waiting; the pool's minimum */
    long long pool_max;            /* the most; >= pool_size, 0: no pool */
    struct langtable_strv preload;
    char *preload_joined; /* "a,b,c", the runner's one argument; "" for none */
    bool network_allowed;
    struct langtable_strv image_packages; /* Debian's, in its image */
    struct langtable_packages *packages;  /* NULL: no installs */
    bool plots;                           /* python runner: figures come back */
    struct langtable_strv environment;    /* "NAME=value", after the daemon's own */
    char *runtime;                        /* NULL: --runtime's (langtable_runtime) */
    /* The hosts its sandboxes may reach through the egress gateway; NULL:
     * none (never a list of no pattern: the table holds that as NULL). */
    struct egress_patterns *egress;
};

struct langtable;

/* The built-in table, changed by the file at path when path is neither
 * NULL nor empty. Returns 0 with *out (caller frees), or -1 with err. */
int langtable_load(const char *path, struct langtable **out, struct err *err);

/* The same with the file's bytes (text[0..len), name for messages); text
 * NULL: the built-in table alone. */
int langtable_load_text(const char *text, size_t len, const char *name, struct langtable **out,
                        struct err *err);

void langtable_free(struct langtable *t);

size_t langtable_count(const struct langtable *t);

/* The i-th language (i < count), in table order. Borrowed from t. */
const struct langtable_lang *langtable_get(const struct langtable *t, size_t i);

/* The language with this name or alias (ASCII case ignored), or NULL. */
const struct langtable_lang *langtable_find(const struct langtable *t, const char *name);

struct config;

/* The daemon's options over the table (t is not shared yet): the enabled
 * subset (--languages: names or aliases; none = all), the per-language
 * options older than the table when given (config_legacy: a preload is
 * checked as its runner's modules even when its language is not enabled),
 * --pool-size when given (every language's least and most), --pool-min
 * and --pool-max (a bound given moves the other to meet it; two given
 * that cross are refused), and --allow-network /
 * --dry-run-create naming languages the table has (allow-network only for
 * one whose network_allowed is true), --egress's lists (a name or alias,
 * each item replacing that language's list, "LANGUAGE=" removing it),
 * no language with both a network and an egress list, and
 * --packages-index's URLs (each item replacing its language's index,
 * "LANGUAGE=" the installer's own; only for a language with packages).
 * Returns 0, or -1
 * with an ERR_INVALID message naming the option. */
int langtable_configure(struct langtable *t, const struct config *cfg, struct err *err);

/* p's allow and deny lists as reqs_check_rules takes them. */
struct reqs_rules langtable_packages_rules(const struct langtable_packages *p);

/* The OCI runtime l's sandboxes run under: its own, else --runtime, else
 * NULL (the engine's default). */
const char *langtable_runtime(const struct langtable_lang *l, const struct config *cfg);

/* Whether l's sandboxes get a network: the operator named it (or an
 * alias) in --allow-network and the table allows it. */
bool langtable_network(const struct langtable_lang *l, const struct config *cfg);

/* "none", "tsc". */
const char *langtable_checker_name(enum langtable_checker c);

/* "python", "node", "generic". */
const char *langtable_runner_name(enum langtable_runner r);

#endif
