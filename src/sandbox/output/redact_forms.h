/* The forms a secret's value takes when a program prints it encoded, each
 * of which the redactor (redact.h) looks for: the bytes themselves; hex in
 * either case; percent-encoding as RFC 3986, Python's quote() and
 * quote_plus(), JavaScript's encodeURIComponent() and every byte, in
 * either case; base64 (standard and URL-safe, padded or not) starting at
 * each of the three offsets into a group; as a log line or a result shows
 * it (util_escape); inside a JSON string (json.dumps with and without
 * ensure_ascii, JSON.stringify); and inside a Python repr(). Forms equal to
 * the raw bytes are given again: the redactor keeps each text once. */
#ifndef MCPSBX_REDACT_FORMS_H
#define MCPSBX_REDACT_FORMS_H

#include <stddef.h>

#include "base/err.h"

/* The cap on one form of a value of n bytes. The longest is JSON's with
 * ensure_ascii, which writes a control byte as six (\u0000); a form in
 * base64 is 4/3 of the value and its offset, plus the last group's 4. */
#define REDACT_FORM_GROWTH 6
#define REDACT_FORM_MAX(n) ((n)*REDACT_FORM_GROWTH + 8)

/* Calls add(ctx, form, len) for every form of v[0..n). The forms' bytes
 * are zeroed once add returns. -1 with ERR_INTERNAL when a form passed
 * REDACT_FORM_MAX (a bug: the redactor must not go on without it). */
int redact_forms(const unsigned char *v, size_t n,
                 void (*add)(void *ctx, const char *form, size_t len), void *ctx, struct err *err);

#endif
