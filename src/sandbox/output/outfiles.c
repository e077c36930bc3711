#include "sandbox/output/outfiles.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "base/json.h"
#include "base/util.h"
#include "sandbox/output/redact.h"
#include "sandbox/output/workpath.h"

/* What the runner's words may take in a result. */
#define LEFT_PATH_MAX   256
#define LEFT_REASON_MAX 200
/* A returned file's name as shown: a checked path, with room for its
 * escapes and marks. */
#define SHOWN_PATH_MAX (WORKPATH_MAX_BYTES * 2)

void outfiles_init(struct outfiles *o, const struct outfiles_caps *caps,
                   const struct redactor *redactor)
{
    memset(o, 0, sizeof(*o));
    o->caps = *caps;
    o->redactor = redactor;
    buf_init(&o->cur_data, 0);
}

static void outfile_free(struct outfile *f)
{
    free(f->path);
    free(f->sent_path);
    free(f->data);
    memset(f, 0, sizeof(*f));
}

void outfiles_free(struct outfiles *o)
{
    for (size_t i = 0; i < o->n; i++)
        outfile_free(&o->v[i]);
    free(o->v);
    for (size_t i = 0; i < o->n_left; i++) {
        free(o->left[i].path);
        free(o->left[i].reason);
    }
    outfile_free(&o->cur);
    buf_free(&o->cur_data);
    memset(o, 0, sizeof(*o));
}

static bool plot_name(const char *p)
{
    size_t n = strlen(OUTFILES_PLOT_PREFIX);
    if (strncmp(p, OUTFILES_PLOT_PREFIX, n) != 0 || p[n] < '1' || p[n] > '9')
        return false;
    p += n;
    size_t digits = strspn(p, "0123456789");
    return digits <= 6 && strcmp(p + digits, ".png") == 0;
}

static json_object *parse_object(const char *text, size_t len)
{
    json_object *v = NULL;
    struct json_exact why;
    if (json_parse_exact(text, len, 2, 0, &v, &why) < 0 ||
        !json_object_is_type(v, json_type_object)) {
        json_object_put(v);
        return NULL;
    }
    return v;
}

/* -1 when absent or not a non-negative int. */
static long long get_size(json_object *o, const char *key)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int) ||
        json_object_get_int64(v) < 0)
        return -1;
    return json_object_get_int64(v);
}

/* A header frame: a JSON object naming a path and a word (a file's
 * kind, a left-out file's reason). */
struct header {
    json_object *obj; /* owned; NULL when the frame is not an object */
    const char *path, *word;
    size_t path_len, word_len;
};

/* 0 when the frame holds both strings, else -1; h->obj is put by the
 * caller either way. */
static int read_header(const char *text, size_t len, const char *word_key, struct header *h)
{
    *h = (struct header){.obj = parse_object(text, len)};
    if (h->obj) {
        h->path = json_get_string(h->obj, "path", &h->path_len);
        h->word = json_get_string(h->obj, word_key, &h->word_len);
    }
    return h->path && h->word ? 0 : -1;
}

static int begin_file(struct outfiles *o, const char *text, size_t len, struct err *err)
{
    if (o->open)
        return err_set(err, ERR_PROTOCOL, "a file began before the last one ended");
    struct header h;
    bool whole = read_header(text, len, "kind", &h) == 0;
    long long size = whole ? get_size(h.obj, "size") : -1;
    const char *path = h.path, *kind = h.word;
    size_t plen = h.path_len;
    int rc = -1;
    char *norm = NULL;
    struct err why = ERR_INIT;
    if (size < 0) {
        err_set(err, ERR_PROTOCOL, "a malformed file header");
        goto out;
    }
    bool plot = strcmp(kind, "plot") == 0;
    if (!plot && strcmp(kind, "file") != 0) {
        err_set(err, ERR_PROTOCOL, "a file of an unknown kind");
        goto out;
    }
    if (plot ? !plot_name(path) || strlen(path) != plen
             : workpath_output(path, plen, &norm, &why) < 0 || strcmp(norm, path) != 0) {
        err_set(err, ERR_PROTOCOL, "a file with a bad path (%s)",
                plot               ? "not a plot name"
                : err_msg(&why)[0] ? err_msg(&why)
                                   : "not normalized");
        goto out;
    }
    for (size_t i = 0; i < o->n; i++) {
        if (strcmp(o->v[i].sent_path, path) == 0 && o->v[i].plot == plot) {
            err_set(err, ERR_PROTOCOL, "the same file twice");
            goto out;
        }
    }
    size_t count = plot ? o->n_plots : o->n - o->n_plots;
    size_t max_count = plot ? o->caps.max_plots : o->caps.max_files;
    size_t max_bytes = plot ? o->caps.max_plot_bytes : o->caps.max_file_bytes;
    if (count >= max_count || (unsigned long long)size > max_bytes ||
        (unsigned long long)size > o->caps.max_total_bytes - o->total) {
        err_set(err, ERR_PROTOCOL, "a file over the caps the daemon asked for");
        goto out;
    }
    o->cur.path = xstrndup(path, plen);
    o->cur.plot = plot;
    o->cur.size = (size_t)size;
    buf_free(&o->cur_data);
    buf_init(&o->cur_data, (size_t)size);
    codec_sha256_init(&o->cur_sha);
    o->open = true;
    rc = 0;
out:
    free(norm);
    err_clear(&why);
    json_object_put(h.obj);
    return rc;
}

static int file_data(struct outfiles *o, const char *text, size_t len, struct err *err)
{
    if (!o->open)
        return err_set(err, ERR_PROTOCOL, "file bytes outside a file");
    size_t before = o->cur_data.len;
    if (codec_base64_decode(text, len, &o->cur_data) < 0)
        return err_set(err, ERR_PROTOCOL, "file bytes that are not base64, or more than declared");
    if (o->cur_data.len > before)
        codec_sha256_update(&o->cur_sha, o->cur_data.data + before, o->cur_data.len - before);
    return 0;
}

/* What a kept file shows: its bytes redacted (its digest then theirs),
 * its name redacted and escaped, and unique among those kept. */
static void keep_shown(const struct outfiles *o, struct outfile *f)
{
    if (o->redactor) {
        size_t n = 0;
        char *data = redact_bytes(o->redactor, f->data, f->size, &n);
        if (n != f->size || memcmp(data, f->data, n) != 0) {
            explicit_bzero(f->data, f->size);
            free(f->data);
            f->data = data;
            f->size = n;
            codec_sha256_hex(f->data, f->size, f->sha256);
        } else {
            free(data);
        }
    }
    f->sent_path = f->path;
    if (f->plot) {
        f->path = xstrdup(f->sent_path); /* plot-<n>.png */
        return;
    }
    char *base = redact_text(o->redactor, f->sent_path, strlen(f->sent_path), SHOWN_PATH_MAX);
    char *shown = xstrdup(base);
    for (size_t k = 2;; k++) {
        bool taken = false;
        for (size_t i = 0; i < o->n && !taken; i++)
            taken = !o->v[i].plot && strcmp(o->v[i].path, shown) == 0;
        if (!taken)
            break;
        free(shown);
        shown = xasprintf("%s~%zu", base, k);
    }
    free(base);
    f->path = shown;
}

static int end_file(struct outfiles *o, const char *text, size_t len, struct err *err)
{
    if (!o->open)
        return err_set(err, ERR_PROTOCOL, "a file ended that never began");
    if (o->cur_data.len != o->cur.size)
        return err_set(err, ERR_PROTOCOL, "a file of %zu bytes declared %zu", o->cur_data.len,
                       o->cur.size);
    char hex[CODEC_SHA256_HEX_LEN + 1];
    codec_sha256_hex_final(&o->cur_sha, hex);
    if (len != CODEC_SHA256_HEX_LEN || memcmp(hex, text, len) != 0)
        return err_set(err, ERR_PROTOCOL, "a file whose SHA-256 does not match its bytes");
    struct outfile f = o->cur;
    memcpy(f.sha256, hex, sizeof(hex));
    size_t n = 0;
    f.data = buf_take(&o->cur_data, &n);
    o->total += f.size; /* as sent: the caps are on what the sandbox sends */
    keep_shown(o, &f);
    /* A mark can be longer than what it stands for: the caps hold for
     * what is kept too. */
    size_t max_bytes = f.plot ? o->caps.max_plot_bytes : o->caps.max_file_bytes;
    if (f.size > max_bytes || f.size > o->caps.max_total_bytes - o->shown_total) {
        if (o->n_left < OUTFILES_LEFT_KEEP) {
            struct outfile_left *e = &o->left[o->n_left++];
            e->path = xstrdup(f.path);
            e->reason = xstrdup("larger than the caps once secrets in it were redacted");
            e->size = (long long)f.size;
            o->n_left_dropped++;
        }
        o->n_dropped++;
        outfile_free(&f);
        memset(&o->cur, 0, sizeof(o->cur));
        o->open = false;
        return 0;
    }
    o->shown_total += f.size;
    o->v = xrealloc(o->v, (o->n + 1) * sizeof(*o->v));
    o->v[o->n++] = f;
    if (f.plot)
        o->n_plots++;
    memset(&o->cur, 0, sizeof(o->cur));
    o->open = false;
    return 0;
}

static int left_out(struct outfiles *o, const char *text, size_t len, struct err *err)
{
    if (o->open)
        return err_set(err, ERR_PROTOCOL, "a left-out file inside a file");
    struct header h;
    int rc = 0;
    if (read_header(text, len, "reason", &h) < 0) {
        rc = err_set(err, ERR_PROTOCOL, "a malformed left-out file");
    } else if (o->n_left < OUTFILES_LEFT_KEEP) {
        struct outfile_left *e = &o->left[o->n_left++];
        /* Redacted before it is cut: a cut value would not be found. */
        e->path = redact_text(o->redactor, h.path, h.path_len, LEFT_PATH_MAX);
        e->reason = redact_text(o->redactor, h.word, h.word_len, LEFT_REASON_MAX);
        e->size = get_size(h.obj, "size");
    }
    json_object_put(h.obj);
    return rc;
}

int outfiles_frame(struct outfiles *o, const char *line, size_t len, struct err *err)
{
    if (len == 0)
        return err_set(err, ERR_PROTOCOL, "an empty frame");
    switch (line[0]) {
    case 'F':
        return begin_file(o, line + 1, len - 1, err);
    case 'D':
        return file_data(o, line + 1, len - 1, err);
    case 'E':
        return end_file(o, line + 1, len - 1, err);
    case 'L':
        return left_out(o, line + 1, len - 1, err);
    default:
        return err_set(err, ERR_PROTOCOL, "a frame of an unknown kind");
    }
}

int outfiles_finish(struct outfiles *o, long long sent, long long left_out_count,
                    long long walk_stopped, bool cwd_gone, struct err *err)
{
    if (o->open) {
        char *shown = redact_text(o->redactor, o->cur.path, strlen(o->cur.path), LEFT_PATH_MAX);
        err_set(err, ERR_PROTOCOL, "the output file %s was cut short", shown);
        free(shown);
        return -1;
    }
    size_t received = o->n + o->n_dropped;
    if (sent != (long long)received)
        return err_set(err, ERR_PROTOCOL, "the runner sent %zu output files but counted %lld",
                       received, sent);
    size_t named = o->n_left - o->n_left_dropped;
    if (left_out_count < (long long)named)
        return err_set(err, ERR_PROTOCOL, "the runner left out %lld output files but named %zu",
                       left_out_count, named);
    o->left_total = left_out_count + (long long)o->n_dropped;
    o->walk_stopped = walk_stopped > 0 ? walk_stopped : 0;
    o->cwd_gone = cwd_gone;
    return 0;
}
