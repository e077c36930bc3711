/* redact.c: every form of a secret is replaced, wherever the stream's
 * chunks happen to split it, and nothing else changes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "base/util.h"
#include "sandbox/output/redact.h"

struct sink {
    struct buf out;
    int calls;
    int stop_after; /* 0: never */
};

static int to_buf(void *ctx, const char *data, size_t len)
{
    struct sink *k = ctx;
    if (buf_add(&k->out, data, len) < 0)
        return -1;
    k->calls++;
    return k->stop_after && k->calls >= k->stop_after ? 7 : 0;
}

/* The whole text through a fresh stream in chunks of `step` bytes. */
static char *run(const struct redactor *r, const char *text, size_t step)
{
    struct sink k = {0};
    buf_init(&k.out, 1 << 20);
    struct redact_stream s = {0};
    size_t n = strlen(text);
    for (size_t i = 0; i < n; i += step) {
        size_t len = n - i < step ? n - i : step;
        assert_int_equal(redact_feed(r, &s, text + i, len, to_buf, &k), 0);
    }
    assert_int_equal(redact_flush(r, &s, to_buf, &k), 0);
    redact_stream_free(&s);
    assert_int_equal(buf_add(&k.out, "", 1), 0);
    return k.out.data;
}

/* redactor_new, which must succeed. */
static struct redactor *make(const char *const *names, const char *const *values, size_t n)
{
    struct redactor *r = NULL;
    struct err err = ERR_INIT;
    assert_int_equal(redactor_new(names, values, n, &r, &err), 0);
    err_clear(&err);
    return r;
}

static struct redactor *two_secrets(void)
{
    const char *names[] = {"API_KEY", "DB_PASS", "PIN"};
    const char *values[] = {"sk-live-1234/abcd+x", "p@ss word!", "123"};
    return make(names, values, 3);
}

static void expect(const struct redactor *r, const char *in, const char *want)
{
    for (size_t step = 1; step <= strlen(in) + 1; step++) {
        char *got = run(r, in, step);
        if (strcmp(got, want) != 0)
            fail_msg("chunks of %zu: got \"%s\", want \"%s\"", step, got, want);
        free(got);
    }
}

/* The forms a program's own printing gives a value: inside a JSON string
 * (json.dumps with and without ensure_ascii, JSON.stringify) and inside a
 * Python repr(), whichever quote it uses: print(os.environ) and
 * json.dumps(dict(os.environ)) are the likeliest accidental echoes. */
static void test_json_and_repr_forms(void **state)
{
    (void)state;
    const char *names[] = {"TOKEN"};
    const char *values[] = {"p\"w\\\xc3\xb6'x\n\xf0\x9f\x94\x91"}; /* p"w\ö'x<LF>🔑 */
    struct redactor *r = make(names, values, 1);
    /* json.dumps, ensure_ascii */
    expect(r, "{\"TOKEN\": \"p\\\"w\\\\\\u00f6'x\\n\\ud83d\\udd11\"}",
           "{\"TOKEN\": \"[REDACTED:TOKEN]\"}");
    /* json.dumps(ensure_ascii=False), JSON.stringify */
    expect(r, "\"p\\\"w\\\\\xc3\xb6'x\\n\xf0\x9f\x94\x91\"", "\"[REDACTED:TOKEN]\"");
    /* repr(): both quotes in it, so single quotes with \' */
    expect(r, "environ({'TOKEN': 'p\"w\\\\\xc3\xb6\\'x\\n\xf0\x9f\x94\x91'})",
           "environ({'TOKEN': '[REDACTED:TOKEN]'})");
    redactor_free(r);
}

static void test_raw_value(void **state)
{
    (void)state;
    struct redactor *r = two_secrets();
    expect(r, "key=sk-live-1234/abcd+x\n", "key=[REDACTED:API_KEY]\n");
    expect(r, "sk-live-1234/abcd+xsk-live-1234/abcd+x", "[REDACTED:API_KEY][REDACTED:API_KEY]");
    expect(r, "pass: p@ss word! end", "pass: [REDACTED:DB_PASS] end");
    redactor_free(r);
}

/* Encoded forms: base64 (standard and URL-safe, no padding), hex, URL. */
static void test_encoded_forms(void **state)
{
    (void)state;
    const char *names[] = {"TOKEN"};
    const char *values[] = {"s3cr3t?/"};
    struct redactor *r = make(names, values, 1);
    expect(r, "czNjcjN0Py8=", "[REDACTED:TOKEN]=");    /* base64 */
    expect(r, "czNjcjN0Py8", "[REDACTED:TOKEN]");      /* no padding */
    expect(r, "s3cr3t%3F%2F", "[REDACTED:TOKEN]");     /* URL-encoded */
    expect(r, "7333637233743f2f", "[REDACTED:TOKEN]"); /* hex */
    expect(r, "7333637233743F2F", "[REDACTED:TOKEN]"); /* HEX */
    const char *v2[] = {"\xfb\xff\xfe\xfd"};           /* '+' and '/' in base64 */
    struct redactor *r2 = make(names, v2, 1);
    expect(r2, "x +//+/Q== x", "x [REDACTED:TOKEN]== x");
    expect(r2, "x -__-_Q x", "x [REDACTED:TOKEN] x");
    redactor_free(r2);
    redactor_free(r);
}

/* Other text is untouched: prefixes of a value that never complete, bytes
 * of every value, NULs; short values are not looked for. */
static void test_other_text_unchanged(void **state)
{
    (void)state;
    struct redactor *r = two_secrets();
    expect(r, "sk-live-1234/abcd+ sk-live p@ss word", "sk-live-1234/abcd+ sk-live p@ss word");
    expect(r, "PIN is 123, 1234", "PIN is 123, 1234");
    expect(r, "s", "s");
    expect(r, "", "");
    const char nul[] = "a\0b";
    struct sink k = {0};
    buf_init(&k.out, 1 << 20);
    struct redact_stream s = {0};
    assert_int_equal(redact_feed(r, &s, nul, 3, to_buf, &k), 0);
    assert_int_equal(redact_flush(r, &s, to_buf, &k), 0);
    assert_int_equal(k.out.len, 3);
    assert_memory_equal(k.out.data, nul, 3);
    buf_free(&k.out);
    redact_stream_free(&s);
    redactor_free(r);
}

/* Base64 of a value inside a longer text: at each of the three offsets
 * (b64encode(b"Bearer " + key) starts the key at offset 7), in both
 * alphabets, padded or not, what only the value decides is replaced. */
static void test_base64_any_offset(void **state)
{
    (void)state;
    const char *names[] = {"TOKEN"};
    const char *values[] = {"s3cr3t?/"};
    struct redactor *r = make(names, values, 1);
    expect(r, "QnMzY3IzdD8v", "Qn[REDACTED:TOKEN]");                 /* b"B" + v */
    expect(r, "QmVzM2NyM3Q/Lw==", "QmV[REDACTED:TOKEN]==");          /* b"Be" + v */
    expect(r, "QmVzM2NyM3Q_Lw", "QmV[REDACTED:TOKEN]");              /* URL-safe, unpadded */
    expect(r, "QmVhcmVyIHMzY3IzdD8v", "QmVhcmVyIH[REDACTED:TOKEN]"); /* b"Bearer " + v */
    /* Followed by more bytes: the last character mixes in theirs. */
    expect(r, "czNjcjN0Py9tb3Jl", "[REDACTED:TOKEN]9tb3Jl"); /* v + b"more" */
    expect(r, "QnMzY3IzdD8vbW9yZQ==", "Qn[REDACTED:TOKEN]bW9yZQ==");
    redactor_free(r);
}

/* Percent-encoding with either case of digits, as quote(), quote_plus()
 * and encodeURIComponent() write it, and of every byte. */
static void test_percent_forms(void **state)
{
    (void)state;
    const char *names[] = {"K"};
    const char *values[] = {"k/y=v? z!"};
    struct redactor *r = make(names, values, 1);
    expect(r, "k%2Fy%3Dv%3F%20z%21", "[REDACTED:K]");       /* RFC 3986 */
    expect(r, "k%2fy%3dv%3f%20z%21", "[REDACTED:K]");       /* lowercase */
    expect(r, "?q=k/y%3Dv%3F%20z%21&", "?q=[REDACTED:K]&"); /* quote() keeps '/' */
    expect(r, "k%2Fy%3Dv%3F+z%21", "[REDACTED:K]");         /* quote_plus() */
    expect(r, "k%2fy%3dv%3f+z%21", "[REDACTED:K]");
    expect(r, "k%2Fy%3Dv%3F%20z!", "[REDACTED:K]");           /* encodeURIComponent() */
    expect(r, "%6b%2f%79%3d%76%3f%20%7a%21", "[REDACTED:K]"); /* every byte */
    expect(r, "%6B%2F%79%3D%76%3F%20%7A%21", "[REDACTED:K]");
    redactor_free(r);
}

/* Bytes are bytes: a value among bytes that are not UTF-8, and a value
 * that is not UTF-8 itself, are found. */
static void test_not_utf8(void **state)
{
    (void)state;
    const char *names[] = {"A", "B"};
    const char *values[] = {"plain-secret", "bin\xff\xfe-secret"};
    struct redactor *r = make(names, values, 2);
    static const char in[] = "\xff\xc3(plain-secret\x80 bin\xff\xfe-secret\xfe";
    size_t n = 0;
    char *out = redact_bytes(r, in, sizeof(in) - 1, &n);
    static const char want[] = "\xff\xc3([REDACTED:A]\x80 [REDACTED:B]\xfe";
    assert_int_equal(n, sizeof(want) - 1);
    assert_memory_equal(out, want, n);
    free(out);
    redactor_free(r);
}

/* The caps' worst cases: a value of control bytes, whose JSON form writes
 * each as six (REDACT_FORM_GROWTH), and a text of back-to-back shortest
 * occurrences, each of which becomes a mark longer than itself. */
static void test_longest_forms(void **state)
{
    (void)state;
    const char *names[] = {"A_RATHER_LONG_NAME_FOR_A_SHORT_VALUE"};
    /* Control bytes that JSON has no short escape (\\n, \\t, ...) for. */
    static const unsigned char bytes[16] = {1,  2,  3,  4,  5,  6,  7,  11,
                                            14, 15, 16, 17, 18, 19, 20, 21};
    char value[17];
    char json[2 + 16 * 6 + 1];
    json[0] = '"';
    for (int i = 0; i < 16; i++) {
        value[i] = (char)bytes[i];
        snprintf(json + 1 + 6 * i, 7, "\\u%04x", bytes[i]);
    }
    value[16] = '\0';
    snprintf(json + 1 + 16 * 6, 2, "\"");
    const char *values[] = {value};
    struct redactor *r = make(names, values, 1);
    expect(r, json, "\"[REDACTED:A_RATHER_LONG_NAME_FOR_A_SHORT_VALUE]\"");
    redactor_free(r);

    const char *short_value[] = {"abcd"};
    r = make(names, short_value, 1);
    char in[4 * 50 + 1] = "";
    for (int i = 0; i < 50; i++)
        memcpy(in + 4 * i, "abcd", 5);
    size_t n = 0;
    char *out = redact_bytes(r, in, strlen(in), &n);
    static const char mark[] = "[REDACTED:A_RATHER_LONG_NAME_FOR_A_SHORT_VALUE]";
    assert_int_equal(n, 50 * (sizeof(mark) - 1));
    for (int i = 0; i < 50; i++)
        assert_memory_equal(out + (size_t)i * (sizeof(mark) - 1), mark, sizeof(mark) - 1);
    free(out);
    redactor_free(r);
}

/* Occurrences that overlap, of one value or two, make one mark: no part
 * of either is left between marks. */
static void test_overlaps(void **state)
{
    (void)state;
    const char *names[] = {"A", "B", "C"};
    const char *values[] = {"abcdef", "cdefgh", "aaaaaa"};
    struct redactor *r = make(names, values, 3);
    expect(r, "xabcdefghx", "x[REDACTED:A]x");
    expect(r, "xcdefghx abcdefx", "x[REDACTED:B]x [REDACTED:A]x");
    expect(r, "aaaaaaaaaaaaaaaaaaaa!aaaaa", "[REDACTED:C]!aaaaa");
    expect(r, "abcdefabcdef", "[REDACTED:A][REDACTED:A]");
    redactor_free(r);
}

/* A value with a control character is also looked for as util_escape
 * shows it, and redact_text leaves neither form nor a control byte. */
static void test_text(void **state)
{
    (void)state;
    const char *names[] = {"T", "U"};
    const char *values[] = {"tab\there", "sk-text-1234"};
    struct redactor *r = make(names, values, 2);
    expect(r, "a tab\\there b", "a [REDACTED:T] b");
    static const char in[] = "err: tab\there\nforged\x1b[31m sk-text-1234 \xff\xc2\x85";
    char *t = redact_text(r, in, sizeof(in) - 1, 1000);
    assert_string_equal(t, "err: [REDACTED:T]\\nforged\\x1b[31m [REDACTED:U] \\xff\\u0085");
    free(t);
    /* Its shown form, written as such. */
    t = redact_text(r,
                    "tab\\t"
                    "here",
                    9, 1000);
    assert_string_equal(t, "[REDACTED:T]");
    free(t);
    /* Cut after redaction: never a value's first bytes at the cut. */
    t = redact_text(r, "0123456789 sk-text-1234 tail", 28, 20);
    assert_string_equal(t, "0123456789 [REDAC...");
    free(t);
    t = redact_text(NULL, "a\nb", 3, 100);
    assert_string_equal(t, "a\\nb");
    free(t);
    redactor_free(r);
}

/* The flush's sinks: ctx is the pair of sinks. */
static int to_first(void *ctx, const char *data, size_t len)
{
    return to_buf((struct sink *)ctx, data, len);
}

static int to_second(void *ctx, const char *data, size_t len)
{
    return to_buf((struct sink *)ctx + 1, data, len);
}

/* stdout and stderr through a pair, in the order given ("1:" or "2:"
 * before each chunk); returns "stdout|stderr". */
static char *run_pair(const struct redactor *r, const char *const *chunks, size_t n)
{
    struct sink k[2] = {0};
    buf_init(&k[0].out, 1 << 20);
    buf_init(&k[1].out, 1 << 20);
    struct redact_pair p = {0};
    for (size_t i = 0; i < n; i++) {
        int stream = chunks[i][0] == '2';
        const char *text = chunks[i] + 2;
        assert_int_equal(redact_pair_feed(r, &p, stream, text, strlen(text), to_buf, &k[stream]),
                         0);
    }
    assert_int_equal(redact_pair_flush(r, &p, to_first, to_second, k), 0);
    redact_pair_free(&p);
    char *s = xasprintf("%s|%s", buf_cstr(&k[0].out), buf_cstr(&k[1].out));
    buf_free(&k[0].out);
    buf_free(&k[1].out);
    return s;
}

/* A value written half on stdout and half on stderr comes back whole in
 * neither, nor in stdout + stderr, nor in stderr + stdout. */
static void test_split_across_streams(void **state)
{
    (void)state;
    const char *names[] = {"S"};
    const char *values[] = {"split-secret-42"};
    struct redactor *r = make(names, values, 1);
    struct {
        const char *chunks[4];
        size_t n;
        const char *want;
    } cases[] = {
        /* Half and half, in either order of arrival and of the streams. */
        {{"1:out split-sec", "2:ret-42 err"}, 2, "out [REDACTED:S]|ret-42 err"},
        {{"2:split-sec", "1:ret-42"}, 2, "ret-42|[REDACTED:S]"},
        /* Only a reader's concatenation joins them (stdout went on). */
        {{"2:ret-42", "1:split-sec"}, 2, "[REDACTED:S]|ret-42"},
        /* Joined in arrival order, then stdout goes on: still replaced. */
        {{"1:split-sec", "2:ret-42", "1:\nmore"}, 3, "[REDACTED:S]\nmore|ret-42"},
        /* Nothing joins: unchanged. */
        {{"1:split-sec", "2:other", "1:\n"}, 3, "split-sec\n|other"},
        /* Whole on one stream, interleaved with the other. */
        {{"1:split-s", "2:x", "1:ecret-42"}, 3, "[REDACTED:S]|x"},
    };
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        char *got = run_pair(r, cases[i].chunks, cases[i].n);
        if (strcmp(got, cases[i].want) != 0)
            fail_msg("case %zu: got \"%s\", want \"%s\"", i, got, cases[i].want);
        free(got);
    }
    redactor_free(r);
}

/* Nothing long enough: no redactor, and feeding through NULL passes bytes. */
static void test_nothing_to_look_for(void **state)
{
    (void)state;
    const char *names[] = {"A", "B"};
    const char *values[] = {"", "abc"};
    assert_null(make(names, values, 2));
    assert_null(make(NULL, NULL, 0));
    char *got = run(NULL, "abc", 2);
    assert_string_equal(got, "abc");
    free(got);
}

/* A sink that says stop: its value comes back, and nothing more is sent. */
static void test_sink_stops(void **state)
{
    (void)state;
    struct redactor *r = two_secrets();
    struct sink k = {.stop_after = 1};
    buf_init(&k.out, 1 << 20);
    struct redact_stream s = {0};
    const char *in = "a sk-live-1234/abcd+x b";
    assert_int_equal(redact_feed(r, &s, in, strlen(in), to_buf, &k), 7);
    assert_int_equal(k.calls, 1);
    buf_free(&k.out);
    redact_stream_free(&s);
    redactor_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_raw_value),
        cmocka_unit_test(test_json_and_repr_forms),
        cmocka_unit_test(test_encoded_forms),
        cmocka_unit_test(test_other_text_unchanged),
        cmocka_unit_test(test_base64_any_offset),
        cmocka_unit_test(test_percent_forms),
        cmocka_unit_test(test_not_utf8),
        cmocka_unit_test(test_overlaps),
        cmocka_unit_test(test_longest_forms),
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_split_across_streams),
        cmocka_unit_test(test_nothing_to_look_for),
        cmocka_unit_test(test_sink_stops),
    };
    return cmocka_run_group_tests_name("redact", tests, NULL, NULL);
}
