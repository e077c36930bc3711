/* The tools as the protocol layer sees them: the list, and a call from its
 * arguments (checked against the tool's schema, clamped to the operator's
 * limits) through the run to its CallToolResult.
 *
 * The tools/ folder: tools.c (this API: arguments, runs, results),
 * registry.c (which tools exist, their kinds, the serialized list),
 * defs/ (one JSON definition per tool, embedded at build time), tooldef.c
 * (reading and checking a definition; tooldefs_check.c is the build's
 * program that checks defs/ with it), schema.c (the JSON Schema subset,
 * compiled once and validated against) and schema_check.c (its checker), variables.c (the variables
 * argument's names), egress_arg.c (the egress argument, narrowing the language's list), languages.c
 * (the languages' facts, versions read from the images), environment.c (the environment resource),
 * packages_arg.c (the packages argument, requirements checked at admission), packages_result.c
 * (the packages a run got, in its result), session_tools.c (code sessions: the session tools,
 * install_packages and a run tool's call in a session). */
#ifndef MCPSBX_TOOLS_H
#define MCPSBX_TOOLS_H

#include <json-c/json.h>
#include <stdbool.h>

#include "base/config.h"
#include "sandbox/sandbox.h"
#include "tools/files_arg.h"
#include "tools/files_result.h"
#include "tools/registry.h"
#include "tools/runstore.h"

/* A call's cancel handle and its live output, as the sandbox layer defines
 * them, named here so the protocol layer needs nothing from below tools.
 * A prepared call's run owns its handle (tools_prepare); tools_cancel_call()
 * may be called from any thread, any number of times. */
typedef struct exec_cancel tools_cancel;
typedef exec_output_cb tools_output_cb;
#define TOOLS_STDOUT EXEC_STDOUT
#define TOOLS_STDERR EXEC_STDERR
#define TOOLS_TICK   EXEC_TICK /* no data: the program is quiet */

static inline void tools_cancel_call(tools_cancel *c)
{
    exec_cancel(c);
}

struct languages;

/* Who calls: the MCP session's owner token and the transport's principal
 * ("stdio", "token:<16 hex>", "anonymous"); both NUL-terminated, borrowed.
 * task: the call runs as a task, whose timeout_ms --task-max-timeout-ms
 * caps instead of --max-timeout-ms. */
struct tools_caller {
    const char *owner;
    const char *principal;
    bool task;
};

/* The tools of one server. Read-only once tools_env_init returns, so any
 * thread may use it: the tools/list arrays are kept as serialized bytes,
 * never as json-c objects (which must not be shared between threads);
 * languages keeps its own state under its own lock. */
struct tools_env {
    const struct config *cfg;
    const struct langtable *langs; /* configured, read-only */
    struct langtable *own_langs;   /* langs when tools_env_init loaded it */
    struct exec_ctx *exec;
    struct runstore *store; /* files runs returned (thread-safe itself) */
    char *list_json[TOOLS_VARIANTS];
    size_t list_len[TOOLS_VARIANTS];
    char *result_json[TOOLS_VARIANTS]; /* {"tools":list}: tools/list's result */
    size_t result_len[TOOLS_VARIANTS];
    struct languages *languages; /* tools/languages.h */
    /* Each tool's inputSchema, compiled once (plain C: shared freely). */
    struct schema_node *inputs[REGISTRY_TOOLS];
};

/* cfg, langs and exec are borrowed (exec may be NULL: nothing runs;
 * langs NULL: exec's, else the built-in table configured by cfg). Fails
 * only on a bad built-in definition. Starts no thread. */
int tools_env_init(struct tools_env *env, const struct config *cfg, const struct langtable *langs,
                   struct exec_ctx *exec, struct err *err);

void tools_env_cleanup(struct tools_env *env);

/* The JSON array of Tool objects for f, owned by env. */
const char *tools_list_json(const struct tools_env *env, const struct tools_features *f,
                            size_t *len);

/* tools/list's whole result for f, {"tools": the list}, owned by env:
 * serialized once, spliced into every answer. */
const char *tools_list_result_json(const struct tools_env *env, const struct tools_features *f,
                                   size_t *len);

/* The tool of that name, NULL when there is none: looked up once a call,
 * and passed on. */
typedef struct registry_entry tools_tool;
const tools_tool *tools_find(const char *name);

/* Whether tool t (may be NULL) runs nothing and is answered in the
 * calling thread with tools_answer, without a run slot (list_languages,
 * list_sessions, close_session). */
bool tools_answers_at_once(const tools_tool *t);

/* Answers such a tool (args borrowed, may be NULL) for who in the calling
 * thread; may wait a bounded time (LANGUAGES_WAIT_MS) for a probe in
 * flight. Returns a new CallToolResult; bad arguments are an isError
 * result. */
json_object *tools_answer(const struct tools_env *env, const tools_tool *t, json_object *args,
                          const struct tools_caller *who, const struct tools_features *f);

/* Whether tools_answer for t may wait (the versions' probe has not
 * answered for every language yet): then it belongs off a thread that
 * serves other requests. */
bool tools_answer_may_wait(const struct tools_env *env, const tools_tool *t);

/* An error CallToolResult carrying message (a call refused before it was
 * answered). */
json_object *tools_error_result(const char *message, const struct tools_features *f);

/* Whether the sandboxes' backend answers (short timeout); *address says
 * where it is. */
int tools_backend_ping(const struct tools_env *env, const char **address, struct err *err);

/* Runs tool t with args (borrowed, may be NULL) for who in the calling
 * thread: tools_prepare then tools_run (or tools_answer), with no cancel
 * handle and no live output. who NULL is the fixed caller TOOLS_INTERNAL
 * (tests, tools: all such calls share one owner's code sessions). Returns a
 * new CallToolResult: bad arguments and failed runs are results with
 * isError set, never protocol errors. */
json_object *tools_call(const struct tools_env *env, const tools_tool *t, json_object *args,
                        const struct tools_caller *who, const struct tools_features *f);

/* The caller tools_call and the others take for who NULL. */
#define TOOLS_INTERNAL "internal"

/* A call of a run tool, create_session or install_packages: the tool's
 * part around the run it asks for (sandbox/run/run.h), which owns
 * everything the run needs. */
struct tools_run_args {
    const char *tool; /* static name */
    enum tool_kind kind;
    /* The calling MCP session's token for the run store
     * (tools/runstore.h), copied from the caller by tools_prepare. */
    char owner[40];
    /* Whom the call's code sessions answer to (the caller's owner and
     * principal). */
    struct code_session_owner who;
    /* The code session the call runs in, a held reference (NULL: a
     * one-shot run); lost when it is a tombstone of who's, which the call
     * reports instead of running. exec is what it is held from. */
    struct code_session *session;
    bool lost;
    struct exec_ctx *exec;
    char name[CODE_SESSION_NAME_MAX + 1]; /* create_session's; "" for none */
    struct run run;
};

/* Returns 0, or -1 with an ERR_INVALID (or ERR_TOO_BIG) message fit to
 * show the caller (ERR_INVALID too for a tool that runs nothing; "no such
 * session" for a session_id that is not who's, whatever the reason). The
 * run's code and stdin_data point into args; what it owns (variables,
 * files, the session) is the caller's: release it with
 * tools_run_args_release, whatever the result. The limits and output caps
 * are the operator's, or the session's, decided here. */
int tools_parse_args(const struct tools_env *env, const tools_tool *t, json_object *args,
                     const struct tools_caller *who, struct tools_run_args *out, struct err *err);

/* Admits a call of who's: validates args (borrowed) in the caller's
 * thread and makes its run, with copies of what it needs out of them (so
 * it may go to another thread with no json-c object), who's owner and a
 * cancel handle (tools_cancel_call(out->run.cancel)). The caller sets the
 * start deadline and the output sink before tools_run. Returns 0, or -1
 * with *error_result a CallToolResult (isError) naming the bad argument.
 * Release a prepared call with tools_run_args_release. */
int tools_prepare(const struct tools_env *env, const tools_tool *t, json_object *args,
                  const struct tools_caller *who, struct tools_run_args *out,
                  json_object **error_result);
void tools_run_args_release(struct tools_run_args *a);

/* The code session a prepared call runs in (an identity to compare, held
 * until tools_run_args_release), or NULL for a one-shot call. */
const void *tools_run_session(const struct tools_run_args *a);

/* Ends every code session of who's owner (their containers go to the
 * reaper); a no-op when sessions are off. Any thread. */
void tools_sessions_end_owner(const struct tools_env *env, const struct tools_caller *who);

/* A CallToolResult with text (made valid UTF-8 here) and structuredContent
 * sc (taken; dropped for versions without it; may be NULL): for the
 * modules of tools/. */
json_object *tools_text_result(const char *text, size_t len, json_object *sc,
                               const struct tools_features *f, bool is_error);

/* Runs a prepared call; returns a new CallToolResult. */
json_object *tools_run(const struct tools_env *env, const struct tools_run_args *a,
                       const struct tools_features *f);

/* The result of a call that never ran because every run slot stayed taken
 * (status busy). */
json_object *tools_busy_result(const struct tools_run_args *a, const struct tools_features *f,
                               const char *message, double waited_ms);

/* Builds the CallToolResult for a finished run (exposed for tests); fc
 * says where returned files go, and may be NULL when res has none. */
json_object *tools_result(const struct exec_result *res, const struct langtable_lang *lang,
                          const struct tools_features *f, const struct files_result_ctx *fc);

/* Builds validate_code's CallToolResult: with res->check, whether the code
 * is valid (isError false either way); without (the sandbox failed, busy,
 * timeout), an error result saying why. */
json_object *tools_check_result(const struct exec_result *res, const struct langtable_lang *lang,
                                const struct tools_features *f);

#endif
