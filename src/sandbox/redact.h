/* Best-effort redaction of secret values in a program's output: where a
 * value named by --pass-through-env appears in stdout or stderr exactly,
 * or as its base64 (standard or URL-safe, without padding), hex (either
 * case) or URL-encoded form, it is replaced by "[REDACTED:NAME]".
 *
 * Not a boundary: a program that holds a secret can always send it out
 * another way (split, reversed, encrypted, one byte per line); this only
 * keeps an echoed secret out of the model's context and the client's
 * logs. Values shorter than REDACT_MIN_LEN bytes are not looked for:
 * they would turn ordinary output into redaction marks.
 *
 * A redactor is immutable once built, so any thread may read it; each
 * output stream has its own redact_stream, which holds back only a tail
 * that could be the start of a value, until the next bytes or the flush
 * decide. */
#ifndef MCPSBX_REDACT_H
#define MCPSBX_REDACT_H

#include <stdbool.h>
#include <stddef.h>

#define REDACT_MIN_LEN 4

struct redactor;

/* From n names and their values (copied). NULL when no value is long
 * enough to be looked for: then there is nothing to do. */
struct redactor *redactor_new(const char *const *names, const char *const *values, size_t n);
void redactor_free(struct redactor *r);

/* Where output goes once redacted; nonzero stops (and is returned). */
typedef int (*redact_sink)(void *ctx, const char *data, size_t len);

struct redact_stream {
    char *held; /* a tail that may begin a value */
    size_t held_len;
};

/* Passes data on to sink with every value replaced. */
int redact_feed(const struct redactor *r, struct redact_stream *s, const char *data, size_t len,
                redact_sink sink, void *ctx);
/* The end of the stream: what was held back goes out (redacted). */
int redact_flush(const struct redactor *r, struct redact_stream *s, redact_sink sink, void *ctx);
/* Frees what a stream holds (zeroed first: it may be part of a value). */
void redact_stream_free(struct redact_stream *s);

#endif
