/* The files a run returns: the runner sends them as frames on stdout
 * before its completion record (sandbox/runner/runner.h), and this collects them,
 * checking every frame against the caps the daemon asked for. Nothing
 * from the sandbox is trusted: paths are checked (sandbox/output/workpath.h),
 * sizes declared before the bytes and held to, digests compared; and
 * everything kept is redacted (sandbox/output/redact.h) before it is: each file's
 * bytes, whatever their encoding, and every name and reason, which are
 * also escaped for showing (util_escape).
 *
 * Frames (the line after the record marker, without its '\n'):
 *   F{"path": "...", "size": N, "kind": "file"|"plot"}   a file begins
 *   D<base64>                                           its next bytes
 *   E<64 hex digits>                                    its SHA-256: it ends
 *   L{"path": "...", "reason": "...", "size": N?}       one left out */
#ifndef MCPSBX_OUTFILES_H
#define MCPSBX_OUTFILES_H

#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/codec.h"
#include "base/err.h"

/* Left-out files kept by name (the runner names at most this many). */
#define OUTFILES_LEFT_KEEP 20
/* A plot's name: "plot-<n>.png", n from 1 in the order drawn. */
#define OUTFILES_PLOT_PREFIX "plot-"

struct outfiles_caps {
    size_t max_files;      /* not counting plots */
    size_t max_file_bytes; /* one file */
    size_t max_plots;
    size_t max_plot_bytes;  /* one plot */
    size_t max_total_bytes; /* files and plots together */
};

struct outfile {
    /* normalized, relative to the working directory, as shown: redacted,
     * escaped, and made unique with "~<n>" if that made it another's;
     * a plot's name */
    char *path;
    char *sent_path; /* as the runner named it: what the protocol's checks compare */
    bool plot;
    char *data; /* size bytes (and a NUL), redacted */
    size_t size;
    char sha256[CODEC_SHA256_HEX_LEN + 1]; /* of data as kept */
};

struct outfile_left {
    char *path;     /* as the runner named it, redacted and escaped */
    char *reason;   /* the runner's words, redacted and escaped */
    long long size; /* -1 when not given */
};

struct redactor;

struct outfiles {
    struct outfiles_caps caps;
    const struct redactor *redactor; /* NULL: nothing to redact */
    struct outfile *v;               /* in the order sent: plots first, then files by path */
    size_t n, n_plots;
    struct outfile_left left[OUTFILES_LEFT_KEEP];
    size_t n_left;          /* kept in left[] */
    long long left_total;   /* left out in all (the record's count) */
    long long walk_stopped; /* the runner stopped looking after this many entries; 0 = no */
    bool cwd_gone;          /* the program removed its working directory */
    size_t total;           /* bytes of every file received (before redaction) */
    size_t shown_total;     /* bytes of the files kept, redacted (under the same cap) */
    size_t n_dropped;       /* received, left out: larger than a cap once redacted */
    size_t n_left_dropped;  /* of those, named in left[] */
    /* the file between its F and E frames */
    bool open;
    struct outfile cur;
    struct buf cur_data;
    struct codec_sha256 cur_sha;
};

/* redactor (borrowed, may be NULL) must outlive o. */
void outfiles_init(struct outfiles *o, const struct outfiles_caps *caps,
                   const struct redactor *redactor);
void outfiles_free(struct outfiles *o);

/* One frame. -1 with ERR_PROTOCOL when it breaks the protocol or a cap. */
int outfiles_frame(struct outfiles *o, const char *line, size_t len, struct err *err);

/* The record's account ({"sent": N, "left_out": M, ...}, already parsed):
 * checks it against what came. */
int outfiles_finish(struct outfiles *o, long long sent, long long left_out, long long walk_stopped,
                    bool cwd_gone, struct err *err);

#endif
