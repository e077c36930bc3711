/* libFuzzer harness for the file frames a sandbox sends before its
 * completion record (src/sandbox/outfiles.c). Input: byte 0 picks the
 * caps, byte 1 the account passed to outfiles_finish; the rest is split at
 * '\n' into frames, fed in order until one is refused.
 *
 * Checks: a refusal comes with a message and nothing is kept of the frame;
 * whatever was accepted stays within the caps (count per kind, bytes per
 * file and in all); every kept file's bytes have the size and SHA-256 it
 * carries and a path the rules allow (sandbox/workpath.h) or a plot's
 * name; left-out names are UTF-8 with no control byte.
 *
 * Replay one input: build/fuzz/fuzz_outfiles FILE */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/codec.h"
#include "base/util.h"
#include "fuzz.h"
#include "sandbox/outfiles.h"
#include "sandbox/workpath.h"

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
    outfiles_init(&o, &caps);
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
            CHECK(workpath_output(f->path, strlen(f->path), &norm, NULL) == 0);
            CHECK(strcmp(norm, f->path) == 0);
            free(norm);
        }
    }
    CHECK(plots == o.n_plots && plots <= caps.max_plots && o.n - plots <= caps.max_files);
    CHECK(total <= caps.max_total_bytes && total == o.total);
    for (size_t i = 0; i < o.n_left; i++) {
        for (const char *c = o.left[i].path; *c; c++)
            CHECK((unsigned char)*c >= 0x20 && *c != 0x7f);
        CHECK(util_utf8_valid(o.left[i].path, strlen(o.left[i].path)));
        CHECK(util_utf8_valid(o.left[i].reason, strlen(o.left[i].reason)));
    }
    outfiles_free(&o);
    return 0;
}
