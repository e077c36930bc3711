/* The daemon's side of the runner protocol (see runner.h): framing the
 * request and finding the completion record in the program's output. */
#include "sandbox/runner/runner.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "base/json.h"
#include "sandbox/runner/runner_packages.h"

/* The runners refuse larger requests (runner.py / runner.js MAX_REQUEST). */
#define RUNNER_MAX_REQUEST (64u << 20)
/* The record is a flat object; anything deeper is not ours. */
#define RUNNER_RECORD_DEPTH 4

static bool nonce_valid(const char *nonce)
{
    if (!nonce)
        return false;
    for (size_t i = 0; i < RUNNER_NONCE_HEX_LEN; i++) {
        char c = nonce[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
    }
    return nonce[RUNNER_NONCE_HEX_LEN] == '\0';
}

static json_object *new_string(const char *s, size_t len)
{
    /* Sizes, not C strings: code and stdin may contain NUL bytes. */
    return json_object_new_string_len(s ? s : "", (int)len);
}

static json_object *argv_json(char *const *argv)
{
    json_object *a = json_object_new_array();
    for (size_t i = 0; argv && argv[i]; i++)
        json_object_array_add(a, json_object_new_string(argv[i]));
    return a;
}

/* The generic runner does not read the variables' JSON: it gets the text
 * for its file and the environment's strings ready-made (runner.h). */
static int add_generic_variables(json_object *obj, json_object *vars, struct err *err)
{
    size_t len = 0;
    const char *text = json_object_to_json_string_length(
        vars, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
    if (!text)
        return err_set(err, ERR_INTERNAL, "runner request: JSON encoding failed");
    if (len > RUNNER_MAX_REQUEST)
        return err_set(err, ERR_TOO_BIG, "variables of %zu bytes are over %u", len,
                       RUNNER_MAX_REQUEST);
    json_object_object_add(obj, "variables_file", new_string(text, len));
    json_object *env = json_object_new_object();
    json_object_object_foreach(vars, name, value)
    {
        json_object *s = NULL;
        switch (json_object_get_type(value)) {
        case json_type_string: {
            /* A C string cannot carry a NUL: such a value is in the file only. */
            const char *v = json_object_get_string(value);
            size_t n = (size_t)json_object_get_string_len(value);
            if (!memchr(v, '\0', n))
                s = new_string(v, n);
            break;
        }
        case json_type_int:
        case json_type_double: {
            /* The number's own text: what the caller sent. */
            size_t n = 0;
            const char *t = json_object_to_json_string_length(value, JSON_C_TO_STRING_PLAIN, &n);
            if (!t) {
                json_object_put(env);
                return err_set(err, ERR_INTERNAL, "runner request: JSON encoding failed");
            }
            s = new_string(t, n);
            break;
        }
        case json_type_boolean:
            s = json_object_new_string(json_object_get_boolean(value) ? "true" : "false");
            break;
        case json_type_null:
        case json_type_array:
        case json_type_object:
            break;
        }
        if (s)
            json_object_object_add(env, name, s);
    }
    json_object_object_add(obj, "variables_env", env);
    return 0;
}

/* The caller's variables, parsed once more from their compact JSON: as
 * an object for the in-process runners, as a file and strings for the
 * generic one. */
static int add_variables(json_object *obj, const struct runner_request *req, struct err *err)
{
    json_object *vars = NULL;
    struct json_exact why;
    /* As deep as any message the variables can have come in. */
    if (json_parse_exact(req->variables, req->variables_len, RUNNER_VARIABLES_DEPTH, 0, &vars,
                         &why) < 0 ||
        !json_object_is_type(vars, json_type_object)) {
        json_object_put(vars);
        return err_set(err, ERR_INVALID, "runner request: variables are not a JSON object");
    }
    if (!req->program) {
        json_object_object_add(obj, "variables", vars);
        return 0;
    }
    int rc = add_generic_variables(obj, vars, err);
    json_object_put(vars);
    return rc;
}

static json_object *files_json(const struct runner_request *req)
{
    json_object *files = json_object_new_array();
    for (size_t i = 0; i < req->n_files; i++) {
        const struct runner_file *f = &req->files[i];
        json_object *o = json_object_new_object();
        json_object_object_add(o, "path", json_object_new_string(f->path));
        json_object_object_add(o, "content", new_string(f->content, f->content_len));
        json_object_object_add(o, "encoding",
                               json_object_new_string(f->base64 ? "base64" : "utf-8"));
        json_object_array_add(files, o);
    }
    return files;
}

static json_object *program_json(const struct runner_program *pg)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "source_file", json_object_new_string(pg->source_file));
    if (pg->compile && pg->compile[0]) {
        json_object_object_add(o, "compile", argv_json(pg->compile));
        json_object_object_add(o, "compile_timeout_ms",
                               json_object_new_int64(pg->compile_timeout_ms));
    }
    if (pg->typecheck && pg->typecheck[0]) {
        json_object_object_add(o, "typecheck", argv_json(pg->typecheck));
        json_object_object_add(o, "typecheck_blocks",
                               json_object_new_boolean(pg->typecheck_blocks));
    }
    json_object_object_add(o, "run", argv_json(pg->run));
    return o;
}

static json_object *outputs_json(const struct runner_outputs *ro)
{
    json_object *o = json_object_new_object();
    json_object *paths = json_object_new_array();
    for (size_t i = 0; i < ro->n_patterns; i++)
        json_object_array_add(paths, json_object_new_string(ro->patterns[i]));
    json_object_object_add(o, "paths", paths);
    json_object_object_add(o, "plots", json_object_new_boolean(ro->plots));
    const struct json_int_row caps[] = {
        {"max_files", ro->max_files},
        {"max_file_bytes", ro->max_file_bytes},
        {"max_total_bytes", ro->max_total_bytes},
        {"max_plots", ro->max_plots},
        {"max_plot_bytes", ro->max_plot_bytes},
    };
    json_add_ints(o, caps, ARRAY_SIZE(caps));
    return o;
}

/* obj framed onto out ("mcpsbx/1 <len>\n" + JSON), all or nothing. */
static int frame(json_object *obj, struct buf *out, struct err *err)
{
    size_t len = 0;
    const char *json = json_object_to_json_string_length(
        obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
    size_t old_len = out->len;
    char header[32];
    int hn = snprintf(header, sizeof(header), RUNNER_PROTOCOL " %zu\n", len);
    if (!json)
        return err_set(err, ERR_INTERNAL, "runner request: JSON encoding failed");
    if (len > RUNNER_MAX_REQUEST)
        return err_set(err, ERR_TOO_BIG, "runner request of %zu bytes is over %u", len,
                       RUNNER_MAX_REQUEST);
    if (hn <= 0 || (size_t)hn >= sizeof(header) || buf_add(out, header, (size_t)hn) < 0 ||
        buf_add(out, json, len) < 0) {
        /* Drop a header whose body did not fit. */
        out->len = old_len;
        if (out->data)
            out->data[old_len] = '\0';
        return err_set(err, ERR_TOO_BIG, "runner request of %zu bytes does not fit", len);
    }
    return 0;
}

int runner_encode_request(const struct runner_request *req, struct buf *out, struct err *err)
{
    if (!nonce_valid(req->nonce_hex))
        return err_set(err, ERR_INVALID, "runner request: nonce must be %d lowercase hex digits",
                       RUNNER_NONCE_HEX_LEN);
    if (!req->code && req->code_len)
        return err_set(err, ERR_INVALID, "runner request: no code");
    if (req->code_len > RUNNER_MAX_REQUEST || req->stdin_len > RUNNER_MAX_REQUEST)
        return err_set(err, ERR_TOO_BIG, "code or stdin over %u bytes", RUNNER_MAX_REQUEST);

    json_object *obj = json_object_new_object();
    json_object_object_add(obj, "nonce", json_object_new_string(req->nonce_hex));
    json_object_object_add(obj, "code", new_string(req->code, req->code_len));
    json_object_object_add(obj, "stdin",
                           new_string(req->stdin_data, req->stdin_data ? req->stdin_len : 0));
    json_object *env = json_object_new_object();
    for (size_t i = 0; i < req->n_env; i++)
        json_object_object_add(env, req->env_names[i], json_object_new_string(req->env_values[i]));
    json_object_object_add(obj, "env", env);
    if (req->check)
        json_object_object_add(obj, "check", json_object_new_boolean(1));
    int rc = req->variables ? add_variables(obj, req, err) : 0;
    if (rc == 0 && req->n_files)
        json_object_object_add(obj, "files", files_json(req));
    if (rc == 0 && req->program)
        json_object_object_add(obj, "program", program_json(req->program));
    if (rc == 0 && req->outputs)
        json_object_object_add(obj, "outputs", outputs_json(req->outputs));
    /* A begin request runs nothing for its sets to serve. */
    if (rc == 0 && req->n_packages && req->session == RUNNER_SESSION_BEGIN)
        rc = err_set(err, ERR_INVALID, "runner request: packages in a session's begin request");
    if (rc == 0)
        rc = runner_packages_add(obj, "packages", req->packages, req->n_packages, err);
    if (rc == 0 && req->n_add_packages && req->session != RUNNER_SESSION_CELL)
        rc = err_set(err, ERR_INVALID, "runner request: add_packages outside a session cell");
    if (rc == 0)
        rc = runner_packages_add(obj, "add_packages", req->add_packages, req->n_add_packages, err);
    if (rc == 0 && req->session != RUNNER_SESSION_NONE) {
        json_object *session = json_object_new_object();
        json_object_object_add(session, req->session == RUNNER_SESSION_BEGIN ? "begin" : "cell",
                               json_object_new_boolean(1));
        if (req->session == RUNNER_SESSION_BEGIN && req->session_source)
            json_object_object_add(session, "source", json_object_new_string(req->session_source));
        json_object_object_add(obj, "session", session);
    }
    if (rc == 0)
        rc = frame(obj, out, err);
    json_object_put(obj);
    return rc;
}

int runner_encode_interrupt(const char *nonce_hex, struct buf *out, struct err *err)
{
    if (!nonce_valid(nonce_hex))
        return err_set(err, ERR_INVALID, "runner interrupt: nonce must be %d lowercase hex digits",
                       RUNNER_NONCE_HEX_LEN);
    char frame_text[RUNNER_MAX_CONTROL + 1];
    int n = snprintf(frame_text, sizeof(frame_text), RUNNER_PROTOCOL " interrupt %s\n", nonce_hex);
    if (n <= 0 || (size_t)n > RUNNER_MAX_CONTROL)
        return err_set(err, ERR_INTERNAL, "runner interrupt: frame over %d bytes",
                       RUNNER_MAX_CONTROL);
    if (buf_add(out, frame_text, (size_t)n) < 0)
        return err_set(err, ERR_TOO_BIG, "runner interrupt: the frame does not fit");
    return 0;
}

int runner_new_nonce(char *nonce_hex, struct err *err)
{
    unsigned char raw[RUNNER_NONCE_HEX_LEN / 2];
    if (util_random_bytes(raw, sizeof(raw)) < 0)
        return err_set(err, ERR_INTERNAL, "no random bytes for a runner nonce");
    util_hex(raw, sizeof(raw), nonce_hex);
    return 0;
}

/* ---- the stdout scanner ----------------------------------------------------
 *
 * The marker (prefix + nonce + ':') holds exactly one NUL, its first byte:
 * the nonce is hex and the copy below stops at a NUL. So a partial match
 * never overlaps a later one: after a mismatch the only possible restart is
 * at a NUL. The scanner therefore keeps one number, held_len, of bytes that
 * match the start of the marker; they are always marker[0..held_len), and
 * everything before them is program output. Between NULs it uses memchr. */

void runner_scan_init(struct runner_scan *s, const char *nonce_hex)
{
    memset(s, 0, sizeof(*s));
    memcpy(s->marker, RUNNER_RECORD_PREFIX, RUNNER_RECORD_PREFIX_LEN);
    size_t n = nonce_hex ? strnlen(nonce_hex, RUNNER_NONCE_HEX_LEN) : 0;
    memcpy(s->marker + RUNNER_RECORD_PREFIX_LEN, nonce_hex ? nonce_hex : "", n);
    s->marker[RUNNER_RECORD_PREFIX_LEN + n] = ':';
    s->marker_len = RUNNER_RECORD_PREFIX_LEN + n + 1;
    buf_init(&s->record, RUNNER_MAX_RECORD);
}

/* Emits bytes [from, to) of the stream "held bytes at entry, then data";
 * the held part is marker[0..h0). */
static int emit_span(const struct runner_scan *s, size_t h0, const char *data, size_t from,
                     size_t to, runner_emit_cb emit, void *ctx)
{
    if (from >= to || !emit)
        return 0;
    if (from < h0) {
        size_t end = to < h0 ? to : h0;
        int rc = emit(ctx, s->marker + from, end - from);
        if (rc != 0)
            return rc;
        from = end;
    }
    if (from < to) {
        int rc = emit(ctx, data + (from - h0), to - from);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* Takes bytes of the line after the marker, up to its '\n'; *used says how
 * many. *complete when the '\n' came. */
static int collect_line(struct runner_scan *s, const char *data, size_t len, size_t *used,
                        bool *complete, struct err *err)
{
    const char *nl = memchr(data, '\n', len);
    size_t take = nl ? (size_t)(nl - data) : len;
    if (buf_add(&s->record, data, take) < 0)
        return err_set(err, ERR_PROTOCOL, "runner completion record over %d bytes",
                       RUNNER_MAX_RECORD);
    *used = nl ? take + 1 : take;
    *complete = nl != NULL;
    return 0;
}

/* A complete line: a frame when it starts with a frame's letter
 * (sandbox/output/outfiles.h); anything else is the record, which ends the
 * stream (however malformed: parsing it says so). */
static int line_done(struct runner_scan *s, struct err *err)
{
    char kind = s->record.len ? s->record.data[0] : '{';
    if (kind != 'F' && kind != 'D' && kind != 'E' && kind != 'L') {
        s->done = true;
        return 0;
    }
    int rc = s->on_frame ? s->on_frame(s->on_frame_ctx, s->record.data, s->record.len, err)
                         : err_set(err, ERR_PROTOCOL, "a runner frame where none may be");
    buf_reset(&s->record);
    s->in_record = false;
    return rc < 0 ? -1 : 0;
}

void runner_scan_expect_go(struct runner_scan *s)
{
    s->go_left = RUNNER_GO_LEN;
}

bool runner_scan_started(const struct runner_scan *s)
{
    return s->go_left == 0;
}

int runner_scan_feed(struct runner_scan *s, const char *data, size_t len, runner_emit_cb emit,
                     void *ctx, struct err *err)
{
    for (; s->go_left && len; data++, len--, s->go_left--)
        if (*data != RUNNER_GO[RUNNER_GO_LEN - s->go_left])
            return err_set(err, ERR_PROTOCOL, "the runner wrote to stdout before it had the code");
    while (len && !s->done) {
        if (s->in_record) {
            size_t used = 0;
            bool complete = false;
            if (collect_line(s, data, len, &used, &complete, err) < 0)
                return -1;
            data += used;
            len -= used;
            if (complete && line_done(s, err) < 0)
                return -1;
            continue;
        }
        /* Stream positions count the held bytes first, then data: data[i]
         * is at h0 + i. Everything before the q matching bytes is output,
         * emitted in one go at the end (or when the marker completes). */
        size_t h0 = s->held_len;
        size_t q = s->held_len;
        size_t i = 0;
        bool marker = false;
        while (i < len) {
            if (q == 0) {
                const char *nul = memchr(data + i, '\0', len - i);
                if (!nul)
                    break;
                i = (size_t)(nul - data) + 1;
                q = 1;
                continue;
            }
            if (data[i] == s->marker[q]) {
                i++;
                if (++q == s->marker_len) {
                    marker = true;
                    break;
                }
                continue;
            }
            /* Mismatch: the held bytes were output; data[i] is looked at
             * anew (it may be a NUL starting the real marker). */
            q = 0;
        }
        if (!marker) {
            int rc = emit_span(s, h0, data, 0, h0 + len - q, emit, ctx);
            if (rc != 0)
                return rc;
            s->held_len = q;
            memcpy(s->held, s->marker, q);
            return 0;
        }
        int rc = emit_span(s, h0, data, 0, h0 + i - q, emit, ctx);
        if (rc != 0)
            return rc;
        s->held_len = 0;
        s->in_record = true;
        data += i;
        len -= i;
    }
    return 0;
}

int runner_scan_flush(struct runner_scan *s, runner_emit_cb emit, void *ctx)
{
    /* A record cut off by the end of the stream is not output either: those
     * bytes came from the runner, which died while writing them. */
    if (s->done || s->in_record || s->held_len == 0)
        return 0;
    size_t n = s->held_len;
    s->held_len = 0;
    return emit ? emit(ctx, s->held, n) : 0;
}

/* A line or column: a positive int, or null (0). */
static bool position(json_object *check, const char *key, int *out)
{
    json_object *v = NULL;
    *out = 0;
    if (!json_object_object_get_ex(check, key, &v) || !v)
        return true;
    if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 1 ||
        json_object_get_int64(v) > INT_MAX)
        return false;
    *out = (int)json_object_get_int64(v);
    return true;
}

static int parse_check(json_object *v, struct runner_check *out, struct err *err)
{
    json_object *ok = NULL;
    json_object *msg = NULL;
    if (!json_object_is_type(v, json_type_object) || !json_object_object_get_ex(v, "ok", &ok) ||
        !json_object_is_type(ok, json_type_boolean))
        return err_set(err, ERR_PROTOCOL, "completion record has a malformed check");
    out->present = true;
    out->ok = json_object_get_boolean(ok);
    if (out->ok)
        return 0;
    if (!position(v, "line", &out->line) || !position(v, "column", &out->column) ||
        !json_object_object_get_ex(v, "message", &msg) ||
        !json_object_is_type(msg, json_type_string))
        return err_set(err, ERR_PROTOCOL, "completion record has a malformed check");
    out->message = xstrndup(json_object_get_string(msg), (size_t)json_object_get_string_len(msg));
    return 0;
}

/* A count in the files account: a non-negative int, 0 when absent. */
static bool count(json_object *files, const char *key, long long *out)
{
    json_object *v = NULL;
    *out = 0;
    if (!json_object_object_get_ex(files, key, &v))
        return true;
    if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0)
        return false;
    *out = json_object_get_int64(v);
    return true;
}

static int parse_files(json_object *v, struct runner_files *out, struct err *err)
{
    json_object *gone = NULL;
    if (!json_object_is_type(v, json_type_object) || !count(v, "sent", &out->sent) ||
        !count(v, "left_out", &out->left_out) || !count(v, "walk_stopped", &out->walk_stopped))
        return err_set(err, ERR_PROTOCOL, "completion record has a malformed files account");
    out->cwd_gone = json_object_object_get_ex(v, "cwd_gone", &gone) &&
                    json_object_is_type(gone, json_type_boolean) && json_object_get_boolean(gone);
    out->present = true;
    return 0;
}

/* {"exit_code": N, "timed_out": bool}: the compile step failed. */
static int parse_compile_error(json_object *v, struct runner_compile_error *out, struct err *err)
{
    json_object *code = NULL;
    json_object *t = NULL;
    if (!json_object_is_type(v, json_type_object) ||
        !json_object_object_get_ex(v, "exit_code", &code) ||
        !json_object_is_type(code, json_type_int) || json_object_get_int64(code) < INT_MIN ||
        json_object_get_int64(code) > INT_MAX)
        return err_set(err, ERR_PROTOCOL, "completion record has a malformed compile_error");
    out->present = true;
    out->exit_code = (int)json_object_get_int64(code);
    out->timed_out = json_object_object_get_ex(v, "timed_out", &t) &&
                     json_object_is_type(t, json_type_boolean) && json_object_get_boolean(t);
    return 0;
}

/* {"mode": M, "interrupted": bool, "ended": "why"}, all optional: the mode
 * is one of three words, ended a text kept only escaped and cut. */
static int parse_session(json_object *v, struct runner_session_done *out, struct err *err)
{
    static const char *const modes[] = {"interpreter", "shell", "process"};
    static const enum runner_session_mode mode_of[] = {
        RUNNER_SESSION_MODE_INTERPRETER, RUNNER_SESSION_MODE_SHELL, RUNNER_SESSION_MODE_PROCESS};
    json_object *m = NULL;
    json_object *x = NULL;
    if (!json_object_is_type(v, json_type_object))
        return err_set(err, ERR_PROTOCOL, "completion record has a malformed session");
    if (json_object_object_get_ex(v, "mode", &m)) {
        const char *mode =
            json_object_is_type(m, json_type_string) ? json_object_get_string(m) : "";
        for (size_t i = 0; i < ARRAY_SIZE(modes); i++)
            if (strcmp(mode, modes[i]) == 0 &&
                strlen(modes[i]) == (size_t)json_object_get_string_len(m))
                out->mode = mode_of[i];
        if (out->mode == RUNNER_SESSION_MODE_NONE)
            return err_set(err, ERR_PROTOCOL, "completion record has an unknown session mode");
    }
    if (json_object_object_get_ex(v, "ended", &x)) {
        if (!json_object_is_type(x, json_type_string))
            return err_set(err, ERR_PROTOCOL, "completion record has a malformed session end");
        out->ended = true;
        util_escape(out->ended_why, sizeof(out->ended_why), json_object_get_string(x),
                    (size_t)json_object_get_string_len(x));
    }
    out->interrupted = json_object_object_get_ex(v, "interrupted", &x) &&
                       json_object_is_type(x, json_type_boolean) && json_object_get_boolean(x);
    out->present = true;
    return 0;
}

void runner_done_free(struct runner_done *d)
{
    free(d->runner_error);
    free(d->check.message);
    memset(d, 0, sizeof(*d));
}

int runner_scan_result(const struct runner_scan *s, struct runner_done *out, struct err *err)
{
    memset(out, 0, sizeof(*out));
    if (!s->done)
        return err_set(err, ERR_PROTOCOL, "no completion record from the runner");

    json_object *obj = NULL;
    struct json_exact why;
    int parsed =
        json_parse_exact(s->record.data, s->record.len, RUNNER_RECORD_DEPTH, 0, &obj, &why);

    int rc = -1;
    json_object *v;
    if (parsed < 0) {
        err_set(err, ERR_PROTOCOL, "completion record is not JSON: %s",
                why.status == JSON_EXACT_TRAILING     ? "trailing bytes"
                : why.status == JSON_EXACT_INCOMPLETE ? "it ends inside a value"
                                                      : why.why);
    } else if (!json_object_is_type(obj, json_type_object)) {
        err_set(err, ERR_PROTOCOL, "completion record is not a JSON object");
    } else if (!json_object_object_get_ex(obj, "exit_code", &v) ||
               !json_object_is_type(v, json_type_int) || json_object_get_int64(v) < INT_MIN ||
               json_object_get_int64(v) > INT_MAX) {
        err_set(err, ERR_PROTOCOL, "completion record has no integer exit_code");
    } else {
        out->exit_code = (int)json_object_get_int64(v);
        out->memory_error = json_object_object_get_ex(obj, "memory_error", &v) &&
                            json_object_is_type(v, json_type_boolean) && json_object_get_boolean(v);
        if (json_object_object_get_ex(obj, "typecheck_by", &v) &&
            json_object_is_type(v, json_type_string)) {
            const char *by = json_object_get_string(v);
            out->typecheck_by = strcmp(by, "warm") == 0   ? RUNNER_TYPECHECK_WARM
                                : strcmp(by, "cold") == 0 ? RUNNER_TYPECHECK_COLD
                                                          : RUNNER_TYPECHECK_NONE;
        }
        if (json_object_object_get_ex(obj, "runner_error", &v) &&
            json_object_is_type(v, json_type_string))
            out->runner_error =
                xstrndup(json_object_get_string(v), (size_t)json_object_get_string_len(v));
        rc = 0;
        if (json_object_object_get_ex(obj, "files", &v))
            rc = parse_files(v, &out->files, err);
        if (rc == 0 && json_object_object_get_ex(obj, "check", &v))
            rc = parse_check(v, &out->check, err);
        if (rc == 0 && json_object_object_get_ex(obj, "compile_error", &v))
            rc = parse_compile_error(v, &out->compile_error, err);
        if (rc == 0 && json_object_object_get_ex(obj, "session", &v))
            rc = parse_session(v, &out->session, err);
        /* A malformed part breaks the whole record: nothing of it is kept. */
        if (rc < 0)
            runner_done_free(out);
    }
    json_object_put(obj);
    return rc;
}

void runner_scan_free(struct runner_scan *s)
{
    buf_free(&s->record);
}
