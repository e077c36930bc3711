#include "sandbox/languages/langtable_packages.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "sandbox/packages/reqs.h"

/* Read, not yet settled: the runner's installer goes here. */
#define INSTALLER_UNSET ((enum reqs_installer)REQS_INSTALLERS)

#define FITS                                                                                       \
    "pip: the python runner; npm: the node runner, or generic running node; gem: generic "         \
    "running ruby"
#define KEYS "installer, index, allow, deny, scripts, timeout_ms, max_bytes, preinstall"

void langtable_packages_free(struct langtable_packages *p)
{
    if (!p)
        return;
    langtable_strv_free(&p->index);
    langtable_strv_free(&p->allow);
    langtable_strv_free(&p->deny);
    langtable_strv_free(&p->preinstall);
    free(p);
}

/* ---- index URLs --------------------------------------------------------------------- */

static bool host_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '-' || ch == '.';
}

static bool path_char(char ch)
{
    return host_char(ch) || ch == '/' || ch == '_' || ch == '~' || ch == '%' || ch == '+' ||
           ch == '=';
}

/* HOST[:PORT] in s[0..n). */
static int check_authority(const char *s, size_t n, struct err *err)
{
    if (memchr(s, '@', n))
        return err_set(err, ERR_INVALID,
                       "credentials (USER@) are not allowed in an index URL "
                       "(list_languages shows it)");
    size_t h = 0;
    if (n && s[0] == '[') {
        const char *close = memchr(s, ']', n);
        if (!close || close == s + 1)
            return err_set(err, ERR_INVALID, "an IPv6 host is [ADDRESS]");
        for (const char *p = s + 1; p < close; p++)
            if (!(host_char(*p) && *p != '.') && *p != ':')
                return err_set(err, ERR_INVALID, "an IPv6 host is [ADDRESS]");
        h = (size_t)(close - s) + 1;
    } else {
        while (h < n && host_char(s[h]))
            h++;
        if (h == 0 || s[0] == '.' || s[0] == '-' || s[h - 1] == '-' || memmem(s, h, "..", 2))
            return err_set(err, ERR_INVALID, "an index URL needs a host name or address");
    }
    if (h == n)
        return 0;
    unsigned long long port = 0;
    if (s[h] != ':' || !util_parse_decimal(s + h + 1, n - h - 1, 65535, &port) || port == 0)
        return err_set(err, ERR_INVALID, "the host may be followed by :PORT (1 to 65535) only");
    return 0;
}

int langtable_index_url_check(const char *s, size_t n, struct err *err)
{
    size_t skip = 0;
    if (n > 7 && memcmp(s, "http://", 7) == 0)
        skip = 7;
    else if (n > 8 && memcmp(s, "https://", 8) == 0)
        skip = 8;
    if (n > LANGTABLE_URL_MAX)
        return err_set(err, ERR_INVALID, "an index URL is at most %d bytes", LANGTABLE_URL_MAX);
    if (!skip)
        return err_set(err, ERR_INVALID, "an index URL starts with http:// or https://");
    const char *path = memchr(s + skip, '/', n - skip);
    size_t an = path ? (size_t)(path - s) - skip : n - skip;
    if (check_authority(s + skip, an, err) < 0)
        return -1;
    for (size_t i = skip + an; i < n; i++)
        if (!path_char(s[i]))
            return err_set(err, ERR_INVALID,
                           "an index URL's path is [A-Za-z0-9/._~%%+=-] (no query, fragment, "
                           "space, ',' or ';')");
    return 0;
}

/* ---- reading ------------------------------------------------------------------------ */

/* An array of at most max strings, each an index URL when url, into
 * *out (the file has no NUL: langtable_read.c refuses \u0000). */
static int get_strings(json_object *v, const char *key, size_t max, bool url,
                       struct langtable_strv *out, struct err *err)
{
    if (!json_object_is_type(v, json_type_array))
        return err_set(err, ERR_INVALID, "'packages': '%s' must be an array of strings", key);
    size_t n = json_object_array_length(v);
    if (n > max)
        return err_set(err, ERR_INVALID, "'packages': '%s' has more than %zu items", key, max);
    langtable_strv_free(out);
    out->v = xcalloc(n + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++) {
        json_object *item = json_object_array_get_idx(v, i);
        if (!json_object_is_type(item, json_type_string))
            return err_set(err, ERR_INVALID, "'packages': '%s'[%zu] must be a string", key, i);
        const char *s = json_object_get_string(item);
        size_t len = (size_t)json_object_get_string_len(item);
        if (url && langtable_index_url_check(s, len, err) < 0) {
            char q[LANGTABLE_QUOTE_MAX + 1];
            return err_wrap(err, "'packages': '%s'[%zu] \"%s\"", key, i,
                            langtable_quote(q, sizeof(q), s, len));
        }
        out->v[out->n++] = xstrndup(s, len);
    }
    return 0;
}

static int get_limit(json_object *v, const char *key, long long lo, long long hi, long long *out,
                     struct err *err)
{
    errno = 0;
    int64_t x = json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : lo - 1;
    if (errno || x < lo || x > hi)
        return err_set(err, ERR_INVALID, "'packages': '%s' must be an integer in [%lld, %lld]", key,
                       lo, hi);
    *out = (long long)x;
    return 0;
}

static int get_installer(json_object *v, enum reqs_installer *out, struct err *err)
{
    const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
    if (!reqs_installer_from_name(s, strlen(s), out))
        return err_set(err, ERR_INVALID,
                       "'packages': 'installer' must be \"pip\", \"npm\" or \"gem\"");
    if (!reqs_installer_supported(*out))
        return err_set(err, ERR_INVALID, "'packages': installs with %s are not supported yet",
                       reqs_installer_name(*out));
    return 0;
}

static int read_key(struct langtable_packages *p, const char *key, json_object *v, struct err *err)
{
    if (strcmp(key, "installer") == 0)
        return get_installer(v, &p->installer, err);
    if (strcmp(key, "index") == 0)
        return get_strings(v, key, LANGTABLE_INDEX_MAX, true, &p->index, err);
    if (strcmp(key, "allow") == 0)
        return get_strings(v, key, REQS_RULES_MAX, false, &p->allow, err);
    if (strcmp(key, "deny") == 0)
        return get_strings(v, key, REQS_RULES_MAX, false, &p->deny, err);
    if (strcmp(key, "preinstall") == 0)
        return get_strings(v, key, REQS_MAX_COUNT, false, &p->preinstall, err);
    if (strcmp(key, "timeout_ms") == 0)
        return get_limit(v, key, LANGTABLE_PKG_TIMEOUT_MIN_MS, LANGTABLE_PKG_TIMEOUT_MAX_MS,
                         &p->timeout_ms, err);
    if (strcmp(key, "max_bytes") == 0)
        return get_limit(v, key, LANGTABLE_PKG_MAX_BYTES_MIN, LANGTABLE_PKG_MAX_BYTES_MAX,
                         &p->max_bytes, err);
    if (strcmp(key, "scripts") == 0) {
        if (!json_object_is_type(v, json_type_boolean))
            return err_set(err, ERR_INVALID, "'packages': 'scripts' must be true or false");
        p->scripts = json_object_get_boolean(v);
        return 0;
    }
    char q[LANGTABLE_QUOTE_MAX + 1];
    return err_set(err, ERR_INVALID, "'packages': unknown key '%s' (%s)",
                   langtable_quote(q, sizeof(q), key, strlen(key)), KEYS);
}

int langtable_packages_read(json_object *v, struct langtable_packages **out, struct err *err)
{
    if (!json_object_is_type(v, json_type_object))
        return err_set(err, ERR_INVALID,
                       "'packages' must be an object (installs on demand: %s) "
                       "or null; the image's Debian packages are "
                       "'image_packages'",
                       KEYS);
    struct langtable_packages *p = xcalloc(1, sizeof(*p));
    p->installer = INSTALLER_UNSET;
    p->scripts = true;
    p->timeout_ms = LANGTABLE_PKG_TIMEOUT_DEFAULT_MS;
    p->max_bytes = LANGTABLE_PKG_MAX_BYTES_DEFAULT;
    json_object_object_foreach(v, key, val)
    {
        if (read_key(p, key, val, err) < 0) {
            langtable_packages_free(p);
            return -1;
        }
    }
    /* Lists never NULL, as the table's others. */
    struct langtable_strv *lists[] = {&p->index, &p->allow, &p->deny, &p->preinstall};
    for (size_t i = 0; i < ARRAY_SIZE(lists); i++)
        if (!lists[i]->v)
            lists[i]->v = xcalloc(1, sizeof(char *));
    langtable_packages_free(*out);
    *out = p;
    return 0;
}

/* ---- settling ----------------------------------------------------------------------- */

/* Whether cmd is the program prog, by name or by a path ending in it. */
static bool runs(const char *cmd, const char *prog)
{
    size_t n = strlen(cmd), p = strlen(prog);
    return strcmp(cmd, prog) == 0 ||
           (n > p && cmd[n - p - 1] == '/' && strcmp(cmd + n - p, prog) == 0);
}

/* The installer l's runner can use: pip for the python runner, npm for
 * the node runner or a generic one whose run command is node, gem for a
 * generic one whose run command is ruby. */
static bool runner_installer(const struct langtable_lang *l, enum reqs_installer *out)
{
    const char *cmd = l->run.n ? l->run.v[0] : "";
    if (l->runner == LANGTABLE_RUNNER_PYTHON)
        *out = REQS_PIP;
    else if (l->runner == LANGTABLE_RUNNER_NODE ||
             (l->runner == LANGTABLE_RUNNER_GENERIC && runs(cmd, "node")))
        *out = REQS_NPM;
    else if (l->runner == LANGTABLE_RUNNER_GENERIC && runs(cmd, "ruby"))
        *out = REQS_GEM;
    else
        return false;
    return true;
}

/* The rules normalized in place. */
static int normalize_rules(struct langtable_strv *rules, enum reqs_installer i, const char *key,
                           struct err *err)
{
    for (size_t k = 0; k < rules->n; k++) {
        char *norm = NULL;
        if (reqs_rule_normalize(i, rules->v[k], strlen(rules->v[k]), &norm, err) < 0)
            return err_wrap(err, "'packages': '%s'[%zu]", key, k);
        free(rules->v[k]);
        rules->v[k] = norm;
    }
    return 0;
}

/* The preinstall list parsed, checked against the rules, and replaced by
 * its canonical texts in order. */
static int parse_preinstall(struct langtable_packages *p, struct err *err)
{
    struct reqs_rules rules = langtable_packages_rules(p);
    struct reqs_list list;
    if (reqs_parse(p->installer, (const char *const *)p->preinstall.v, NULL, p->preinstall.n,
                   &rules, "'packages': 'preinstall'", &list, err) < 0)
        return -1;
    langtable_strv_free(&p->preinstall);
    p->preinstall.v = xcalloc(list.n + 1, sizeof(char *));
    for (size_t k = 0; k < list.n; k++) {
        p->preinstall.v[k] = list.v[k].text;
        list.v[k].text = NULL;
    }
    p->preinstall.n = list.n;
    reqs_list_free(&list);
    return 0;
}

int langtable_packages_settle(struct draft *d, struct err *err)
{
    struct langtable_lang *l = &d->l;
    struct langtable_packages *p = l->packages;
    if (!p)
        return 0;
    enum reqs_installer fits;
    bool any = runner_installer(l, &fits);
    if (!any || (p->installer != INSTALLER_UNSET && p->installer != fits)) {
        /* Built-in installs go with the runner or run command the
         * operator changed; the operator's own that do not fit are a
         * mistake. */
        int changed = d->set[F_RUNNER] ? d->from[F_RUNNER].level : 0;
        if (d->set[F_RUN] && d->from[F_RUN].level > changed)
            changed = d->from[F_RUN].level;
        if (d->from[F_PACKAGES].level < changed) {
            langtable_packages_free(p);
            l->packages = NULL;
            return 0;
        }
        if (p->installer == INSTALLER_UNSET)
            return langtable_fail_at(err, &d->from[F_PACKAGES],
                                     "language '%s': 'packages': its %s runner has no installer "
                                     "(" FITS ")",
                                     l->name, langtable_runner_name(l->runner));
        return langtable_fail_at(
            err, &d->from[F_PACKAGES],
            "language '%s': 'packages': %s does not fit its %s runner (" FITS ")", l->name,
            reqs_installer_name(p->installer), langtable_runner_name(l->runner));
    }
    p->installer = fits;
    if (fits == REQS_GEM && !p->scripts)
        return langtable_fail_at(err, &d->from[F_PACKAGES],
                                 "language '%s': 'packages': gem cannot install without running a "
                                 "gem's extension build: 'scripts' must stay true (an 'allow' "
                                 "list keeps to gems the operator trusts)",
                                 l->name);
    if (normalize_rules(&p->allow, fits, "allow", err) < 0 ||
        normalize_rules(&p->deny, fits, "deny", err) < 0 || parse_preinstall(p, err) < 0)
        return langtable_fail_at(err, &d->from[F_PACKAGES], "language '%s': %s", l->name,
                                 err_msg(err));
    return 0;
}
