#include "fake_engine/fake_engine.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "backend/docker/channel.h"
#include "base/buf.h"
#include "base/util.h"
#include "sandbox/runner/runner.h"

#define API_PREFIX "/v1.41"
#define MAX_HEAD   (16u * 1024u)
#define MAX_BODY   (1u << 20)
#define FRAME_MAX  4096u

static const char DOCKER_VERSION[] =
    "{\"Platform\":{\"Name\":\"\"},\"Components\":[{\"Name\":\"Engine\",\"Version\":"
    "\"20.10.24+dfsg1\"}],\"Version\":\"20.10.24+dfsg1\",\"ApiVersion\":\"1.41\"}";

static const char *const OP_NAMES[FAKE_OP_COUNT] = {
    "other", "ping", "version", "create", "attach", "start",
    "wait",  "kill", "inspect", "delete", "list",
};

struct container {
    char id[FAKE_ID_MAX + 1];
    char image[128];
    long long created;
    char *labels; /* JSON object text, or NULL */
    struct fake_program prog;
    bool warm;       /* a warm runner: says it is ready before it reads */
    char *preload;   /* its modules argument, or NULL */
    char *warm_args; /* the Cmd words after it, as JSON text, or NULL */
    long long memory;
    char user[32];     /* User, cut */
    char runtime[32];  /* HostConfig.Runtime, cut; "" when none */
    char *seccomp;     /* the seccomp= security option's value, or NULL */
    char *config_env;  /* Config.Env, as JSON text */
    char *request_env; /* the runner request's env, as JSON text */
    bool attached, started, running, exited, killed, removed, oom_killed;
    int oom_hidden; /* inspects left that hide oom_killed (fake_program.oom_flag_late) */
    int exit_code;
    bool code_received;
    char *code, *stdin_data;
    int wake_fd;  /* eventfd, readable once killed or removed */
    char *io_dir; /* HostConfig.Binds' host directory: streams over its socket */
    struct container *next;
};

struct fault {
    int status; /* FAKE_STALL: hold */
    char *body;
    int times; /* -1: all */
};

/* A started container whose streams go over the daemon's socket. */
struct io_thread {
    pthread_t th;
    struct io_thread *next;
};

struct conn {
    struct fake_engine *fe;
    int fd;
    pthread_t th;
    bool done;
    struct conn *next;
};

struct fake_engine {
    char dir[64];
    char path[108];
    char run_dir[80];
    int lfd;
    int stop[2]; /* readable once stopping */
    pthread_t accept_th;

    pthread_mutex_t mu;
    pthread_cond_t cond; /* anything below changed */
    bool stopping;
    struct container *head, *tail;
    unsigned long next_id;
    struct fake_program prog; /* for new containers; strings owned */
    char *version;
    bool podman;
    bool outage;
    int dropped;
    struct fault faults[FAKE_OP_COUNT];
    unsigned long release_gen;
    size_t held;
    struct fake_request *log;
    size_t n_log, cap_log;
    struct conn *conns;
    struct io_thread *io_threads;
    fake_engine_hook hook;
    void *hook_ctx;
};

/* ---- programs ------------------------------------------------------------ */

/* ---- model (mu held) ------------------------------------------------------ */

static struct container *find_locked(struct fake_engine *fe, const char *id, bool removed_too)
{
    struct container *found = NULL;
    for (struct container *c = fe->head; c; c = c->next)
        if (strcmp(c->id, id) == 0 && (removed_too || !c->removed))
            found = c;
    return found;
}

static struct container *add_locked(struct fake_engine *fe, const char *id)
{
    struct container *c = xcalloc(1, sizeof(*c));
    snprintf(c->id, sizeof(c->id), "%s", id);
    c->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    c->created = (long long)time(NULL);
    if (fe->tail)
        fe->tail->next = c;
    else
        fe->head = c;
    fe->tail = c;
    return c;
}

static void wake(struct container *c)
{
    uint64_t one = 1;
    if (c->wake_fd >= 0 && write(c->wake_fd, &one, sizeof(one)) < 0)
        return; /* the counter only saturates: it is readable already */
}

static void exit_locked(struct fake_engine *fe, struct container *c, int code, bool oom)
{
    c->running = false;
    c->exited = true;
    c->exit_code = code;
    c->oom_killed = oom;
    c->oom_hidden = oom ? c->prog.oom_flag_late : 0;
    pthread_cond_broadcast(&fe->cond);
}

/* SIGKILL: a program with a stream ends it (its thread sets the exit);
 * one without is gone at once. */
static void kill_locked(struct fake_engine *fe, struct container *c)
{
    c->killed = true;
    wake(c);
    if (!c->attached || !c->started)
        exit_locked(fe, c, 137, false);
    pthread_cond_broadcast(&fe->cond);
}

/* ---- I/O ------------------------------------------------------------------ */

/* Waits for fd to be ready; false once stopping or when wake_fd fires. */
static bool wait_fd(struct fake_engine *fe, int fd, short events, int wake_fd, int timeout_ms)
{
    return fake_wait_fd(fd, events, fe->stop[0], wake_fd, timeout_ms);
}

/* Sends all of it unless the peer went away, the fake stops or wake_fd
 * fires; returns false then. */
static bool send_all(struct fake_engine *fe, int fd, const void *data, size_t n, int wake_fd)
{
    return fake_send_all(fd, data, n, fe->stop[0], wake_fd);
}

void fake_engine_write(struct fake_engine *fe, int fd, const void *data, size_t n)
{
    send_all(fe, fd, data, n, -1);
}

ssize_t fake_engine_read(struct fake_engine *fe, int fd, void *buf, size_t n)
{
    for (;;) {
        if (!wait_fd(fe, fd, POLLIN, -1, -1))
            return -1;
        ssize_t r = recv(fd, buf, n, MSG_DONTWAIT);
        if (r < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        return r;
    }
}

static void respond_on(struct fake_engine *fe, int fd, int status, const char *ctype,
                       const char *body)
{
    size_t n = body ? strlen(body) : 0;
    char *head = xasprintf("HTTP/1.1 %d Fake\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                           "Connection: close\r\n\r\n",
                           status, ctype, n);
    send_all(fe, fd, head, strlen(head), -1);
    if (n)
        send_all(fe, fd, body, n, -1);
    free(head);
}

void fake_engine_respond(int fd, int status, const char *body)
{
    /* Without the fake: hooks answer from its threads, which stop only
     * after their answers are written. */
    size_t n = body ? strlen(body) : 0;
    char *msg = xasprintf("HTTP/1.1 %d Fake\r\nContent-Type: application/json\r\n"
                          "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                          status, n, body ? body : "");
    const char *p = msg;
    size_t left = strlen(msg);
    while (left) {
        ssize_t w = send(fd, p, left, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        p += w;
        left -= (size_t)w;
    }
    free(msg);
}

size_t fake_engine_frame(char *out, int stream, const void *data, uint32_t len)
{
    unsigned char h[8] = {(unsigned char)stream,
                          0,
                          0,
                          0,
                          (unsigned char)(len >> 24),
                          (unsigned char)(len >> 16),
                          (unsigned char)(len >> 8),
                          (unsigned char)len};
    memcpy(out, h, 8);
    if (len)
        memcpy(out + 8, data, len);
    return 8 + (size_t)len;
}

/* Writes data as frames of one stream. */
static bool send_frames(struct fake_engine *fe, int fd, int stream, const char *data, size_t n,
                        int wake_fd)
{
    char *frame = xmalloc(8 + FRAME_MAX);
    bool ok = true;
    for (size_t off = 0; ok && off < n;) {
        uint32_t take = (uint32_t)(n - off < FRAME_MAX ? n - off : FRAME_MAX);
        size_t fl = fake_engine_frame(frame, stream, data + off, take);
        ok = send_all(fe, fd, frame, fl, wake_fd);
        off += take;
    }
    free(frame);
    return ok;
}

/* ---- HTTP requests --------------------------------------------------------- */

struct request {
    struct fake_request rec;
    char *path; /* without the API prefix and query */
    char *query;
    char *body;
    size_t body_len;
    char *extra; /* bytes after the body (stdin sent early on an attach) */
    size_t extra_len;
};

static void request_free(struct request *r)
{
    free(r->path);
    free(r->query);
    free(r->body);
    free(r->extra);
}

static void header_value(const char *head, const char *name, char *out, size_t n)
{
    out[0] = '\0';
    const char *p = strcasestr(head, name);
    if (!p)
        return;
    p += strlen(name);
    while (*p == ' ')
        p++;
    size_t i = 0;
    while (p[i] && p[i] != '\r' && i + 1 < n) {
        out[i] = p[i];
        i++;
    }
    out[i] = '\0';
}

static enum fake_op classify(const char *method, const char *path, char *id, size_t idn)
{
    id[0] = '\0';
    bool get = strcmp(method, "GET") == 0, post = strcmp(method, "POST") == 0;
    if (get && strcmp(path, "/_ping") == 0)
        return FAKE_OP_PING;
    if (get && strcmp(path, "/version") == 0)
        return FAKE_OP_VERSION;
    if (post && strcmp(path, "/containers/create") == 0)
        return FAKE_OP_CREATE;
    if (get && strcmp(path, "/containers/json") == 0)
        return FAKE_OP_LIST;
    static const char pre[] = "/containers/";
    if (strncmp(path, pre, sizeof(pre) - 1) != 0)
        return FAKE_OP_OTHER;
    const char *rest = path + sizeof(pre) - 1;
    const char *slash = strchr(rest, '/');
    size_t len = slash ? (size_t)(slash - rest) : strlen(rest);
    if (len == 0 || len >= idn)
        return FAKE_OP_OTHER;
    memcpy(id, rest, len);
    id[len] = '\0';
    const char *what = slash ? slash + 1 : "";
    if (!strcmp(method, "DELETE") && !slash)
        return FAKE_OP_DELETE;
    if (get && !strcmp(what, "json"))
        return FAKE_OP_INSPECT;
    if (post && !strcmp(what, "attach"))
        return FAKE_OP_ATTACH;
    if (post && !strcmp(what, "start"))
        return FAKE_OP_START;
    if (post && !strcmp(what, "wait"))
        return FAKE_OP_WAIT;
    if (post && !strcmp(what, "kill"))
        return FAKE_OP_KILL;
    id[0] = '\0';
    return FAKE_OP_OTHER;
}

/* Reads one request; false when the client sent none. */
static bool read_request(struct fake_engine *fe, int fd, struct request *r)
{
    memset(r, 0, sizeof(*r));
    char *buf = xmalloc(MAX_HEAD + 1);
    size_t len = 0;
    char *end = NULL;
    while (!end && len < MAX_HEAD) {
        ssize_t got = fake_engine_read(fe, fd, buf + len, MAX_HEAD - len);
        if (got <= 0)
            break;
        len += (size_t)got;
        buf[len] = '\0';
        end = strstr(buf, "\r\n\r\n");
    }
    if (!end) {
        free(buf);
        return false;
    }
    *end = '\0';
    size_t head_len = (size_t)(end - buf) + 4;
    char m[16] = "", t[1024] = "", cl[32] = "", upg[32] = "";
    if (sscanf(buf, "%15s %1023s", m, t) != 2) {
        free(buf);
        return false;
    }
    header_value(buf, "\r\nContent-Length:", cl, sizeof(cl));
    header_value(buf, "\r\nContent-Type:", r->rec.content_type, sizeof(r->rec.content_type));
    header_value(buf, "\r\nUpgrade:", upg, sizeof(upg));
    snprintf(r->rec.method, sizeof(r->rec.method), "%s", m);
    snprintf(r->rec.target, sizeof(r->rec.target), "%s", t);
    r->rec.upgrade_tcp = strcmp(upg, "tcp") == 0;

    size_t want = (size_t)strtoul(cl, NULL, 10);
    if (want > MAX_BODY)
        want = MAX_BODY;
    r->body = xmalloc(want + 1);
    size_t have = len - head_len < want ? len - head_len : want;
    memcpy(r->body, buf + head_len, have);
    if (len - head_len > have) {
        r->extra_len = len - head_len - have;
        r->extra = xmemdup(buf + head_len + have, r->extra_len);
    }
    while (have < want) {
        ssize_t got = fake_engine_read(fe, fd, r->body + have, want - have);
        if (got <= 0)
            break;
        have += (size_t)got;
    }
    r->body[have] = '\0';
    r->body_len = have;
    r->rec.body_len = have < sizeof(r->rec.body) ? have : sizeof(r->rec.body) - 1;
    memcpy(r->rec.body, r->body, r->rec.body_len);
    r->rec.body[r->rec.body_len] = '\0';
    free(buf);

    const char *p = t;
    if (strncmp(p, API_PREFIX "/", sizeof(API_PREFIX)) == 0)
        p += sizeof(API_PREFIX) - 1;
    size_t plen = strcspn(p, "?");
    r->path = xstrndup(p, plen);
    r->query = xstrdup(p[plen] ? p + plen + 1 : "");
    r->rec.op = classify(m, r->path, r->rec.id, sizeof(r->rec.id));
    return true;
}

static bool query_has(const char *query, const char *kv)
{
    size_t n = strlen(kv);
    for (const char *p = query; p && *p;) {
        if (strncmp(p, kv, n) == 0 && (p[n] == '&' || p[n] == '\0'))
            return true;
        p = strchr(p, '&');
        if (p)
            p++;
    }
    return false;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The value of key in a query, percent-decoded (caller frees), or NULL. */
static char *query_get(const char *query, const char *key)
{
    size_t kn = strlen(key);
    for (const char *p = query; p && *p;) {
        if (strncmp(p, key, kn) == 0 && p[kn] == '=') {
            const char *v = p + kn + 1;
            size_t vn = strcspn(v, "&");
            char *out = xmalloc(vn + 1);
            size_t o = 0;
            for (size_t i = 0; i < vn; i++) {
                int hi = i + 2 < vn ? hex_digit(v[i + 1]) : -1;
                int lo = i + 2 < vn ? hex_digit(v[i + 2]) : -1;
                if (v[i] == '%' && hi >= 0 && lo >= 0) {
                    out[o++] = (char)(hi * 16 + lo);
                    i += 2;
                } else {
                    out[o++] = v[i] == '+' ? ' ' : v[i];
                }
            }
            out[o] = '\0';
            return out;
        }
        p = strchr(p, '&');
        if (p)
            p++;
    }
    return NULL;
}

/* {"message": msg}; takes msg. */
static char *message_body(char *msg)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "message", json_object_new_string(msg));
    char *body = xstrdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    json_object_put(o);
    free(msg);
    return body;
}

static void respond_json(struct fake_engine *fe, int fd, int status, const char *body)
{
    respond_on(fe, fd, status, "application/json", body);
}

static void no_such_container(struct fake_engine *fe, int fd, const char *id)
{
    char *b = message_body(xasprintf("No such container: %s", id));
    respond_json(fe, fd, 404, b);
    free(b);
}

/* ---- the operations --------------------------------------------------------- */

/* A runner started with one more argument after its source is a warm one
 * (src/sandbox/runner/runner.h); HostConfig's Memory and Runtime are kept
 * for the tests. */
static void read_cmd(json_object *body, struct container *c)
{
    json_object *cmd = NULL, *hc = NULL, *mem = NULL, *opts = NULL, *env = NULL, *user = NULL;
    if (json_object_object_get_ex(body, "User", &user))
        snprintf(c->user, sizeof(c->user), "%s", json_object_get_string(user));
    if (json_object_object_get_ex(body, "Env", &env))
        c->config_env = xstrdup(json_object_to_json_string_ext(env, JSON_C_TO_STRING_PLAIN));
    if (json_object_object_get_ex(body, "HostConfig", &hc) &&
        json_object_object_get_ex(hc, "Memory", &mem))
        c->memory = json_object_get_int64(mem);
    json_object *rt = NULL;
    if (hc && json_object_object_get_ex(hc, "Runtime", &rt))
        snprintf(c->runtime, sizeof(c->runtime), "%s", json_object_get_string(rt));
    json_object *binds = NULL;
    /* The channel's bind; another (the egress socket's) says nothing of
     * the streams. */
    if (hc && json_object_object_get_ex(hc, "Binds", &binds) &&
        json_object_is_type(binds, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(binds) && !c->io_dir; i++) {
            const char *b = json_object_get_string(json_object_array_get_idx(binds, i));
            const char *colon = b ? strchr(b, ':') : NULL;
            if (colon && strncmp(colon + 1, CHANNEL_TARGET ":", strlen(CHANNEL_TARGET) + 1) == 0)
                c->io_dir = xstrndup(b, (size_t)(colon - b));
        }
    }
    if (hc && json_object_object_get_ex(hc, "SecurityOpt", &opts) &&
        json_object_is_type(opts, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(opts); i++) {
            const char *o = json_object_get_string(json_object_array_get_idx(opts, i));
            if (o && strncmp(o, "seccomp=", 8) == 0 && !c->seccomp)
                c->seccomp = xstrdup(o + 8);
        }
    }
    if (!json_object_object_get_ex(body, "Cmd", &cmd) || !json_object_is_type(cmd, json_type_array))
        return;
    size_t n = json_object_array_length(cmd);
    const char **argv = xcalloc(n + 1, sizeof(*argv));
    for (size_t i = 0; i < n; i++)
        argv[i] = json_object_get_string(json_object_array_get_idx(cmd, i));
    c->warm = fake_program_warm(argv, n, &c->preload, &c->warm_args);
    free(argv);
}

static void op_create(struct fake_engine *fe, int fd, const struct request *r)
{
    json_object *body = json_tokener_parse(r->body);
    json_object *image = NULL, *labels = NULL;
    if (!json_object_is_type(body, json_type_object) ||
        !json_object_object_get_ex(body, "Image", &image) ||
        !json_object_is_type(image, json_type_string)) {
        json_object_put(body);
        respond_json(fe, fd, 400, "{\"message\":\"fake engine: create needs an Image\"}");
        return;
    }
    pthread_mutex_lock(&fe->mu);
    char id[FAKE_ID_MAX + 1];
    snprintf(id, sizeof(id), "fe%062lx", ++fe->next_id);
    struct container *c = add_locked(fe, id);
    snprintf(c->image, sizeof(c->image), "%s", json_object_get_string(image));
    if (json_object_object_get_ex(body, "Labels", &labels) &&
        json_object_is_type(labels, json_type_object))
        c->labels = xstrdup(json_object_to_json_string_ext(labels, JSON_C_TO_STRING_PLAIN));
    fake_program_copy(&c->prog, &fe->prog);
    read_cmd(body, c);
    pthread_cond_broadcast(&fe->cond);
    pthread_mutex_unlock(&fe->mu);
    json_object_put(body);
    char *answer = xasprintf("{\"Id\":\"%s\",\"Warnings\":[]}\n", id);
    respond_json(fe, fd, 201, answer);
    free(answer);
}

static void io_start_locked(struct fake_engine *fe, struct container *c);

static void op_start(struct fake_engine *fe, int fd, const char *id)
{
    pthread_mutex_lock(&fe->mu);
    struct container *c = find_locked(fe, id, false);
    int status = 204;
    if (!c) {
        status = 404;
    } else if (c->started) {
        status = 304;
    } else {
        c->started = true;
        c->running = true;
        if (c->io_dir && c->prog.no_connect) {
            exit_locked(fe, c, 127, false); /* the connector could not even start */
        } else if (c->io_dir) {
            c->attached = true; /* it has its streams: a kill ends them */
            io_start_locked(fe, c);
        } else if (!c->attached) {
            /* Nobody attached: it runs without stdin and ends at once. */
            exit_locked(fe, c, c->prog.exit_code, c->prog.oom_killed);
        }
        pthread_cond_broadcast(&fe->cond);
    }
    pthread_mutex_unlock(&fe->mu);
    if (status == 404)
        no_such_container(fe, fd, id);
    else
        respond_json(fe, fd, status, NULL);
}

static bool client_gone(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, 0) > 0;
}

static void op_wait(struct fake_engine *fe, int fd, const char *id)
{
    pthread_mutex_lock(&fe->mu);
    struct container *c = find_locked(fe, id, false);
    if (!c) {
        pthread_mutex_unlock(&fe->mu);
        no_such_container(fe, fd, id);
        return;
    }
    /* Until it stops; the client's own timeout ends the wait too (it hangs
     * up, which reads as readable). */
    while (c->running && !fe->stopping) {
        util_cond_wait_ms(&fe->cond, &fe->mu, 50);
        if (client_gone(fd))
            break;
    }
    bool done = !c->running;
    int code = c->exit_code;
    pthread_mutex_unlock(&fe->mu);
    if (!done)
        return;
    char *answer = xasprintf("{\"StatusCode\":%d,\"Error\":null}\n", code);
    respond_json(fe, fd, 200, answer);
    free(answer);
}

static void op_kill(struct fake_engine *fe, int fd, const char *id)
{
    pthread_mutex_lock(&fe->mu);
    struct container *c = find_locked(fe, id, false);
    int status = 204;
    if (!c)
        status = 404;
    else if (!c->running)
        status = fe->podman ? 500 : 409;
    else
        kill_locked(fe, c);
    pthread_mutex_unlock(&fe->mu);
    if (status == 404)
        no_such_container(fe, fd, id);
    else if (status == 500)
        respond_json(fe, fd, 500,
                     "{\"cause\":\"container state improper\",\"message\":\"container state "
                     "improper: stopped\",\"response\":500}");
    else if (status == 409)
        respond_json(fe, fd, 409, "{\"message\":\"container is not running\"}");
    else
        respond_json(fe, fd, 204, NULL);
}

static void op_delete(struct fake_engine *fe, int fd, const char *id, const char *query)
{
    bool force = query_has(query, "force=1") || query_has(query, "force=true");
    pthread_mutex_lock(&fe->mu);
    struct container *c = find_locked(fe, id, false);
    int status = 204;
    if (!c) {
        status = 404;
    } else if (c->running && !force) {
        status = 409;
    } else {
        if (c->running)
            kill_locked(fe, c);
        c->removed = true;
        wake(c);
        pthread_cond_broadcast(&fe->cond);
    }
    pthread_mutex_unlock(&fe->mu);
    if (status == 404)
        no_such_container(fe, fd, id);
    else if (status == 409)
        respond_json(fe, fd, 409, "{\"message\":\"container is running: stop it or force\"}");
    else
        respond_json(fe, fd, 204, NULL);
}

static json_object *state_json(const struct container *c)
{
    json_object *st = json_object_new_object();
    const char *status = c->running ? "running" : c->exited ? "exited" : "created";
    json_object_object_add(st, "Status", json_object_new_string(status));
    json_object_object_add(st, "Running", json_object_new_boolean(c->running));
    json_object_object_add(st, "OOMKilled",
                           json_object_new_boolean(c->oom_killed && c->oom_hidden <= 0));
    json_object_object_add(st, "ExitCode", json_object_new_int(c->exit_code));
    return st;
}

static void op_inspect(struct fake_engine *fe, int fd, const char *id)
{
    pthread_mutex_lock(&fe->mu);
    struct container *c = find_locked(fe, id, false);
    char *answer = NULL;
    if (c) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "Id", json_object_new_string(c->id));
        json_object_object_add(o, "State", state_json(c));
        json_object *hc = json_object_new_object();
        json_object_object_add(hc, "Runtime", json_object_new_string(c->runtime));
        json_object_object_add(o, "HostConfig", hc);
        if (c->exited && c->oom_hidden > 0)
            c->oom_hidden--;
        answer = xstrdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
        json_object_put(o);
    }
    pthread_mutex_unlock(&fe->mu);
    if (answer)
        respond_json(fe, fd, 200, answer);
    else
        no_such_container(fe, fd, id);
    free(answer);
}

/* Whether labels (a JSON object) match a filter "key" or "key=value". */
static bool label_matches(json_object *labels, const char *filter)
{
    const char *eq = strchr(filter, '=');
    char *key = eq ? xstrndup(filter, (size_t)(eq - filter)) : xstrdup(filter);
    json_object *v = NULL;
    bool ok = labels && json_object_object_get_ex(labels, key, &v) &&
              (!eq || (json_object_is_type(v, json_type_string) &&
                       strcmp(json_object_get_string(v), eq + 1) == 0));
    free(key);
    return ok;
}

static void op_list(struct fake_engine *fe, int fd, const char *query)
{
    char *filters = query_get(query, "filters");
    json_object *f = filters ? json_tokener_parse(filters) : NULL;
    free(filters);
    json_object *want = NULL;
    if (f)
        json_object_object_get_ex(f, "label", &want);
    bool all = query_has(query, "all=1") || query_has(query, "all=true");
    json_object *out = json_object_new_array();
    pthread_mutex_lock(&fe->mu);
    for (struct container *c = fe->head; c; c = c->next) {
        if (c->removed || (!all && !c->running))
            continue;
        json_object *labels = c->labels ? json_tokener_parse(c->labels) : NULL;
        bool match = true;
        size_t nw = json_object_is_type(want, json_type_array) ? json_object_array_length(want) : 0;
        for (size_t i = 0; i < nw; i++)
            match =
                match &&
                label_matches(labels, json_object_get_string(json_object_array_get_idx(want, i)));
        if (!match) {
            json_object_put(labels);
            continue;
        }
        json_object *e = json_object_new_object();
        json_object_object_add(e, "Id", json_object_new_string(c->id));
        json_object_object_add(e, "Created", json_object_new_int64(c->created));
        json_object_object_add(e, "Labels", labels);
        json_object_object_add(e, "State",
                               json_object_new_string(c->running ? "running" : "exited"));
        json_object_array_add(out, e);
    }
    pthread_mutex_unlock(&fe->mu);
    json_object_put(f);
    respond_json(fe, fd, 200, json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN));
    json_object_put(out);
}

/* ---- attach: the program -------------------------------------------------------- */

/* A program's streams: the attach connection (framed output, stdin after
 * the request's own bytes), or the two connections of the daemon's
 * socket (raw). */
struct pio {
    int in, out, err;
    bool framed;
    struct request *r; /* bytes read past the attach request; NULL for raw */
};

static bool pio_send(struct fake_engine *fe, const struct pio *io, const struct container *c,
                     int stream, const char *data, size_t n)
{
    if (io->framed)
        return send_frames(fe, io->out, stream, data, n, c->wake_fd);
    return n == 0 || send_all(fe, stream == 2 ? io->err : io->out, data, n, c->wake_fd);
}

/* Reads exactly n bytes of the program's stdin (the bytes that came with
 * the attach request first); false at its end, a kill, or stop. */
/* Reads exactly n bytes of the program's stdin (the bytes that came with
 * the attach request first); false at its end, a kill, or stop. */
static bool read_stdin(struct fake_engine *fe, int fd, struct container *c, struct request *r,
                       char *out, size_t n)
{
    size_t have = 0;
    if (r && r->extra_len) {
        size_t take = r->extra_len < n ? r->extra_len : n;
        memcpy(out, r->extra, take);
        memmove(r->extra, r->extra + take, r->extra_len - take);
        r->extra_len -= take;
        have = take;
    }
    return fake_recv_all(fd, out + have, n - have, fe->stop[0], c->wake_fd);
}

/* struct fake_io over a pio. */
struct pio_ctx {
    struct fake_engine *fe;
    struct container *c;
    const struct pio *io;
};

static bool pio_io_send(void *ctx, int stream, const char *data, size_t n)
{
    const struct pio_ctx *x = ctx;
    return pio_send(x->fe, x->io, x->c, stream, data, n);
}

static bool pio_io_read(void *ctx, char *out, size_t n)
{
    const struct pio_ctx *x = ctx;
    return read_stdin(x->fe, x->io->in, x->c, x->io->r, out, n);
}

static void pio_io_cut(void *ctx)
{
    const struct pio_ctx *x = ctx;
    char cut[8 + 10];
    size_t n = fake_engine_frame(cut, 1, "cut short!", 10);
    cut[7] = 64; /* the header promises 64 bytes; 10 come */
    if (x->io->framed)
        send_all(x->fe, x->io->out, cut, n, x->c->wake_fd);
    else
        pio_send(x->fe, x->io, x->c, 1, "cut short!", 10); /* a socket has no frames to cut */
}

static void pio_io_pause(void *ctx, long ms)
{
    const struct pio_ctx *x = ctx;
    wait_fd(x->fe, x->c->wake_fd, POLLIN, -1, ms < 0 ? -1 : (int)ms);
}

static bool pio_io_killed(void *ctx)
{
    const struct pio_ctx *x = ctx;
    pthread_mutex_lock(&x->fe->mu);
    bool killed = x->c->killed;
    pthread_mutex_unlock(&x->fe->mu);
    return killed;
}

static void pio_io_received(void *ctx, const struct fake_received *r)
{
    const struct pio_ctx *x = ctx;
    pthread_mutex_lock(&x->fe->mu);
    x->c->code = xstrdup(r->code);
    x->c->stdin_data = xstrdup(r->stdin_data);
    if (r->env)
        x->c->request_env = xstrdup(r->env);
    x->c->code_received = true;
    pthread_cond_broadcast(&x->fe->cond);
    pthread_mutex_unlock(&x->fe->mu);
}

/* The container's program, once started, on its streams. */
static void run_program(struct fake_engine *fe, struct container *c, const struct pio *io)
{
    struct pio_ctx x = {.fe = fe, .c = c, .io = io};
    const struct fake_io fio = {.ctx = &x,
                                .send = pio_io_send,
                                .read = pio_io_read,
                                .cut = pio_io_cut,
                                .pause = pio_io_pause,
                                .killed = pio_io_killed,
                                .received = pio_io_received};
    /* c->prog is set at create, never changed. */
    struct fake_exit ex = fake_program_run(&c->prog, c->warm, &fio);
    /* The exit is known before the stream ends, as with a real engine. */
    pthread_mutex_lock(&fe->mu);
    exit_locked(fe, c, c->killed ? 137 : ex.code, c->killed ? false : ex.oom_killed);
    pthread_mutex_unlock(&fe->mu);
}

static void op_attach(struct fake_engine *fe, int fd, const char *id, struct request *r)
{
    pthread_mutex_lock(&fe->mu);
    struct container *c = find_locked(fe, id, false);
    bool busy = c && (c->attached || c->started);
    if (c && !busy)
        c->attached = true;
    pthread_mutex_unlock(&fe->mu);
    if (!c) {
        /* Docker answers a failed attach in plain text, then closes. */
        char *a = xasprintf("HTTP/1.1 404 Not Found\r\nContent-Type: "
                            "application/vnd.docker.raw-stream\r\n\r\nNo such container: %s\r\n",
                            id);
        send_all(fe, fd, a, strlen(a), -1);
        free(a);
        return;
    }
    if (busy) {
        respond_json(fe, fd, 409, "{\"message\":\"fake engine: attach only before start\"}");
        return;
    }
    static const char head[] = "HTTP/1.1 101 UPGRADED\r\nContent-Type: "
                               "application/vnd.docker.raw-stream\r\nConnection: Upgrade\r\n"
                               "Upgrade: tcp\r\n\r\n";
    send_all(fe, fd, head, sizeof(head) - 1, -1);

    pthread_mutex_lock(&fe->mu);
    while (!c->started && !c->killed && !c->removed && !fe->stopping)
        pthread_cond_wait(&fe->cond, &fe->mu);
    bool go = c->started && !c->killed && !c->removed && !fe->stopping;
    pthread_mutex_unlock(&fe->mu);
    if (!go) {
        pthread_mutex_lock(&fe->mu);
        if (c->started && !c->exited)
            exit_locked(fe, c, 137, false);
        pthread_mutex_unlock(&fe->mu);
        return;
    }

    struct pio io = {.in = fd, .out = fd, .err = fd, .framed = true, .r = r};
    run_program(fe, c, &io);
}

/* ---- the daemon's socket instead of attach (backend/docker/channel.h) ---------------- */

static int connect_tagged(const char *dir, char tag)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir, CHANNEL_SOCKET_NAME);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        send(fd, &tag, 1, MSG_NOSIGNAL) != 1) {
        close(fd);
        return -1;
    }
    return fd;
}

struct io_start {
    struct fake_engine *fe;
    struct container *c;
};

/* What the connector does, then the program. */
static void *io_main(void *arg)
{
    struct io_start st = *(struct io_start *)arg;
    free(arg);
    int o = connect_tagged(st.c->io_dir, CHANNEL_TAG_IO);
    int e = o >= 0 ? connect_tagged(st.c->io_dir, CHANNEL_TAG_ERR) : -1;
    if (o < 0 || e < 0) {
        pthread_mutex_lock(&st.fe->mu);
        exit_locked(st.fe, st.c, 255, false); /* perl's die */
        pthread_mutex_unlock(&st.fe->mu);
    } else {
        struct pio io = {.in = o, .out = o, .err = e, .framed = false};
        run_program(st.fe, st.c, &io);
    }
    if (o >= 0)
        close(o);
    if (e >= 0)
        close(e);
    return NULL;
}

static void io_start_locked(struct fake_engine *fe, struct container *c)
{
    struct io_start *st = xmalloc(sizeof(*st));
    *st = (struct io_start){.fe = fe, .c = c};
    struct io_thread *t = xcalloc(1, sizeof(*t));
    if (pthread_create(&t->th, NULL, io_main, st) != 0) {
        free(st);
        free(t);
        exit_locked(fe, c, 125, false);
        return;
    }
    t->next = fe->io_threads;
    fe->io_threads = t;
}

/* ---- connections ---------------------------------------------------------------- */

/* Applies an injected fault; true when it answered the request. */
static bool apply_fault(struct fake_engine *fe, int fd, enum fake_op op)
{
    pthread_mutex_lock(&fe->mu);
    struct fault *f = &fe->faults[op];
    if (f->times == 0) {
        pthread_mutex_unlock(&fe->mu);
        return false;
    }
    if (f->times > 0)
        f->times--;
    int status = f->status;
    char *body = f->body
                     ? xstrdup(f->body)
                     : message_body(xasprintf("fake engine: injected %s failure", OP_NAMES[op]));
    pthread_mutex_unlock(&fe->mu);
    bool answered = true;
    if (status == FAKE_STALL) {
        fake_engine_hold(fe);
        answered = false; /* released: served as usual, if not stopping */
        pthread_mutex_lock(&fe->mu);
        if (fe->stopping)
            answered = true;
        pthread_mutex_unlock(&fe->mu);
    } else {
        respond_json(fe, fd, status, body);
    }
    free(body);
    return answered;
}

void fake_engine_hold(struct fake_engine *fe)
{
    pthread_mutex_lock(&fe->mu);
    unsigned long gen = fe->release_gen;
    fe->held++;
    pthread_cond_broadcast(&fe->cond);
    while (fe->release_gen == gen && !fe->stopping)
        pthread_cond_wait(&fe->cond, &fe->mu);
    fe->held--;
    pthread_cond_broadcast(&fe->cond);
    pthread_mutex_unlock(&fe->mu);
}

static void serve_request(struct fake_engine *fe, int fd)
{
    struct request r;
    if (!read_request(fe, fd, &r)) {
        request_free(&r);
        return;
    }
    pthread_mutex_lock(&fe->mu);
    if (fe->n_log == fe->cap_log) {
        fe->cap_log = fe->cap_log ? fe->cap_log * 2 : 64;
        fe->log = xrealloc(fe->log, fe->cap_log * sizeof(*fe->log));
    }
    fe->log[fe->n_log++] = r.rec;
    fake_engine_hook hook = fe->hook;
    void *hook_ctx = fe->hook_ctx;
    pthread_cond_broadcast(&fe->cond);
    pthread_mutex_unlock(&fe->mu);

    if ((hook && hook(fe, fd, &r.rec, hook_ctx)) || apply_fault(fe, fd, r.rec.op)) {
        request_free(&r);
        return;
    }
    const char *id = r.rec.id;
    switch (r.rec.op) {
    case FAKE_OP_PING:
        respond_on(fe, fd, 200, "text/plain", "OK");
        break;
    case FAKE_OP_VERSION: {
        pthread_mutex_lock(&fe->mu);
        char *v = xstrdup(fe->version);
        pthread_mutex_unlock(&fe->mu);
        respond_json(fe, fd, 200, v);
        free(v);
        break;
    }
    case FAKE_OP_CREATE:
        op_create(fe, fd, &r);
        break;
    case FAKE_OP_ATTACH:
        op_attach(fe, fd, id, &r);
        break;
    case FAKE_OP_START:
        op_start(fe, fd, id);
        break;
    case FAKE_OP_WAIT:
        op_wait(fe, fd, id);
        break;
    case FAKE_OP_KILL:
        op_kill(fe, fd, id);
        break;
    case FAKE_OP_INSPECT:
        op_inspect(fe, fd, id);
        break;
    case FAKE_OP_DELETE:
        op_delete(fe, fd, id, r.query);
        break;
    case FAKE_OP_LIST:
        op_list(fe, fd, r.query);
        break;
    case FAKE_OP_OTHER:
    case FAKE_OP_COUNT:
        respond_json(fe, fd, 400, "{\"message\":\"fake engine: no route\"}");
        break;
    }
    request_free(&r);
}

static void *conn_main(void *arg)
{
    struct conn *cn = arg;
    serve_request(cn->fe, cn->fd);
    shutdown(cn->fd, SHUT_RDWR);
    pthread_mutex_lock(&cn->fe->mu);
    cn->done = true;
    pthread_mutex_unlock(&cn->fe->mu);
    return NULL;
}

/* Joins the connection threads that ended (all of them when stopping). */
static void reap_conns(struct fake_engine *fe, bool all)
{
    pthread_mutex_lock(&fe->mu);
    struct conn **pp = &fe->conns;
    while (*pp) {
        struct conn *cn = *pp;
        if (!all && !cn->done) {
            pp = &cn->next;
            continue;
        }
        *pp = cn->next;
        pthread_mutex_unlock(&fe->mu);
        pthread_join(cn->th, NULL);
        close(cn->fd);
        free(cn);
        pthread_mutex_lock(&fe->mu);
        pp = &fe->conns;
    }
    pthread_mutex_unlock(&fe->mu);
}

static void *accept_main(void *arg)
{
    struct fake_engine *fe = arg;
    for (;;) {
        if (!wait_fd(fe, fe->lfd, POLLIN, -1, -1))
            break;
        int fd = accept4(fe->lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        reap_conns(fe, false);
        pthread_mutex_lock(&fe->mu);
        bool drop = fe->outage;
        if (drop) {
            fe->dropped++;
            pthread_cond_broadcast(&fe->cond);
        }
        pthread_mutex_unlock(&fe->mu);
        if (drop) {
            close(fd);
            continue;
        }
        struct conn *cn = xcalloc(1, sizeof(*cn));
        cn->fe = fe;
        cn->fd = fd;
        pthread_mutex_lock(&fe->mu);
        cn->next = fe->conns;
        fe->conns = cn;
        if (pthread_create(&cn->th, NULL, conn_main, cn) != 0) {
            fe->conns = cn->next;
            close(fd);
            free(cn);
        }
        pthread_mutex_unlock(&fe->mu);
    }
    return NULL;
}

/* ---- life ------------------------------------------------------------------------- */

static void empty_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char *p = xasprintf("%s/%s", dir, e->d_name);
        unlink(p);
        free(p);
    }
    closedir(d);
}

struct fake_engine *fake_engine_start(void)
{
    struct fake_engine *fe = xcalloc(1, sizeof(*fe));
    fe->lfd = -1;
    fe->stop[0] = fe->stop[1] = -1;
    pthread_mutex_init(&fe->mu, NULL);
    util_cond_init_monotonic(&fe->cond);
    fe->version = xstrdup(DOCKER_VERSION);
    snprintf(fe->dir, sizeof(fe->dir), "/tmp/fake_engine.XXXXXX");
    if (!mkdtemp(fe->dir))
        goto fail;
    snprintf(fe->path, sizeof(fe->path), "%.64s/engine.sock", fe->dir);
    snprintf(fe->run_dir, sizeof(fe->run_dir), "%.64s/run", fe->dir);
    if (mkdir(fe->run_dir, 0755) < 0)
        goto fail;
    /* Where the daemon writes files for the engine (the seccomp profile). */
    setenv("RUNTIME_DIRECTORY", fe->run_dir, 1);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", fe->path);
    fe->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fe->lfd < 0 || bind(fe->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        listen(fe->lfd, 128) < 0 || pipe2(fe->stop, O_CLOEXEC) < 0)
        goto fail;
    if (pthread_create(&fe->accept_th, NULL, accept_main, fe) != 0)
        goto fail;
    return fe;
fail:
    if (fe->lfd >= 0)
        close(fe->lfd);
    if (fe->stop[0] >= 0) {
        close(fe->stop[0]);
        close(fe->stop[1]);
    }
    unlink(fe->path);
    rmdir(fe->run_dir);
    rmdir(fe->dir);
    pthread_cond_destroy(&fe->cond);
    pthread_mutex_destroy(&fe->mu);
    free(fe->version);
    free(fe);
    return NULL;
}

void fake_engine_stop(struct fake_engine *fe)
{
    if (!fe)
        return;
    pthread_mutex_lock(&fe->mu);
    fe->stopping = true;
    pthread_cond_broadcast(&fe->cond);
    pthread_mutex_unlock(&fe->mu);
    if (write(fe->stop[1], "x", 1) != 1)
        abort(); /* the threads could never be told to end */
    pthread_join(fe->accept_th, NULL);
    reap_conns(fe, true);
    while (fe->io_threads) {
        struct io_thread *t = fe->io_threads;
        fe->io_threads = t->next;
        pthread_join(t->th, NULL);
        free(t);
    }
    close(fe->lfd);
    close(fe->stop[0]);
    close(fe->stop[1]);
    unlink(fe->path);
    empty_dir(fe->run_dir);
    rmdir(fe->run_dir);
    rmdir(fe->dir);
    while (fe->head) {
        struct container *c = fe->head;
        fe->head = c->next;
        if (c->wake_fd >= 0)
            close(c->wake_fd);
        free(c->labels);
        free(c->io_dir);
        free(c->seccomp);
        free(c->config_env);
        free(c->request_env);
        free(c->preload);
        free(c->warm_args);
        free(c->code);
        free(c->stdin_data);
        fake_program_free(&c->prog);
        free(c);
    }
    for (int i = 0; i < FAKE_OP_COUNT; i++)
        free(fe->faults[i].body);
    fake_program_free(&fe->prog);
    free(fe->version);
    free(fe->log);
    pthread_cond_destroy(&fe->cond);
    pthread_mutex_destroy(&fe->mu);
    free(fe);
}

const char *fake_engine_socket(const struct fake_engine *fe)
{
    return fe->path;
}

void fake_engine_set_program(struct fake_engine *fe, const struct fake_program *p)
{
    struct fake_program copy;
    fake_program_copy(&copy, p);
    pthread_mutex_lock(&fe->mu);
    struct fake_program old = fe->prog;
    fe->prog = copy;
    pthread_mutex_unlock(&fe->mu);
    fake_program_free(&old);
}

void fake_engine_set_version(struct fake_engine *fe, const char *body)
{
    char *copy = xstrdup(body);
    pthread_mutex_lock(&fe->mu);
    char *old = fe->version;
    fe->version = copy;
    pthread_mutex_unlock(&fe->mu);
    free(old);
}

void fake_engine_set_podman(struct fake_engine *fe, bool podman)
{
    pthread_mutex_lock(&fe->mu);
    fe->podman = podman;
    pthread_mutex_unlock(&fe->mu);
}

void fake_engine_fault(struct fake_engine *fe, enum fake_op op, int status, const char *body,
                       int times)
{
    char *copy = body ? xstrdup(body) : NULL;
    pthread_mutex_lock(&fe->mu);
    struct fault *f = &fe->faults[op];
    char *old = f->body;
    f->status = status;
    f->body = copy;
    f->times = times;
    pthread_mutex_unlock(&fe->mu);
    free(old);
}

void fake_engine_release(struct fake_engine *fe)
{
    pthread_mutex_lock(&fe->mu);
    fe->release_gen++;
    pthread_cond_broadcast(&fe->cond);
    pthread_mutex_unlock(&fe->mu);
}

void fake_engine_set_outage(struct fake_engine *fe, bool on)
{
    pthread_mutex_lock(&fe->mu);
    fe->outage = on;
    pthread_mutex_unlock(&fe->mu);
}

void fake_engine_add_container(struct fake_engine *fe, const char *id, long long created,
                               const char *labels, bool running)
{
    pthread_mutex_lock(&fe->mu);
    struct container *c = add_locked(fe, id);
    c->created = created;
    c->labels = labels ? xstrdup(labels) : NULL;
    c->started = running;
    c->running = running;
    c->exited = !running;
    pthread_cond_broadcast(&fe->cond);
    pthread_mutex_unlock(&fe->mu);
}

bool fake_engine_kill_waiting(struct fake_engine *fe, const char *id)
{
    pthread_mutex_lock(&fe->mu);
    struct container *c = find_locked(fe, id, false);
    bool kill = c && c->warm && c->running && !c->exited && !c->code_received;
    if (kill)
        kill_locked(fe, c);
    pthread_mutex_unlock(&fe->mu);
    return kill;
}

void fake_engine_set_hook(struct fake_engine *fe, fake_engine_hook hook, void *ctx)
{
    pthread_mutex_lock(&fe->mu);
    fe->hook = hook;
    fe->hook_ctx = ctx;
    pthread_mutex_unlock(&fe->mu);
}

/* ---- queries ---------------------------------------------------------------------- */

int fake_engine_nreq(struct fake_engine *fe)
{
    pthread_mutex_lock(&fe->mu);
    int n = (int)fe->n_log;
    pthread_mutex_unlock(&fe->mu);
    return n;
}

static int count_locked(struct fake_engine *fe, enum fake_op op, const char *id)
{
    int n = 0;
    for (size_t i = 0; i < fe->n_log; i++)
        if ((op == FAKE_OP_COUNT || fe->log[i].op == op) && (!id || !strcmp(fe->log[i].id, id)))
            n++;
    return n;
}

int fake_engine_count(struct fake_engine *fe, enum fake_op op, const char *id)
{
    pthread_mutex_lock(&fe->mu);
    int n = count_locked(fe, op, id);
    pthread_mutex_unlock(&fe->mu);
    return n;
}

bool fake_engine_last(struct fake_engine *fe, enum fake_op op, struct fake_request *out)
{
    bool found = false;
    pthread_mutex_lock(&fe->mu);
    for (size_t i = fe->n_log; i-- > 0;) {
        if (op == FAKE_OP_COUNT || fe->log[i].op == op) {
            *out = fe->log[i];
            found = true;
            break;
        }
    }
    pthread_mutex_unlock(&fe->mu);
    return found;
}

bool fake_engine_last_id(struct fake_engine *fe, char *out, size_t n)
{
    bool found = false;
    pthread_mutex_lock(&fe->mu);
    for (struct container *c = fe->head; c; c = c->next) {
        if (strncmp(c->id, "fe", 2) == 0 && strlen(c->id) == 64) {
            snprintf(out, n, "%s", c->id);
            found = true;
        }
    }
    pthread_mutex_unlock(&fe->mu);
    return found;
}

bool fake_engine_info(struct fake_engine *fe, const char *id, struct fake_container_info *out)
{
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&fe->mu);
    const struct container *c = find_locked(fe, id, true);
    if (c) {
        snprintf(out->id, sizeof(out->id), "%s", c->id);
        snprintf(out->image, sizeof(out->image), "%s", c->image);
        out->attached = c->attached;
        out->started = c->started;
        out->running = c->running;
        out->exited = c->exited;
        out->killed = c->killed;
        out->removed = c->removed;
        out->oom_killed = c->oom_killed;
        out->exit_code = c->exit_code;
        out->code_received = c->code_received;
        out->warm = c->warm;
        snprintf(out->preload, sizeof(out->preload), "%s", c->preload ? c->preload : "");
        snprintf(out->warm_args, sizeof(out->warm_args), "%s", c->warm_args ? c->warm_args : "");
        out->memory = c->memory;
        snprintf(out->user, sizeof(out->user), "%s", c->user);
        out->seccomp_inline = c->seccomp && c->seccomp[0] == '{';
        if (c->seccomp && !out->seccomp_inline)
            snprintf(out->seccomp_path, sizeof(out->seccomp_path), "%s", c->seccomp);
        snprintf(out->code, sizeof(out->code), "%s", c->code ? c->code : "");
        snprintf(out->config_env, sizeof(out->config_env), "%s",
                 c->config_env ? c->config_env : "");
        snprintf(out->request_env, sizeof(out->request_env), "%s",
                 c->request_env ? c->request_env : "");
        snprintf(out->stdin_data, sizeof(out->stdin_data), "%s",
                 c->stdin_data ? c->stdin_data : "");
    }
    pthread_mutex_unlock(&fe->mu);
    return c != NULL;
}

size_t fake_engine_live(struct fake_engine *fe)
{
    size_t n = 0;
    pthread_mutex_lock(&fe->mu);
    for (const struct container *c = fe->head; c; c = c->next)
        n += !c->removed;
    pthread_mutex_unlock(&fe->mu);
    return n;
}

static bool removed_locked(struct fake_engine *fe, const char *id)
{
    const struct container *c = find_locked(fe, id, true);
    return c && c->removed && !find_locked(fe, id, false);
}

bool fake_engine_removed(struct fake_engine *fe, const char *id)
{
    pthread_mutex_lock(&fe->mu);
    bool r = removed_locked(fe, id);
    pthread_mutex_unlock(&fe->mu);
    return r;
}

int fake_engine_dropped(struct fake_engine *fe)
{
    pthread_mutex_lock(&fe->mu);
    int n = fe->dropped;
    pthread_mutex_unlock(&fe->mu);
    return n;
}

size_t fake_engine_held(struct fake_engine *fe)
{
    pthread_mutex_lock(&fe->mu);
    size_t n = fe->held;
    pthread_mutex_unlock(&fe->mu);
    return n;
}

/* ---- waits ------------------------------------------------------------------------ */

struct cond_arg {
    enum fake_op op;
    const char *id;
    long n;
    char *out;
    size_t out_n;
};

typedef bool (*cond_fn)(struct fake_engine *fe, struct cond_arg *a);

static bool wait_cond(struct fake_engine *fe, cond_fn fn, struct cond_arg *a, int timeout_ms)
{
    double deadline = util_now_ms() + timeout_ms;
    pthread_mutex_lock(&fe->mu);
    bool ok;
    while (!(ok = fn(fe, a)) && !fe->stopping) {
        double left = deadline - util_now_ms();
        if (left <= 0)
            break;
        util_cond_wait_ms(&fe->cond, &fe->mu, left);
    }
    pthread_mutex_unlock(&fe->mu);
    return ok;
}

static bool is_removed(struct fake_engine *fe, struct cond_arg *a)
{
    return removed_locked(fe, a->id);
}

static bool is_running(struct fake_engine *fe, struct cond_arg *a)
{
    const struct container *found = NULL;
    for (const struct container *c = fe->head; c; c = c->next)
        if (c->code_received && c->running && !c->killed)
            found = c;
    if (found)
        snprintf(a->out, a->out_n, "%s", found->id);
    return found != NULL;
}

static bool has_count(struct fake_engine *fe, struct cond_arg *a)
{
    return count_locked(fe, a->op, a->id) >= a->n;
}

static bool has_dropped(struct fake_engine *fe, struct cond_arg *a)
{
    return fe->dropped >= a->n;
}

static bool has_held(struct fake_engine *fe, struct cond_arg *a)
{
    return (long)fe->held >= a->n;
}

bool fake_engine_wait_removed(struct fake_engine *fe, const char *id, int timeout_ms)
{
    struct cond_arg a = {.id = id};
    return wait_cond(fe, is_removed, &a, timeout_ms);
}

bool fake_engine_wait_running(struct fake_engine *fe, char *out, size_t n, int timeout_ms)
{
    struct cond_arg a = {.out = out, .out_n = n};
    return wait_cond(fe, is_running, &a, timeout_ms);
}

bool fake_engine_wait_count(struct fake_engine *fe, enum fake_op op, const char *id, int n,
                            int timeout_ms)
{
    struct cond_arg a = {.op = op, .id = id, .n = n};
    return wait_cond(fe, has_count, &a, timeout_ms);
}

bool fake_engine_wait_dropped(struct fake_engine *fe, int n, int timeout_ms)
{
    struct cond_arg a = {.n = n};
    return wait_cond(fe, has_dropped, &a, timeout_ms);
}

bool fake_engine_wait_held(struct fake_engine *fe, size_t n, int timeout_ms)
{
    struct cond_arg a = {.n = (long)n};
    return wait_cond(fe, has_held, &a, timeout_ms);
}
