/* The fake backend's insides, shared by its files: fake_backend.c (the
 * operations), fake_backend_streams.c (both ends of a sandbox's streams
 * and the program's thread), fake_backend_control.c (what tests script
 * and observe). Nothing outside tests/fake_backend includes it. */
#ifndef MCPSBX_TEST_FAKE_BACKEND_MODEL_H
#define MCPSBX_TEST_FAKE_BACKEND_MODEL_H

#include <pthread.h>
#include <stdint.h>

#include "fake_backend/fake_backend.h"

/* A frame: the stream's number, then the payload's length (big-endian). */
#define FRAME_HEAD 5u

struct sandbox {
    struct fake_sandbox_info info; /* under the lock */
    struct fake_program prog;      /* set at create, never changed */
    long long created;
    int wake_fd;   /* eventfd: readable once killed */
    int prog_fd;   /* the program's end of the streams; its thread closes it */
    int weight_fd; /* a memfd standing for its cgroup's weight file; -1 until opened */
    pthread_t th;
    bool has_thread, joined;
    struct sandbox *next;
    bool uid_unknown; /* added (fake_backend_add) without one: listed as -1 */
};

struct fault {
    enum err_code code; /* ERR_OK: a stall */
    int times;          /* -1: all */
};

struct logged {
    enum fake_step step;
    char id[FAKE_BACKEND_ID_MAX + 1];
};

struct fake_backend {
    struct backend base;
    pthread_mutex_t mu;
    pthread_cond_t cond; /* anything below changed */
    struct sandbox *head;
    unsigned long next_id;
    struct fake_program prog;
    char *missing_image;
    struct fault faults[FAKE_STEP_COUNT];
    int retries;
    bool outage, stopping;
    unsigned long release_gen;
    size_t held;
    struct logged *log;
    size_t n_log, cap_log;
    char *fail_create_needle; /* fake_backend_fail_create_if */
    enum err_code fail_create_code;
    char *slow_create_needle; /* fake_backend_slow_create_if */
    int slow_create_ms;
    int stale_lists;     /* fake_backend_stall_stale_list */
    bool refuse_weights; /* fake_backend_refuse_weights */
};

struct backend_pending {
    char id[FAKE_BACKEND_ID_MAX + 1];
};

struct fake_stream {
    struct backend_stream base;
    int fd;
    unsigned char head[FRAME_HEAD];
    size_t head_have;
    uint32_t left; /* payload bytes of the current frame still to come */
    char *chunk;
};

/* The program's end of a sandbox's streams, on its thread. */
struct program_ctx {
    struct fake_backend *fb;
    struct sandbox *s;
};

extern const struct backend_ops fake_backend_ops;

/* Lock held: */
struct sandbox *fb_find_locked(struct fake_backend *fb, const char *id);
void fb_exit_locked(struct fake_backend *fb, struct sandbox *s, int code, bool oom);
/* Starts s's program on a thread of its own with one end of a socketpair;
 * *out gets the other. */
int fb_launch_locked(struct fake_backend *fb, struct sandbox *s, struct backend_stream **out,
                     struct err *err);
/* SIGKILL, as backend_kill does it. */
void fb_kill_locked(struct fake_backend *fb, struct sandbox *s);

void fb_copy_cut(char *dst, size_t n, const char *src);

int fb_stream_fd(const struct backend_stream *s);
bool fb_stream_pending(const struct backend_stream *s);
int fb_stream_send(struct backend_stream *bs, const void *data, size_t n, long timeout_ms,
                   struct err *err);
long fb_stream_read(struct backend_stream *bs, backend_output_cb cb, void *ctx, struct err *err);
void fb_stream_close(struct backend_stream *bs);

#endif
