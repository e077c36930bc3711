/* The scripted program a fake sandbox runs once started, for both fakes
 * the unit tests use: the fake Docker Engine API (tests/fake_engine) and
 * the in-process fake backend (tests/fake_backend). One script, two ways
 * of carrying its streams: each fake gives the program a struct fake_io.
 *
 * By default the program speaks the runner protocol of
 * src/sandbox/runner/runner.h: it reads the framed request from stdin, writes its
 * output, then the completion record on stderr and stdout, and exits. With
 * echo_line it is a plain program instead (what the backend conformance
 * suite runs): it echoes one line of stdin on stdout. Nothing here uses
 * cmocka: it runs on the fakes' threads. */
#ifndef MCPSBX_TEST_FAKE_PROGRAM_H
#define MCPSBX_TEST_FAKE_PROGRAM_H

#include <stdbool.h>
#include <stddef.h>

enum fake_end {
    FAKE_END_RECORD,     /* the completion record, then exit (the usual end) */
    FAKE_END_EXIT,       /* exit without a record (os._exit, a crash, the kernel's OOM kill) */
    FAKE_END_CUT,        /* the stream breaks inside a frame: a header, then part of its payload */
    FAKE_END_BIG_RECORD, /* a completion record larger than RUNNER_MAX_RECORD */
    FAKE_END_BAD_RECORD, /* a completion record that is not JSON */
};

#define FAKE_RUN_FOREVER (-1L)

/* What a session runner does with one cell (struct fake_program.cells). */
enum fake_cell {
    FAKE_CELL_ECHO,             /* the code on stdout, then a record of exit code 0 */
    FAKE_CELL_UNTIL_INTERRUPT,  /* waits for an interrupt naming its cell, then a record
                                 * of exit code 130 saying it was interrupted */
    FAKE_CELL_IGNORE_INTERRUPT, /* runs on, interrupts or not, until killed or its stdin ends */
    FAKE_CELL_EXIT,             /* exits without a record (exit_code, oom_killed) */
    FAKE_CELL_THEN_EXIT,        /* as ECHO, then exits (exit_code, oom_killed) while idle */
    FAKE_CELL_THEN_STRAY,       /* as ECHO, then writes stray output while idle and exits */
};

/* The most cells a session's script names; later ones are FAKE_CELL_ECHO. */
#define FAKE_CELLS_MAX 8

/* What a sandbox's program does once started and given its code. The
 * zero value prints nothing and ends with a record of exit code 0. */
struct fake_program {
    const char *out; /* written on stdout (copied; may hold NULs) */
    size_t out_len;
    const char *err; /* then on stderr */
    size_t err_len;
    long run_ms; /* then runs this long (FAKE_RUN_FOREVER: until killed) */
    enum fake_end end;
    int exit_code;
    bool memory_error;        /* the record's memory_error */
    const char *runner_error; /* the record's runner_error, or NULL */
    bool oom_killed;          /* killed for memory once it exited */
    /* With oom_killed: the first this many inspects after the exit still
     * say false, as Docker's do when the runtime's OOM event comes after
     * the exit. */
    int oom_flag_late;
    bool warm_dies; /* a warm runner exits 137 once it read the request, before RUNNER_GO */
    /* Started with the daemon's socket bound in (HostConfig.Binds), the
     * sandbox connects to it as the connector does and the program uses
     * those connections (raw, not framed). no_connect: it exits 127 at
     * start instead, as an image without perl does. */
    bool no_connect;
    /* Not a runner: reads one line of stdin, writes it on stdout, then
     * writes out and err, runs run_ms and exits with exit_code (end
     * FAKE_END_CUT still cuts the stream after the output). */
    bool echo_line;
    /* The completion record's JSON as written, instead of the one made of
     * exit_code, memory_error and runner_error (copied; NULL: that one):
     * what a runner of another kind says (a compile error). */
    const char *record;
    /* A session runner (runner.h's session mode): answers a begin request
     * with a record of mode "process", then serves cells, the i-th as
     * cells[i] says, until its stdin ends (then exits 0). */
    bool session;
    enum fake_cell cells[FAKE_CELLS_MAX];
    size_t n_cells;
};

/* A copy owning its strings; free with fake_program_free. */
void fake_program_copy(struct fake_program *dst, const struct fake_program *src);
void fake_program_free(struct fake_program *p);

/* What the runner request said, as the program received it. */
struct fake_received {
    const char *code, *stdin_data;
    const char *env;     /* JSON text, or NULL */
    const char *program; /* the generic runner's program, JSON text, or NULL */
};

/* The program's streams, as its fake carries them. Every function gets
 * ctx. send and read return false once the stream is gone or the sandbox
 * was killed. */
struct fake_io {
    void *ctx;
    bool (*send)(void *ctx, int stream, const char *data, size_t n); /* stream 1 or 2 */
    bool (*read)(void *ctx, char *out, size_t n);                    /* exactly n bytes */
    /* Ends the stream in the middle of its framing (where it has none,
     * writes some output and stops). */
    void (*cut)(void *ctx);
    /* Runs ms (FAKE_RUN_FOREVER: until killed); returns early on a kill. */
    void (*pause)(void *ctx, long ms);
    bool (*killed)(void *ctx);
    void (*received)(void *ctx, const struct fake_received *r); /* may be NULL */
};

struct fake_exit {
    int code;
    bool oom_killed;
};

/* Runs p on io (warm: as a warm runner, which says it is ready first) and
 * says how it exits; a killed program's exit is the caller's (137). */
struct fake_exit fake_program_run(const struct fake_program *p, bool warm,
                                  const struct fake_io *io);

/* A runner started with one more argument after its source is a warm one
 * (src/sandbox/runner/runner.h): true then, with *preload its modules argument
 * and *warm_args the words after it as JSON text (both allocated). */
bool fake_program_warm(const char *const *argv, size_t n, char **preload, char **warm_args);

/* ---- waiting and moving bytes, as both fakes do ---------------------------- */

/* Waits until fd (-1: none) is ready for events, or timeout_ms (-1: no
 * limit) passes; false on the timeout, or when wake_a or wake_b (-1:
 * unused; readable once their fake stops or their sandbox is killed)
 * became readable first. */
bool fake_wait_fd(int fd, short events, int wake_a, int wake_b, int timeout_ms);

/* Sends all of data, or reads exactly n bytes, on fd; false when the peer
 * went away (or ended the stream) or a wake fd fired. */
bool fake_send_all(int fd, const void *data, size_t n, int wake_a, int wake_b);
bool fake_recv_all(int fd, void *out, size_t n, int wake_a, int wake_b);

#endif
