/* RubyGems' requirements (sandbox/packages/reqs.h): NAME, or NAME:REQ with
 * one version requirement, the form `gem install` reads itself
 * ("rake", "rake:13.0.6", "rack:~> 2.2", "rack:>=2"). A gem name is
 * [A-Za-z0-9._-] with a letter or digit first; RubyGems tells names apart
 * by case but the index refuses two that differ only in it, so rules and
 * reports match on the lowercase name while the installer gets the name as
 * given. The canonical text spells the operator: "rake:= 13.0.6". */
#include <string.h>

#include "sandbox/packages/reqs_syntax.h"

/* RubyGems' operators, longest first so that ">=" is not read as ">". */
static const char *const gem_ops[] = {"~>", ">=", "<=", "!=", "=", ">", "<"};

static bool is_name_char(char ch)
{
    return reqs_is_alnum(ch) || ch == '-' || ch == '.' || ch == '_';
}

/* The name at c: its length, or -1 with err. */
static int gem_name(struct reqs_cursor *c, struct err *err)
{
    while (c->i < c->n && is_name_char(c->s[c->i]))
        c->i++;
    if (c->i == 0 || !reqs_is_alnum(c->s[0]))
        return err_set(err, ERR_INVALID, "a gem name starts with a letter or a digit");
    if (c->i > REQS_NAME_MAX)
        return err_set(err, ERR_TOO_BIG, "the name is longer than %d bytes", REQS_NAME_MAX);
    if (c->i < c->n && c->s[c->i] != ':')
        return err_set(err, ERR_INVALID,
                       "a gem requirement is NAME or NAME:VERSION ('%c' is neither; "
                       "paths, URLs and files are not allowed)",
                       c->s[c->i]);
    return (int)c->i;
}

/* A version as Gem::Version reads one: a digit, then digits, letters and
 * single dots ("1.2.0", "2.0.0.rc1", "1.0-beta"); its length, or -1. */
static int gem_version(struct reqs_cursor *c, struct err *err)
{
    size_t start = c->i;
    if (c->i >= c->n || !reqs_is_digit(c->s[c->i]))
        return err_set(err, ERR_INVALID, "a gem version starts with a digit");
    while (c->i < c->n && (reqs_is_alnum(c->s[c->i]) || c->s[c->i] == '.' || c->s[c->i] == '-')) {
        bool sep = c->s[c->i] == '.' || c->s[c->i] == '-';
        if (sep && (c->i + 1 >= c->n || !reqs_is_alnum(c->s[c->i + 1])))
            return err_set(err, ERR_INVALID, "a '.' or '-' in a gem version comes between parts");
        c->i++;
    }
    if (c->i - start > REQS_TAG_MAX)
        return err_set(err, ERR_TOO_BIG, "the version is longer than %d bytes", REQS_TAG_MAX);
    return (int)(c->i - start);
}

int reqs_gem_parse(struct reqs_cursor *c, struct reqs_item *out, struct err *err)
{
    int n = gem_name(c, err);
    if (n < 0)
        return -1;
    char *name = xstrndup(c->s, (size_t)n);
    for (char *p = name; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    if (c->i == c->n) {
        out->name = name;
        out->text = xstrndup(c->s, (size_t)n);
        return 0;
    }
    c->i++; /* ':' */
    reqs_skip_spaces(c);
    const char *op = "=";
    for (size_t k = 0; k < ARRAY_SIZE(gem_ops); k++)
        if (reqs_at(c, gem_ops[k])) {
            op = gem_ops[k];
            c->i += strlen(op);
            break;
        }
    reqs_skip_spaces(c);
    size_t vstart = c->i;
    int vn = gem_version(c, err);
    if (vn >= 0 && c->i != c->n)
        vn = err_set(err, ERR_INVALID,
                     "one version requirement only, as gem install takes it (NAME:OP VERSION)");
    if (vn < 0) {
        free(name);
        return -1;
    }
    out->name = name;
    out->text = xasprintf("%.*s:%s %.*s", n, c->s, op, vn, c->s + vstart);
    return 0;
}

int reqs_gem_rule_name(const char *s, size_t n, bool prefix, struct buf *b, struct err *err)
{
    struct reqs_cursor c = {.s = s, .n = n};
    if (prefix) {
        for (size_t i = 0; i < n; i++)
            if (!is_name_char(s[i]))
                return err_set(err, ERR_INVALID, "not the start of a gem name");
    } else if (n == 0 || gem_name(&c, err) < 0 || c.i != n) {
        return err_set(err, ERR_INVALID, "not a gem name");
    }
    for (size_t i = 0; i < n; i++) {
        char ch = s[i] >= 'A' && s[i] <= 'Z' ? (char)(s[i] - 'A' + 'a') : s[i];
        if (buf_add(b, &ch, 1) < 0)
            return err_set(err, ERR_TOO_BIG, "longer than %d bytes", REQS_NAME_MAX + 1);
    }
    return 0;
}
