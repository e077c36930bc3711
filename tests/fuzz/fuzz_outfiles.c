/* libFuzzer harness for the file frames a sandbox sends before its
 * completion record (src/sandbox/output/outfiles.c). Input: byte 0 picks the
 * caps, byte 1 the account passed to outfiles_finish; the rest is split at
 * '\n' into frames, fed in order until one is refused.
 *
 * Checks: a refusal comes with a message and nothing is kept of the frame;
 * whatever was accepted stays within the caps (count per kind, bytes per
 * file and in all); every kept file's bytes have the size and SHA-256 it
 * carries, was sent with a path the rules allow (sandbox/output/workpath.h) or
 * a plot's name, and shows a name of its own; shown names and left-out
 * names and reasons are escaped (UTF-8 without a control character:
 * util_escape leaves them as they are).
 *
 * Replay one input: build/fuzz/fuzz_outfiles FILE */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/codec.h"
#include "base/util.h"
#include "fuzz.h"
#include "sandbox/output/outfiles.h"
#include "sandbox/output/workpath.h"

/* Shown text: util_escape changes nothing in it. */
static bool shown_ok(const char *s)
{
    size_t n = strlen(s);
    char *again = malloc(n * UTIL_ESCAPE_GROWTH + 1);
    CHECK(again != NULL);
    util_escape(again, n * UTIL_ESCAPE_GROWTH + 1, s, n);
    bool same = strcmp(again, s) == 0;
    free(again);
    return same && util_utf8_valid(s, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    struct outfiles_caps caps = {
        .max_files = data[0] & 3,
        .max_file_bytes = (size_t)1 << (data[0] >> 4 & 7) << 2,
        .max_plots = data[0] >> 2 & 1,
        .max_plot_bytes = 64,
        .max_total_bytes = data[0] & 0x80 ? 96 : 1u << 20,
    };
    struct outfiles o;
    outfiles_init(&o, &caps, NULL);
    const char *p = (const char *)data + 2;
    size_t left = size - 2;
    while (left) {
        const char *nl = memchr(p, '\n', left);
        size_t len = nl ? (size_t)(nl - p) : left;
        struct err err = ERR_INIT;
        size_t before = o.n;
        int rc = outfiles_frame(&o, p, len, &err);
        if (rc < 0) {
            CHECK(err.msg != NULL && err.code == ERR_PROTOCOL);
            CHECK(o.n == before);
            err_clear(&err);
            break;
        }
        p += len + (nl ? 1 : 0);
        left -= len + (nl ? 1 : 0);
    }
    struct err err = ERR_INIT;
    if (outfiles_finish(&o, data[1] & 3, data[1] >> 2 & 31, 0, false, &err) < 0) {
        CHECK(err.msg != NULL);
        err_clear(&err);
    }

    size_t plots = 0;
    size_t total = 0;
    for (size_t i = 0; i < o.n; i++) {
        const struct outfile *f = &o.v[i];
        char hex[CODEC_SHA256_HEX_LEN + 1];
        codec_sha256_hex(f->data, f->size, hex);
        CHECK(strcmp(hex, f->sha256) == 0);
        CHECK(f->size <= (f->plot ? caps.max_plot_bytes : caps.max_file_bytes));
        total += f->size;
        if (f->plot) {
            plots++;
            CHECK(strncmp(f->path, OUTFILES_PLOT_PREFIX, strlen(OUTFILES_PLOT_PREFIX)) == 0);
        } else {
            char *norm = NULL;
            CHECK(workpath_output(f->sent_path, strlen(f->sent_path), &norm, NULL) == 0);
            CHECK(strcmp(norm, f->sent_path) == 0);
            free(norm);
            CHECK(shown_ok(f->path));
            for (size_t k = 0; k < i; k++)
                CHECK(o.v[k].plot || strcmp(o.v[k].path, f->path) != 0);
        }
    }
    CHECK(plots == o.n_plots && plots <= caps.max_plots && o.n - plots <= caps.max_files);
    CHECK(total <= caps.max_total_bytes && total == o.total);
    for (size_t i = 0; i < o.n_left; i++) {
        CHECK(shown_ok(o.left[i].path));
        CHECK(shown_ok(o.left[i].reason));
    }
    outfiles_free(&o);
    return 0;
}
