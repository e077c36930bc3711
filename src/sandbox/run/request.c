/* Encoding a run's request for its runner (request.h). */
#include "sandbox/run/request.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

size_t request_cap(const struct exec_ctx *ctx, const struct run *req,
                   const struct egress_run_secrets *placeholders)
{
    size_t n = req->code_len + req->stdin_len + req->variables_len;
    /* Every request carries the --pass-through-env secrets. */
    for (size_t i = 0; i < ctx->secrets.n; i++)
        n += strlen(ctx->secrets.names[i]) + strlen(ctx->secrets.values[i]) + 8;
    for (size_t i = 0; placeholders && i < placeholders->n; i++)
        n += strlen(placeholders->names[i]) + strlen(placeholders->placeholders[i]) + 8;
    n += sizeof(req->traceparent) + sizeof(req->tracestate) + 32;
    for (size_t i = 0; i < req->n_files; i++)
        n += req->files[i].content_len + strlen(req->files[i].path) + 64;
    const struct runner_outputs *outputs = run_outputs(req);
    for (size_t i = 0; outputs && i < outputs->n_patterns; i++)
        n += strlen(outputs->patterns[i]) + 8;
    /* A Python session's begin request carries the interpreter mode. */
    if (req->language->runner == LANGTABLE_RUNNER_PYTHON)
        n += strlen(runner_python_session_src);
    return n * 6 + 4096;
}

int encode_request(const struct exec_ctx *ctx, const struct run *req,
                   const struct egress_run_secrets *placeholders, const char *package_set,
                   const char *nonce, enum runner_session_kind kind, struct buf *request,
                   struct err *err)
{
    const struct langtable_lang *lang = req->language;
    struct runner_program program = {.source_file = lang->source_file,
                                     .compile = lang->compile.v,
                                     .compile_timeout_ms = lang->compile_timeout_ms,
                                     .typecheck = lang->typecheck.v,
                                     .typecheck_blocks = req->typecheck_blocks,
                                     .run = lang->run.v};
    if (req->version_probe)
        program = (struct runner_program){.source_file = lang->source_file, .run = lang->version.v};
    /* Sent with a begin request only (runner.h). */
    const char *source = lang->runner == LANGTABLE_RUNNER_PYTHON ? runner_python_session_src : NULL;
    struct runner_request rreq = {.nonce_hex = nonce,
                                  .session = kind,
                                  .session_source = source,
                                  .code = req->code,
                                  .code_len = req->code_len,
                                  .stdin_data = req->stdin_data,
                                  .stdin_len = req->stdin_len,
                                  .variables = req->variables,
                                  .variables_len = req->variables_len,
                                  .check = req->check_only,
                                  .files = req->files,
                                  .n_files = req->n_files,
                                  .outputs = req->check_only ? NULL : run_outputs(req),
                                  .program =
                                      lang->runner == LANGTABLE_RUNNER_GENERIC ? &program : NULL,
                                  .env_names = ctx->secrets.names,
                                  .env_values = ctx->secrets.values,
                                  .n_env = ctx->secrets.n};
    char *sets[] = {(char *)(uintptr_t)package_set, NULL};
    if (package_set && *package_set) {
        bool stay = req->packages_stay && kind == RUNNER_SESSION_CELL;
        *(stay ? &rreq.add_packages : &rreq.packages) = sets;
        *(stay ? &rreq.n_add_packages : &rreq.n_packages) = 1;
    }
    if (req->install) {
        rreq.env_names = NULL;
        rreq.env_values = NULL;
        rreq.n_env = 0;
        placeholders = NULL;
    }
    size_t n_ph = placeholders ? placeholders->n : 0;
    size_t n_trace = req->install || !req->traceparent[0] ? 0 : req->tracestate[0] ? 2 : 1;
    if (n_ph + n_trace == 0)
        return runner_encode_request(&rreq, request, err);
    /* The pass-through values, the placeholders, then the trace context;
     * the arrays borrow their strings. */
    size_t n = ctx->secrets.n + n_ph + n_trace;
    char **names = xcalloc(n, sizeof(char *));
    char **values = xcalloc(n, sizeof(char *));
    size_t k = 0;
    for (size_t i = 0; i < ctx->secrets.n; i++, k++) {
        names[k] = ctx->secrets.names[i];
        values[k] = ctx->secrets.values[i];
    }
    for (size_t i = 0; i < n_ph; i++, k++) {
        names[k] = placeholders->names[i];
        values[k] = placeholders->placeholders[i];
    }
    if (n_trace) {
        names[k] = (char *)(uintptr_t) "TRACEPARENT";
        values[k++] = (char *)(uintptr_t)req->traceparent;
    }
    if (n_trace > 1) {
        names[k] = (char *)(uintptr_t) "TRACESTATE";
        values[k++] = (char *)(uintptr_t)req->tracestate;
    }
    rreq.env_names = names;
    rreq.env_values = values;
    rreq.n_env = n;
    int rc = runner_encode_request(&rreq, request, err);
    free(names);
    free(values);
    return rc;
}
