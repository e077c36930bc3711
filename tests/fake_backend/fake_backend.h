/* An in-process backend (src/backend/backend.h's ops table) for the unit
 * tests of the layers above the backend: no engine, no HTTP, no Docker.
 *
 * Its sandboxes run the scripted program of tests/fake_program on a thread
 * of their own, from start until they exit or are killed; a sandbox's
 * streams are one socketpair, stdin raw one way, output the other way in
 * frames of the fake's own (a stream byte, a 4-byte length). Every
 * operation can be made to fail (with an error category) or to stall
 * until released or until its deadline; an outage fails them all at once,
 * as an engine that is down. It keeps a copy of every spec it created a
 * sandbox from, so tests assert what the layers above asked for in the
 * backend's own terms.
 *
 * Every function is thread-safe; nothing here uses cmocka (its threads must
 * never assert). Timeouts given to the wait functions are hang guards:
 * they return false when the condition did not come in time. */
#ifndef MCPSBX_TEST_FAKE_BACKEND_H
#define MCPSBX_TEST_FAKE_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "backend/backend.h"
#include "base/err.h"
#include "fake_program/fake_program.h"

#define FAKE_BACKEND_ID_MAX 63

/* The backend's operations, as faults and counts name them. */
enum fake_step {
    FAKE_STEP_PING,
    FAKE_STEP_VERSION,
    FAKE_STEP_CREATE,
    FAKE_STEP_START,
    FAKE_STEP_WAIT,
    FAKE_STEP_KILL,
    FAKE_STEP_REMOVE,
    FAKE_STEP_INSPECT,
    FAKE_STEP_LIST,
    FAKE_STEP_COUNT
};

struct fake_backend;

/* A fresh fake with no sandboxes; every image exists but those named
 * missing. Freed with backend_free(fake_backend_get(fb)). */
struct fake_backend *fake_backend_new(void);
struct backend *fake_backend_get(struct fake_backend *fb);

/* ---- scripting ---------------------------------------------------------- */

/* The program sandboxes created from now on run (copied). */
void fake_backend_set_program(struct fake_backend *fb, const struct fake_program *p);

/* create of this image fails with ERR_NOT_FOUND, as for an image the
 * engine does not have (copied; one at a time; NULL: none). */
void fake_backend_set_missing_image(struct fake_backend *fb, const char *image);

/* The next `times` calls of step (-1: all) fail with code (an error
 * category; the message names the step). */
void fake_backend_fail(struct fake_backend *fb, enum fake_step step, enum err_code code, int times);

/* The next `times` calls of step (-1: all) hold until fake_backend_release,
 * or fail with ERR_TIMEOUT at their deadline (create and start: theirs;
 * wait and list: their timeout; the others, and those given none: the
 * usual timeout of a client of an engine, a few seconds). Released, they
 * are served as usual. */
void fake_backend_stall(struct fake_backend *fb, enum fake_step step, int times);
void fake_backend_release(struct fake_backend *fb);

/* The next `times` starts of a sandbox created without fallback answer
 * BACKEND_RETRY, as a sandbox whose streams could not connect. */
void fake_backend_retry(struct fake_backend *fb, int times);

/* While on, every operation fails at once with ERR_ENGINE and gone says 1. */
void fake_backend_set_outage(struct fake_backend *fb, bool on);

/* Every create whose command (argv, JSON text) holds needle fails with
 * code (needle copied; NULL: none); the others are served. */
void fake_backend_fail_create_if(struct fake_backend *fb, const char *needle, enum err_code code);

/* Every create whose command holds needle takes ms longer (needle copied;
 * NULL: none), as a set-up with its preloads would. */
void fake_backend_slow_create_if(struct fake_backend *fb, const char *needle, int ms);

/* The next `times` lists take their answer when called, then stall as
 * fake_backend_stall does: an answer on its way, which still shows the
 * sandboxes removed meanwhile. */
void fake_backend_stall_stale_list(struct fake_backend *fb, int times);

/* A sandbox that exists already, never started: another daemon's, or one
 * an earlier run left. Strings copied; NULL marks are none. */
struct fake_existing {
    const char *id; /* at most FAKE_BACKEND_ID_MAX */
    long long created;
    long long expires;
    const char *instance, *owner;
    long long uid; /* -1: unknown */
};
void fake_backend_add(struct fake_backend *fb, const struct fake_existing *e);

/* SIGKILL for id (NULL: the newest such) if it is a warm runner still
 * waiting for its request, checked and done at once (a run that took it
 * may send the code any moment); true when one was killed. */
bool fake_backend_kill_waiting(struct fake_backend *fb, const char *id);

/* backend_weight_open fails from now on (with err saying so) when refuse,
 * as on a host where weights cannot be changed. */
void fake_backend_refuse_weights(struct fake_backend *fb, bool refuse);

/* ---- what happened ------------------------------------------------------ */

/* What a sandbox was made from, and where it is. Strings are cut to fit. */
struct fake_sandbox_info {
    char id[FAKE_BACKEND_ID_MAX + 1];
    char image[128];
    char cmd[8192]; /* argv, JSON text */
    char env[4096]; /* env, JSON text */
    char workdir[256];
    char runtime[64];
    char instance[64], owner[64], pool[64];
    char install_dir[1024]; /* the spec's install_dir, "" for none */
    uid_t uid;
    gid_t gid;
    long long memory_bytes, nano_cpus, pids_limit, workdir_mb, expires;
    long long cpu_shares; /* as created (the spec's) */
    long long weight_now; /* as it is now: cpu_shares, or what was written since */
    bool workdir_exec, network, fallback;
    enum backend_syscalls syscalls;
    bool warm;         /* started as a warm runner (runner.h) */
    char preload[256]; /* its modules argument */
    bool started, running, exited, killed, removed, oom_killed;
    int exit_code;
    bool code_received; /* the runner request arrived on stdin */
    char code[4096];    /* from it, cut */
    char request_env[1024];
    char stdin_data[1024];
    char warm_args[8192]; /* a warm runner's words after its modules argument, JSON text */
    char program[2048];   /* the request's program (the generic runner's), JSON text, cut */
};

/* Calls of step for sandbox id (NULL: any). */
int fake_backend_count(struct fake_backend *fb, enum fake_step step, const char *id);
bool fake_backend_last_id(struct fake_backend *fb, char *out, size_t n);
bool fake_backend_info(struct fake_backend *fb, const char *id, struct fake_sandbox_info *out);
/* Sandboxes that exist (created, not removed). */
size_t fake_backend_live(struct fake_backend *fb);
/* Calls held by a stall right now. */
size_t fake_backend_held(struct fake_backend *fb);

/* Waits until: id is removed; a program received its code and runs (its
 * id in out); held >= n; count(step, id) >= n. */
bool fake_backend_wait_removed(struct fake_backend *fb, const char *id, int timeout_ms);
bool fake_backend_wait_running(struct fake_backend *fb, char *out, size_t n, int timeout_ms);
bool fake_backend_wait_held(struct fake_backend *fb, size_t n, int timeout_ms);
bool fake_backend_wait_count(struct fake_backend *fb, enum fake_step step, const char *id, int n,
                             int timeout_ms);

/* Every sandbox created or added, removed ones too, oldest first (a copy,
 * allocated; *n of them). */
struct fake_sandbox_info *fake_backend_all(struct fake_backend *fb, size_t *n);

#endif
