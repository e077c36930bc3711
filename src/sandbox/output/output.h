/* A run's output pipeline: the sandbox's two streams are scanned for the
 * runner's completion record and file frames (runner.h), secrets are
 * redacted from them as a pair (redact.h), the program's output is capped
 * at the run's limit, kept in the result and passed on live. At the end,
 * the record says how the program ended.
 *
 * One output belongs to one run; output_reset makes it new for another
 * sandbox when a pooled one failed before the code reached it. */
#ifndef MCPSBX_OUTPUT_H
#define MCPSBX_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "sandbox/run/exec.h"
#include "sandbox/output/outfiles.h"
#include "sandbox/output/redact.h"
#include "sandbox/runner/runner.h"

struct output {
    const struct run *req;
    struct exec_result *res;
    const struct redactor *redactor; /* NULL: nothing to redact */
    char nonce[RUNNER_NONCE_HEX_LEN + 1];
    struct outfiles_caps caps; /* of res->files, from run_outputs(req) */
    struct runner_scan scan_out;
    struct runner_scan scan_err;
    struct redact_pair red; /* stdout (0) and stderr (1) */
    size_t total;           /* program output kept so far */
    size_t cap;             /* and at most */
    bool limit_hit;
    /* Output past the cap is read and dropped instead of stopping the
     * read: a session's interrupted cell still sends its record. */
    bool discard;
    /* The record's "session", once output_finish_record read it. */
    struct runner_session_done session;
};

/* Takes over res (its output buffers capped at cap, its files empty). */
void output_init(struct output *o, const struct run *req, struct exec_result *res,
                 const struct redactor *redactor, const char *nonce, size_t cap);
/* As new: nothing read, nothing kept. */
void output_reset(struct output *o);
void output_free(struct output *o);

/* A pooled runner's stdout starts with its go-ahead (runner.h). */
void output_expect_go(struct output *o);
/* Whether the runner had the code: its go-ahead came, or it needs none. */
bool output_started(const struct output *o);
/* Whether the completion record came on both streams. */
bool output_record_done(const struct output *o);
/* Whether the record came on stdout (the other stream may have ended). */
bool output_record_seen(const struct output *o);

/* A backend_stream_read callback: stream is EXEC_STDOUT or EXEC_STDERR.
 * Returns 0, OUTPUT_LIMIT when the cap was reached (stop reading), or -1
 * with err when the sandbox broke the framing. */
#define OUTPUT_LIMIT 1
int output_feed(void *o, int stream, const char *data, size_t len, struct err *err);
/* The streams ended: bytes held back as a possible record's start were
 * the program's. */
void output_flush_scans(struct output *o);

/* res's status, exit code and message from the runner's completion
 * record. Returns -1 with err when the record says the run failed or
 * does not fit the request. */
int output_finish_record(struct output *o, struct err *err);

/* The run is over: what redaction held back goes out, and the files are
 * kept only when files_kept (a program that finished and accounted for
 * them). */
void output_end(struct output *o, bool files_kept);

#endif
