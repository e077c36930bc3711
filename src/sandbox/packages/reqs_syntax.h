/* The grammars behind reqs.h, one file each: reqs_pip.c, reqs_npm.c and
 * reqs_gem.c. Internal to reqs.c. They see a string reqs.c has already
 * checked for length, control bytes, non-ASCII bytes, spaces at its ends
 * and a leading '-'; their messages say only why (reqs.c adds which
 * string). */
#ifndef MCPSBX_REQS_SYNTAX_H
#define MCPSBX_REQS_SYNTAX_H

#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/err.h"
#include "sandbox/packages/reqs.h"

/* A requirement being read: s[0..n), at i. */
struct reqs_cursor {
    const char *s;
    size_t n, i;
};

int reqs_pip_parse(struct reqs_cursor *c, struct reqs_item *out, struct err *err);
int reqs_npm_parse(struct reqs_cursor *c, struct reqs_item *out, struct err *err);
int reqs_gem_parse(struct reqs_cursor *c, struct reqs_item *out, struct err *err);

/* A name for rules: name[0..n) normalized as the installer's names are,
 * into b; prefix: it may stop anywhere a longer name could go on. */
int reqs_pip_rule_name(const char *s, size_t n, bool prefix, struct buf *b, struct err *err);
int reqs_npm_rule_name(const char *s, size_t n, bool prefix, struct buf *b, struct err *err);
int reqs_gem_rule_name(const char *s, size_t n, bool prefix, struct buf *b, struct err *err);

/* Shared by the grammars. */
bool reqs_is_digit(char ch);
bool reqs_is_lower_alnum(char ch);
bool reqs_is_alnum(char ch);
void reqs_skip_spaces(struct reqs_cursor *c);
bool reqs_at(const struct reqs_cursor *c, const char *lit);

#endif
