/* Best-effort redaction of secret values in what comes out of a sandbox:
 * where a value named by --pass-through-env appears, as it is or in one
 * of the forms below, its bytes are replaced by "[REDACTED:NAME]".
 *
 * The forms of a value: the bytes themselves; hex (either case); base64,
 * standard and URL-safe, at each of the three offsets a value can have
 * inside a longer encoded text (b64encode(b"Bearer " + key) starts the
 * key at offset 7): the characters that only the value's bits decide,
 * and, for the text ending with the value, those up to the padding;
 * percent-encoding with either case of hex digits, of everything but
 * RFC 3986's unreserved characters, as Python's quote() (also '/' kept),
 * quote_plus() (' ' as '+') and JavaScript's encodeURIComponent() (also
 * !'()* kept) write it, and of every byte; and the value as util_escape
 * shows it, when that differs (a value with a control character).
 *
 * Every occurrence of every form is found, overlapping or not; bytes
 * covered by any occurrence are replaced, each run of covered bytes by
 * one mark (the mark of the longest occurrence in it). Bytes are bytes:
 * output, file contents and names are redacted whatever their encoding.
 *
 * Not a boundary: a program that holds a secret can always send it out
 * another way (split, reversed, encrypted, one byte per line); this only
 * keeps an echoed secret out of the model's context and the client's
 * logs. Values shorter than REDACT_MIN_LEN bytes are not looked for:
 * they would turn ordinary output into redaction marks.
 *
 * Cost: one Aho-Corasick automaton over every form of every value, built
 * once (a node per byte of the forms, fewer where forms share a start:
 * about 15 per byte of a 100-byte alphanumeric value, 40 bytes a node). A
 * stream is scanned in one pass with amortized constant work per byte
 * however many values there are (a step looks through at most one node's
 * children), and holds back only
 * what may still become a form: at most the longest form's length (a
 * ring of that size and as many pending spans). The join of two streams
 * (redact_pair) adds at most the longest form's length in steps each time
 * output switches from one stream to the other.
 *
 * A redactor is immutable once built, so any thread may read it; each
 * output stream has its own redact_stream (or a redact_pair for stdout
 * and stderr). */
#ifndef MCPSBX_REDACT_H
#define MCPSBX_REDACT_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

#define REDACT_MIN_LEN 4

struct redactor;

/* From n names and their values (copied), into *out: NULL when no value
 * is long enough to be looked for (then there is nothing to do). -1 with
 * err when a value's forms cannot be made (redact_forms.h). */
int redactor_new(const char *const *names, const char *const *values, size_t n,
                 struct redactor **out, struct err *err);
void redactor_free(struct redactor *r);

/* Where output goes once redacted; nonzero stops (and is returned). */
typedef int (*redact_sink)(void *ctx, const char *data, size_t len);

struct redact_held;

/* One stream; {0} to start. */
struct redact_stream {
    struct redact_held *held; /* NULL until its first byte */
};

/* Passes data on to sink with every form replaced, holding back a tail
 * that may be the start of one until the next bytes or the flush decide.
 * r NULL: data goes on as it is. */
int redact_feed(const struct redactor *r, struct redact_stream *s, const char *data, size_t len,
                redact_sink sink, void *ctx);
/* The end of the stream: what was held back goes out (redacted). The
 * stream may then be fed again, as a new one. */
int redact_flush(const struct redactor *r, struct redact_stream *s, redact_sink sink, void *ctx);
/* Frees what a stream holds (zeroed first: it may be part of a value). */
void redact_stream_free(struct redact_stream *s);

/* Two streams a reader may put together (stdout and stderr): besides each
 * stream on its own, where the bytes one stream holds back and the bytes
 * that came next on the other make a form, the held part is replaced; at
 * the end the same is done for each stream's end followed by the other's
 * start (what concatenating them would show). So a value written half on
 * one and half on the other comes back whole in neither, nor in their
 * concatenation either way. (Live output can pass on one stream's held
 * bytes after the other's, an order in which pieces of a value that were
 * apart may meet: a value split into three or more pieces alternating
 * between the streams is not caught.) {0} to start. */
struct redact_pair {
    struct redact_stream s[2];
    int last;      /* 1 + the stream fed last; 0: none yet */
    char *head[2]; /* each stream's first bytes as passed on (the longest form's length) */
    size_t head_len[2];
};

int redact_pair_feed(const struct redactor *r, struct redact_pair *p, int stream, const char *data,
                     size_t len, redact_sink sink, void *ctx);
/* Both ends: each stream's held tail goes to its sink (sink[0], sink[1]). */
int redact_pair_flush(const struct redactor *r, struct redact_pair *p, redact_sink sink0,
                      redact_sink sink1, void *ctx);
void redact_pair_free(struct redact_pair *p);

/* s[0..n) redacted, as a new buffer (*out_len bytes and a NUL). */
char *redact_bytes(const struct redactor *r, const char *s, size_t n, size_t *out_len);

/* s[0..n) as text to log or to return: redacted, then escaped
 * (util_escape: control characters and invalid UTF-8), then redacted
 * again (an escape may complete a value's shown form), cut to at most max
 * bytes (max >= 4). NUL-terminated; the caller frees. r may be NULL. */
char *redact_text(const struct redactor *r, const char *s, size_t n, size_t max);

#endif
