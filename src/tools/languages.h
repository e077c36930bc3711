/* The languages this server runs, as facts an agent can plan with: for
 * each, the tools that take it, its image and runtime, the interpreter's
 * version and notable packages as read from the image, network, pool;
 * plus the limits and the features every call has. list_languages answers
 * with them and the environment resource carries the same.
 *
 * The versions come from a probe: a small program run once per language
 * through exec_run like any call (a waiting pooled sandbox when there is
 * one, with all of a run's hardening and cleanup) on a thread of this
 * module's own, started by the first list_languages
 * and joined by languages_free. Its answer is sandbox output, so it is parsed
 * with caps and kept as plain C data under a lock: no json-c object is
 * shared between threads. A failed probe is retried on a later question,
 * at most every LANGUAGES_RETRY_MS. */
#ifndef MCPSBX_TOOLS_LANGUAGES_H
#define MCPSBX_TOOLS_LANGUAGES_H

#include <json-c/json.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/config.h"
#include "base/err.h"
#include "sandbox/sandbox.h"

#define LANGUAGES_PROBE_MAX_BYTES  4096 /* the probe's whole stdout */
#define LANGUAGES_MAX_PACKAGES     16
#define LANGUAGES_NAME_MAX         64 /* a package's name */
#define LANGUAGES_VERSION_MAX      32
#define LANGUAGES_PROBE_TIMEOUT_MS 10000
#define LANGUAGES_RETRY_MS         5000.0
/* How long list_languages waits for a probe in flight before it answers
 * with "probing". */
#define LANGUAGES_WAIT_MS 5000.0

struct languages_package {
    char name[LANGUAGES_NAME_MAX + 1];
    char version[LANGUAGES_VERSION_MAX + 1];
};

/* What a probe said: the interpreter's version and the packages found. */
struct languages_report {
    char version[LANGUAGES_VERSION_MAX + 1];
    size_t n_packages;
    struct languages_package packages[LANGUAGES_MAX_PACKAGES];
};

/* Parses a probe's stdout: one JSON object {"version": V, "packages":
 * {NAME: V, ...}} and trailing whitespace, at most
 * LANGUAGES_PROBE_MAX_BYTES, nested no deeper than that. Versions are
 * 1..LANGUAGES_VERSION_MAX characters of [0-9A-Za-z.+~_-] starting with a
 * letter or digit; names 1..LANGUAGES_NAME_MAX of [0-9A-Za-z._-]; at most
 * LANGUAGES_MAX_PACKAGES; no other key. Returns 0, or -1 with ERR_PROTOCOL
 * (ERR_TOO_BIG) and a message of the daemon's own words, never the
 * input's. */
int languages_parse_probe(const char *text, size_t len, struct languages_report *out,
                          struct err *err);

/* Runs lang's probe (cancel may stop it) and puts its stdout in out
 * (capped at LANGUAGES_PROBE_MAX_BYTES). Returns 0, or -1 with err. */
typedef int (*languages_probe_fn)(void *ctx, const struct langtable_lang *lang,
                                  struct exec_cancel *cancel, struct buf *out, struct err *err);

struct languages;

/* cfg and exec are borrowed; with exec NULL nothing is probed and the
 * facts have no versions. No thread is started yet. */
struct languages *languages_new(const struct config *cfg, const struct langtable *langs,
                                struct exec_ctx *exec);

/* The same with another probe and retry interval (tests); probe NULL: no
 * versions. */
struct languages *languages_new_probe(const struct config *cfg, const struct langtable *langs,
                                      languages_probe_fn probe, void *probe_ctx, double retry_ms);

/* True when every language's version is known, or nothing is probed: a
 * question is then answered without waiting for a probe. */
bool languages_all_known(struct languages *l);

/* Starts the probe thread, which probes every language at once. Any
 * number of calls; a no-op without a probe. -1 when no thread can be
 * started (the facts then say why). */
int languages_start(struct languages *l, struct err *err);

/* Stops a probe in flight, joins the thread, frees. NULL is fine. */
void languages_free(struct languages *l);

/* Adds to obj (a language's object) "version" (a string, or null),
 * "packages" (an object of name: version) and, without a version,
 * "probing": true while a probe runs, otherwise "version_error". Once the
 * thread is started, waits at most wait_ms for a probe in flight, or for
 * one it asks for (a language whose last probe failed, LANGUAGES_RETRY_MS
 * after it). Starts nothing itself. */
void languages_add_versions(struct languages *l, const struct langtable_lang *lang,
                            json_object *obj, double wait_ms);

/* The limits every call has (the environment resource's "limits"). */
json_object *languages_limits_json(const struct config *cfg);

/* A generic language's version command output -> the probe's JSON form
 * ({"version": "...", "packages": {}}) appended to out, from the first
 * version-like word (digits with a dot, not glued to a letter before it). */
int languages_version_from_text(const char *text, size_t len, struct buf *out, struct err *err);

/* list_languages' structuredContent: "languages" (one object per
 * language), "limits" and "features". exec (may be NULL) adds each
 * language's sandbox_io. New object. */
json_object *languages_json(struct languages *l, const struct config *cfg, struct exec_ctx *exec,
                            double wait_ms);

#endif
