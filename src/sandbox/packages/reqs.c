#include "sandbox/packages/reqs.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sandbox/packages/reqs_syntax.h"

static const char *const installer_names[REQS_INSTALLERS] = {
    [REQS_PIP] = "pip",
    [REQS_NPM] = "npm",
    [REQS_GEM] = "gem",
    [REQS_COMPOSER] = "composer",
};

const char *reqs_installer_name(enum reqs_installer i)
{
    return (size_t)i < REQS_INSTALLERS ? installer_names[i] : "?";
}

bool reqs_installer_from_name(const char *s, size_t n, enum reqs_installer *out)
{
    for (size_t i = 0; i < REQS_INSTALLERS; i++)
        if (strlen(installer_names[i]) == n && memcmp(installer_names[i], s, n) == 0) {
            *out = (enum reqs_installer)i;
            return true;
        }
    return false;
}

bool reqs_installer_supported(enum reqs_installer i)
{
    return i == REQS_PIP || i == REQS_NPM || i == REQS_GEM;
}

/* ---- shared by the grammars ------------------------------------------------------- */

bool reqs_is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

bool reqs_is_lower_alnum(char ch)
{
    return reqs_is_digit(ch) || (ch >= 'a' && ch <= 'z');
}

bool reqs_is_alnum(char ch)
{
    return reqs_is_lower_alnum(ch) || (ch >= 'A' && ch <= 'Z');
}

void reqs_skip_spaces(struct reqs_cursor *c)
{
    while (c->i < c->n && c->s[c->i] == ' ')
        c->i++;
}

bool reqs_at(const struct reqs_cursor *c, const char *lit)
{
    size_t k = strlen(lit);
    return c->n - c->i >= k && memcmp(c->s + c->i, lit, k) == 0;
}

/* ---- one requirement -------------------------------------------------------------- */

/* s[0..n) as a message shows it: escaped, cut, in quotes. */
static int fail_quoted(struct err *err, const char *s, size_t n)
{
    char q[REQS_QUOTE_MAX + 1];
    util_escape(q, sizeof(q), s, n);
    return err_wrap(err, "\"%s\"", q);
}

/* What an installer could read as a local archive rather than a name:
 * pip's archive extensions (is_archive_file), npm's tarball file names,
 * gem's .gem files. */
static bool archive_like(const char *s, size_t n)
{
    static const char *const ext[] = {".whl", ".zip", ".tar", ".tgz", ".tbz",  ".txz", ".tlz",
                                      ".gz",  ".bz2", ".xz",  ".lz",  ".lzma", ".gem"};
    for (size_t k = 0; k < ARRAY_SIZE(ext); k++) {
        size_t e = strlen(ext[k]);
        if (n >= e && strncasecmp(s + n - e, ext[k], e) == 0)
            return true;
    }
    return false;
}

/* The checks every installer's strings get before their grammar. */
static int check_bytes(const char *s, size_t n, struct err *err)
{
    if (n == 0)
        return err_set(err, ERR_INVALID, "empty");
    if (n > REQS_MAX_LEN)
        return err_set(err, ERR_TOO_BIG, "longer than %d bytes", REQS_MAX_LEN);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x20 || ch == 0x7f)
            return err_set(err, ERR_INVALID, "control characters are not allowed");
        if (ch >= 0x80)
            return err_set(err, ERR_INVALID, "only ASCII is allowed");
    }
    if (s[0] == ' ' || s[n - 1] == ' ')
        return err_set(err, ERR_INVALID, "spaces at either end are not allowed");
    if (s[0] == '-')
        return err_set(err, ERR_INVALID,
                       "may not start with '-' (installer options are not allowed)");
    return 0;
}

int reqs_parse_one(enum reqs_installer i, const char *s, size_t n, struct reqs_item *out,
                   struct err *err)
{
    *out = (struct reqs_item){0};
    struct reqs_cursor c = {.s = s, .n = n};
    int rc;
    if (!reqs_installer_supported(i))
        rc = err_set(err, ERR_INVALID, "installing %s packages is not supported yet",
                     reqs_installer_name(i));
    else if (check_bytes(s, n, err) < 0)
        rc = -1;
    else if (i == REQS_PIP)
        rc = reqs_pip_parse(&c, out, err);
    else if (i == REQS_NPM)
        rc = reqs_npm_parse(&c, out, err);
    else
        rc = reqs_gem_parse(&c, out, err);
    /* A canonical text must parse again (to itself): npm's spaces around
     * "||" can make it longer than what was given. */
    if (rc == 0 && strlen(out->text) > REQS_MAX_LEN) {
        reqs_item_free(out);
        rc = err_set(err, ERR_TOO_BIG, "longer than %d bytes once normalized", REQS_MAX_LEN);
    }
    if (rc == 0 && (archive_like(out->text, strlen(out->text)) ||
                    !(reqs_is_alnum(out->text[0]) || out->text[0] == '@'))) {
        reqs_item_free(out);
        rc = err_set(err, ERR_INVALID,
                     "the installer could read it as a local file: give a name from the index");
    }
    return rc < 0 ? fail_quoted(err, s, n) : 0;
}

void reqs_item_free(struct reqs_item *it)
{
    free(it->name);
    free(it->text);
    *it = (struct reqs_item){0};
}

/* ---- rules ------------------------------------------------------------------------ */

typedef int rule_name_fn(const char *s, size_t n, bool prefix, struct buf *b, struct err *err);

static rule_name_fn *rule_name(enum reqs_installer i)
{
    return i == REQS_PIP   ? reqs_pip_rule_name
           : i == REQS_NPM ? reqs_npm_rule_name
                           : reqs_gem_rule_name;
}

int reqs_rule_normalize(enum reqs_installer i, const char *s, size_t n, char **out, struct err *err)
{
    *out = NULL;
    const char *star = memchr(s, '*', n);
    bool prefix = star != NULL;
    struct buf b;
    buf_init(&b, REQS_NAME_MAX + 2);
    int rc = -1;
    if (!reqs_installer_supported(i))
        err_set(err, ERR_INVALID, "%s package rules are not supported yet", reqs_installer_name(i));
    else if (n == 0 || n > REQS_NAME_MAX + 1)
        err_set(err, ERR_INVALID, "a rule is 1 to %d bytes", REQS_NAME_MAX + 1);
    else if (star && star != s + n - 1)
        err_set(err, ERR_INVALID, "'*' may only end a rule (PREFIX*)");
    else if (rule_name(i)(s, prefix ? n - 1 : n, prefix, &b, err) == 0 &&
             (!prefix || buf_add(&b, "*", 1) == 0))
        rc = 0;
    if (rc < 0) {
        buf_free(&b);
        return fail_quoted(err, s, n);
    }
    *out = buf_take(&b, NULL);
    return 0;
}

static bool rule_matches(const char *rule, const char *name)
{
    size_t n = strlen(rule);
    if (n && rule[n - 1] == '*')
        return strncmp(rule, name, n - 1) == 0;
    return strcmp(rule, name) == 0;
}

int reqs_check_rules(const struct reqs_rules *rules, const char *name, struct err *err)
{
    if (!rules)
        return 0;
    char q[REQS_QUOTE_MAX + 1];
    for (size_t k = 0; k < rules->n_deny; k++)
        if (rule_matches(rules->deny[k], name)) {
            util_escape(q, sizeof(q), name, strlen(name));
            return err_set(err, ERR_INVALID, "package '%s' is refused by the deny list (rule '%s')",
                           q, rules->deny[k]);
        }
    for (size_t k = 0; k < rules->n_allow; k++)
        if (rule_matches(rules->allow[k], name))
            return 0;
    if (rules->n_allow == 0)
        return 0;
    util_escape(q, sizeof(q), name, strlen(name));
    return err_set(err, ERR_INVALID,
                   "package '%s' is not on the allow list (%zu rule%s; none matches it)", q,
                   rules->n_allow, rules->n_allow == 1 ? "" : "s");
}

/* ---- a list ----------------------------------------------------------------------- */

/* An item and where it came from, for sorting and messages. */
struct indexed {
    struct reqs_item it;
    size_t at;
};

static int by_name(const void *a, const void *b)
{
    const struct indexed *x = a, *y = b;
    int c = strcmp(x->it.name, y->it.name);
    return c ? c : (x->at > y->at) - (x->at < y->at);
}

/* Sorted v[0..*n): each name once, a repeat with the same text merged. */
static int merge_repeats(struct indexed *v, size_t *n, const char *what, struct err *err)
{
    qsort(v, *n, sizeof(*v), by_name);
    size_t k = 0;
    for (size_t j = 0; j < *n; j++) {
        if (k && strcmp(v[k - 1].it.name, v[j].it.name) == 0) {
            if (strcmp(v[k - 1].it.text, v[j].it.text) != 0) {
                char q[REQS_QUOTE_MAX + 1];
                util_escape(q, sizeof(q), v[j].it.name, strlen(v[j].it.name));
                return err_set(err, ERR_INVALID,
                               "%s[%zu] and %s[%zu] both ask for '%s', differently (\"%.64s\" and "
                               "\"%.64s\"): give it once",
                               what, v[k - 1].at, what, v[j].at, q, v[k - 1].it.text, v[j].it.text);
            }
            reqs_item_free(&v[j].it);
            continue;
        }
        if (k != j) {
            v[k] = v[j];
            v[j].it = (struct reqs_item){0};
        }
        k++;
    }
    *n = k;
    return 0;
}

int reqs_parse(enum reqs_installer i, const char *const *strs, const size_t *lens, size_t n,
               const struct reqs_rules *rules, const char *what, struct reqs_list *out,
               struct err *err)
{
    *out = (struct reqs_list){.installer = i};
    if (n > REQS_MAX_COUNT)
        return err_set(err, ERR_TOO_BIG, "%s: more than %d requirements", what, REQS_MAX_COUNT);
    size_t total = 0;
    for (size_t k = 0; k < n; k++)
        total += lens ? lens[k] : strlen(strs[k]);
    if (total > REQS_MAX_TOTAL)
        return err_set(err, ERR_TOO_BIG, "%s: more than %d bytes together", what, REQS_MAX_TOTAL);
    struct indexed *v = xcalloc(n ? n : 1, sizeof(*v));
    size_t got = 0;
    int rc = -1;
    for (size_t k = 0; k < n; k++) {
        size_t len = lens ? lens[k] : strlen(strs[k]);
        if (reqs_parse_one(i, strs[k], len, &v[got].it, err) < 0 ||
            reqs_check_rules(rules, v[got].it.name, err) < 0) {
            reqs_item_free(&v[got].it);
            err_wrap(err, "%s[%zu]", what, k);
            goto out;
        }
        v[got++].at = k;
    }
    if (merge_repeats(v, &got, what, err) < 0)
        goto out;
    out->v = xcalloc(got ? got : 1, sizeof(struct reqs_item));
    for (size_t k = 0; k < got; k++) {
        out->v[k] = v[k].it;
        v[k].it = (struct reqs_item){0};
    }
    out->n = got;
    rc = 0;
out:
    for (size_t k = 0; k < got; k++)
        reqs_item_free(&v[k].it);
    free(v);
    return rc;
}

void reqs_list_free(struct reqs_list *l)
{
    for (size_t k = 0; k < l->n; k++)
        reqs_item_free(&l->v[k]);
    free(l->v);
    *l = (struct reqs_list){.installer = l->installer};
}

char *reqs_canonical(const struct reqs_list *l)
{
    size_t len = 0;
    for (size_t k = 0; k < l->n; k++)
        len += strlen(l->v[k].text) + 1;
    char *s = xmalloc(len + 1), *p = s;
    for (size_t k = 0; k < l->n; k++) {
        size_t m = strlen(l->v[k].text);
        memcpy(p, l->v[k].text, m);
        p += m;
        if (k + 1 < l->n)
            *p++ = '\n';
    }
    *p = '\0';
    return s;
}

const char **reqs_argv(const struct reqs_list *l)
{
    const char **argv = xcalloc(l->n + 1, sizeof(char *));
    for (size_t k = 0; k < l->n; k++)
        argv[k] = l->v[k].text;
    return argv;
}
