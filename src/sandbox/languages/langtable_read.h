/* Reading one languages file (sandbox/languages/langtable.h) into drafts: the
 * values each entry sets, which keys set them and on which line, each
 * checked on its own. The merge (langtable_merge.h) puts the built-in
 * file's and the operator's together and checks the rest. Internal to
 * the language table. */
#ifndef MCPSBX_LANGTABLE_READ_H
#define MCPSBX_LANGTABLE_READ_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "base/util.h"
#include "sandbox/languages/langtable.h"

/* A message quotes at most this much of the file. */
#define LANGTABLE_QUOTE_MAX 40

enum field {
    F_NAME,
    F_ALIASES,
    F_IMAGE,
    F_SOURCE_FILE,
    F_RUNNER,
    F_COMPILE,
    F_COMPILE_TIMEOUT,
    F_TYPECHECK,
    F_TYPECHECK_WARM,
    F_RUN,
    F_VERSION,
    F_POOL_SIZE,
    F_POOL_MAX,
    F_PRELOAD,
    F_NETWORK,
    F_IMAGE_PACKAGES,
    F_PACKAGES,
    F_PLOTS,
    F_ENVIRONMENT,
    F_RUNTIME,
    F_EGRESS,
    F_DISABLED,
    N_FIELDS
};

/* What a key holds, which says how it is read and merged. */
enum field_kind {
    K_STRING,   /* char * */
    K_LIST,     /* struct langtable_strv */
    K_INT,      /* long long */
    K_BOOL,     /* bool */
    K_RUNNER,   /* enum langtable_runner */
    K_CHECKER,  /* enum langtable_checker; null is "none" */
    K_EGRESS,   /* struct egress_patterns *; [] and null are NULL, none */
    K_PACKAGES, /* struct langtable_packages * (langtable_packages.h); null is NULL */
    K_DISABLED, /* kept in the draft only */
};

struct field_def {
    const char *key;
    size_t offset; /* in struct langtable_lang */
    bool (*valid)(const char *s, size_t n);
    const char *form; /* what valid wants, for messages */
    size_t max;       /* K_LIST: items */
    long long lo, hi; /* K_INT: bounds */
    enum field_kind kind;
    bool nullable; /* null clears the value (a built-in one included) */
    bool argv;     /* K_LIST: a command, never empty */
};

extern const struct field_def langtable_fields[N_FIELDS];

/* Where a value came from, for messages after the merge. */
struct origin {
    const char *file;
    int line;  /* 0: unknown */
    int level; /* 0 built-in, 1 the operator's file */
};

/* A language while the table is built: the values, which keys set them,
 * and where. */
struct draft {
    struct langtable_lang l;
    bool set[N_FIELDS];
    struct origin from[N_FIELDS];
    struct origin entry;
};

/* One file's entries, in its order. */
struct file_drafts {
    struct draft *d;
    size_t n;
};

/* Parses a whole file (text[0..len), name for messages, level as in
 * struct origin) into drafts, one per entry, each checked on its own.
 * Returns 0, or -1 with err ("NAME:LINE: ..."). */
int langtable_read_file(const char *text, size_t len, const char *name, int level,
                        struct file_drafts *out, struct err *err);

void langtable_drafts_free(struct file_drafts *fd);

/* err set to "FILE:LINE: message" (or "FILE: message" without a line);
 * returns -1. */
int langtable_fail_at(struct err *err, const struct origin *o, const char *fmt, ...)
    ATTR_PRINTF(3, 4);

void langtable_strv_free(struct langtable_strv *s);
void langtable_lang_free(struct langtable_lang *l);

/* A preload item for runner r: python's dotted identifiers; node's
 * built-ins ("fs", "node:fs", "fs/promises"). */
bool langtable_valid_module(const char *s, size_t n, enum langtable_runner r);

/* An environment item's form: NAME=value, NAME [A-Za-z_][A-Za-z0-9_]*. */
bool langtable_valid_env(const char *s, size_t n);

/* s[0..n) made printable and cut, into buf (cap bytes): text of the file
 * quoted in a message. Returns buf. */
const char *langtable_quote(char *buf, size_t cap, const char *s, size_t n);

#endif
