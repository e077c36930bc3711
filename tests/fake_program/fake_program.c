#include "fake_program/fake_program.h"

#include <errno.h>
#include <json-c/json.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/buf.h"
#include "base/util.h"
#include "sandbox/runner/runner.h"

#define MAX_RUNNER_IN (8u << 20)
#define MAX_ECHO_LINE 4096u

void fake_program_copy(struct fake_program *dst, const struct fake_program *src)
{
    *dst = *src;
    dst->out = src->out ? xmemdup(src->out, src->out_len) : NULL;
    dst->err = src->err ? xmemdup(src->err, src->err_len) : NULL;
    dst->runner_error = src->runner_error ? xstrdup(src->runner_error) : NULL;
    dst->record = src->record ? xstrdup(src->record) : NULL;
}

void fake_program_free(struct fake_program *p)
{
    free((void *)(uintptr_t)p->out);
    free((void *)(uintptr_t)p->err);
    free((void *)(uintptr_t)p->runner_error);
    free((void *)(uintptr_t)p->record);
    memset(p, 0, sizeof(*p));
}

static bool emit(const struct fake_io *io, int stream, const char *data, size_t n)
{
    return n == 0 || io->send(io->ctx, stream, data, n);
}

/* A frame the program read: a request, or (session mode) a control frame. */
enum frame_kind { FRAME_BAD, FRAME_REQUEST, FRAME_INTERRUPT };

struct frame {
    char nonce[RUNNER_NONCE_HEX_LEN + 1];
    bool outputs;     /* the request asked for output files */
    bool begin, cell; /* its "session" */
    char *code;       /* a copy of its code */
};

static void frame_free(struct frame *f)
{
    free(f->code);
    f->code = NULL;
}

static void request_session(json_object *o, struct frame *f)
{
    json_object *s = NULL;
    if (!json_object_object_get_ex(o, "session", &s))
        return;
    f->begin = json_object_object_get_ex(s, "begin", NULL);
    f->cell = json_object_object_get_ex(s, "cell", NULL);
}

/* The request's JSON (len bytes to come) into f; false when it did not
 * come whole or is not a request. */
static bool read_request_body(const struct fake_io *io, size_t len, struct frame *f)
{
    if (len > MAX_RUNNER_IN)
        return false;
    char *json = xmalloc(len + 1);
    bool ok = io->read(io->ctx, json, len);
    json[ok ? len : 0] = '\0';
    json_object *o = ok ? json_tokener_parse(json) : NULL;
    free(json);
    json_object *n = NULL, *code = NULL, *in = NULL, *env = NULL, *prog = NULL;
    ok = json_object_object_get_ex(o, "nonce", &n) && json_object_is_type(n, json_type_string) &&
         json_object_get_string_len(n) == RUNNER_NONCE_HEX_LEN &&
         json_object_object_get_ex(o, "code", &code);
    if (ok) {
        memcpy(f->nonce, json_object_get_string(n), RUNNER_NONCE_HEX_LEN + 1);
        f->outputs = json_object_object_get_ex(o, "outputs", NULL);
        f->code = xstrdup(json_object_get_string(code));
        request_session(o, f);
        json_object_object_get_ex(o, "stdin", &in);
        struct fake_received r = {.code = f->code,
                                  .stdin_data = in ? json_object_get_string(in) : ""};
        if (json_object_object_get_ex(o, "env", &env))
            r.env = json_object_to_json_string_ext(env, JSON_C_TO_STRING_PLAIN);
        if (json_object_object_get_ex(o, "program", &prog))
            r.program = json_object_to_json_string_ext(prog, JSON_C_TO_STRING_PLAIN);
        if (io->received)
            io->received(io->ctx, &r);
    }
    json_object_put(o);
    return ok;
}

/* Reads a runner request ("mcpsbx/1 <len>\n" + JSON) or a control frame
 * ("mcpsbx/1 interrupt <nonce>\n") into f. */
static enum frame_kind read_frame(const struct fake_io *io, struct frame *f)
{
    *f = (struct frame){.outputs = false};
    char header[RUNNER_MAX_CONTROL + 8];
    size_t hn = 0;
    for (;;) {
        if (hn + 1 >= sizeof(header) || !io->read(io->ctx, header + hn, 1))
            return FRAME_BAD;
        if (header[hn] == '\n')
            break;
        hn++;
    }
    header[hn] = '\0';
    static const char proto[] = RUNNER_PROTOCOL " ";
    static const char intr[] = RUNNER_PROTOCOL " interrupt ";
    if (strncmp(header, intr, sizeof(intr) - 1) == 0) {
        const char *nonce = header + sizeof(intr) - 1;
        if (strlen(nonce) != RUNNER_NONCE_HEX_LEN)
            return FRAME_BAD;
        memcpy(f->nonce, nonce, RUNNER_NONCE_HEX_LEN + 1);
        return FRAME_INTERRUPT;
    }
    if (strncmp(header, proto, sizeof(proto) - 1) != 0)
        return FRAME_BAD;
    size_t len = (size_t)strtoul(header + sizeof(proto) - 1, NULL, 10);
    if (!read_request_body(io, len, f)) {
        frame_free(f);
        return FRAME_BAD;
    }
    return FRAME_REQUEST;
}

/* outputs: the request asked for output files, which the record then
 * accounts for (none sent), as a runner's does. */
static bool send_record(const struct fake_program *p, const struct fake_io *io, const char *nonce,
                        bool outputs, const char *session)
{
    json_object *rec = json_object_new_object();
    if (outputs) {
        json_object *files = json_object_new_object();
        json_object_object_add(files, "sent", json_object_new_int(0));
        json_object_object_add(files, "left_out", json_object_new_int(0));
        json_object_object_add(files, "walk_stopped", json_object_new_int(0));
        json_object_object_add(rec, "files", files);
    }
    json_object_object_add(rec, "exit_code", json_object_new_int(p->exit_code));
    json_object_object_add(rec, "memory_error", json_object_new_boolean(p->memory_error));
    if (p->runner_error)
        json_object_object_add(rec, "runner_error", json_object_new_string(p->runner_error));
    if (session)
        json_object_object_add(rec, "session", json_tokener_parse(session));
    if (p->end == FAKE_END_BIG_RECORD) {
        char *pad = xmalloc(RUNNER_MAX_RECORD + 2);
        memset(pad, 'x', RUNNER_MAX_RECORD + 1);
        pad[RUNNER_MAX_RECORD + 1] = '\0';
        json_object_object_add(rec, "pad", json_object_new_string(pad));
        free(pad);
    }
    const char *js =
        p->record ? p->record : json_object_to_json_string_ext(rec, JSON_C_TO_STRING_PLAIN);
    if (p->end == FAKE_END_BAD_RECORD)
        js = "{\"exit_code\":";
    struct buf line;
    buf_init(&line, RUNNER_MAX_RECORD * 4);
    bool ok = buf_add(&line, RUNNER_RECORD_PREFIX, RUNNER_RECORD_PREFIX_LEN) == 0 &&
              buf_addf(&line, "%s:%s\n", nonce, js) == 0;
    json_object_put(rec);
    /* stderr first, then stdout, as the runners do. */
    ok = ok && emit(io, 2, line.data, line.len) && emit(io, 1, line.data, line.len);
    buf_free(&line);
    return ok;
}

/* The plain program: one line of stdin back on stdout. */
static struct fake_exit run_echo(const struct fake_program *p, const struct fake_io *io)
{
    struct fake_exit ex = {.code = p->exit_code, .oom_killed = p->oom_killed};
    char line[MAX_ECHO_LINE];
    size_t n = 0;
    while (n < sizeof(line) && io->read(io->ctx, line + n, 1))
        if (line[n++] == '\n')
            break;
    bool streaming =
        emit(io, 1, line, n) && emit(io, 1, p->out, p->out_len) && emit(io, 2, p->err, p->err_len);
    if (streaming && p->end == FAKE_END_CUT) {
        io->cut(io->ctx);
        return ex;
    }
    if (p->run_ms != 0)
        io->pause(io->ctx, p->run_ms);
    return ex;
}

/* A session cell's record: exit code and its "session" (JSON or NULL). */
static bool cell_record(const struct fake_io *io, const struct frame *f, int exit_code,
                        const char *session)
{
    struct fake_program rec = {.exit_code = exit_code};
    return send_record(&rec, io, f->nonce, f->outputs, session);
}

/* Reads frames until an interrupt naming the cell f (true), or the end of
 * stdin or a kill (false); with ignore, never honours one. */
static bool wait_interrupt(const struct fake_io *io, const struct frame *f, bool ignore)
{
    for (;;) {
        struct frame g;
        enum frame_kind k = read_frame(io, &g);
        frame_free(&g);
        if (k == FRAME_BAD)
            return false;
        if (k == FRAME_INTERRUPT && !ignore && strcmp(g.nonce, f->nonce) == 0)
            return true;
    }
}

/* One cell as its script says; false when the program is to exit. */
static bool run_cell(const struct fake_io *io, enum fake_cell c, const struct frame *f)
{
    static const char stray[] = "stray output while idle\n";
    switch (c) {
    case FAKE_CELL_UNTIL_INTERRUPT:
        return wait_interrupt(io, f, false) && cell_record(io, f, 130, "{\"interrupted\":true}");
    case FAKE_CELL_IGNORE_INTERRUPT:
        (void)wait_interrupt(io, f, true);
        return false;
    case FAKE_CELL_EXIT:
        return false;
    case FAKE_CELL_ECHO:
    case FAKE_CELL_THEN_EXIT:
    case FAKE_CELL_THEN_STRAY:
        break;
    }
    if (!emit(io, 1, f->code, strlen(f->code)) || !cell_record(io, f, 0, NULL))
        return false;
    if (c == FAKE_CELL_THEN_STRAY)
        (void)(emit(io, 1, stray, sizeof(stray) - 1) && emit(io, 2, stray, sizeof(stray) - 1));
    return c == FAKE_CELL_ECHO;
}

/* Session mode, once the begin request first came: a record, then cells
 * until stdin ends or a cell's script ends the program. */
static struct fake_exit run_session(const struct fake_program *p, bool warm,
                                    const struct fake_io *io, const struct frame *first)
{
    struct fake_exit ex = {.code = p->exit_code, .oom_killed = p->oom_killed};
    if (!first->begin)
        return (struct fake_exit){.code = 76};
    if (warm && p->warm_dies)
        return (struct fake_exit){.code = 137};
    if (warm)
        emit(io, 1, RUNNER_GO, RUNNER_GO_LEN);
    if (!cell_record(io, first, 0, "{\"mode\":\"process\"}"))
        return ex;
    for (size_t i = 0;;) {
        struct frame f;
        enum frame_kind k = read_frame(io, &f);
        if (k == FRAME_BAD)
            return (struct fake_exit){.code = 0}; /* the end of its stdin */
        if (k == FRAME_INTERRUPT)
            continue; /* no cell runs: ignored */
        enum fake_cell c = i < p->n_cells ? p->cells[i] : FAKE_CELL_ECHO;
        i++;
        bool go_on = f.cell && run_cell(io, c, &f);
        frame_free(&f);
        if (!go_on)
            return ex;
    }
}

struct fake_exit fake_program_run(const struct fake_program *p, bool warm, const struct fake_io *io)
{
    if (p->echo_line)
        return run_echo(p, io);
    struct fake_exit ex = {.code = p->exit_code, .oom_killed = p->oom_killed};
    if (warm)
        emit(io, 1, RUNNER_READY, RUNNER_READY_LEN);
    struct frame f;
    if (read_frame(io, &f) != FRAME_REQUEST) {
        /* The runner's answer to a request it cannot read. */
        static const char msg[] = "mcpsbx runner: bad request\n";
        emit(io, 2, msg, sizeof(msg) - 1);
        return (struct fake_exit){.code = 76};
    }
    if (p->session) {
        ex = run_session(p, warm, io, &f);
        frame_free(&f);
        return ex;
    }
    frame_free(&f);
    if (warm && p->warm_dies)
        return (struct fake_exit){.code = 137};
    if (warm)
        emit(io, 1, RUNNER_GO, RUNNER_GO_LEN);
    bool streaming = emit(io, 1, p->out, p->out_len) && emit(io, 2, p->err, p->err_len);
    if (streaming && p->end == FAKE_END_CUT) {
        io->cut(io->ctx);
        return ex;
    }
    if (p->run_ms != 0)
        io->pause(io->ctx, p->run_ms);
    if (!io->killed(io->ctx) && streaming &&
        (p->end == FAKE_END_RECORD || p->end == FAKE_END_BIG_RECORD ||
         p->end == FAKE_END_BAD_RECORD))
        send_record(p, io, f.nonce, f.outputs, NULL);
    return ex;
}

bool fake_program_warm(const char *const *argv, size_t n, char **preload, char **warm_args)
{
    *preload = *warm_args = NULL;
    for (size_t i = 0; i + 1 < n; i++) {
        const char *a = argv[i];
        if (a && (strncmp(a, "# mcp-sandboxd in-container runner", 34) == 0 ||
                  strncmp(a, "# mcp-sandboxd generic in-container runner", 42) == 0 ||
                  strncmp(a, "// mcp-sandboxd in-container runner", 35) == 0)) {
            *preload = xstrdup(argv[i + 1] ? argv[i + 1] : "");
            json_object *rest = json_object_new_array();
            for (size_t k = i + 2; k < n; k++)
                json_object_array_add(rest, json_object_new_string(argv[k] ? argv[k] : ""));
            *warm_args = xstrdup(json_object_to_json_string_ext(rest, JSON_C_TO_STRING_PLAIN));
            json_object_put(rest);
            return true;
        }
    }
    return false;
}

/* ---- waiting and moving bytes ---------------------------------------------------- */

bool fake_wait_fd(int fd, short events, int wake_a, int wake_b, int timeout_ms)
{
    struct pollfd p[3] = {{.fd = fd, .events = events},
                          {.fd = wake_a, .events = POLLIN},
                          {.fd = wake_b, .events = POLLIN}};
    for (;;) {
        int r = poll(p, 3, timeout_ms); /* poll skips the entries of fd -1 */
        if (r < 0 && errno == EINTR)
            continue;
        return r > 0 && !(p[1].revents & POLLIN) && !(p[2].revents & POLLIN);
    }
}

bool fake_send_all(int fd, const void *data, size_t n, int wake_a, int wake_b)
{
    const char *p = data;
    while (n) {
        if (!fake_wait_fd(fd, POLLOUT, wake_a, wake_b, -1))
            return false;
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

bool fake_recv_all(int fd, void *out, size_t n, int wake_a, int wake_b)
{
    char *p = out;
    while (n) {
        if (!fake_wait_fd(fd, POLLIN, wake_a, wake_b, -1))
            return false;
        ssize_t got = recv(fd, p, n, MSG_DONTWAIT);
        if (got < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (got <= 0)
            return false;
        p += got;
        n -= (size_t)got;
    }
    return true;
}
