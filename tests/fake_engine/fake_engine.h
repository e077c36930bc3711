/* A fake Docker Engine API on a unix socket, for the unit tests.
 *
 * It keeps a small container model (create, attach, start, wait, kill,
 * delete, list by label, inspect, plus /_ping and /version) whose
 * containers run a scripted program (tests/fake_program) on the attach
 * stream, its output as multiplexed frames (8-byte headers). A
 * container created with the daemon's socket directory bound in
 * (backend/docker/channel.h) connects to it on start, as the connector does, and
 * its program uses those connections instead.
 * Faults are injected per operation (an HTTP status, or a stall that holds
 * the request until released), and every request is logged so tests can
 * assert what the daemon asked for.
 *
 * One thread per connection. Every function is thread-safe. Nothing here
 * uses cmocka: its threads must never assert (an assert longjmps into the
 * test's own thread). Timeouts given to the wait functions are hang guards
 * only: they return false when the condition did not come in time. */
#ifndef MCPSBX_TEST_FAKE_ENGINE_H
#define MCPSBX_TEST_FAKE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fake_program/fake_program.h"

/* Container ids the fake makes are 64 hex digits; ids given to
 * fake_engine_add_container may be anything up to this long. */
#define FAKE_ID_MAX 127

/* How long the tests' hang guards wait for what must happen. */
#define FAKE_HANG_GUARD_MS 20000

enum fake_op {
    FAKE_OP_OTHER, /* no route: answered 400 "fake engine: no route" */
    FAKE_OP_PING,
    FAKE_OP_VERSION,
    FAKE_OP_CREATE,
    FAKE_OP_ATTACH,
    FAKE_OP_START,
    FAKE_OP_WAIT,
    FAKE_OP_KILL,
    FAKE_OP_INSPECT,
    FAKE_OP_DELETE,
    FAKE_OP_LIST,
    FAKE_OP_COUNT
};

/* A program killed (kill, or delete with force) ends its stream without a
 * record and exits 137. */

struct fake_request {
    enum fake_op op;
    char id[FAKE_ID_MAX + 1]; /* the container in the path, or "" */
    char method[16];
    char target[1024]; /* path and query, as sent */
    char content_type[128];
    bool upgrade_tcp;
    char body[65536]; /* NUL-terminated; cut at sizeof - 1 */
    size_t body_len;
};

struct fake_container_info {
    char id[FAKE_ID_MAX + 1];
    char image[128];
    bool attached, started, running, exited, killed, removed, oom_killed;
    int exit_code;
    bool code_received;     /* the runner request arrived on stdin */
    bool warm;              /* started as a warm runner (runner.h) */
    char preload[256];      /* its modules argument */
    char warm_args[8192];   /* the Cmd words after it (a checker's argv), JSON, cut */
    long long memory;       /* HostConfig.Memory */
    char user[32];          /* User ("UID:GID") */
    bool seccomp_inline;    /* the seccomp profile came as JSON text (Docker) */
    char seccomp_path[256]; /* or as this file's path (Podman) */
    char code[4096];        /* from the request, NUL-terminated, cut */
    char config_env[2048];  /* Config.Env as JSON text, cut */
    char request_env[1024]; /* the request's env as JSON text, cut */
    char stdin_data[1024];
};

struct fake_engine;

/* Serves on a fresh socket in a temporary directory; NULL on failure.
 * Sets RUNTIME_DIRECTORY to a directory of its own (emptied at stop), so
 * files the daemon writes for the engine stay in it. */
struct fake_engine *fake_engine_start(void);
/* Stops every thread (releasing held requests), removes the socket, frees. */
void fake_engine_stop(struct fake_engine *fe);
const char *fake_engine_socket(const struct fake_engine *fe);

/* ---- scripting ---------------------------------------------------------- */

/* The program containers created from now on run (copied). */
void fake_engine_set_program(struct fake_engine *fe, const struct fake_program *p);

/* The body of GET /version (copied). The default is Docker 20.10's. */
void fake_engine_set_version(struct fake_engine *fe, const char *body);

/* Answer a kill of a stopped container as Podman does (500 "container
 * state improper") instead of Docker's 409. */
void fake_engine_set_podman(struct fake_engine *fe, bool podman);

/* Answers the next `times` requests of op (-1: all) with status and body
 * (NULL: {"message":"fake engine: injected <op> failure"}) instead of
 * serving them. FAKE_STALL holds them unanswered until
 * fake_engine_release, after which they are served as usual (a create
 * then makes its container, as a stalled engine that answers late does). */
#define FAKE_STALL 0
void fake_engine_fault(struct fake_engine *fe, enum fake_op op, int status, const char *body,
                       int times);
void fake_engine_release(struct fake_engine *fe);

/* While on, every connection is accepted and dropped unread, like an
 * engine that is down; fake_engine_dropped counts them. */
void fake_engine_set_outage(struct fake_engine *fe, bool on);

/* A container that exists already (for list and sweep tests): labels is
 * a JSON object's text or NULL; running ones are never attached. */
void fake_engine_add_container(struct fake_engine *fe, const char *id, long long created,
                               const char *labels, bool running);

/* A hook sees each request first (after it is logged) and returns true
 * when it answered it itself on fd, e.g. with the helpers below. It runs
 * on the connection's thread. */
typedef bool (*fake_engine_hook)(struct fake_engine *fe, int fd, const struct fake_request *req,
                                 void *ctx);
void fake_engine_set_hook(struct fake_engine *fe, fake_engine_hook hook, void *ctx);

/* For hooks: answer with a JSON body (or none), write raw bytes, build an
 * attach frame (returns 8 + len), hold until released or stopped, and
 * read what the client sends (-1 once stopped, 0 at its end of stream). */
void fake_engine_respond(int fd, int status, const char *body);
void fake_engine_write(struct fake_engine *fe, int fd, const void *data, size_t n);
size_t fake_engine_frame(char *out, int stream, const void *data, uint32_t len);
void fake_engine_hold(struct fake_engine *fe);
ssize_t fake_engine_read(struct fake_engine *fe, int fd, void *buf, size_t n);

/* SIGKILLs container id, as POST /kill does, but only while it runs and
 * its program has not received its code (a waiting pooled sandbox), in one
 * step: a test that kills waiting sandboxes never hits a run's. Returns
 * whether it killed. */
bool fake_engine_kill_waiting(struct fake_engine *fe, const char *id);

/* ---- what happened ------------------------------------------------------ */

int fake_engine_nreq(struct fake_engine *fe);
/* Requests of op (FAKE_OP_COUNT: any) for container id (NULL: any). */
int fake_engine_count(struct fake_engine *fe, enum fake_op op, const char *id);
/* The last request of op (FAKE_OP_COUNT: any); false when none. */
bool fake_engine_last(struct fake_engine *fe, enum fake_op op, struct fake_request *out);
/* The id of the last container created; false when none. */
bool fake_engine_last_id(struct fake_engine *fe, char *out, size_t n);
bool fake_engine_info(struct fake_engine *fe, const char *id, struct fake_container_info *out);
/* Containers that exist (created or added, not removed). */
size_t fake_engine_live(struct fake_engine *fe);
bool fake_engine_removed(struct fake_engine *fe, const char *id);
int fake_engine_dropped(struct fake_engine *fe);
size_t fake_engine_held(struct fake_engine *fe);

/* Waits until: id is removed; a program has received its code and runs
 * (its id in out); count(op, id) >= n; dropped >= n; held >= n. */
bool fake_engine_wait_removed(struct fake_engine *fe, const char *id, int timeout_ms);
bool fake_engine_wait_running(struct fake_engine *fe, char *out, size_t n, int timeout_ms);
bool fake_engine_wait_count(struct fake_engine *fe, enum fake_op op, const char *id, int n,
                            int timeout_ms);
bool fake_engine_wait_dropped(struct fake_engine *fe, int n, int timeout_ms);
bool fake_engine_wait_held(struct fake_engine *fe, size_t n, int timeout_ms);

#endif
