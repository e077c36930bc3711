#include "backend/docker/engine_stream.h"

#include <string.h>

#define HDR_LEN 8

void engine_stream_init(struct engine_stream *s)
{
    memset(s, 0, sizeof(*s));
    s->stream = -1;
}

static int parse_header(struct engine_stream *s, struct err *err)
{
    const unsigned char *h = s->hdr;
    if (h[0] > ENGINE_STREAM_SYSTEM || h[1] || h[2] || h[3]) {
        s->failed = 1;
        return err_set(err, ERR_PROTOCOL,
                       "malformed frame header on the container's attach stream "
                       "(%02x %02x %02x %02x %02x %02x %02x %02x)",
                       h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]);
    }
    s->stream = h[0];
    s->remaining = (uint32_t)h[4] << 24 | (uint32_t)h[5] << 16 | (uint32_t)h[6] << 8 | h[7];
    return 0;
}

int engine_stream_feed(struct engine_stream *s, const char *data, size_t len, engine_stream_cb cb,
                       void *ctx, struct err *err)
{
    if (s->failed)
        return err_set(err, ERR_PROTOCOL, "the container's attach stream is already broken");

    size_t off = 0;
    while (off < len) {
        if (s->hdr_len < HDR_LEN) {
            size_t take = HDR_LEN - s->hdr_len;
            if (take > len - off)
                take = len - off;
            memcpy(s->hdr + s->hdr_len, data + off, take);
            s->hdr_len += take;
            off += take;
            if (s->hdr_len < HDR_LEN)
                break;
            if (parse_header(s, err) < 0)
                return -1;
            if (s->remaining == 0)
                s->hdr_len = 0;
            continue;
        }

        /* Deliver what we have now: frames can be large and the caller
         * applies its own output cap. */
        size_t take = s->remaining;
        if (take > len - off)
            take = len - off;
        int rc = cb(ctx, s->stream, data + off, take, err);
        off += take;
        s->remaining -= (uint32_t)take;
        if (s->remaining == 0)
            s->hdr_len = 0;
        if (rc < 0)
            return -1;
        if (rc > 0)
            return rc;
    }
    return 0;
}

int engine_stream_at_boundary(const struct engine_stream *s)
{
    return !s->failed && s->hdr_len == 0 && s->remaining == 0;
}
