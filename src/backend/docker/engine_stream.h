/* Incremental demultiplexer for the engine's attach stream when Tty is
 * false: each frame is an 8-byte header [stream, 0, 0, 0, size(4, BE)]
 * followed by size payload bytes. Frames split across reads at any byte. */
#ifndef MCPSBX_ENGINE_STREAM_H
#define MCPSBX_ENGINE_STREAM_H

#include <stdint.h>

#include "base/err.h"

enum engine_stream_id {
    ENGINE_STREAM_STDIN = 0,
    ENGINE_STREAM_STDOUT = 1,
    ENGINE_STREAM_STDERR = 2,
    ENGINE_STREAM_SYSTEM = 3,
};

struct engine_stream {
    unsigned char hdr[8];
    size_t hdr_len;     /* header bytes collected so far */
    uint32_t remaining; /* payload bytes left in the current frame */
    int stream;
    int failed; /* a malformed header was seen; the stream cannot resync */
};

/* Called for each piece of payload as it arrives (a frame may come in
 * several pieces). Returns 0 to go on, a positive value to stop feeding
 * (not a failure: feed returns it), or -1 with err set. */
typedef int (*engine_stream_cb)(void *ctx, int stream, const char *data, size_t len,
                                struct err *err);

void engine_stream_init(struct engine_stream *s);

/* Feeds bytes; returns 0, the callback's positive stop value, or -1 with
 * err: the callback's failure, or ERR_PROTOCOL for a malformed header (and
 * for every later feed: there is no way to find the next frame).
 * Zero-length frames are skipped without a callback. */
int engine_stream_feed(struct engine_stream *s, const char *data, size_t len, engine_stream_cb cb,
                       void *ctx, struct err *err);

/* True when the stream ended on a frame boundary. */
int engine_stream_at_boundary(const struct engine_stream *s);

#endif
