#include "tools/files_result.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/codec.h"
#include "base/handle.h"
#include "base/util.h"

static const struct {
    const char *ext;
    const char *mime;
} mime_types[] = {
    {"png", "image/png"},
    {"jpg", "image/jpeg"},
    {"jpeg", "image/jpeg"},
    {"gif", "image/gif"},
    {"webp", "image/webp"},
    {"svg", "image/svg+xml"},
    {"csv", "text/csv"},
    {"tsv", "text/tab-separated-values"},
    {"txt", "text/plain"},
    {"log", "text/plain"},
    {"md", "text/markdown"},
    {"html", "text/html"},
    {"htm", "text/html"},
    {"css", "text/css"},
    {"py", "text/x-python"},
    {"js", "text/javascript"},
    {"mjs", "text/javascript"},
    {"json", "application/json"},
    {"geojson", "application/geo+json"},
    {"xml", "application/xml"},
    {"yaml", "application/yaml"},
    {"yml", "application/yaml"},
    {"pdf", "application/pdf"},
    {"zip", "application/zip"},
    {"gz", "application/gzip"},
    {"parquet", "application/vnd.apache.parquet"},
    {"xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"},
};

const char *files_result_mime(const char *path, const char *data, size_t size)
{
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(slash ? slash + 1 : path, '.');
    if (dot && dot[1]) {
        for (size_t i = 0; i < ARRAY_SIZE(mime_types); i++)
            if (strcasecmp(dot + 1, mime_types[i].ext) == 0)
                return mime_types[i].mime;
    }
    if (!memchr(data, '\0', size) && util_utf8_valid(data, size))
        return "text/plain";
    return "application/octet-stream";
}

/* An image type clients render, whose bytes are what the name says. */
static bool image_ok(const char *mime, const char *d, size_t n)
{
    const unsigned char *u = (const unsigned char *)d;
    if (strcmp(mime, "image/png") == 0)
        return n >= 8 && memcmp(d, "\x89PNG\r\n\x1a\n", 8) == 0;
    if (strcmp(mime, "image/jpeg") == 0)
        return n >= 3 && u[0] == 0xff && u[1] == 0xd8 && u[2] == 0xff;
    if (strcmp(mime, "image/gif") == 0)
        return n >= 6 && (memcmp(d, "GIF87a", 6) == 0 || memcmp(d, "GIF89a", 6) == 0);
    if (strcmp(mime, "image/webp") == 0)
        return n >= 12 && memcmp(d, "RIFF", 4) == 0 && memcmp(d + 8, "WEBP", 4) == 0;
    return false;
}

static bool text_ok(const char *mime, const char *d, size_t n)
{
    bool texty = strncmp(mime, "text/", 5) == 0 || strcmp(mime, "application/json") == 0 ||
                 strcmp(mime, "application/geo+json") == 0 ||
                 strcmp(mime, "application/xml") == 0 || strcmp(mime, "application/yaml") == 0 ||
                 strcmp(mime, "image/svg+xml") == 0;
    return texty && !memchr(d, '\0', n) && util_utf8_valid(d, n);
}

/* A URI's cap: the prefix, the run id, "/plots/" and the path with every
 * byte percent-encoded (three bytes a byte). */
#define URI_FIXED_MAX   (sizeof(FILES_RESULT_URI_PREFIX) + HANDLE_MAX + sizeof("/plots/"))
#define URI_MAX(path_n) (URI_FIXED_MAX + 3 * (path_n))

/* What the text says about the files beyond the paths, URIs and reasons it
 * names: on a file's line a MIME type (65 bytes at most), a size, a number
 * of seconds or a reason of this file's, and the words; on a left-out
 * line the words; the heading and the closing lines. */
#define FILE_LINE_MAX  256
#define LEFT_LINE_MAX  32
#define TEXT_FIXED_MAX 256

size_t files_result_text_max(const struct outfiles *of)
{
    size_t max = TEXT_FIXED_MAX;
    for (size_t i = 0; i < of->n; i++)
        max += strlen(of->v[i].path) + URI_MAX(strlen(of->v[i].path)) + FILE_LINE_MAX;
    for (size_t i = 0; i < of->n_left; i++)
        max += strlen(of->left[i].path) + strlen(of->left[i].reason) + LEFT_LINE_MAX;
    return max;
}

/* The path percent-encoded but for its slashes; NULL with err past its
 * cap. */
static char *uri_for(const char *run_id, const struct outfile *f, struct err *err)
{
    struct buf b;
    buf_init(&b, URI_MAX(strlen(f->path)));
    if (buf_addf(&b, FILES_RESULT_URI_PREFIX "%s/%s/", run_id, f->plot ? "plots" : "files") < 0 ||
        codec_percent_encode(f->path, strlen(f->path), "/", &b) < 0) {
        err_set(err, ERR_INTERNAL, "its URI passed %zu bytes", b.max);
        buf_free(&b);
        return NULL;
    }
    return buf_take(&b, NULL);
}

/* An image block of o's bytes, in base64 of their own length (the inline
 * cap bounds them); NULL with err past it. */
static json_object *image_block(const struct outfile *o, const char *mime, struct err *err)
{
    struct buf b64;
    buf_init(&b64, CODEC_BASE64_LEN(o->size));
    json_object *block = NULL;
    if (codec_base64_encode(o->data, o->size, &b64) < 0) {
        err_set(err, ERR_INTERNAL, "its base64 passed %zu bytes", b64.max);
    } else {
        block = json_object_new_object();
        json_object_object_add(block, "type", json_object_new_string("image"));
        json_object_object_add(block, "data",
                               json_object_new_string_len(b64.data ? b64.data : "", (int)b64.len));
        json_object_object_add(block, "mimeType", json_object_new_string(mime));
    }
    buf_free(&b64);
    return block;
}

static void human_size(size_t n, char *out, size_t cap)
{
    if (n < 1024)
        snprintf(out, cap, "%zu B", n);
    else if (n < 1024 * 1024)
        snprintf(out, cap, "%zu.%zu KiB", n / 1024, n % 1024 * 10 / 1024);
    else
        snprintf(out, cap, "%zu.%zu MiB", n >> 20, (n & ((1u << 20) - 1)) * 10 >> 20);
}

static json_object *left_json(const char *path, const char *reason, long long size)
{
    json_object *l = json_object_new_object();
    json_object_object_add(l, "path", json_object_new_string(path));
    json_object_object_add(l, "reason", json_object_new_string(reason));
    if (size >= 0)
        json_object_object_add(l, "size", json_object_new_int64(size));
    return l;
}

/* One returned file: its block (if any) to blocks, its entry to files or
 * left, its line to text; -1 when text passed its cap. */
static int add_file(const struct outfile *o, const char *run_id, const struct files_result_ctx *ctx,
                    const struct tools_features *f, json_object *blocks, json_object *files,
                    json_object *left, struct buf *text, long long *extra_left)
{
    int rc = 0;
    const char *mime = o->plot ? "image/png" : files_result_mime(o->path, o->data, o->size);
    struct err why = ERR_INIT;
    char *uri = uri_for(run_id, o, &why);
    bool kept = uri && ctx && ctx->store &&
                runstore_put(ctx->store, ctx->owner, uri, mime, o->data, o->size) == 0;
    long long img_cap = ctx ? ctx->cfg->max_inline_image_bytes : 0;
    long long text_cap = ctx ? ctx->cfg->max_inline_text_bytes : 0;
    const char *delivery = NULL;
    json_object *block = NULL;
    if (!uri) {
        /* left out below, saying why */
    } else if (image_ok(mime, o->data, o->size) && (long long)o->size <= img_cap) {
        block = image_block(o, mime, &why);
        delivery = block ? "image" : NULL;
    } else if (text_ok(mime, o->data, o->size) && (long long)o->size <= text_cap) {
        json_object *res = json_object_new_object();
        json_object_object_add(res, "uri", json_object_new_string(uri));
        json_object_object_add(res, "mimeType", json_object_new_string(mime));
        json_object_object_add(res, "text", json_object_new_string_len(o->data, (int)o->size));
        block = json_object_new_object();
        json_object_object_add(block, "type", json_object_new_string("resource"));
        json_object_object_add(block, "resource", res);
        delivery = "embedded";
    } else if (kept && f->structured) {
        block = json_object_new_object();
        json_object_object_add(block, "type", json_object_new_string("resource_link"));
        json_object_object_add(block, "uri", json_object_new_string(uri));
        json_object_object_add(block, "name", json_object_new_string(o->path));
        json_object_object_add(block, "mimeType", json_object_new_string(mime));
        json_object_object_add(block, "size", json_object_new_int64((int64_t)o->size));
        delivery = "link";
    } else if (kept) {
        delivery = "link"; /* named in the text: older clients have no resource_link */
    }
    char size[32];
    human_size(o->size, size, sizeof(size));
    if (!delivery) {
        (*extra_left)++;
        json_object_array_add(left, left_json(o->path,
                                              why.msg ? err_msg(&why)
                                                      : "larger than the run store keeps "
                                                        "(--run-store-max-bytes)",
                                              (long long)o->size));
        rc |= buf_addf(text, "%s: %s, %s: left out (%s)\n", o->path, mime, size,
                       why.msg ? err_msg(&why) : "larger than the run store keeps");
        err_clear(&why);
        free(uri);
        return rc;
    }
    if (block)
        json_object_array_add(blocks, block);
    if (strcmp(delivery, "link") == 0)
        rc |= buf_addf(text, "%s: %s, %s: %s (resources/read, for %lld s)\n", o->path, mime, size,
                       uri, ctx->cfg->run_store_ttl_ms / 1000);
    else
        rc |= buf_addf(text, "%s: %s, %s (%s)\n", o->path, mime, size,
                       strcmp(delivery, "image") == 0 ? "image" : "embedded");
    json_object *e = json_object_new_object();
    json_object_object_add(e, "path", json_object_new_string(o->path));
    json_object_object_add(e, "kind", json_object_new_string(o->plot ? "plot" : "file"));
    json_object_object_add(e, "size", json_object_new_int64((int64_t)o->size));
    json_object_object_add(e, "mime_type", json_object_new_string(mime));
    json_object_object_add(e, "sha256", json_object_new_string(o->sha256));
    json_object_object_add(e, "uri", kept ? json_object_new_string(uri) : NULL);
    json_object_object_add(e, "delivery", json_object_new_string(delivery));
    json_object_array_add(files, e);
    free(uri);
    return rc;
}

int files_result_add(const struct outfiles *of, const struct files_result_ctx *ctx,
                     const struct tools_features *f, json_object *blocks, json_object *sc,
                     struct buf *text, struct err *err)
{
    /* The run id is a handle: its URIs name the daemon that holds them. */
    char run_id[HANDLE_MAX + 1] = "";
    if (of->n && handle_new(run_id) < 0)
        return err_set(err, ERR_INTERNAL, "no random bytes for a run id");
    json_object *files = json_object_new_array();
    json_object *left = json_object_new_array();
    int rc = 0;
    long long extra_left = 0; /* dropped here, beyond the runner's */
    if (of->n || of->left_total || of->walk_stopped || of->cwd_gone)
        rc |= buf_addf(text, "%s--- files ---\n",
                       text->len && text->data[text->len - 1] != '\n' ? "\n" : "");
    for (size_t i = 0; i < of->n; i++)
        rc |= add_file(&of->v[i], run_id, ctx, f, blocks, files, left, text, &extra_left);
    for (size_t i = 0; i < of->n_left; i++) {
        const struct outfile_left *l = &of->left[i];
        json_object_array_add(left, left_json(l->path, l->reason, l->size));
        rc |= buf_addf(text, "left out: %s (%s)\n", l->path, l->reason);
    }
    if (of->left_total > (long long)of->n_left)
        rc |= buf_addf(text, "left out: %lld more\n", of->left_total - (long long)of->n_left);
    if (of->walk_stopped)
        rc |= buf_addf(text, "left out: the search stopped after %lld directory entries\n",
                       of->walk_stopped);
    if (of->cwd_gone)
        rc |= buf_addf(text, "left out: the program removed its working directory\n");
    json_object_object_add(sc, "files", files);
    json_object_object_add(sc, "files_left_out", left);
    json_object_object_add(sc, "files_truncated",
                           json_object_new_boolean(of->left_total > 0 || extra_left > 0 ||
                                                   of->walk_stopped > 0 || of->cwd_gone));
    if (rc < 0)
        return err_set(err, ERR_INTERNAL, "the text about the files passed %zu bytes", text->max);
    return 0;
}
