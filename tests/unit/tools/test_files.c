/* tools/files_arg.c and tools/files_result.c: the files and output_files
 * arguments, and returned files as MCP content. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "base/codec.h"
#include "base/util.h"
#include "tools/files_arg.h"
#include "tools/files_result.h"
#include "unit/options.h"

static json_object *parse(const char *text)
{
    json_object *o = json_tokener_parse(text);
    assert_non_null(o);
    return o;
}

static void check_arg_error(const struct config *cfg, const char *args, enum err_code code,
                            const char *mention)
{
    json_object *a = parse(args);
    struct run fa;
    run_init(&fa);
    struct err err = ERR_INIT;
    assert_int_equal(files_arg_parse(cfg, a, &fa, &err), -1);
    assert_int_equal(err.code, code);
    if (!strstr(err_msg(&err), mention))
        fail_msg("%s: '%s' does not mention '%s'", args, err_msg(&err), mention);
    assert_int_equal(fa.n_files, 0);
    assert_null(fa.file_data);
    err_clear(&err);
    json_object_put(a);
}

static void test_arg(void **state)
{
    struct config *cfg = *state;
    json_object *a = parse("{\"files\": [{\"path\": \"./d//in.csv\", \"content\": \"a,b\"},"
                           "{\"path\": \"raw\", \"content\": \"AP8=\", \"encoding\": \"base64\"}],"
                           "\"output_files\": [\"**/*.png\", \"./r.md\"]}");
    struct run fa;
    run_init(&fa);
    struct err err = ERR_INIT;
    assert_int_equal(files_arg_parse(cfg, a, &fa, &err), 0);
    json_object_put(a); /* copies: nothing points into the request */
    assert_int_equal(fa.n_files, 2);
    assert_string_equal(fa.files[0].path, "d/in.csv");
    assert_int_equal(fa.files[0].content_len, 3);
    assert_memory_equal(fa.files[0].content, "a,b", 3);
    assert_false(fa.files[0].base64);
    assert_true(fa.files[1].base64);
    assert_int_equal(fa.n_patterns, 2);
    assert_string_equal(fa.patterns[1], "r.md");
    run_free(&fa);

    /* Neither argument: nothing. */
    a = parse("{}");
    assert_int_equal(files_arg_parse(cfg, a, &fa, &err), 0);
    assert_int_equal(fa.n_files + fa.n_patterns, 0);
    run_free(&fa);
    json_object_put(a);
}

static void test_arg_refused(void **state)
{
    struct config *cfg = *state;
    cfg->max_files_in = 2;
    cfg->max_file_in_bytes = 4;
    cfg->max_files_in_bytes = 6;
    check_arg_error(
        cfg, "{\"files\":[{\"path\":\"a\",\"content\":\"\"},{\"path\":\"../b\",\"content\":\"\"}]}",
        ERR_INVALID, "files[1].path");
    check_arg_error(
        cfg, "{\"files\":[{\"path\":\"a\",\"content\":\"\"},{\"path\":\"./a\",\"content\":\"\"}]}",
        ERR_INVALID, "clashes with files[0]");
    check_arg_error(
        cfg, "{\"files\":[{\"path\":\"a/b\",\"content\":\"\"},{\"path\":\"a\",\"content\":\"\"}]}",
        ERR_INVALID, "clashes");
    check_arg_error(cfg, "{\"files\":[{\"path\":\"a\",\"content\":\"x\",\"encoding\":\"base64\"}]}",
                    ERR_INVALID, "not base64");
    check_arg_error(cfg, "{\"files\":[{\"path\":\"a\",\"content\":\"12345\"}]}", ERR_TOO_BIG,
                    "--max-file-in-bytes");
    check_arg_error(
        cfg,
        "{\"files\":[{\"path\":\"a\",\"content\":\"1234\"},{\"path\":\"b\",\"content\":\"123\"}]}",
        ERR_TOO_BIG, "--max-files-in-bytes");
    check_arg_error(
        cfg,
        "{\"files\":[{\"path\":\"a\",\"content\":\"\"},{\"path\":\"b\",\"content\":\"\"},"
        "{\"path\":\"c\",\"content\":\"\"}]}",
        ERR_TOO_BIG, "--max-files-in");
    check_arg_error(cfg, "{\"output_files\":[\"ok\", \"/abs\"]}", ERR_INVALID, "output_files[1]");
    /* Base64 sizes are the decoded ones: 8 characters are 6 bytes. */
    cfg->max_file_in_bytes = 6;
    json_object *a =
        parse("{\"files\":[{\"path\":\"a\",\"content\":\"AAAAAAAA\",\"encoding\":\"base64\"}]}");
    struct run fa;
    run_init(&fa);
    assert_int_equal(files_arg_parse(cfg, a, &fa, NULL), 0);
    run_free(&fa);
    json_object_put(a);
}

static const char PNG[] = "\x89PNG\r\n\x1a\nrest-of-png";

static void add_file(struct outfiles *of, const char *path, bool plot, const char *data, size_t n)
{
    of->v = xrealloc(of->v, (of->n + 1) * sizeof(*of->v));
    struct outfile *f = &of->v[of->n++];
    memset(f, 0, sizeof(*f));
    f->path = xstrdup(path);
    f->plot = plot;
    f->data = xmalloc(n + 1);
    memcpy(f->data, data, n);
    f->data[n] = '\0';
    f->size = n;
    codec_sha256_hex(data, n, f->sha256);
    if (plot)
        of->n_plots++;
}

static const char *types(json_object *blocks, char *out, size_t cap)
{
    out[0] = '\0';
    for (size_t i = 0; i < json_object_array_length(blocks); i++) {
        json_object *t = json_object_object_get(json_object_array_get_idx(blocks, i), "type");
        strncat(out, json_object_get_string(t), cap - strlen(out) - 2);
        strncat(out, " ", cap - strlen(out) - 1);
    }
    return out;
}

static void test_result(void **state)
{
    struct config *cfg = *state;
    cfg->max_inline_image_bytes = 100;
    cfg->max_inline_text_bytes = 10;
    struct runstore *store = runstore_new(60000, 1 << 20, 0);
    struct files_result_ctx ctx = {.cfg = cfg, .store = store, .owner = "me"};
    struct outfiles of;
    outfiles_init(&of, &(struct outfiles_caps){0}, NULL);
    add_file(&of, "plot-1.png", true, PNG, sizeof(PNG) - 1);
    add_file(&of, "outputs/t.csv", false, "a,b\n", 4);
    add_file(&of, "outputs/long name.txt", false, "0123456789ABC", 13);
    add_file(&of, "outputs/fake.png", false, "not a png", 9);
    of.left[0] = (struct outfile_left){xstrdup("outputs/l"), xstrdup("a symbolic link"), -1};
    of.n_left = 1;
    of.left_total = 3;

    for (int structured = 1; structured >= 0; structured--) {
        struct tools_features f = {.annotations = true, .structured = structured};
        json_object *blocks = json_object_new_array();
        json_object *sc = json_object_new_object();
        struct buf text;
        buf_init(&text, files_result_text_max(&of));
        assert_int_equal(files_result_add(&of, &ctx, &f, blocks, sc, &text, NULL), 0);
        char t[256];
        assert_string_equal(types(blocks, t, sizeof(t)),
                            structured ? "image resource resource_link resource_link "
                                       : "image resource ");
        json_object *files = json_object_object_get(sc, "files");
        assert_int_equal(json_object_array_length(files), 4);
        json_object *f2 = json_object_array_get_idx(files, 2);
        const char *uri = json_object_get_string(json_object_object_get(f2, "uri"));
        assert_non_null(strstr(uri, "/files/outputs/long%20name.txt"));
        assert_int_equal(strncmp(uri, FILES_RESULT_URI_PREFIX, strlen(FILES_RESULT_URI_PREFIX)), 0);
        assert_string_equal(json_object_get_string(json_object_object_get(f2, "delivery")), "link");
        assert_string_equal(json_object_get_string(json_object_object_get(f2, "mime_type")),
                            "text/plain");
        assert_string_equal(json_object_get_string(json_object_object_get(
                                json_object_array_get_idx(files, 3), "mime_type")),
                            "image/png");
        json_object *p = json_object_array_get_idx(files, 0);
        assert_string_equal(json_object_get_string(json_object_object_get(p, "kind")), "plot");
        assert_non_null(
            strstr(json_object_get_string(json_object_object_get(p, "uri")), "/plots/plot-1.png"));
        /* Stored for this owner only. */
        char *mime = NULL;
        char *data = NULL;
        size_t size = 0;
        assert_int_equal(runstore_get(store, "me", uri, &mime, &data, &size), 0);
        assert_int_equal(size, 13);
        free(mime);
        free(data);
        assert_int_equal(runstore_get(store, "other", uri, &mime, &data, &size), -1);
        assert_true(json_object_get_boolean(json_object_object_get(sc, "files_truncated")));
        assert_int_equal(json_object_array_length(json_object_object_get(sc, "files_left_out")), 1);
        assert_non_null(strstr(text.data, "left out: outputs/l (a symbolic link)"));
        assert_non_null(strstr(text.data, "left out: 2 more"));
        assert_non_null(
            strstr(text.data, "outputs/long name.txt: text/plain, 13 B: mcp-sandboxd://"));
        buf_free(&text);
        json_object_put(blocks);
        json_object_put(sc);
    }

    /* No store: what cannot be inlined is left out, with a reason. */
    ctx.store = NULL;
    json_object *blocks = json_object_new_array();
    json_object *sc = json_object_new_object();
    struct buf text;
    buf_init(&text, files_result_text_max(&of));
    assert_int_equal(files_result_add(&of, &ctx, &(struct tools_features){.structured = true},
                                      blocks, sc, &text, NULL),
                     0);
    assert_int_equal(json_object_array_length(json_object_object_get(sc, "files")), 2);
    assert_int_equal(json_object_array_length(json_object_object_get(sc, "files_left_out")), 3);
    buf_free(&text);
    json_object_put(blocks);
    json_object_put(sc);

    /* A text without the room files_result_text_max asks for is an error. */
    blocks = json_object_new_array();
    sc = json_object_new_object();
    buf_init(&text, 64);
    struct err err = ERR_INIT;
    assert_int_equal(files_result_add(&of, &ctx, &(struct tools_features){.structured = true},
                                      blocks, sc, &text, &err),
                     -1);
    assert_int_equal(err.code, ERR_INTERNAL);
    err_clear(&err);
    buf_free(&text);
    json_object_put(blocks);
    json_object_put(sc);

    outfiles_free(&of);
    runstore_free(store);
}

static void test_mime(void **state)
{
    (void)state;
    assert_string_equal(files_result_mime("a/B.PNG", "", 0), "image/png");
    assert_string_equal(files_result_mime("x.tar.gz", "", 0), "application/gzip");
    assert_string_equal(files_result_mime("noext", "text", 4), "text/plain");
    assert_string_equal(files_result_mime("noext", "a\0b", 3), "application/octet-stream");
    assert_string_equal(files_result_mime("dir.d/noext", "\xff", 1), "application/octet-stream");
    assert_string_equal(files_result_mime(".hidden", "x", 1), "text/plain");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_arg, options_setup, options_teardown),
        cmocka_unit_test_setup_teardown(test_arg_refused, options_setup, options_teardown),
        cmocka_unit_test_setup_teardown(test_result, options_setup, options_teardown),
        cmocka_unit_test(test_mime),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
