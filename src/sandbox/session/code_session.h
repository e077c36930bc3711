/* Code sessions: one sandbox kept between calls for one owner, so the files
 * (and, in an interpreter, the state) a call leaves are there for the next.
 * The registry (sessions.h) says whose each is and when it ends; this is
 * the part that holds the sandboxes: open.c makes one (a begin request,
 * from the pool when the limits are the pool's), cell.c runs a call in it
 * (a cell request; at the deadline, a cancel or the output cap an
 * interrupt, and CODE_SESSION_GRACE_MS for the record before the sandbox
 * is killed), watch.c watches the idle ones (their end, stray output,
 * the idle and age timers), space.c ties them to an execution context and
 * ends them (close, an owner's end, shutdown).
 *
 * Every sandbox is torn down (its stream closed, its container to the
 * reaper) once, by whoever ended its session (sessions.h says who). One
 * owner per stream: the watcher reads a session's stream only while the
 * session is idle, under the session's lock, and a call takes it busy
 * under that lock before it sends.
 *
 * Thread-safe. A session handed out is a held reference: code_session_put. */
#ifndef MCPSBX_CODE_SESSION_H
#define MCPSBX_CODE_SESSION_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "sandbox/run/exec.h"
#include "sandbox/run/run.h"
#include "sandbox/runner/runner.h"
#include "sandbox/session/sessions.h"

/* How long an interrupted call's runner has to send its record before its
 * sandbox is killed and the session lost. */
#define CODE_SESSION_GRACE_MS 2000

struct exec_ctx;
struct code_space;

/* Turns code sessions on for ctx with lim (the registry's limits; its
 * cancel_call and free_handle are this module's): a registry and its
 * watcher thread. Once per context; -1 with err when lim is out of range,
 * sessions are on already, or the thread cannot start. The sandboxes of
 * sessions live past the pool's expiry labels only when lim's max age
 * fits them: the pool serves sessions only then. */
int code_sessions_start(struct exec_ctx *ctx, const struct code_sessions_limits *lim,
                        struct err *err);

/* Opens a session of who's for req's language and limits (its memory_mb,
 * its timeout_ms for the start, its start deadline and cancel; its code is
 * not run), named name (NULL: none): reserved in the registry, a sandbox
 * taken from the pool or made for it, the begin request answered. Returns
 * the session, a held reference, with *mode what its runner keeps (may be
 * NULL); or NULL with err (the caps: ERR_TOO_BIG; cancelled:
 * ERR_CANCELLED), nothing left behind. */
struct code_session *code_session_open(struct exec_ctx *ctx, const struct run *req,
                                       const char *name, const struct code_session_owner *who,
                                       enum runner_session_mode *mode, struct err *err);

/* What a runner's session mode keeps, as create_session and the logs say
 * it: "interpreter", "shell", "process" ("none" for a runner that said
 * none). */
const char *code_session_mode_name(enum runner_session_mode m);

/* code_sessions_get (sessions.h): id's session if it is who's and open, a
 * held reference; NULL alike for anything else. A session lost while idle
 * comes back once with *lost set: code_session_lost_reason says why. */
struct code_session *code_session_get(struct exec_ctx *ctx, const char *id,
                                      const struct code_session_owner *who, bool *lost);

/* Drops a reference (NULL is fine). */
void code_session_put(struct exec_ctx *ctx, struct code_session *cs);

/* Runs req (its language must be the session's) in the session's sandbox,
 * as exec_run does in a fresh one, and with exec_run's answers. The
 * session lives on through a timeout, a cancel or the output cap whose
 * interrupt the runner honoured within the grace. It is lost (res's
 * session_lost and lost_reason, the sandbox killed and removed) when the
 * runner did not, when the program's sandbox exited or ran out of memory,
 * or when the run failed (-1). A session that is busy, gone or lost before
 * the call is -1 with err (ERR_INVALID: busy; ERR_NOT_FOUND: "no such
 * session", or lost, with res's session_lost). */
int code_session_run(struct exec_ctx *ctx, struct code_session *cs, const struct run *req,
                     struct exec_result *res, struct err *err);

/* Ends the session: an idle one's sandbox goes now; a busy one's call is
 * cancelled and its sandbox goes when the call ends. */
enum code_session_closed code_session_close(struct exec_ctx *ctx, struct code_session *cs);

/* The limits the session was opened with (its open request's): every
 * call's memory_mb, and the timeout_ms of a call that gives none. Zeros
 * for a session that never had a sandbox. No lock: they never change. */
void code_session_limits(const struct code_session *cs, long long *timeout_ms,
                         long long *memory_mb);

/* who's open sessions (sessions.h's code_sessions_list); 0 when sessions
 * are off. */
size_t code_session_list(struct exec_ctx *ctx, const struct code_session_owner *who,
                         struct code_session_info **out);

/* One session as list shows it. */
void code_session_info(struct exec_ctx *ctx, const struct code_session *cs,
                       struct code_session_info *out);

/* Ends every session of who (everyone's when NULL): the idle ones' sandboxes
 * go now, the busy ones' calls are cancelled. Returns how many went now. */
size_t code_session_end_owner(struct exec_ctx *ctx, const struct code_session_owner *who);

/* Sessions counted against the caps (zeros when sessions are off). */
struct code_sessions_counts code_session_counts(struct exec_ctx *ctx,
                                                const struct code_session_owner *who);

/* Tears every session down and stops the watcher (exec_ctx_free, before
 * the pool and the reaper go; every call has returned). NULL is fine. */
void code_space_free(struct code_space *sp);

#endif
