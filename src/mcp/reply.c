#include "mcp/reply.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "base/buf.h"
#include "base/log.h"
#include "base/util.h"
#include "mcp/jsonrpc.h"

/* ---- channels ------------------------------------------------------------ */

void mcp_channel_init(struct mcp_channel *ch,
                      int (*send)(struct mcp_channel *, const char *, size_t),
                      void (*release)(struct mcp_channel *))
{
    ch->send = send;
    ch->release = release;
    ch->send_take = NULL;
    atomic_init(&ch->refs, 1);
}

void mcp_channel_ref(struct mcp_channel *ch)
{
    atomic_fetch_add(&ch->refs, 1);
}

void mcp_channel_unref(struct mcp_channel *ch)
{
    if (atomic_fetch_sub(&ch->refs, 1) == 1 && ch->release)
        ch->release(ch);
}

void reply_send(struct mcp_channel *ch, json_object *msg)
{
    size_t len = 0;
    const char *s = jsonrpc_serialize(msg, &len);
    if (ch->send(ch, s, len) < 0)
        log_debug("could not deliver a message: the client went away");
}

/* ---- replies ---------------------------------------------------------------- */

/* Room for the modern wire's members in front of a spliced result. */
#define REPLY_MODERN_MEMBERS_CAP 96

/* A batch's answers are collected as serialized text, because its slots
 * are filled from different threads (a tools/call answers from a worker).
 * Together they stay under max_bytes: an answer that would pass it is
 * replaced by an error for its request, so a batch of large answers (a
 * tools/list each, or one run-store file read many times) costs at most
 * max_bytes plus a small error per slot. */
struct batch {
    pthread_mutex_t lock;
    size_t n;
    size_t remaining;
    size_t bytes; /* of the texts so far */
    size_t max_bytes;
    char **texts;
    size_t *lens;
    struct mcp_channel *ch;
};

/* The error for request id that stands for an answer the batch has no
 * room for. */
static char *too_big_text(json_object *id, size_t max_bytes, size_t *len)
{
    char *msg = xasprintf("the answers of this batch would exceed %zu bytes "
                          "(--max-message-bytes); send this request on its own",
                          max_bytes);
    json_object *e = jsonrpc_error(id, JSONRPC_SERVER_ERROR, msg, NULL);
    free(msg);
    const char *s = jsonrpc_serialize(e, len);
    char *text = xstrndup(s, *len);
    json_object_put(e);
    return text;
}

/* The answers as one array, in out: capped at their own lengths, a comma
 * between each two and the brackets (what they are is settled by now). */
static int batch_join(const struct batch *b, struct buf *out, struct err *err)
{
    size_t max = 2;
    for (size_t i = 0; i < b->n; i++)
        if (b->texts[i])
            max += b->lens[i] + 1;
    buf_init(out, max);
    int rc = buf_add(out, "[", 1);
    bool any = false;
    for (size_t i = 0; i < b->n; i++) {
        if (!b->texts[i])
            continue;
        if (any)
            rc |= buf_add(out, ",", 1);
        rc |= buf_add(out, b->texts[i], b->lens[i]);
        any = true;
    }
    rc |= buf_add(out, "]", 1);
    if (rc < 0)
        return err_set(err, ERR_INTERNAL, "a batch's answers passed %zu bytes", max);
    return any ? 1 : 0;
}

static void batch_send(struct batch *b)
{
    struct buf out;
    struct err err = ERR_INIT;
    int rc = batch_join(b, &out, &err);
    if (rc < 0) {
        json_object *e = jsonrpc_error(NULL, err_jsonrpc_code(err.code), err_msg(&err), NULL);
        reply_send(b->ch, e);
        json_object_put(e);
    } else if (rc > 0 && b->ch->send(b->ch, out.data, out.len) < 0) {
        /* (A batch of only notifications gets no answer at all.) */
        log_debug("could not deliver a message: the client went away");
    }
    err_clear(&err);
    buf_free(&out);
}

static void batch_fill(struct reply *r, char *text, size_t len);

void reply_done(struct reply *r, json_object *resp)
{
    if (!r->batch) {
        if (resp)
            reply_send(r->ch, resp);
        json_object_put(resp);
        mcp_channel_unref(r->ch);
        return;
    }
    struct batch *b = r->batch;
    char *text = NULL;
    size_t len = 0;
    if (resp) {
        const char *s = jsonrpc_serialize(resp, &len);
        pthread_mutex_lock(&b->lock);
        bool room = len <= b->max_bytes - b->bytes;
        if (room)
            b->bytes += len; /* reserved */
        pthread_mutex_unlock(&b->lock);
        if (room) {
            text = xstrndup(s, len);
        } else {
            json_object *id = NULL;
            json_object_object_get_ex(resp, "id", &id);
            text = too_big_text(id, b->max_bytes, &len);
        }
        json_object_put(resp);
    }
    batch_fill(r, text, len);
}

static void batch_fill(struct reply *r, char *text, size_t len)
{
    struct batch *b = r->batch;
    pthread_mutex_lock(&b->lock);
    b->texts[r->index] = text;
    b->lens[r->index] = len;
    bool last = --b->remaining == 0;
    pthread_mutex_unlock(&b->lock);
    if (!last)
        return;
    batch_send(b);
    mcp_channel_unref(b->ch);
    for (size_t i = 0; i < b->n; i++)
        free(b->texts[i]);
    pthread_mutex_destroy(&b->lock);
    free(b->texts);
    free(b->lens);
    free(b);
}

void reply_cacheable(struct reply *r, long long ttl_ms, bool private_scope)
{
    r->cacheable = true;
    r->cache_ttl_ms = ttl_ms;
    r->cache_private = private_scope;
}

/* The members the modern wire adds in front of a result's own, as JSON
 * text ending in a comma: resultType, and ttlMs and cacheScope when
 * cacheable (empty on the 2025 wire). */
static size_t modern_members(const struct reply *r, char *out, size_t cap)
{
    if (!r->modern)
        return 0;
    int n = r->cacheable ? snprintf(out, cap,
                                    "\"resultType\":\"complete\",\"ttlMs\":%lld,"
                                    "\"cacheScope\":\"%s\",",
                                    r->cache_ttl_ms, r->cache_private ? "private" : "public")
                         : snprintf(out, cap, "\"resultType\":\"complete\",");
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

void reply_result_raw(struct reply *r, json_object *id, const char *result, size_t len)
{
    /* A result is an object: the modern members go in after its brace. */
    char extra[REPLY_MODERN_MEMBERS_CAP];
    size_t extra_len = len >= 2 && result[0] == '{' ? modern_members(r, extra, sizeof(extra)) : 0;
    if (extra_len && result[1] == '}')
        extra[--extra_len] = '\0'; /* an empty object: no comma after them */
    size_t id_len = 0;
    const char *id_text = id ? jsonrpc_serialize(id, &id_len) : "null";
    if (!id)
        id_len = 4;
    static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":";
    static const char mid[] = ",\"result\":";
    size_t n = sizeof(head) - 1 + id_len + sizeof(mid) - 1 + len + extra_len + 1;
    char *text = xmalloc(n + 1);
    char *p = text;
    memcpy(p, head, sizeof(head) - 1);
    p += sizeof(head) - 1;
    memcpy(p, id_text, id_len);
    p += id_len;
    memcpy(p, mid, sizeof(mid) - 1);
    p += sizeof(mid) - 1;
    if (extra_len) {
        *p++ = '{';
        memcpy(p, extra, extra_len);
        p += extra_len;
        memcpy(p, result + 1, len - 1);
        p += len - 1;
    } else {
        memcpy(p, result, len);
        p += len;
    }
    *p++ = '}';
    *p = '\0';
    if (!r->batch) {
        int rc;
        if (r->ch->send_take) {
            rc = r->ch->send_take(r->ch, text, n);
        } else {
            rc = r->ch->send(r->ch, text, n);
            free(text);
        }
        if (rc < 0)
            log_debug("could not deliver a message: the client went away");
        mcp_channel_unref(r->ch);
        return;
    }
    struct batch *b = r->batch;
    pthread_mutex_lock(&b->lock);
    bool room = n <= b->max_bytes - b->bytes;
    if (room)
        b->bytes += n;
    pthread_mutex_unlock(&b->lock);
    if (!room) {
        free(text);
        text = too_big_text(id, b->max_bytes, &n);
    }
    batch_fill(r, text, n);
}

void reply_result(struct reply *r, json_object *id, json_object *result)
{
    if (r->modern && json_object_is_type(result, json_type_object)) {
        if (!json_object_object_get_ex(result, "resultType", NULL))
            json_object_object_add(result, "resultType", json_object_new_string("complete"));
        if (r->cacheable) {
            json_object_object_add(result, "ttlMs", json_object_new_int64(r->cache_ttl_ms));
            json_object_object_add(result, "cacheScope",
                                   json_object_new_string(r->cache_private ? "private" : "public"));
        }
    }
    reply_done(r, jsonrpc_result(id, result));
}

void reply_result_for(struct reply *r, const struct jsonrpc_id *id, json_object *result)
{
    json_object *idj = jsonrpc_id_json(id);
    reply_result(r, idj, result);
    json_object_put(idj);
}

void reply_error(struct reply *r, json_object *id, int code, const char *message)
{
    reply_done(r, jsonrpc_error(id, code, message, NULL));
}

struct batch *reply_batch_new(struct mcp_channel *ch, size_t n, size_t max_bytes)
{
    struct batch *b = xcalloc(1, sizeof(*b));
    pthread_mutex_init(&b->lock, NULL);
    b->n = n;
    b->max_bytes = max_bytes;
    b->remaining = n;
    b->texts = xcalloc(n, sizeof(char *));
    b->lens = xcalloc(n, sizeof(size_t));
    b->ch = ch;
    mcp_channel_ref(ch);
    return b;
}

struct reply reply_batch_slot(struct batch *b, size_t i)
{
    struct reply r = {.ch = b->ch, .batch = b, .index = i};
    return r;
}
