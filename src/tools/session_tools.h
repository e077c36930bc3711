/* Code sessions as the tools show them (the sandboxes kept between calls
 * are sandbox/session/'s): create_session, list_sessions, close_session and
 * install_packages, and a run tool's call with a session_id, checked here
 * before it runs.
 *
 * Whoever asks about a session id that is not theirs (never made, ended,
 * or another caller's) gets the same words, SESSIONS_NO_SUCH: nothing
 * tells those apart. A handle naming another daemon says so
 * (SESSIONS_ELSEWHERE and its name), so that it can be sent there. */
#ifndef MCPSBX_SESSION_TOOLS_H
#define MCPSBX_SESSION_TOOLS_H

#include <json-c/json.h>

#include "tools/tools.h"

#define SESSIONS_NO_SUCH "no such session"
#define SESSIONS_OFF     "code sessions are off on this server (--max-code-sessions 0)"
/* Said of another daemon's handle, with the two names after it. */
#define SESSIONS_ELSEWHERE "that session is held by another daemon"

/* who as the registry takes it (NULL: TOOLS_INTERNAL); a transport that
 * names no principal counts as "none". */
void sessions_owner_of(const struct tools_caller *who, struct code_session_owner *out);

/* A run tool's call in the session args' session_id names (the schema has
 * checked args): in order, the session (held in out->session; a tombstone
 * of who's is held too, with out->lost), the language (t's, and the
 * language argument when given, must be the session's), memory_mb (absent
 * or the session's own) and timeout_ms (the session's unless given). Sets
 * out->run's language and limits. -1 with ERR_INVALID (SESSIONS_NO_SUCH,
 * SESSIONS_OFF or the mismatch). */
int sessions_parse_call(const struct tools_env *env, const tools_tool *t, json_object *args,
                        struct tools_run_args *out, struct err *err);

/* create_session's arguments into out: the language, the name, the limits
 * as a run's. */
int sessions_parse_create(const struct tools_env *env, const tools_tool *t, json_object *args,
                          struct tools_run_args *out, struct err *err);

/* install_packages' arguments into out: the session and its language and
 * limits as sessions_parse_call makes them for a call, no code, and the
 * packages (tools/packages_arg.h) to stay on its path (packages_stay).
 * -1 with ERR_INVALID (or ERR_TOO_BIG) as those say. */
int sessions_parse_install(const struct tools_env *env, const tools_tool *t, json_object *args,
                           struct tools_run_args *out, struct err *err);

/* Runs a prepared install_packages in its session. */
json_object *sessions_install(const struct tools_env *env, const struct tools_run_args *a,
                              const struct tools_features *f);

/* install_packages' result for res, a run in session session_id:
 * session_id and packages (tools/packages_result.h); when it failed
 * (status not ok, a non-zero exit, the session lost) isError, with the
 * message (which names the package and quotes the installer) in the text
 * and as message, and session_lost when so. */
json_object *sessions_install_result(const struct exec_result *res, const char *session_id,
                                     const struct tools_features *f);

/* Runs a prepared create_session: a session of a->who's, or an error. */
json_object *sessions_create(const struct tools_env *env, const struct tools_run_args *a,
                             const struct tools_features *f);

/* list_sessions and close_session for who (args borrowed, checked). */
json_object *sessions_answer(const struct tools_env *env, const tools_tool *t, json_object *args,
                             const struct tools_caller *who, const struct tools_features *f);

/* The run in a->session (code_session_run, or the tombstone's reason)
 * into res. */
void sessions_run(const struct tools_env *env, const struct tools_run_args *a,
                  struct exec_result *res);

/* Adds the session's fields (session_id; session_lost when res says so)
 * to a result r of a call in a->session. */
void sessions_decorate(json_object *r, const struct tools_run_args *a,
                       const struct exec_result *res);

/* The environment resource's code_sessions object: the limits, and the
 * sessions open in all and who's. */
json_object *sessions_environment_json(const struct tools_env *env, const struct tools_caller *who);

#endif
