/* The attach-stream demultiplexer: frames split at every byte boundary
 * must deliver exactly the same bytes per stream. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/buf.h"
#include "backend/docker/engine_stream.h"

struct collect {
    struct buf out[4];
    int calls;
    int stop_at_call; /* stop (7) on this call (1-based); 0 = never */
    int fail_at_call; /* fail on this call (1-based); 0 = never */
};

static void collect_init(struct collect *c)
{
    memset(c, 0, sizeof(*c));
    for (int i = 0; i < 4; i++)
        buf_init(&c->out[i], 64u * 1024u * 1024u);
}

static void collect_free(struct collect *c)
{
    for (int i = 0; i < 4; i++)
        buf_free(&c->out[i]);
}

static int on_data(void *ctx, int stream, const char *data, size_t len, struct err *err)
{
    struct collect *c = ctx;
    assert_true(stream >= 0 && stream <= 3);
    assert_true(len > 0);
    assert_int_equal(buf_add(&c->out[stream], data, len), 0);
    c->calls++;
    if (c->stop_at_call && c->calls == c->stop_at_call)
        return 7;
    if (c->fail_at_call && c->calls == c->fail_at_call)
        return err_set(err, ERR_IO, "the sink broke");
    return 0;
}

static void add_frame(struct buf *b, int stream, const void *data, uint32_t len)
{
    unsigned char h[8] = {(unsigned char)stream,
                          0,
                          0,
                          0,
                          (unsigned char)(len >> 24),
                          (unsigned char)(len >> 16),
                          (unsigned char)(len >> 8),
                          (unsigned char)len};
    assert_int_equal(buf_add(b, h, 8), 0);
    assert_int_equal(buf_add(b, data, len), 0);
}

/* A small multi-frame input with NULs, a zero-length frame, a frame over
 * 255 bytes (size spans two bytes) and every legal stream id. */
struct sample {
    struct buf in;
    struct buf want[4];
    size_t ends[16]; /* offsets where a frame ends */
    size_t nends;
};

static void sample_frame(struct sample *s, int stream, const void *data, uint32_t len)
{
    add_frame(&s->in, stream, data, len);
    s->ends[s->nends++] = s->in.len;
}

static void sample_build(struct sample *s)
{
    memset(s, 0, sizeof(*s));
    buf_init(&s->in, 1u << 20);
    for (int i = 0; i < 4; i++)
        buf_init(&s->want[i], 1u << 20);
    char big[300];
    for (size_t i = 0; i < sizeof(big); i++)
        big[i] = (char)(i * 7);
    static const char err_bytes[] = {'e', 'r', 0, 'r', '\n'};

    sample_frame(s, 1, "hello\n", 6);
    sample_frame(s, 2, err_bytes, sizeof(err_bytes));
    sample_frame(s, 1, "", 0);
    sample_frame(s, 1, big, sizeof(big));
    sample_frame(s, 3, "sys", 3);
    sample_frame(s, 0, "in", 2);
    sample_frame(s, 2, "z", 1);

    assert_int_equal(buf_add(&s->want[1], "hello\n", 6), 0);
    assert_int_equal(buf_add(&s->want[1], big, sizeof(big)), 0);
    assert_int_equal(buf_add(&s->want[2], err_bytes, sizeof(err_bytes)), 0);
    assert_int_equal(buf_add(&s->want[2], "z", 1), 0);
    assert_int_equal(buf_add(&s->want[3], "sys", 3), 0);
    assert_int_equal(buf_add(&s->want[0], "in", 2), 0);
}

static void sample_free(struct sample *s)
{
    buf_free(&s->in);
    for (int i = 0; i < 4; i++)
        buf_free(&s->want[i]);
}

static void check_equal(const struct collect *c, const struct sample *s)
{
    for (int i = 0; i < 4; i++) {
        assert_int_equal(c->out[i].len, s->want[i].len);
        if (s->want[i].len)
            assert_memory_equal(c->out[i].data, s->want[i].data, s->want[i].len);
    }
}

/* Feeds in at the given cut points (sorted, each within [0, len]). */
static void feed_cuts(const struct sample *s, const size_t *cuts, size_t ncuts)
{
    struct engine_stream st;
    struct collect c;
    struct err err = ERR_INIT;
    engine_stream_init(&st);
    collect_init(&c);
    size_t prev = 0;
    for (size_t i = 0; i <= ncuts; i++) {
        size_t end = i < ncuts ? cuts[i] : s->in.len;
        assert_int_equal(engine_stream_feed(&st, s->in.data + prev, end - prev, on_data, &c, &err),
                         0);
        prev = end;
    }
    assert_true(engine_stream_at_boundary(&st));
    check_equal(&c, s);
    collect_free(&c);
}

static void test_whole(void **state)
{
    (void)state;
    struct sample s;
    sample_build(&s);
    feed_cuts(&s, NULL, 0);
    sample_free(&s);
}

static void test_every_split(void **state)
{
    (void)state;
    struct sample s;
    sample_build(&s);
    for (size_t i = 0; i <= s.in.len; i++)
        feed_cuts(&s, &i, 1);
    sample_free(&s);
}

static void test_every_pair_of_splits(void **state)
{
    (void)state;
    /* Pairs over the whole sample are ~60k feeds; use a smaller input
     * without the big frame so every header/payload pair is covered. */
    struct sample s;
    memset(&s, 0, sizeof(s));
    buf_init(&s.in, 1u << 20);
    for (int i = 0; i < 4; i++)
        buf_init(&s.want[i], 1u << 20);
    add_frame(&s.in, 1, "ab\0c", 4);
    add_frame(&s.in, 2, "", 0);
    add_frame(&s.in, 2, "xyz", 3);
    add_frame(&s.in, 1, "d", 1);
    assert_int_equal(buf_add(&s.want[1], "ab\0cd", 5), 0);
    assert_int_equal(buf_add(&s.want[2], "xyz", 3), 0);
    for (size_t i = 0; i <= s.in.len; i++)
        for (size_t j = i; j <= s.in.len; j++) {
            size_t cuts[2] = {i, j};
            feed_cuts(&s, cuts, 2);
        }
    sample_free(&s);
}

static void test_byte_at_a_time(void **state)
{
    (void)state;
    struct sample s;
    sample_build(&s);
    struct engine_stream st;
    struct collect c;
    struct err err = ERR_INIT;
    engine_stream_init(&st);
    collect_init(&c);
    size_t next_end = 0;
    for (size_t i = 0; i < s.in.len; i++) {
        assert_int_equal(engine_stream_feed(&st, s.in.data + i, 1, on_data, &c, &err), 0);
        bool at_end = next_end < s.nends && s.ends[next_end] == i + 1;
        assert_int_equal(engine_stream_at_boundary(&st), at_end);
        if (at_end)
            next_end++;
    }
    assert_int_equal(next_end, s.nends);
    assert_true(engine_stream_at_boundary(&st));
    check_equal(&c, &s);
    collect_free(&c);
    sample_free(&s);
}

static void test_zero_length_frames(void **state)
{
    (void)state;
    struct buf in;
    buf_init(&in, 1024);
    for (int i = 0; i < 5; i++)
        add_frame(&in, 1 + i % 2, "", 0);
    struct engine_stream st;
    struct collect c;
    struct err err = ERR_INIT;
    engine_stream_init(&st);
    collect_init(&c);
    assert_int_equal(engine_stream_feed(&st, in.data, in.len, on_data, &c, &err), 0);
    assert_int_equal(c.calls, 0);
    assert_true(engine_stream_at_boundary(&st));
    /* An empty feed changes nothing. */
    assert_int_equal(engine_stream_feed(&st, in.data, 0, on_data, &c, &err), 0);
    assert_true(engine_stream_at_boundary(&st));
    collect_free(&c);
    buf_free(&in);
}

static void test_big_frames(void **state)
{
    (void)state;
    const uint32_t n1 = 3u * 1024u * 1024u + 5u, n2 = 70000u;
    char *p1 = malloc(n1), *p2 = malloc(n2);
    assert_non_null(p1);
    assert_non_null(p2);
    for (uint32_t i = 0; i < n1; i++)
        p1[i] = (char)(i * 31 + 1);
    for (uint32_t i = 0; i < n2; i++)
        p2[i] = (char)(i ^ 0x5a);
    struct buf in;
    buf_init(&in, 8u * 1024u * 1024u);
    add_frame(&in, 1, p1, n1);
    add_frame(&in, 2, p2, n2);
    add_frame(&in, 1, "!", 1);

    struct engine_stream st;
    struct collect c;
    struct err err = ERR_INIT;
    engine_stream_init(&st);
    collect_init(&c);
    /* Chunk sizes from a fixed LCG: deterministic but irregular. */
    uint32_t x = 12345;
    size_t off = 0;
    while (off < in.len) {
        x = x * 1103515245u + 12345u;
        size_t n = 1 + (x >> 8) % 9000;
        if (n > in.len - off)
            n = in.len - off;
        assert_int_equal(engine_stream_feed(&st, in.data + off, n, on_data, &c, &err), 0);
        off += n;
    }
    assert_true(engine_stream_at_boundary(&st));
    assert_int_equal(c.out[1].len, n1 + 1);
    assert_memory_equal(c.out[1].data, p1, n1);
    assert_int_equal(c.out[1].data[n1], '!');
    assert_int_equal(c.out[2].len, n2);
    assert_memory_equal(c.out[2].data, p2, n2);
    collect_free(&c);
    buf_free(&in);
    free(p1);
    free(p2);
}

static void test_partial_payload_not_at_boundary(void **state)
{
    (void)state;
    /* A header announcing 4 GiB - 1: payload is streamed, never buffered. */
    unsigned char h[12] = {1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 'a', 'b', 'c', 'd'};
    struct engine_stream st;
    struct collect c;
    struct err err = ERR_INIT;
    engine_stream_init(&st);
    collect_init(&c);
    assert_int_equal(engine_stream_feed(&st, (const char *)h, 5, on_data, &c, &err), 0);
    assert_false(engine_stream_at_boundary(&st));
    assert_int_equal(engine_stream_feed(&st, (const char *)h + 5, 7, on_data, &c, &err), 0);
    assert_false(engine_stream_at_boundary(&st));
    assert_int_equal(c.out[1].len, 4);
    assert_memory_equal(c.out[1].data, "abcd", 4);
    assert_int_equal(st.remaining, 0xffffffffu - 4u);
    collect_free(&c);
}

static void expect_malformed(const unsigned char *bytes, size_t n, size_t split)
{
    struct engine_stream st;
    struct collect c;
    struct err err = ERR_INIT;
    engine_stream_init(&st);
    collect_init(&c);
    int rc = engine_stream_feed(&st, (const char *)bytes, split, on_data, &c, &err);
    if (rc == 0)
        rc = engine_stream_feed(&st, (const char *)bytes + split, n - split, on_data, &c, &err);
    assert_int_equal(rc, -1);
    assert_int_equal(err.code, ERR_PROTOCOL);
    assert_non_null(err.msg);
    assert_false(engine_stream_at_boundary(&st));
    /* Broken for good: there is no way to find the next header. */
    err_clear(&err);
    static const unsigned char ok[8] = {1, 0, 0, 0, 0, 0, 0, 0};
    assert_int_equal(engine_stream_feed(&st, (const char *)ok, 8, on_data, &c, &err), -1);
    assert_int_equal(err.code, ERR_PROTOCOL);
    err_clear(&err);
    collect_free(&c);
}

static void test_malformed_headers(void **state)
{
    (void)state;
    for (int bad = 0; bad < 4; bad++) {
        unsigned char h[8 + 8 + 2] = {1, 0, 0, 0, 0, 0, 0, 2, 'o', 'k', 1, 0, 0, 0, 0, 0, 0, 1};
        /* Second header: stream id out of range, or a nonzero pad byte. */
        if (bad == 0)
            h[10] = 4;
        else
            h[10 + bad] = 1;
        for (size_t split = 0; split <= sizeof(h); split++)
            expect_malformed(h, sizeof(h), split);
    }
    /* Typical garbage: an HTTP body where frames were expected. */
    static const char http[] = "HTTP/1.1 200 OK\r\n\r\n";
    expect_malformed((const unsigned char *)http, sizeof(http) - 1, 3);
    static const unsigned char ff[8] = {0xff, 0, 0, 0, 0, 0, 0, 1};
    expect_malformed(ff, 8, 8);
}

static void test_callback_stop(void **state)
{
    (void)state;
    struct sample s;
    sample_build(&s);
    struct engine_stream st;
    struct collect c;
    struct err err = ERR_INIT;
    engine_stream_init(&st);
    collect_init(&c);
    c.stop_at_call = 2;
    assert_int_equal(engine_stream_feed(&st, s.in.data, s.in.len, on_data, &c, &err), 7);
    assert_int_equal(c.calls, 2);
    assert_int_equal(err.code, ERR_OK);
    collect_free(&c);
    sample_free(&s);
}

/* A failing callback is a failure of the feed, with the callback's error. */
static void test_callback_failure(void **state)
{
    (void)state;
    struct sample s;
    sample_build(&s);
    struct engine_stream st;
    struct collect c;
    struct err err = ERR_INIT;
    engine_stream_init(&st);
    collect_init(&c);
    c.fail_at_call = 1;
    assert_int_equal(engine_stream_feed(&st, s.in.data, s.in.len, on_data, &c, &err), -1);
    assert_int_equal(c.calls, 1);
    assert_int_equal(err.code, ERR_IO);
    assert_string_equal(err_msg(&err), "the sink broke");
    err_clear(&err);
    collect_free(&c);
    sample_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole),
        cmocka_unit_test(test_every_split),
        cmocka_unit_test(test_every_pair_of_splits),
        cmocka_unit_test(test_byte_at_a_time),
        cmocka_unit_test(test_zero_length_frames),
        cmocka_unit_test(test_big_frames),
        cmocka_unit_test(test_partial_payload_not_at_boundary),
        cmocka_unit_test(test_malformed_headers),
        cmocka_unit_test(test_callback_stop),
        cmocka_unit_test(test_callback_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
