#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>

#include "mcp/jsonrpc.h"
#include "tools/tools.h"
#include "transport/transport_stdio.h"
#include "unit/langs.h"
#include "unit/server_rig.h"

struct server {
    struct rig g;
    int in[2], out[2], stop[2];
    pthread_t thread;
    int rc;
};

static void *serve(void *arg)
{
    struct server *s = arg;
    struct err err = ERR_INIT;
    s->rc = transport_stdio_run(s->g.srv, &s->g.cfg, s->in[0], s->out[1], s->stop[0], &err);
    err_clear(&err);
    close(s->out[1]);
    return NULL;
}

static struct server *start(long long max_message)
{
    struct server *s = xcalloc(1, sizeof(*s));
    rig_init(&s->g, RIG_DOWN);
    s->g.cfg.max_message_bytes = max_message;
    rig_start(&s->g);
    assert_int_equal(pipe(s->in), 0);
    assert_int_equal(pipe(s->out), 0);
    assert_int_equal(pipe(s->stop), 0);
    pthread_create(&s->thread, NULL, serve, s);
    return s;
}

/* Closes input (or signals stop), collects all output lines. */
static char *finish(struct server *s, bool by_signal)
{
    if (by_signal)
        assert_int_equal(write(s->stop[1], "x", 1), 1);
    else
        close(s->in[1]);
    struct buf out;
    buf_init(&out, 1 << 20);
    char chunk[4096];
    ssize_t n;
    while ((n = read(s->out[0], chunk, sizeof(chunk))) > 0)
        assert_int_equal(buf_add(&out, chunk, (size_t)n), 0);
    pthread_join(s->thread, NULL);
    assert_int_equal(s->rc, 0);
    if (by_signal)
        close(s->in[1]);
    close(s->in[0]);
    close(s->out[0]);
    close(s->stop[0]);
    close(s->stop[1]);
    rig_fini(&s->g);
    free(s);
    return buf_take(&out, NULL);
}

static void put(struct server *s, const char *text)
{
    assert_int_equal(util_write_all(s->in[1], text, strlen(text)), 0);
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void test_framing(void **state)
{
    (void)state;
    struct server *s = start(1 << 20);
    put(s, "\n   \n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n");
    put(s, "{\"jsonrpc\":\"2.0\",\"id\":2,");
    put(s, "\"method\":\"ping\"}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}\n");
    /* A last message without a newline still counts at end of input. */
    put(s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}");
    char *out = finish(s, false);
    assert_int_equal(count_lines(out), 3);
    assert_non_null(strstr(out, "\"id\":1,\"result\":{}"));
    assert_non_null(strstr(out, "\"id\":2,\"result\":{}"));
    assert_non_null(strstr(out, "\"id\":3,\"result\":{}"));
    free(out);
}

static void test_overlong_line(void **state)
{
    (void)state;
    struct server *s = start(1024);
    char big[3000];
    memset(big, 'a', sizeof(big));
    big[0] = '"';
    big[sizeof(big) - 2] = '"';
    big[sizeof(big) - 1] = '\n';
    assert_int_equal(util_write_all(s->in[1], big, sizeof(big)), 0);
    put(s, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}\n");
    char *out = finish(s, false);
    assert_int_equal(count_lines(out), 2);
    assert_non_null(strstr(out, "exceeds 1024 bytes"));
    assert_non_null(strstr(out, "\"id\":9,\"result\":{}"));
    free(out);
}

/* Reads output up to and including the first newline (the reads are
 * byte-sized so nothing past it is taken from finish). */
static char *read_line(struct server *s)
{
    struct buf line;
    buf_init(&line, 1 << 20);
    char c = 0;
    while (c != '\n' && read(s->out[0], &c, 1) == 1)
        assert_int_equal(buf_add(&line, &c, 1), 0);
    return buf_take(&line, NULL);
}

/* A message answered before the stop signal stays answered; the signal
 * goes only after its answer came, since the transport looks at a stop
 * signal before input that is ready at the same time. */
static void test_stop_signal(void **state)
{
    (void)state;
    struct server *s = start(1 << 20);
    put(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n");
    char *first = read_line(s);
    assert_non_null(strstr(first, "\"id\":1,\"result\":{}"));
    assert_int_equal(count_lines(first), 1);
    char *out = finish(s, true);
    assert_int_equal(count_lines(out), 0);
    free(first);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_framing),
        cmocka_unit_test(test_overlong_line),
        cmocka_unit_test(test_stop_signal),
    };
    return cmocka_run_group_tests_name("transport_stdio", tests, NULL, NULL);
}
