#include "fake_backend/fake_backend_model.h"

#include <errno.h>
#include <json-c/json.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"

/* A stalled call with no deadline of its own fails after this, as one to
 * an engine that does not answer ends at the client's usual timeout; a
 * ping sooner, as the engines' short ping does. */
#define STALL_USUAL_MS 5000
#define PING_MAX_MS    1000

static const char *const STEP_NAMES[FAKE_STEP_COUNT] = {
    "ping", "version", "create", "start", "wait", "kill", "remove", "inspect", "list",
};

static struct fake_backend *fb_of(struct backend *b)
{
    return (struct fake_backend *)b;
}

struct sandbox *fb_find_locked(struct fake_backend *fb, const char *id)
{
    for (struct sandbox *s = fb->head; s; s = s->next)
        if (strcmp(s->info.id, id) == 0)
            return s;
    return NULL;
}

void fb_exit_locked(struct fake_backend *fb, struct sandbox *s, int code, bool oom)
{
    s->info.running = false;
    s->info.exited = true;
    s->info.exit_code = code;
    s->info.oom_killed = oom;
    pthread_cond_broadcast(&fb->cond);
}

/* Logs a call of step, then applies the outage and any fault: 0 to serve
 * it, -1 with err. A stall holds until released, stopping or deadline_ms
 * (util_now_ms() time; 0: none). */
static int enter(struct fake_backend *fb, enum fake_step step, const char *id, double deadline_ms,
                 struct err *err)
{
    pthread_mutex_lock(&fb->mu);
    if (fb->n_log == fb->cap_log) {
        fb->cap_log = fb->cap_log ? fb->cap_log * 2 : 64;
        fb->log = xrealloc(fb->log, fb->cap_log * sizeof(*fb->log));
    }
    struct logged *l = &fb->log[fb->n_log++];
    l->step = step;
    snprintf(l->id, sizeof(l->id), "%s", id ? id : "");
    pthread_cond_broadcast(&fb->cond);
    int rc = 0;
    struct fault *f = &fb->faults[step];
    if (fb->outage) {
        rc = err_set(err, ERR_ENGINE, "fake backend: down (an outage) at %s", STEP_NAMES[step]);
    } else if (f->times != 0) {
        if (f->times > 0)
            f->times--;
        if (f->code != ERR_OK) {
            rc = err_set(err, f->code, "fake backend: injected %s failure", STEP_NAMES[step]);
        } else {
            unsigned long gen = fb->release_gen;
            if (deadline_ms <= 0)
                deadline_ms = util_now_ms() + STALL_USUAL_MS;
            fb->held++;
            pthread_cond_broadcast(&fb->cond);
            while (fb->release_gen == gen && !fb->stopping && util_now_ms() < deadline_ms)
                util_cond_wait_ms(&fb->cond, &fb->mu, 20);
            fb->held--;
            pthread_cond_broadcast(&fb->cond);
            if (fb->release_gen == gen)
                rc = err_set(err, ERR_TIMEOUT, "fake backend: %s took too long (stalled)",
                             STEP_NAMES[step]);
        }
    }
    pthread_mutex_unlock(&fb->mu);
    return rc;
}

/* enter, then sandbox id with the lock held; NULL with err (and the lock
 * released) when the call fails or no such sandbox exists. */
static struct sandbox *enter_live(struct fake_backend *fb, enum fake_step step, const char *id,
                                  double deadline_ms, struct err *err)
{
    if (enter(fb, step, id, deadline_ms, err) < 0)
        return NULL;
    pthread_mutex_lock(&fb->mu);
    struct sandbox *s = fb_find_locked(fb, id);
    if (s && !s->info.removed)
        return s;
    pthread_mutex_unlock(&fb->mu);
    err_set(err, ERR_NOT_FOUND, "fake backend: no such sandbox: %.64s", id);
    return NULL;
}

/* ---- the operations ---------------------------------------------------------- */

static const char *fake_address(const struct backend *b)
{
    (void)b;
    return "fake";
}

static const char *fake_address_source(const struct backend *b)
{
    (void)b;
    return "the tests";
}

static int fake_ping(struct backend *b, struct err *err)
{
    return enter(fb_of(b), FAKE_STEP_PING, NULL, util_now_ms() + PING_MAX_MS, err);
}

static int fake_gone(struct backend *b, struct err *err)
{
    struct fake_backend *fb = fb_of(b);
    pthread_mutex_lock(&fb->mu);
    bool out = fb->outage;
    pthread_mutex_unlock(&fb->mu);
    if (out)
        err_set(err, ERR_ENGINE, "fake backend: down (an outage)");
    return out ? 1 : 0;
}

static int fake_version(struct backend *b, char **name, char **version, struct err *err)
{
    if (enter(fb_of(b), FAKE_STEP_VERSION, NULL, 0, err) < 0)
        return -1;
    *name = xstrdup("Fake Backend");
    *version = xstrdup("1");
    return 0;
}

static json_object *strings(const char *const *items)
{
    json_object *a = json_object_new_array();
    for (const char *const *p = items; p && *p; p++)
        json_object_array_add(a, json_object_new_string(*p));
    return a;
}

static char *describe(const struct backend_spec *spec)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "image", json_object_new_string(spec->image ? spec->image : ""));
    json_object_object_add(o, "cmd", strings(spec->cmd));
    json_object_object_add(o, "env", strings(spec->env));
    json_object_object_add(o, "memory_bytes", json_object_new_int64(spec->memory_bytes));
    json_object_object_add(o, "network", json_object_new_boolean(spec->network));
    char *s = xstrdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY));
    json_object_put(o);
    return s;
}

static char *fake_describe_create(const struct backend *b, const struct backend_spec *spec)
{
    (void)b;
    return describe(spec);
}

static bool cmd_holds(const struct backend_spec *spec, const char *needle)
{
    if (!needle)
        return false;
    json_object *a = strings(spec->cmd);
    bool hit = strstr(json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN), needle) != NULL;
    json_object_put(a);
    return hit;
}

/* A backend that cannot apply the hardening must refuse create. */
static int spec_check(const struct fake_backend *fb, const struct backend_spec *spec,
                      struct err *err)
{
    if (!spec->image || !*spec->image || !spec->cmd || !spec->cmd[0] || !spec->workdir ||
        spec->memory_bytes <= 0 || spec->pids_limit <= 0 || spec->workdir_mb <= 0)
        return err_set(err, ERR_INVALID,
                       "fake backend: a sandbox needs an image, a command, a working "
                       "directory and limits on memory, processes and its tmpfs");
    if (fb->missing_image && strcmp(fb->missing_image, spec->image) == 0)
        return err_set(err, ERR_NOT_FOUND, "image '%.128s' is not present in the fake backend",
                       spec->image);
    if (cmd_holds(spec, fb->fail_create_needle))
        return err_set(err, fb->fail_create_code, "fake backend: injected create failure");
    return 0;
}

static void spec_record(struct sandbox *s, const struct backend_spec *spec, bool fallback)
{
    struct fake_sandbox_info *in = &s->info;
    char *t = NULL;
    json_object *a = strings(spec->cmd);
    fb_copy_cut(in->cmd, sizeof(in->cmd),
                json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN));
    json_object_put(a);
    a = strings(spec->env);
    fb_copy_cut(in->env, sizeof(in->env),
                json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN));
    json_object_put(a);
    fb_copy_cut(in->image, sizeof(in->image), spec->image);
    fb_copy_cut(in->workdir, sizeof(in->workdir), spec->workdir);
    fb_copy_cut(in->runtime, sizeof(in->runtime), spec->runtime);
    fb_copy_cut(in->instance, sizeof(in->instance), spec->instance);
    fb_copy_cut(in->owner, sizeof(in->owner), spec->owner);
    fb_copy_cut(in->pool, sizeof(in->pool), spec->pool);
    fb_copy_cut(in->install_dir, sizeof(in->install_dir), spec->install_dir);
    in->uid = spec->uid;
    in->gid = spec->gid;
    in->memory_bytes = spec->memory_bytes;
    in->nano_cpus = spec->nano_cpus;
    in->cpu_shares = in->weight_now = spec->cpu_shares;
    in->pids_limit = spec->pids_limit;
    in->workdir_mb = spec->workdir_mb;
    in->workdir_exec = spec->workdir_exec;
    in->expires = spec->expires;
    in->network = spec->network;
    in->syscalls = spec->syscalls;
    in->fallback = fallback;
    size_t n = 0;
    while (spec->cmd[n])
        n++;
    char *preload = NULL;
    in->warm = fake_program_warm((const char *const *)spec->cmd, n, &preload, &t);
    fb_copy_cut(in->preload, sizeof(in->preload), preload);
    fb_copy_cut(in->warm_args, sizeof(in->warm_args), t);
    free(preload);
    free(t);
}

static int fake_create(struct backend *b, const struct backend_spec *spec, bool fallback,
                       double deadline_ms, char **id, struct backend_pending **pending,
                       struct err *err)
{
    struct fake_backend *fb = fb_of(b);
    if (enter(fb, FAKE_STEP_CREATE, NULL, deadline_ms, err) < 0)
        return -1;
    pthread_mutex_lock(&fb->mu);
    if (spec_check(fb, spec, err) < 0) {
        pthread_mutex_unlock(&fb->mu);
        return -1;
    }
    struct sandbox *s = xcalloc(1, sizeof(*s));
    snprintf(s->info.id, sizeof(s->info.id), "fb%014lx", ++fb->next_id);
    s->created = (long long)time(NULL);
    s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    s->weight_fd = -1;
    s->prog_fd = -1;
    fake_program_copy(&s->prog, &fb->prog);
    spec_record(s, spec, fallback);
    s->next = fb->head;
    fb->head = s;
    *id = xstrdup(s->info.id);
    struct backend_pending *p = xcalloc(1, sizeof(*p));
    memcpy(p->id, s->info.id, sizeof(p->id));
    *pending = p;
    int slow_ms = cmd_holds(spec, fb->slow_create_needle) ? fb->slow_create_ms : 0;
    pthread_cond_broadcast(&fb->cond);
    pthread_mutex_unlock(&fb->mu);
    if (slow_ms > 0)
        usleep((useconds_t)slow_ms * 1000);
    return 0;
}

static void fake_pending_free(struct backend_pending *p)
{
    free(p);
}

static bool readable(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return fd >= 0 && poll(&p, 1, 0) > 0;
}

static int fake_start(struct backend *b, const char *id, struct backend_pending *pending,
                      double deadline_ms, int stop_fd, struct backend_stream **out, struct err *err)
{
    struct fake_backend *fb = fb_of(b);
    fake_pending_free(pending);
    struct sandbox *s = enter_live(fb, FAKE_STEP_START, id, deadline_ms, err);
    if (!s)
        return -1;
    int rc = 0;
    if (readable(stop_fd)) {
        rc = 1;
    } else if (s->info.started || s->info.killed) {
        rc = err_set(err, ERR_ENGINE, "fake backend: sandbox %s was started already", id);
    } else if (fb->retries > 0 && !s->info.fallback) {
        fb->retries--;
        err_set(err, ERR_ENGINE, "fake backend: the sandbox's streams could not connect");
        rc = BACKEND_RETRY;
    } else {
        rc = fb_launch_locked(fb, s, out, err);
    }
    pthread_mutex_unlock(&fb->mu);
    return rc;
}

static const char *fake_io_name(struct backend *b, const struct backend_spec *spec)
{
    (void)b;
    (void)spec;
    return "pipe";
}

static void state_of(const struct sandbox *s, struct backend_state *st)
{
    *st = (struct backend_state){.running = s->info.running,
                                 .oom_killed = s->info.oom_killed,
                                 .exit_code = s->info.exit_code};
}

static int fake_wait(struct backend *b, const char *id, long timeout_ms, struct backend_state *st,
                     struct err *err)
{
    struct fake_backend *fb = fb_of(b);
    double deadline = util_now_ms() + (double)timeout_ms;
    struct sandbox *s = enter_live(fb, FAKE_STEP_WAIT, id, deadline, err);
    if (!s)
        return -1;
    while (!s->info.exited && !fb->stopping && util_now_ms() < deadline)
        util_cond_wait_ms(&fb->cond, &fb->mu, deadline - util_now_ms());
    int rc = 0;
    if (s->info.exited)
        state_of(s, st);
    else
        rc = err_set(err, ERR_TIMEOUT, "fake backend: sandbox %s still runs after %ld ms", id,
                     timeout_ms);
    pthread_mutex_unlock(&fb->mu);
    return rc;
}

/* SIGKILL: a program on its thread ends there (which sets the exit); one
 * never started is gone at once. */
static void kill_locked(struct fake_backend *fb, struct sandbox *s)
{
    s->info.killed = true;
    uint64_t one = 1;
    if (write(s->wake_fd, &one, sizeof(one)) < 0) {
        /* the counter only saturates: it is readable already */
    }
    if (!s->has_thread)
        fb_exit_locked(fb, s, 137, false);
}

static int fake_kill(struct backend *b, const char *id, struct err *err)
{
    struct fake_backend *fb = fb_of(b);
    struct sandbox *s = enter_live(fb, FAKE_STEP_KILL, id, 0, err);
    if (!s)
        return -1;
    if (!s->info.exited && !s->info.killed)
        kill_locked(fb, s);
    pthread_mutex_unlock(&fb->mu);
    return 0;
}

static int fake_remove(struct backend *b, const char *id, struct err *err)
{
    struct fake_backend *fb = fb_of(b);
    if (enter(fb, FAKE_STEP_REMOVE, id, 0, err) < 0)
        return -1;
    pthread_mutex_lock(&fb->mu);
    struct sandbox *s = fb_find_locked(fb, id);
    bool join = false;
    if (s && !s->info.removed) {
        if (!s->info.exited && !s->info.killed)
            kill_locked(fb, s);
        s->info.removed = true;
        join = s->has_thread && !s->joined;
        s->joined = true;
        pthread_cond_broadcast(&fb->cond);
    }
    pthread_mutex_unlock(&fb->mu);
    if (join)
        pthread_join(s->th, NULL);
    return 0;
}

static int fake_inspect(struct backend *b, const char *id, struct backend_state *st,
                        struct err *err)
{
    struct fake_backend *fb = fb_of(b);
    struct sandbox *s = enter_live(fb, FAKE_STEP_INSPECT, id, 0, err);
    if (!s)
        return -1;
    state_of(s, st);
    pthread_mutex_unlock(&fb->mu);
    return 0;
}

/* The weight "file" is a memfd the sandbox keeps; fake_backend_info reads
 * what was written to it. */
static int fake_weight_open(struct backend *b, const char *id, struct backend_weight *out,
                            struct err *err)
{
    struct fake_backend *fb = fb_of(b);
    pthread_mutex_lock(&fb->mu);
    struct sandbox *s = fb_find_locked(fb, id);
    int rc = 0;
    if (fb->refuse_weights)
        rc = err_set(err, ERR_IO, "the fake refuses CPU weights");
    else if (!s || !s->info.running)
        rc = err_set(err, ERR_NOT_FOUND, "no running sandbox %s", id);
    if (rc == 0 && s->weight_fd < 0)
        s->weight_fd = memfd_create("weight", MFD_CLOEXEC);
    int fd = rc == 0 ? dup(s->weight_fd) : -1;
    pthread_mutex_unlock(&fb->mu);
    if (rc < 0)
        return -1;
    if (fd < 0)
        return err_set(err, ERR_IO, "memfd: %s", strerror(errno));
    *out = (struct backend_weight){.fd = fd, .idle_fd = -1, .normal = "1024"};
    return 0;
}

static struct backend_container *list_locked(const struct fake_backend *fb, size_t *n)
{
    *n = 0;
    size_t cap = 0;
    for (const struct sandbox *s = fb->head; s; s = s->next)
        cap += !s->info.removed;
    struct backend_container *l = xcalloc(cap ? cap : 1, sizeof(*l));
    for (const struct sandbox *s = fb->head; s; s = s->next) {
        if (s->info.removed)
            continue;
        struct backend_container *c = &l[(*n)++];
        c->id = xstrdup(s->info.id);
        c->created = s->created;
        c->expires = s->info.expires;
        c->instance = s->info.instance[0] ? xstrdup(s->info.instance) : NULL;
        c->owner = s->info.owner[0] ? xstrdup(s->info.owner) : NULL;
        c->uid = s->uid_unknown ? -1 : (long long)s->info.uid;
    }
    return l;
}

static int fake_list(struct backend *b, long timeout_ms, struct backend_container **out, size_t *n,
                     struct err *err)
{
    struct fake_backend *fb = fb_of(b);
    *out = NULL;
    *n = 0;
    /* A stale answer is taken before the call stalls. */
    size_t n_stale = 0;
    struct backend_container *stale = NULL;
    pthread_mutex_lock(&fb->mu);
    if (fb->stale_lists > 0) {
        fb->stale_lists--;
        stale = list_locked(fb, &n_stale);
    }
    pthread_mutex_unlock(&fb->mu);
    if (enter(fb, FAKE_STEP_LIST, NULL, timeout_ms > 0 ? util_now_ms() + (double)timeout_ms : 0,
              err) < 0) {
        backend_container_list_free(stale, n_stale);
        return -1;
    }
    if (stale) {
        *out = stale;
        *n = n_stale;
        return 0;
    }
    pthread_mutex_lock(&fb->mu);
    *out = list_locked(fb, n);
    pthread_mutex_unlock(&fb->mu);
    return 0;
}

void fb_kill_locked(struct fake_backend *fb, struct sandbox *s)
{
    kill_locked(fb, s);
}

/* ---- the fake's life --------------------------------------------------------- */

static void fake_free(struct backend *b)
{
    struct fake_backend *fb = fb_of(b);
    pthread_mutex_lock(&fb->mu);
    fb->stopping = true;
    pthread_cond_broadcast(&fb->cond);
    while (fb->held)
        pthread_cond_wait(&fb->cond, &fb->mu);
    for (struct sandbox *s = fb->head; s; s = s->next)
        if (!s->info.exited && !s->info.killed)
            kill_locked(fb, s);
    pthread_mutex_unlock(&fb->mu);
    /* No other thread calls in any more: the list is the fake's alone. */
    for (struct sandbox *s = fb->head, *next; s; s = next) {
        next = s->next;
        if (s->has_thread && !s->joined)
            pthread_join(s->th, NULL);
        close(s->wake_fd);
        if (s->weight_fd >= 0)
            close(s->weight_fd);
        fake_program_free(&s->prog);
        free(s);
    }
    fake_program_free(&fb->prog);
    free(fb->missing_image);
    free(fb->fail_create_needle);
    free(fb->slow_create_needle);
    free(fb->log);
    pthread_cond_destroy(&fb->cond);
    pthread_mutex_destroy(&fb->mu);
    free(fb);
}

/* Its sandboxes' streams have no way to a gateway: a run with egress on
 * them fails, saying so. The check passes, so a daemon with egress lists
 * starts on it (argument and table tests). */
static int fake_egress_check(struct backend *b, const struct backend_spec *spec, struct err *err)
{
    (void)b;
    (void)spec;
    (void)err;
    return 0;
}

const struct backend_ops fake_backend_ops = {
    .kind = "fake",
    .host_dirs = true,
    .network = true,
    .free = fake_free,
    .address = fake_address,
    .address_source = fake_address_source,
    .ping = fake_ping,
    .egress_check = fake_egress_check,
    .gone = fake_gone,
    .version = fake_version,
    .describe_create = fake_describe_create,
    .create = fake_create,
    .start = fake_start,
    .pending_free = fake_pending_free,
    .io_name = fake_io_name,
    .wait = fake_wait,
    .kill = fake_kill,
    .remove = fake_remove,
    .inspect = fake_inspect,
    .list = fake_list,
    .weight_open = fake_weight_open,
    .stream_fd = fb_stream_fd,
    .stream_pending = fb_stream_pending,
    .stream_send = fb_stream_send,
    .stream_read = fb_stream_read,
    .stream_close = fb_stream_close,
};

struct fake_backend *fake_backend_new(void)
{
    struct fake_backend *fb = xcalloc(1, sizeof(*fb));
    fb->base.ops = &fake_backend_ops;
    pthread_mutex_init(&fb->mu, NULL);
    util_cond_init_monotonic(&fb->cond);
    return fb;
}

struct backend *fake_backend_get(struct fake_backend *fb)
{
    return &fb->base;
}
