#include "sandbox/output/output.h"

#include <string.h>

#include "base/log.h"

/* What a result or a log line shows of the sandbox's words at most: the
 * runner's error (the runners write at most 500 characters) and a syntax
 * check's message (at most 500 characters). */
#define RUNNER_ERROR_SHOWN_MAX  1024
#define CHECK_MESSAGE_SHOWN_MAX 2048

static int on_frame(void *arg, const char *line, size_t len, struct err *err);

static void scans_init(struct output *o)
{
    runner_scan_init(&o->scan_out, o->nonce);
    runner_scan_init(&o->scan_err, o->nonce);
    o->scan_out.on_frame = on_frame;
    o->scan_out.on_frame_ctx = o;
}

static void files_init(struct output *o)
{
    outfiles_init(&o->res->files, &o->caps, o->redactor);
}

void output_init(struct output *o, const struct run *req, struct exec_result *res,
                 const struct redactor *redactor, const char *nonce, size_t cap)
{
    *o = (struct output){.req = req, .res = res, .redactor = redactor, .cap = cap};
    snprintf(o->nonce, sizeof(o->nonce), "%s", nonce);
    const struct runner_outputs *w = run_outputs(req);
    if (w) {
        o->caps.max_files = (size_t)w->max_files;
        o->caps.max_file_bytes = (size_t)w->max_file_bytes;
        o->caps.max_plots = w->plots ? (size_t)w->max_plots : 0;
        o->caps.max_plot_bytes = (size_t)w->max_plot_bytes;
        o->caps.max_total_bytes = (size_t)w->max_total_bytes;
    }
    buf_free(&res->out);
    buf_free(&res->err);
    buf_init(&res->out, cap);
    buf_init(&res->err, cap);
    outfiles_free(&res->files);
    files_init(o);
    scans_init(o);
}

void output_free(struct output *o)
{
    runner_scan_free(&o->scan_out);
    runner_scan_free(&o->scan_err);
    redact_pair_free(&o->red);
}

void output_reset(struct output *o)
{
    output_free(o);
    scans_init(o);
    outfiles_free(&o->res->files);
    files_init(o);
    o->total = 0;
    o->limit_hit = false;
    o->discard = false;
    o->session = (struct runner_session_done){.present = false};
    buf_reset(&o->res->out);
    buf_reset(&o->res->err);
}

void output_expect_go(struct output *o)
{
    runner_scan_expect_go(&o->scan_out);
}

bool output_started(const struct output *o)
{
    return runner_scan_started(&o->scan_out);
}

bool output_record_done(const struct output *o)
{
    return o->scan_out.done && o->scan_err.done;
}

bool output_record_seen(const struct output *o)
{
    return o->scan_out.done;
}

/* ---- scan -> redact -> cap -> emit ----------------------------------------- */

static int emit(struct output *o, int stream, const char *data, size_t len)
{
    size_t room = o->cap - o->total;
    size_t take = len < room ? len : room;
    struct buf *b = stream == EXEC_STDERR ? &o->res->err : &o->res->out;
    if (take) {
        take = buf_add_upto(b, data, take);
        o->total += take;
        if (o->req->on_output)
            o->req->on_output(o->req->on_output_ctx, stream, data, take);
    }
    if (take < len) {
        o->limit_hit = true;
        return o->discard ? 0 : OUTPUT_LIMIT;
    }
    return 0;
}

static int emit_out_redacted(void *arg, const char *data, size_t len)
{
    return emit(arg, EXEC_STDOUT, data, len);
}

static int emit_err_redacted(void *arg, const char *data, size_t len)
{
    return emit(arg, EXEC_STDERR, data, len);
}

/* Program output, from the scans: secrets out, then emit. The two
 * streams are redacted as a pair: a value split across them is found. */
static int emit_out(void *arg, const char *data, size_t len)
{
    struct output *o = arg;
    return redact_pair_feed(o->redactor, &o->red, 0, data, len, emit_out_redacted, o);
}

static int emit_err(void *arg, const char *data, size_t len)
{
    struct output *o = arg;
    return redact_pair_feed(o->redactor, &o->red, 1, data, len, emit_err_redacted, o);
}

static int on_frame(void *arg, const char *line, size_t len, struct err *err)
{
    struct output *o = arg;
    if (!run_outputs(o->req))
        return err_set(err, ERR_PROTOCOL, "the runner sent a file nobody asked for");
    if (outfiles_frame(&o->res->files, line, len, err) < 0)
        return err_wrap(err, "the sandbox's output files are malformed");
    return 0;
}

int output_feed(void *arg, int stream, const char *data, size_t len, struct err *err)
{
    struct output *o = arg;
    struct runner_scan *scan = stream == EXEC_STDERR ? &o->scan_err : &o->scan_out;
    if (scan->done)
        return 0;
    return runner_scan_feed(scan, data, len, stream == EXEC_STDERR ? emit_err : emit_out, o, err);
}

void output_flush_scans(struct output *o)
{
    runner_scan_flush(&o->scan_out, emit_out, o);
    runner_scan_flush(&o->scan_err, emit_err, o);
}

void output_end(struct output *o, bool files_kept)
{
    if (!o->limit_hit)
        (void)redact_pair_flush(o->redactor, &o->red, emit_out_redacted, emit_err_redacted, o);
    redact_pair_free(&o->red);
    if (!files_kept) {
        outfiles_free(&o->res->files);
        files_init(o);
    }
}

/* ---- the completion record ------------------------------------------------- */

static void compile_failed(struct output *o, const struct runner_done *done)
{
    struct exec_result *res = o->res;
    res->status = EXEC_COMPILE_ERROR;
    res->exit_code = done->compile_error.exit_code;
    if (done->compile_error.timed_out)
        exec_result_set_message(
            res, "the compile step was stopped after %lld ms; the program did not run",
            o->req->language->compile_timeout_ms);
    else
        exec_result_set_message(res,
                                "the compile step failed (exit code %d, its output on stderr); "
                                "the program did not run",
                                done->compile_error.exit_code);
}

static void checked(struct output *o, struct runner_done *done)
{
    o->res->status = EXEC_OK;
    o->res->check = done->check;
    if (done->check.message) {
        o->res->check.message = redact_text(o->redactor, done->check.message,
                                            strlen(done->check.message), CHECK_MESSAGE_SHOWN_MAX);
        free(done->check.message);
    }
    memset(&done->check, 0, sizeof(done->check));
}

/* A runner that failed is the sandbox failing, not the program: an error
 * of the run, like the record being unreadable.
 *
 * The record is the program's word, not the runner's: code in the
 * runner's process (Python's, Node's) can reach its nonce and write a
 * record of its own. So every field is data about the program, never an
 * authority: the exit status and memory_error it claims only say how the
 * program ended, which the program decides anyway (sys.exit(3), raising
 * MemoryError); the files account is checked against the frames that
 * came; and its texts (runner_error, a check's message) are redacted,
 * escaped and cut like any output before they reach a result or a log. */
int output_finish_record(struct output *o, struct err *err)
{
    struct runner_done done = {0};
    const struct run *req = o->req;
    const struct runner_scan *s = o->scan_out.done ? &o->scan_out : &o->scan_err;
    if (runner_scan_result(s, &done, err) < 0)
        return err_wrap(err, "unreadable completion record from the runner");
    o->res->has_exit_code = true;
    o->res->exit_code = done.exit_code;
    o->session = done.session;
    if (done.typecheck_by != RUNNER_TYPECHECK_NONE)
        log_debug("%s run: typecheck by the %s", req->language->name,
                  done.typecheck_by == RUNNER_TYPECHECK_WARM
                      ? "warm checker"
                      : "typecheck command (the warm checker failed)");
    int rc = 0;
    if (done.runner_error) {
        char *shown = redact_text(o->redactor, done.runner_error, strlen(done.runner_error),
                                  RUNNER_ERROR_SHOWN_MAX);
        rc = err_set(err, ERR_INTERNAL, "the sandbox runner failed: %s", shown);
        free(shown);
    } else if (done.compile_error.present) {
        compile_failed(o, &done);
    } else if (req->check_only != done.check.present) {
        rc = err_set(err, ERR_PROTOCOL, "the runner %s a syntax check",
                     done.check.present ? "answered with" : "did not answer with");
    } else if (run_outputs(req) && !done.check.present && !done.files.present) {
        rc = err_set(err, ERR_PROTOCOL, "the runner did not account for the output files");
    } else if (done.files.present &&
               outfiles_finish(&o->res->files, done.files.sent, done.files.left_out,
                               done.files.walk_stopped, done.files.cwd_gone, err) < 0) {
        rc = err_wrap(err, "the sandbox's output files are malformed");
    } else if (done.check.present) {
        checked(o, &done);
    } else if (done.memory_error) {
        o->res->status = EXEC_OOM;
        exec_result_set_message(o->res, "the program ran out of memory (limit %lld MiB)",
                                req->memory_mb);
    } else {
        o->res->status = EXEC_OK;
    }
    runner_done_free(&done);
    return rc;
}
