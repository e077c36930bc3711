/* pip's requirements (sandbox/packages/reqs.h): a subset of PEP 508 with
 * PEP 440 public versions, normalized. */
#include <stdlib.h>
#include <string.h>

#include "sandbox/packages/reqs_syntax.h"

/* The canonical text is never longer than what was given, but the buffer
 * keeps a cap of its own. */
#define PIP_TEXT_MAX (2 * REQS_MAX_LEN)

static int add(struct buf *b, const char *p, size_t n, struct err *err)
{
    if (buf_add(b, p, n) < 0)
        return err_set(err, ERR_TOO_BIG, "longer than %d bytes once normalized", PIP_TEXT_MAX);
    return 0;
}

static bool is_sep(char ch)
{
    return ch == '-' || ch == '_' || ch == '.';
}

static char lower(char ch)
{
    return ch >= 'A' && ch <= 'Z' ? (char)(ch - 'A' + 'a') : ch;
}

/* PEP 503: lowercase, each run of '-', '_', '.' one '-'. */
static int put_normalized(struct buf *b, const char *s, size_t n, struct err *err)
{
    for (size_t i = 0; i < n; i++) {
        if (is_sep(s[i])) {
            while (i + 1 < n && is_sep(s[i + 1]))
                i++;
            if (add(b, "-", 1, err) < 0)
                return -1;
        } else {
            char ch = lower(s[i]);
            if (add(b, &ch, 1, err) < 0)
                return -1;
        }
    }
    return 0;
}

/* A PEP 508 identifier at c: [A-Za-z0-9] ([A-Za-z0-9._-]* [A-Za-z0-9])?;
 * its length, 0 when there is none. */
static size_t identifier(struct reqs_cursor *c)
{
    size_t start = c->i;
    if (c->i >= c->n || !reqs_is_alnum(c->s[c->i]))
        return 0;
    while (c->i < c->n && (reqs_is_alnum(c->s[c->i]) || is_sep(c->s[c->i])))
        c->i++;
    while (c->i > start && is_sep(c->s[c->i - 1]))
        c->i--;
    return c->i - start;
}

static size_t digits(struct reqs_cursor *c)
{
    size_t start = c->i;
    while (c->i < c->n && reqs_is_digit(c->s[c->i]))
        c->i++;
    return c->i - start;
}

/* Case-insensitive word at c, taken when it is there. */
static bool word(struct reqs_cursor *c, const char *w)
{
    size_t k = strlen(w);
    if (c->n - c->i < k)
        return false;
    for (size_t j = 0; j < k; j++)
        if (lower(c->s[c->i + j]) != w[j])
            return false;
    c->i += k;
    return true;
}

/* An optional '-', '_' or '.' followed by one of words; on a miss the
 * cursor is where it was. */
static bool tagged(struct reqs_cursor *c, const char *const *words, size_t nw)
{
    size_t at = c->i;
    if (c->i < c->n && is_sep(c->s[c->i]))
        c->i++;
    for (size_t k = 0; k < nw; k++)
        if (word(c, words[k])) {
            if (c->i + 1 < c->n && is_sep(c->s[c->i]) && reqs_is_digit(c->s[c->i + 1]))
                c->i++;
            digits(c);
            return true;
        }
    c->i = at;
    return false;
}

/* A PEP 440 public version at c ("1!2.0.post1", "0.27.*"); *parts gets
 * the release's components, *wild whether it ends in ".*". */
static int version(struct reqs_cursor *c, size_t *parts, bool *wild, struct err *err)
{
    static const char *const pre[] = {"alpha", "beta", "preview", "pre", "rc", "a", "b", "c"};
    static const char *const post[] = {"post", "rev", "r"};
    static const char *const dev[] = {"dev"};
    *parts = 0;
    *wild = false;
    size_t start = c->i;
    if (digits(c) && c->i < c->n && c->s[c->i] == '!')
        c->i++;
    else
        c->i = start;
    for (;;) {
        if (!digits(c))
            return err_set(err, ERR_INVALID,
                           "a version must be numbers separated by '.' "
                           "(PEP 440), as in 1.2 or 1.2.*");
        (*parts)++;
        if (c->i + 1 >= c->n || c->s[c->i] != '.')
            break;
        if (c->s[c->i + 1] == '*') {
            c->i += 2;
            *wild = true;
            return 0;
        }
        if (!reqs_is_digit(c->s[c->i + 1]))
            break;
        c->i++;
    }
    tagged(c, pre, sizeof(pre) / sizeof(pre[0]));
    if (!tagged(c, post, sizeof(post) / sizeof(post[0])) && c->i + 1 < c->n && c->s[c->i] == '-' &&
        reqs_is_digit(c->s[c->i + 1])) {
        c->i++;
        digits(c);
    }
    tagged(c, dev, 1);
    if (c->i < c->n && c->s[c->i] == '+')
        return err_set(err, ERR_INVALID, "local version labels (+...) are not supported");
    return 0;
}

static int compare_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts v[0..n), drops repeats, joins them with ',' into b. */
static int put_sorted(struct buf *b, char **v, size_t n, struct err *err)
{
    qsort(v, n, sizeof(char *), compare_str);
    for (size_t k = 0; k < n; k++) {
        if (k && strcmp(v[k], v[k - 1]) == 0)
            continue;
        if ((k && add(b, ",", 1, err) < 0) || add(b, v[k], strlen(v[k]), err) < 0)
            return -1;
    }
    return 0;
}

static void free_strs(char **v, size_t n)
{
    for (size_t k = 0; k < n; k++)
        free(v[k]);
}

/* "[a, b]" at c, normalized and sorted into b. */
static int extras(struct reqs_cursor *c, struct buf *b, struct err *err)
{
    char *v[REQS_EXTRAS_MAX];
    size_t n = 0;
    int rc = -1;
    c->i++;
    for (;;) {
        reqs_skip_spaces(c);
        size_t at = c->i, len = identifier(c);
        if (!len) {
            err_set(err, ERR_INVALID, "an extra must be a name, as in NAME[extra1,extra2]");
            goto out;
        }
        if (n == REQS_EXTRAS_MAX) {
            err_set(err, ERR_TOO_BIG, "more than %d extras", REQS_EXTRAS_MAX);
            goto out;
        }
        struct buf e;
        buf_init(&e, REQS_NAME_MAX);
        if (put_normalized(&e, c->s + at, len, err) < 0) {
            buf_free(&e);
            goto out;
        }
        v[n++] = buf_take(&e, NULL);
        reqs_skip_spaces(c);
        if (c->i < c->n && c->s[c->i] == ',') {
            c->i++;
            continue;
        }
        if (c->i < c->n && c->s[c->i] == ']')
            break;
        err_set(err, ERR_INVALID, "the extras' '[' is not closed by ']'");
        goto out;
    }
    c->i++;
    rc =
        add(b, "[", 1, err) < 0 || put_sorted(b, v, n, err) < 0 || add(b, "]", 1, err) < 0 ? -1 : 0;
out:
    free_strs(v, n);
    return rc;
}

/* One version clause at c ("~=0.27"), spaces removed, into *out. */
static int clause(struct reqs_cursor *c, char **out, struct err *err)
{
    static const char *const ops[] = {"~=", "==", "!=", "<=", ">=", "<", ">"};
    reqs_skip_spaces(c);
    if (reqs_at(c, "==="))
        return err_set(err, ERR_INVALID, "arbitrary equality (===) is not supported");
    const char *op = NULL;
    for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]) && !op; k++)
        if (reqs_at(c, ops[k]))
            op = ops[k];
    if (!op)
        return err_set(err, ERR_INVALID,
                       "expected a version clause (==, !=, <=, >=, <, >, ~= and a version)");
    c->i += strlen(op);
    reqs_skip_spaces(c);
    size_t at = c->i, parts = 0;
    bool wild = false;
    if (version(c, &parts, &wild, err) < 0)
        return -1;
    if (wild && op[0] != '=' && op[0] != '!')
        return err_set(err, ERR_INVALID, "a version ending in .* needs == or !=");
    if (op[0] == '~' && parts < 2)
        return err_set(err, ERR_INVALID, "~= needs a version of at least two parts (~=1.4)");
    char *text = xasprintf("%s%.*s", op, (int)(c->i - at), c->s + at);
    for (char *p = text; *p; p++)
        *p = lower(*p);
    *out = text;
    return 0;
}

/* The version clauses at c, sorted into b. */
static int clauses(struct reqs_cursor *c, struct buf *b, struct err *err)
{
    char *v[REQS_CLAUSE_MAX];
    size_t n = 0;
    int rc = -1;
    for (;;) {
        if (n == REQS_CLAUSE_MAX) {
            err_set(err, ERR_TOO_BIG, "more than %d version clauses", REQS_CLAUSE_MAX);
            goto out;
        }
        if (clause(c, &v[n], err) < 0)
            goto out;
        n++;
        reqs_skip_spaces(c);
        if (c->i >= c->n)
            break;
        if (c->s[c->i] != ',') {
            err_set(err, ERR_INVALID,
                    "unexpected '%c' after a version (clauses are separated "
                    "by ',')",
                    c->s[c->i]);
            goto out;
        }
        c->i++;
    }
    rc = put_sorted(b, v, n, err);
out:
    free_strs(v, n);
    return rc;
}

/* The forms refused on sight, with the reason a caller can act on. */
static int refuse_forms(const struct reqs_cursor *c, struct err *err)
{
    const char *s = c->s;
    size_t n = c->n;
    if (memmem(s, n, "://", 3) || memchr(s, '@', n))
        return err_set(err, ERR_INVALID,
                       "URLs and direct references (NAME @ URL) are not allowed: give a "
                       "name and a version from the index");
    if (memchr(s, '/', n) || memchr(s, '\\', n) || s[0] == '.' || s[0] == '~')
        return err_set(err, ERR_INVALID, "paths are not allowed: give a name from the index");
    if (memchr(s, ';', n))
        return err_set(err, ERR_INVALID, "environment markers (';' ...) are not supported");
    if (memchr(s, '(', n))
        return err_set(err, ERR_INVALID,
                       "parenthesized version clauses are not supported: write NAME>=1.0");
    return 0;
}

int reqs_pip_parse(struct reqs_cursor *c, struct reqs_item *out, struct err *err)
{
    struct buf b;
    buf_init(&b, PIP_TEXT_MAX);
    if (refuse_forms(c, err) < 0)
        goto fail;
    size_t len = identifier(c);
    if (!len) {
        err_set(err, ERR_INVALID,
                "a requirement starts with a package name ([A-Za-z0-9._-], "
                "beginning and ending with a letter or digit)");
        goto fail;
    }
    if (len > REQS_NAME_MAX) {
        err_set(err, ERR_TOO_BIG, "the name is longer than %d bytes", REQS_NAME_MAX);
        goto fail;
    }
    if (put_normalized(&b, c->s, len, err) < 0)
        goto fail;
    size_t name_len = b.len;
    reqs_skip_spaces(c);
    if (c->i < c->n && c->s[c->i] == '[' && extras(c, &b, err) < 0)
        goto fail;
    reqs_skip_spaces(c);
    if (c->i < c->n && clauses(c, &b, err) < 0)
        goto fail;
    out->name = xstrndup(b.data, name_len);
    out->text = buf_take(&b, NULL);
    return 0;
fail:
    buf_free(&b);
    return -1;
}

int reqs_pip_rule_name(const char *s, size_t n, bool prefix, struct buf *b, struct err *err)
{
    struct reqs_cursor c = {.s = s, .n = n};
    size_t len = identifier(&c);
    /* A prefix may end in a separator ("django-"), and be empty ("*"). */
    while (prefix && c.i < n && is_sep(s[c.i]))
        c.i++;
    if ((!len && !(prefix && n == 0)) || c.i != n || n > REQS_NAME_MAX)
        return err_set(err, ERR_INVALID,
                       "not a package name ([A-Za-z0-9._-], beginning and "
                       "ending with a letter or digit)");
    return put_normalized(b, s, n, err);
}
