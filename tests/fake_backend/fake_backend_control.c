#include "fake_backend/fake_backend_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "base/util.h"

/* ---- scripting ----------------------------------------------------------------- */

void fake_backend_set_program(struct fake_backend *fb, const struct fake_program *p)
{
    pthread_mutex_lock(&fb->mu);
    fake_program_free(&fb->prog);
    fake_program_copy(&fb->prog, p);
    pthread_mutex_unlock(&fb->mu);
}

void fake_backend_set_missing_image(struct fake_backend *fb, const char *image)
{
    pthread_mutex_lock(&fb->mu);
    free(fb->missing_image);
    fb->missing_image = image ? xstrdup(image) : NULL;
    pthread_mutex_unlock(&fb->mu);
}

void fake_backend_fail(struct fake_backend *fb, enum fake_step step, enum err_code code, int times)
{
    pthread_mutex_lock(&fb->mu);
    fb->faults[step] = (struct fault){.code = code == ERR_OK ? ERR_ENGINE : code, .times = times};
    pthread_mutex_unlock(&fb->mu);
}

void fake_backend_stall(struct fake_backend *fb, enum fake_step step, int times)
{
    pthread_mutex_lock(&fb->mu);
    fb->faults[step] = (struct fault){.code = ERR_OK, .times = times};
    pthread_mutex_unlock(&fb->mu);
}

void fake_backend_release(struct fake_backend *fb)
{
    pthread_mutex_lock(&fb->mu);
    fb->release_gen++;
    for (int i = 0; i < FAKE_STEP_COUNT; i++)
        if (fb->faults[i].code == ERR_OK)
            fb->faults[i].times = 0;
    fb->stale_lists = 0;
    pthread_cond_broadcast(&fb->cond);
    pthread_mutex_unlock(&fb->mu);
}

void fake_backend_retry(struct fake_backend *fb, int times)
{
    pthread_mutex_lock(&fb->mu);
    fb->retries = times;
    pthread_mutex_unlock(&fb->mu);
}

void fake_backend_set_outage(struct fake_backend *fb, bool on)
{
    pthread_mutex_lock(&fb->mu);
    fb->outage = on;
    pthread_mutex_unlock(&fb->mu);
}

void fake_backend_fail_create_if(struct fake_backend *fb, const char *needle, enum err_code code)
{
    pthread_mutex_lock(&fb->mu);
    free(fb->fail_create_needle);
    fb->fail_create_needle = needle ? xstrdup(needle) : NULL;
    fb->fail_create_code = code == ERR_OK ? ERR_ENGINE : code;
    pthread_mutex_unlock(&fb->mu);
}

void fake_backend_slow_create_if(struct fake_backend *fb, const char *needle, int ms)
{
    pthread_mutex_lock(&fb->mu);
    free(fb->slow_create_needle);
    fb->slow_create_needle = needle ? xstrdup(needle) : NULL;
    fb->slow_create_ms = ms;
    pthread_mutex_unlock(&fb->mu);
}

void fake_backend_stall_stale_list(struct fake_backend *fb, int times)
{
    pthread_mutex_lock(&fb->mu);
    fb->faults[FAKE_STEP_LIST] = (struct fault){.code = ERR_OK, .times = times};
    fb->stale_lists = times;
    pthread_mutex_unlock(&fb->mu);
}

void fake_backend_add(struct fake_backend *fb, const struct fake_existing *e)
{
    struct sandbox *s = xcalloc(1, sizeof(*s));
    fb_copy_cut(s->info.id, sizeof(s->info.id), e->id);
    fb_copy_cut(s->info.instance, sizeof(s->info.instance), e->instance);
    fb_copy_cut(s->info.owner, sizeof(s->info.owner), e->owner);
    s->info.expires = e->expires;
    s->info.uid = e->uid >= 0 ? (uid_t)e->uid : 0;
    s->info.gid = s->info.uid;
    s->uid_unknown = e->uid < 0;
    s->created = e->created;
    s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    s->weight_fd = -1;
    s->prog_fd = -1;
    pthread_mutex_lock(&fb->mu);
    s->next = fb->head;
    fb->head = s;
    pthread_cond_broadcast(&fb->cond);
    pthread_mutex_unlock(&fb->mu);
}

bool fake_backend_kill_waiting(struct fake_backend *fb, const char *id)
{
    pthread_mutex_lock(&fb->mu);
    bool kill = false;
    for (struct sandbox *s = id ? fb_find_locked(fb, id) : fb->head; s && !kill;
         s = id ? NULL : s->next) {
        kill = s->info.warm && s->info.running && !s->info.removed && !s->info.killed &&
               !s->info.exited && !s->info.code_received;
        if (kill)
            fb_kill_locked(fb, s);
    }
    pthread_mutex_unlock(&fb->mu);
    return kill;
}

/* ---- what happened --------------------------------------------------------------- */

static int count_locked(const struct fake_backend *fb, enum fake_step step, const char *id)
{
    int n = 0;
    for (size_t i = 0; i < fb->n_log; i++)
        n += fb->log[i].step == step && (!id || strcmp(fb->log[i].id, id) == 0);
    return n;
}

int fake_backend_count(struct fake_backend *fb, enum fake_step step, const char *id)
{
    pthread_mutex_lock(&fb->mu);
    int n = count_locked(fb, step, id);
    pthread_mutex_unlock(&fb->mu);
    return n;
}

bool fake_backend_last_id(struct fake_backend *fb, char *out, size_t n)
{
    pthread_mutex_lock(&fb->mu);
    bool ok = fb->head != NULL;
    if (ok)
        snprintf(out, n, "%s", fb->head->info.id);
    pthread_mutex_unlock(&fb->mu);
    return ok;
}

void fake_backend_refuse_weights(struct fake_backend *fb, bool refuse)
{
    pthread_mutex_lock(&fb->mu);
    fb->refuse_weights = refuse;
    pthread_mutex_unlock(&fb->mu);
}

/* s's info, with the weight as last written (lock held). */
static void info_of_locked(const struct sandbox *s, struct fake_sandbox_info *out)
{
    *out = s->info;
    char w[32] = "";
    if (s->weight_fd >= 0 && pread(s->weight_fd, w, sizeof(w) - 1, 0) > 0)
        out->weight_now = atoll(w);
}

bool fake_backend_info(struct fake_backend *fb, const char *id, struct fake_sandbox_info *out)
{
    pthread_mutex_lock(&fb->mu);
    const struct sandbox *s = fb_find_locked(fb, id);
    if (s)
        info_of_locked(s, out);
    pthread_mutex_unlock(&fb->mu);
    return s != NULL;
}

size_t fake_backend_live(struct fake_backend *fb)
{
    pthread_mutex_lock(&fb->mu);
    size_t n = 0;
    for (const struct sandbox *s = fb->head; s; s = s->next)
        n += !s->info.removed;
    pthread_mutex_unlock(&fb->mu);
    return n;
}

size_t fake_backend_held(struct fake_backend *fb)
{
    pthread_mutex_lock(&fb->mu);
    size_t n = fb->held;
    pthread_mutex_unlock(&fb->mu);
    return n;
}

struct cond_arg {
    const char *id;
    enum fake_step step;
    int n;
    char *out;
    size_t out_n;
};

typedef bool (*cond_fn)(struct fake_backend *fb, struct cond_arg *a);

static bool wait_cond(struct fake_backend *fb, cond_fn fn, struct cond_arg *a, int timeout_ms)
{
    double deadline = util_now_ms() + timeout_ms;
    pthread_mutex_lock(&fb->mu);
    bool ok;
    while (!(ok = fn(fb, a)) && util_now_ms() < deadline)
        util_cond_wait_ms(&fb->cond, &fb->mu, 50);
    pthread_mutex_unlock(&fb->mu);
    return ok;
}

static bool is_removed(struct fake_backend *fb, struct cond_arg *a)
{
    const struct sandbox *s = fb_find_locked(fb, a->id);
    return !s || s->info.removed;
}

static bool is_running(struct fake_backend *fb, struct cond_arg *a)
{
    for (const struct sandbox *s = fb->head; s; s = s->next) {
        if (s->info.code_received && s->info.running && !s->info.killed) {
            snprintf(a->out, a->out_n, "%s", s->info.id);
            return true;
        }
    }
    return false;
}

static bool has_held(struct fake_backend *fb, struct cond_arg *a)
{
    return fb->held >= (size_t)a->n;
}

static bool has_count(struct fake_backend *fb, struct cond_arg *a)
{
    return count_locked(fb, a->step, a->id) >= a->n;
}

bool fake_backend_wait_removed(struct fake_backend *fb, const char *id, int timeout_ms)
{
    struct cond_arg a = {.id = id};
    return wait_cond(fb, is_removed, &a, timeout_ms);
}

bool fake_backend_wait_running(struct fake_backend *fb, char *out, size_t n, int timeout_ms)
{
    struct cond_arg a = {.out = out, .out_n = n};
    return wait_cond(fb, is_running, &a, timeout_ms);
}

bool fake_backend_wait_held(struct fake_backend *fb, size_t n, int timeout_ms)
{
    struct cond_arg a = {.n = (int)n};
    return wait_cond(fb, has_held, &a, timeout_ms);
}

bool fake_backend_wait_count(struct fake_backend *fb, enum fake_step step, const char *id, int n,
                             int timeout_ms)
{
    struct cond_arg a = {.id = id, .step = step, .n = n};
    return wait_cond(fb, has_count, &a, timeout_ms);
}

struct fake_sandbox_info *fake_backend_all(struct fake_backend *fb, size_t *n)
{
    pthread_mutex_lock(&fb->mu);
    size_t k = 0;
    for (const struct sandbox *s = fb->head; s; s = s->next)
        k++;
    struct fake_sandbox_info *out = xcalloc(k ? k : 1, sizeof(*out));
    /* The list is newest first. */
    size_t i = k;
    for (const struct sandbox *s = fb->head; s; s = s->next)
        info_of_locked(s, &out[--i]);
    pthread_mutex_unlock(&fb->mu);
    *n = k;
    return out;
}
