#include "egress/secrets.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

#define PREFIX_LEN (sizeof(EGRESS_PLACEHOLDER_PREFIX) - 1)

static const char alnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/* ---- the daemon's table --------------------------------------------------- */

static bool env_name(const char *s, size_t n)
{
    if (n == 0 || n > EGRESS_SECRET_NAME_MAX || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
            return false;
    return true;
}

static bool printable(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] < 0x20 || s[i] > 0x7e)
            return false;
    return true;
}

/* One item into t->items[t->n] (or skipped: NAME not set). */
static int add_item(struct egress_secrets *t, const char *item, char *const *envp,
                    void (*missing_cb)(const char *name), struct err *err)
{
    const char *eq = strchr(item, '=');
    size_t nl = eq ? (size_t)(eq - item) : 0;
    while (nl && isblank((unsigned char)item[nl - 1]))
        nl--;
    const char *name = item;
    while (nl && isblank((unsigned char)*name))
        name++, nl--;
    if (!eq || !env_name(name, nl))
        return err_set(err, ERR_INVALID,
                       "--secret '%.64s': expected NAME=HOST[,HOST...] with NAME a variable name",
                       item);
    struct egress_secret s = {.name = xstrndup(name, nl)};
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->items[i].name, s.name) == 0) {
            err_set(err, ERR_INVALID, "--secret: %s is given twice", s.name);
            goto fail;
        }
    if (egress_patterns_parse(eq + 1, &s.hosts, err) < 0) {
        err_wrap(err, "--secret %s", s.name);
        goto fail;
    }
    if (s.hosts.n == 0) {
        err_set(err, ERR_INVALID, "--secret %s: no host is bound to it", s.name);
        goto fail;
    }
    /* A host without a port is bound on 443 only: a value goes out in
     * the clear (port 80) only where the operator names that port. */
    for (size_t i = 0; i < s.hosts.n; i++)
        if (s.hosts.items[i].port == 0)
            s.hosts.items[i].port = EGRESS_PORT_HTTPS;
    const char *found = util_env_entry(envp, s.name);
    if (!found) {
        if (missing_cb)
            missing_cb(s.name);
        free(s.name);
        return 0;
    }
    const char *value = found + nl + 1;
    s.len = strlen(value);
    if (s.len == 0 || s.len > EGRESS_SECRET_VALUE_MAX || !printable(value, s.len)) {
        err_set(err, ERR_INVALID,
                "--secret %s: its value must be 1 to %d bytes of printable ASCII (a value that "
                "can end a request's line is never inserted)",
                s.name, EGRESS_SECRET_VALUE_MAX);
        goto fail;
    }
    s.value = xstrndup(value, s.len);
    t->items[t->n++] = s;
    return 0;
fail:
    free(s.name);
    return -1;
}

int egress_secrets_new(char *const *items, size_t n_items, char *const *envp,
                       void (*missing_cb)(const char *name), struct egress_secrets **out,
                       struct err *err)
{
    *out = NULL;
    if (n_items > EGRESS_SECRETS_MAX)
        return err_set(err, ERR_INVALID, "--secret: %zu items, more than %d", n_items,
                       EGRESS_SECRETS_MAX);
    struct egress_secrets *t = xcalloc(1, sizeof(*t));
    t->items = xcalloc(n_items ? n_items : 1, sizeof(*t->items));
    for (size_t i = 0; i < n_items; i++)
        if (add_item(t, items[i], envp, missing_cb, err) < 0) {
            egress_secrets_free(t);
            return -1;
        }
    *out = t;
    return 0;
}

void egress_secrets_free(struct egress_secrets *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++) {
        /* Do not leave values behind in freed heap. */
        explicit_bzero(t->items[i].value, t->items[i].len);
        free(t->items[i].value);
        free(t->items[i].name);
    }
    free(t->items);
    free(t);
}

/* ---- a run's placeholders ----------------------------------------------- */

/* len characters: the prefix, then letters and digits. A byte is taken
 * only below the largest multiple of the alphabet's size, so every
 * character is equally likely. */
static int make_placeholder(char *p, size_t len, struct err *err)
{
    const size_t k = sizeof(alnum) - 1;
    const unsigned limit = 256 - 256 % k;
    memcpy(p, EGRESS_PLACEHOLDER_PREFIX, PREFIX_LEN);
    size_t at = PREFIX_LEN;
    while (at < len) {
        unsigned char rnd[64];
        if (util_random_bytes(rnd, sizeof(rnd)) < 0)
            return err_set(err, ERR_INTERNAL, "no random bytes for a secret's placeholder");
        for (size_t i = 0; i < sizeof(rnd) && at < len; i++)
            if (rnd[i] < limit)
                p[at++] = alnum[rnd[i] % k];
    }
    p[len] = '\0';
    return 0;
}

/* Whether a is b, or begins with it, or b with a. */
static bool overlaps(const char *a, const char *b)
{
    size_t na = strlen(a);
    size_t nb = strlen(b);
    return strncmp(a, b, na < nb ? na : nb) == 0;
}

int egress_run_secrets_new(const struct egress_secrets *t, struct egress_run_secrets **out,
                           struct err *err)
{
    *out = NULL;
    if (!t || t->n == 0)
        return 0;
    struct egress_run_secrets *rs = xcalloc(1, sizeof(*rs));
    rs->table = t;
    rs->names = xcalloc(t->n, sizeof(char *));
    rs->placeholders = xcalloc(t->n, sizeof(char *));
    for (size_t i = 0; i < t->n; i++) {
        size_t len =
            t->items[i].len > EGRESS_PLACEHOLDER_MIN ? t->items[i].len : EGRESS_PLACEHOLDER_MIN;
        rs->names[i] = t->items[i].name;
        rs->placeholders[i] = xmalloc(len + 1);
        rs->n = i + 1;
        bool clash = true;
        while (clash) {
            if (make_placeholder(rs->placeholders[i], len, err) < 0) {
                egress_run_secrets_free(rs);
                return -1;
            }
            clash = false;
            for (size_t j = 0; j < i && !clash; j++)
                clash = overlaps(rs->placeholders[i], rs->placeholders[j]);
        }
    }
    *out = rs;
    return 0;
}

void egress_run_secrets_free(struct egress_run_secrets *rs)
{
    if (!rs)
        return;
    for (size_t i = 0; i < rs->n; i++)
        free(rs->placeholders[i]);
    free(rs->placeholders);
    free(rs->names);
    free(rs);
}

/* ---- substitution ------------------------------------------------------- */

struct subst {
    const struct egress_run_secrets *rs;
    bool bound[EGRESS_SECRETS_MAX];
    size_t n_bound;
    char *out;
    size_t n;
    size_t cap;
    bool over;
    int count;
};

static void put(struct subst *s, const char *p, size_t n)
{
    if (s->over || n > s->cap - s->n) {
        s->over = true;
        return;
    }
    memcpy(s->out + s->n, p, n);
    s->n += n;
}

static bool unreserved(unsigned char c)
{
    return isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

static void put_encoded(struct subst *s, const char *v, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v[i];
        char pct[3] = {'%', hex[c >> 4], hex[c & 15]};
        if (unreserved(c))
            put(s, v + i, 1);
        else
            put(s, pct, 3);
    }
}

/* The bound secret whose placeholder starts p[0..n), or -1. */
static int placeholder_at(const struct subst *s, const char *p, size_t n)
{
    if (n < EGRESS_PLACEHOLDER_MIN || memcmp(p, EGRESS_PLACEHOLDER_PREFIX, PREFIX_LEN) != 0)
        return -1;
    for (size_t i = 0; i < s->rs->n; i++) {
        const char *ph = s->rs->placeholders[i];
        size_t len = strlen(ph);
        if (s->bound[i] && len <= n && memcmp(p, ph, len) == 0)
            return (int)i;
    }
    return -1;
}

/* p[0..n) with the bound placeholders replaced: the value as it is, or
 * percent-encoded (a query's). */
static void put_replaced(struct subst *s, const char *p, size_t n, bool encode)
{
    size_t i = 0;
    size_t plain = 0; /* p[plain..i) is waiting to be copied */
    while (i < n) {
        int k = p[i] == EGRESS_PLACEHOLDER_PREFIX[0] ? placeholder_at(s, p + i, n - i) : -1;
        if (k < 0) {
            i++;
            continue;
        }
        const struct egress_secret *sec = &s->rs->table->items[k];
        put(s, p + plain, i - plain);
        if (encode)
            put_encoded(s, sec->value, sec->len);
        else
            put(s, sec->value, sec->len);
        s->count++;
        i += strlen(s->rs->placeholders[k]);
        plain = i;
    }
    put(s, p + plain, n - plain);
}

/* The request line, line[0..n) without its end: only the target's query
 * (from its first '?' to the blank before the version). */
static void request_line(struct subst *s, const char *line, size_t n)
{
    const char *sp1 = memchr(line, ' ', n);
    if (!sp1) {
        put(s, line, n);
        return;
    }
    const char *target = sp1 + 1;
    const char *end = memchr(target, ' ', n - (size_t)(target - line));
    if (!end)
        end = line + n;
    const char *q = memchr(target, '?', (size_t)(end - target));
    if (!q) {
        put(s, line, n);
        return;
    }
    put(s, line, (size_t)(q - line) + 1);
    put_replaced(s, q + 1, (size_t)(end - q - 1), true);
    put(s, end, n - (size_t)(end - line));
}

/* A field line, line[0..n) without its end: only the value, after the
 * first ':'. */
static void field_line(struct subst *s, const char *line, size_t n)
{
    const char *colon = memchr(line, ':', n);
    if (!colon) {
        put(s, line, n);
        return;
    }
    size_t name_len = (size_t)(colon - line) + 1;
    put(s, line, name_len);
    put_replaced(s, colon + 1, n - name_len, false);
}

static void walk_head(struct subst *s, const char *head, size_t len)
{
    size_t at = 0;
    for (bool first = true; at < len; first = false) {
        const char *lf = memchr(head + at, '\n', len - at);
        size_t line_end = lf ? (size_t)(lf - head) : len;
        size_t content = line_end;
        if (content > at && head[content - 1] == '\r')
            content--;
        if (!first && content == at)
            break; /* the empty line: the head ends */
        if (first)
            request_line(s, head + at, content - at);
        else
            field_line(s, head + at, content - at);
        put(s, head + content, line_end - content + (lf ? 1 : 0));
        at = line_end + (lf ? 1 : 0);
    }
    put(s, head + at, len - at); /* the empty line, and anything after */
}

int egress_secrets_substitute_head(const struct egress_run_secrets *rs, const char *host,
                                   unsigned port, const char *head, size_t len, char *out,
                                   size_t cap, size_t *out_len, struct err *err)
{
    struct subst s = {.rs = rs, .out = out, .cap = cap};
    *out_len = 0;
    for (size_t i = 0; rs && i < rs->n && i < EGRESS_SECRETS_MAX; i++) {
        s.bound[i] = egress_patterns_match(&rs->table->items[i].hosts, host, port) >= 0;
        s.n_bound += s.bound[i];
    }
    if (s.n_bound == 0)
        put(&s, head, len);
    else
        walk_head(&s, head, len);
    if (s.over) {
        explicit_bzero(out, s.n); /* it may hold a value */
        return err_set(err, ERR_TOO_BIG,
                       "the request's head with its secrets inserted is over %zu bytes", cap);
    }
    *out_len = s.n;
    return s.count;
}

bool egress_secrets_bound(const struct egress_run_secrets *rs, const char *host, unsigned port)
{
    for (size_t i = 0; rs && i < rs->n; i++)
        if (egress_patterns_match(&rs->table->items[i].hosts, host, port) >= 0)
            return true;
    return false;
}
