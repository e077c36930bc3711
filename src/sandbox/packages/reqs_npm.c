/* npm's requirements (sandbox/packages/reqs.h): a registry name, and a
 * version, a semver range or a dist-tag, the forms npm-package-arg reads
 * as "from the registry" and nothing else. */
#include <string.h>

#include "sandbox/packages/reqs_syntax.h"

/* Spaces around "||" may make the text longer than what was given. */
#define NPM_TEXT_MAX (3 * REQS_MAX_LEN)

static int add(struct buf *b, const char *p, size_t n, struct err *err)
{
    if (buf_add(b, p, n) < 0)
        return err_set(err, ERR_TOO_BIG, "longer than %d bytes once normalized", NPM_TEXT_MAX);
    return 0;
}

static bool is_name_char(char ch)
{
    return reqs_is_lower_alnum(ch) || ch == '-' || ch == '.' || ch == '_';
}

/* One part of a name (the scope's or the package's) at c, up to stop
 * characters; its length, or -1 with err. */
static int name_part(struct reqs_cursor *c, const char *what, struct err *err)
{
    size_t start = c->i;
    while (c->i < c->n && is_name_char(c->s[c->i]))
        c->i++;
    if (c->i < c->n && c->s[c->i] >= 'A' && c->s[c->i] <= 'Z')
        return err_set(err, ERR_INVALID, "npm package names are lowercase");
    if (c->i == start)
        return err_set(err, ERR_INVALID,
                       "%s is empty or starts with a character npm names "
                       "do not have ([a-z0-9._-])",
                       what);
    if (c->s[start] == '.' || c->s[start] == '_')
        return err_set(err, ERR_INVALID, "%s may not start with '.' or '_'", what);
    return (int)(c->i - start);
}

/* NAME or @SCOPE/NAME at c; its length, or -1 with err. */
static int package_name(struct reqs_cursor *c, struct err *err)
{
    if (c->s[0] == '@') {
        c->i = 1;
        if (name_part(c, "the scope", err) < 0)
            return -1;
        if (c->i >= c->n || c->s[c->i] != '/')
            return err_set(err, ERR_INVALID, "a scoped name is @SCOPE/NAME");
        c->i++;
    }
    if (name_part(c, "the name", err) < 0)
        return -1;
    if (c->i < c->n && c->s[c->i] == '/')
        return err_set(err, ERR_INVALID,
                       "GitHub shortcuts (user/repo) and paths are not "
                       "allowed: give a name from the registry");
    if (c->i > REQS_NAME_MAX)
        return err_set(err, ERR_TOO_BIG, "the name is longer than %d bytes", REQS_NAME_MAX);
    const char *base = memchr(c->s, '/', c->i);
    base = base ? base + 1 : c->s;
    size_t bn = (size_t)(c->s + c->i - base);
    if ((bn == 12 && memcmp(base, "node_modules", 12) == 0) ||
        (bn == 11 && memcmp(base, "favicon.ico", 11) == 0))
        return err_set(err, ERR_INVALID, "'%.*s' is not a name npm allows", (int)bn, base);
    return (int)c->i;
}

/* x, X, * or a number. */
static bool xr(struct reqs_cursor *c)
{
    if (c->i < c->n && (c->s[c->i] == 'x' || c->s[c->i] == 'X' || c->s[c->i] == '*')) {
        c->i++;
        return true;
    }
    size_t start = c->i;
    while (c->i < c->n && reqs_is_digit(c->s[c->i]))
        c->i++;
    return c->i > start;
}

/* Dot-separated [0-9A-Za-z-]+ identifiers (a prerelease's, a build's). */
static bool idents(struct reqs_cursor *c)
{
    do {
        size_t start = c->i;
        while (c->i < c->n && (reqs_is_alnum(c->s[c->i]) || c->s[c->i] == '-'))
            c->i++;
        if (c->i == start)
            return false;
    } while (c->i < c->n && c->s[c->i] == '.' && ++c->i);
    return true;
}

/* [v]1[.2[.3]][-pre][+build], parts x, X or * too. */
static bool partial(struct reqs_cursor *c)
{
    if (c->i < c->n && c->s[c->i] == 'v')
        c->i++;
    if (!xr(c))
        return false;
    for (int k = 0; k < 2 && c->i < c->n && c->s[c->i] == '.'; k++) {
        c->i++;
        if (!xr(c))
            return false;
    }
    if (c->i < c->n && c->s[c->i] == '-' && (c->i++, !idents(c)))
        return false;
    if (c->i < c->n && c->s[c->i] == '+' && (c->i++, !idents(c)))
        return false;
    return true;
}

/* One comparator ("^1.2", ">= 1"), its space after the operator dropped,
 * into b; false when it is not one. */
static bool comparator(struct reqs_cursor *c, struct buf *b, struct err *err, int *rc)
{
    static const char *const ops[] = {">=", "<=", "~>", ">", "<", "=", "~", "^"};
    const char *op = "";
    for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]) && !*op; k++)
        if (reqs_at(c, ops[k]))
            op = ops[k];
    c->i += strlen(op);
    if (*op)
        reqs_skip_spaces(c);
    size_t at = c->i;
    if (!partial(c))
        return false;
    if (c->i < c->n && c->s[c->i] != ' ' && c->s[c->i] != '|')
        return false;
    *rc = add(b, op, strlen(op), err) < 0 || add(b, c->s + at, c->i - at, err) < 0 ? -1 : 0;
    return true;
}

/* A semver range: comparator sets separated by "||", a set's
 * comparators (or "A - B") by spaces; canonical with single spaces into
 * b. False when it is not one (err only past a cap: *rc -1). */
static bool range(struct reqs_cursor *c, struct buf *b, struct err *err, int *rc)
{
    size_t tokens = 0;
    *rc = 0;
    for (;;) {
        size_t in_set = 0;
        bool hyphen = false;
        reqs_skip_spaces(c);
        while (c->i < c->n && !reqs_at(c, "||")) {
            if (++tokens > 4 * REQS_CLAUSE_MAX)
                return false;
            if (in_set && add(b, " ", 1, err) < 0)
                return (*rc = -1), true;
            if (reqs_at(c, "- ") && in_set && !hyphen) {
                hyphen = true;
                c->i++;
                if (add(b, "-", 1, err) < 0)
                    return (*rc = -1), true;
            } else if (!comparator(c, b, err, rc)) {
                return false;
            } else if (*rc < 0) {
                return true;
            }
            in_set++;
            reqs_skip_spaces(c);
        }
        if (!in_set || (hyphen && b->data[b->len - 1] == '-'))
            return false;
        if (c->i >= c->n)
            return true;
        c->i += 2;
        if (add(b, " || ", 4, err) < 0)
            return (*rc = -1), true;
    }
}

/* A dist-tag ("latest", "next", "beta"): [A-Za-z0-9][A-Za-z0-9._-]*. */
static bool tag(const char *s, size_t n)
{
    if (n == 0 || n > REQS_TAG_MAX || !reqs_is_alnum(s[0]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!reqs_is_alnum(s[i]) && s[i] != '.' && s[i] != '-' && s[i] != '_')
            return false;
    return true;
}

/* The spec after "NAME@" at c, into b. */
static int spec(struct reqs_cursor *c, struct buf *b, struct err *err)
{
    const char *s = c->s + c->i;
    size_t n = c->n - c->i;
    if (n == 0)
        return err_set(err, ERR_INVALID, "nothing after '@': give a version, a range or a tag");
    if (memchr(s, '/', n))
        return err_set(err, ERR_INVALID,
                       "paths, GitHub shortcuts and URLs are not allowed "
                       "as a version");
    size_t mark = b->len;
    int rc = 0;
    if (range(c, b, err, &rc))
        return rc;
    b->len = mark;
    b->data[mark] = '\0';
    if (!tag(s, n))
        return err_set(err, ERR_INVALID,
                       "'@' must be followed by a version, a semver range "
                       "(^1.2, ~1.2.3, >=1 <2, 1.x) or a dist-tag (latest)");
    c->i = c->n;
    return add(b, s, n, err);
}

/* The forms refused on sight, with the reason a caller can act on. */
static int refuse_forms(const struct reqs_cursor *c, struct err *err)
{
    const char *s = c->s;
    size_t n = c->n;
    if (memmem(s, n, "npm:", 4))
        return err_set(err, ERR_INVALID, "aliases (npm:) are not allowed");
    if (memchr(s, ':', n))
        return err_set(err, ERR_INVALID,
                       "git, URL and file specs are not allowed: give a name from the registry");
    if (memchr(s, '#', n))
        return err_set(err, ERR_INVALID, "git specs (#...) are not allowed");
    if (memchr(s, '\\', n) || s[0] == '.' || s[0] == '/' || s[0] == '~')
        return err_set(err, ERR_INVALID, "paths are not allowed: give a name from the registry");
    return 0;
}

int reqs_npm_parse(struct reqs_cursor *c, struct reqs_item *out, struct err *err)
{
    struct buf b;
    buf_init(&b, NPM_TEXT_MAX);
    if (refuse_forms(c, err) < 0)
        goto fail;
    int len = package_name(c, err);
    if (len < 0 || add(&b, c->s, (size_t)len, err) < 0)
        goto fail;
    if (c->i < c->n && c->s[c->i] != '@') {
        err_set(err, ERR_INVALID, "unexpected '%c' after the name (NAME@VERSION)", c->s[c->i]);
        goto fail;
    }
    if (c->i < c->n) {
        c->i++;
        if (add(&b, "@", 1, err) < 0 || spec(c, &b, err) < 0)
            goto fail;
    }
    out->name = xstrndup(b.data, (size_t)len);
    out->text = buf_take(&b, NULL);
    return 0;
fail:
    buf_free(&b);
    return -1;
}

int reqs_npm_rule_name(const char *s, size_t n, bool prefix, struct buf *b, struct err *err)
{
    struct reqs_cursor c = {.s = s, .n = n};
    if (prefix) {
        for (size_t i = 0; i < n; i++)
            if (!is_name_char(s[i]) && s[i] != '@' && s[i] != '/')
                return err_set(err, ERR_INVALID, "not the start of an npm package name");
    } else if (n == 0 || package_name(&c, err) < 0 || c.i != n) {
        return err_set(err, ERR_INVALID, "not an npm package name");
    }
    return add(b, s, n, err);
}
