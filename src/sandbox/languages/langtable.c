#include "sandbox/languages/langtable.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/config.h"
#include "base/util.h"
#include "sandbox/languages/langtable_merge.h"
#include "sandbox/languages/langtable_packages.h"
#include "sandbox/languages/langtable_read.h"

/* Generated from src/sandbox/languages/builtin.json (Makefile). */
extern const char langtable_builtin_src[];

struct langtable {
    struct langtable_lang *langs;
    size_t n;
};

static const char *const runner_names[] = {
    [LANGTABLE_RUNNER_PYTHON] = "python",
    [LANGTABLE_RUNNER_NODE] = "node",
    [LANGTABLE_RUNNER_GENERIC] = "generic",
};

/* ---- the API ---------------------------------------------------------------------- */

int langtable_load_text(const char *text, size_t len, const char *name, struct langtable **out,
                        struct err *err)
{
    struct file_drafts base = {0};
    struct file_drafts user = {0};
    *out = NULL;
    if (langtable_read_file(langtable_builtin_src, strlen(langtable_builtin_src),
                            LANGTABLE_BUILTIN_NAME, 0, &base, err) < 0)
        return -1;
    if (text && langtable_read_file(text, len, name ? name : "languages", 1, &user, err) < 0) {
        langtable_drafts_free(&base);
        return -1;
    }
    struct langtable *t = xcalloc(1, sizeof(*t));
    if (langtable_merge(&base, &user, &t->langs, &t->n, err) < 0) {
        free(t);
        return -1;
    }
    *out = t;
    return 0;
}

int langtable_load(const char *path, struct langtable **out, struct err *err)
{
    *out = NULL;
    if (!path || !*path)
        return langtable_load_text(NULL, 0, NULL, out, err);
    FILE *fp = fopen(path, "re");
    if (!fp)
        return err_set(err, ERR_IO, "cannot open languages file %s: %s", path, strerror(errno));
    char *text = xmalloc(LANGTABLE_FILE_MAX_BYTES + 2);
    size_t n = fread(text, 1, LANGTABLE_FILE_MAX_BYTES + 1, fp);
    bool bad = ferror(fp) != 0;
    fclose(fp);
    int rc;
    if (bad)
        rc = err_set(err, ERR_IO, "cannot read languages file %s", path);
    else if (n > LANGTABLE_FILE_MAX_BYTES)
        rc = err_set(err, ERR_TOO_BIG, "%s: larger than %d bytes", path, LANGTABLE_FILE_MAX_BYTES);
    else
        rc = langtable_load_text(text, n, path, out, err);
    free(text);
    return rc;
}

void langtable_free(struct langtable *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++)
        langtable_lang_free(&t->langs[i]);
    free(t->langs);
    free(t);
}

size_t langtable_count(const struct langtable *t)
{
    return t ? t->n : 0;
}

const struct langtable_lang *langtable_get(const struct langtable *t, size_t i)
{
    return t && i < t->n ? &t->langs[i] : NULL;
}

static bool answers_to(const struct langtable_lang *l, const char *name)
{
    if (strcasecmp(l->name, name) == 0)
        return true;
    for (size_t k = 0; k < l->aliases.n; k++)
        if (strcasecmp(l->aliases.v[k], name) == 0)
            return true;
    return false;
}

const struct langtable_lang *langtable_find(const struct langtable *t, const char *name)
{
    for (size_t i = 0; t && name && i < t->n; i++)
        if (answers_to(&t->langs[i], name))
            return &t->langs[i];
    return NULL;
}

const char *langtable_runner_name(enum langtable_runner r)
{
    return (size_t)r < ARRAY_SIZE(runner_names) ? runner_names[r] : "?";
}

const char *langtable_runtime(const struct langtable_lang *l, const struct config *cfg)
{
    if (l && l->runtime && *l->runtime)
        return l->runtime;
    return cfg->runtime && *cfg->runtime ? cfg->runtime : NULL;
}

bool langtable_network(const struct langtable_lang *l, const struct config *cfg)
{
    if (!l->network_allowed)
        return false;
    for (size_t i = 0; i < cfg->allow_network.n; i++)
        if (answers_to(l, cfg->allow_network.items[i]))
            return true;
    return false;
}

/* ---- the daemon's options --------------------------------------------------------- */

static void set_string(char **slot, const char *value)
{
    free(*slot);
    *slot = xstrdup(value);
}

/* A preload option's "a,b,c" (config.c made it so) as l's list. */
static void set_preload(struct langtable_lang *l, const char *joined)
{
    langtable_strv_free(&l->preload);
    set_string(&l->preload_joined, joined);
    size_t n = 0;
    for (const char *p = joined; *p; p++)
        n += *p == ',';
    l->preload.v = xcalloc(n + 2, sizeof(char *));
    for (const char *p = joined; *joined && p;) {
        const char *comma = strchr(p, ',');
        l->preload.v[l->preload.n++] = comma ? xstrndup(p, (size_t)(comma - p)) : xstrdup(p);
        p = comma ? comma + 1 : NULL;
    }
}

/* Each item of a preload option as a module of its runner: the option is
 * refused for a bad one even when its language is not enabled. */
static int check_preload(const struct config_legacy *o, enum langtable_runner r, struct err *err)
{
    for (const char *p = o->preload; p && *p;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (!langtable_valid_module(p, n, r))
            return err_set(err, ERR_INVALID, "--%s-preload: '%.*s' is not a module name", o->prefix,
                           (int)(n > 64 ? 64 : n), p);
        p = comma ? comma + 1 : NULL;
    }
    return 0;
}

/* One language's options older than the table, into its row. */
static int configure_legacy(struct langtable *t, const struct config_legacy *o, struct err *err)
{
    enum langtable_runner r = LANGTABLE_RUNNER_GENERIC;
    for (size_t i = 0; i < ARRAY_SIZE(runner_names); i++)
        if (strcmp(o->runner, runner_names[i]) == 0)
            r = (enum langtable_runner)i;
    if (check_preload(o, r, err) < 0)
        return -1;
    struct langtable_lang *l = NULL;
    for (size_t i = 0; i < t->n && !l; i++)
        if (strcmp(t->langs[i].name, o->language) == 0)
            l = &t->langs[i];
    if (!l)
        return 0;
    if (*o->runtime)
        set_string(&l->runtime, o->runtime);
    if (l->runner != r)
        return 0;
    if (*o->image)
        set_string(&l->image, o->image);
    if (o->preload)
        set_preload(l, o->preload);
    return 0;
}

/* Keeps the languages --languages names, in the table's order. */
static int configure_subset(struct langtable *t, const struct config_list *on, struct err *err)
{
    for (size_t i = 0; i < on->n; i++)
        if (!langtable_find(t, on->items[i]))
            return err_set(err, ERR_INVALID, "--languages: '%s' is not a language of the table",
                           on->items[i]);
    if (on->n == 0)
        return 0;
    bool *keep = xcalloc(t->n, sizeof(bool));
    for (size_t i = 0; i < on->n; i++)
        keep[langtable_find(t, on->items[i])->index] = true;
    size_t k = 0;
    for (size_t i = 0; i < t->n; i++) {
        if (!keep[i]) {
            langtable_lang_free(&t->langs[i]);
            continue;
        }
        t->langs[k] = t->langs[i];
        t->langs[k].index = k;
        k++;
    }
    t->n = k;
    free(keep);
    return 0;
}

static int check_network(const struct langtable *t, const struct config *cfg, struct err *err)
{
    for (size_t i = 0; i < cfg->allow_network.n; i++) {
        const char *name = cfg->allow_network.items[i];
        const struct langtable_lang *l = langtable_find(t, name);
        if (!l)
            return err_set(err, ERR_INVALID,
                           "--allow-network: '%s' is not a language of the table (or not enabled)",
                           name);
        if (!l->network_allowed)
            return err_set(err, ERR_INVALID,
                           "--allow-network: language '%s' never gets a network "
                           "(its network_allowed is false)",
                           l->name);
    }
    return 0;
}

/* The row a "LANGUAGE=..." item of option names, with *eq at its '=';
 * NULL with err when the item names no language of the table. */
static struct langtable_lang *item_language(struct langtable *t, const char *item,
                                            const char *option, const char **eq, struct err *err)
{
    *eq = strchr(item, '=');
    size_t n = *eq ? (size_t)(*eq - item) : strlen(item);
    while (n && (item[n - 1] == ' ' || item[n - 1] == '\t'))
        n--;
    /* The option's item check saw the name's form: it fits. */
    char name[LANGTABLE_NAME_MAX + 1];
    size_t cut = n < LANGTABLE_NAME_MAX ? n : LANGTABLE_NAME_MAX;
    memcpy(name, item, cut);
    name[cut] = '\0';
    const struct langtable_lang *found = langtable_find(t, name);
    if (*eq && found)
        return &t->langs[found->index];
    err_set(err, ERR_INVALID, "%s: '%s' is not a language of the table (or not enabled)", option,
            name);
    return NULL;
}

/* One --egress item, "LANGUAGE=PATTERN,...", into its language's row:
 * the list replaces the table's, an empty one removes it. */
static int configure_egress_item(struct langtable *t, const char *item, struct err *err)
{
    const char *eq = NULL;
    struct langtable_lang *l = item_language(t, item, "--egress", &eq, err);
    if (!l)
        return -1;
    struct egress_patterns *list = xcalloc(1, sizeof(*list));
    if (egress_patterns_parse(eq + 1, list, err) < 0) {
        free(list);
        return err_wrap(err, "--egress %s", l->name);
    }
    free(l->egress);
    l->egress = list->n ? list : NULL;
    if (!l->egress)
        free(list);
    return 0;
}

/* --egress's items in order, so of two for one language the later holds
 * (the command line's over the environment's over the file's); then no
 * language may have both an egress list and the engine's network. */
static int configure_egress(struct langtable *t, const struct config *cfg, struct err *err)
{
    for (size_t i = 0; i < cfg->egress.n; i++)
        if (configure_egress_item(t, cfg->egress.items[i], err) < 0)
            return -1;
    for (size_t i = 0; i < t->n; i++)
        if (t->langs[i].egress && langtable_network(&t->langs[i], cfg))
            return err_set(err, ERR_INVALID,
                           "--allow-network and --egress: language '%s' has both the engine's "
                           "network (--allow-network) and an egress allow-list (--egress, or "
                           "the languages file's 'egress'); choose one",
                           t->langs[i].name);
    return 0;
}

/* One --packages-index item, "LANGUAGE=URL,...", into its language's
 * packages: the URLs replace the table's index, none leaves the
 * installer's own. */
static int configure_index_item(struct langtable *t, const char *item, struct err *err)
{
    const char *eq = NULL;
    struct langtable_lang *l = item_language(t, item, "--packages-index", &eq, err);
    if (!l)
        return -1;
    if (!l->packages)
        return err_set(err, ERR_INVALID,
                       "--packages-index: language '%s' installs no packages (the language "
                       "table's 'packages')",
                       l->name);
    struct langtable_strv urls = {.v = xcalloc(LANGTABLE_INDEX_MAX + 1, sizeof(char *))};
    for (const char *p = eq + 1; *p;) {
        size_t len = strcspn(p, ",");
        const char *s = p;
        p += len + (p[len] == ',');
        while (len && (*s == ' ' || *s == '\t'))
            s++, len--;
        while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
            len--;
        if (!len)
            continue;
        if (urls.n == LANGTABLE_INDEX_MAX) {
            langtable_strv_free(&urls);
            return err_set(err, ERR_INVALID, "--packages-index %s: more than %d URLs", l->name,
                           LANGTABLE_INDEX_MAX);
        }
        if (langtable_index_url_check(s, len, err) < 0) {
            langtable_strv_free(&urls);
            return err_wrap(err, "--packages-index %s: '%.*s'", l->name, (int)(len > 64 ? 64 : len),
                            s);
        }
        urls.v[urls.n++] = xstrndup(s, len);
    }
    langtable_strv_free(&l->packages->index);
    l->packages->index = urls;
    return 0;
}

/* One --pool-min or --pool-max item (max: which), "LANGUAGE=N"; *given
 * (by row) records it. */
static int configure_pool_item(struct langtable *t, const char *item, bool max, bool *given,
                               struct err *err)
{
    const char *eq = NULL;
    struct langtable_lang *l = item_language(t, item, max ? "--pool-max" : "--pool-min", &eq, err);
    if (!l)
        return -1;
    /* The item check took digits, 0 to LANGTABLE_POOL_MAX. */
    long long v = strtoll(eq + 1, NULL, 10);
    if (max)
        l->pool_max = v;
    else
        l->pool_size = v;
    given[l->index] = true;
    return 0;
}

/* --pool-size fixes every language's bounds, then --pool-min and
 * --pool-max items move single ones; a bound given moves the other, not
 * given, to meet it; two given that cross are refused. */
static int configure_pools(struct langtable *t, const struct config *cfg, struct err *err)
{
    for (size_t i = 0; cfg->pool_size >= 0 && i < t->n; i++)
        t->langs[i].pool_size = t->langs[i].pool_max = cfg->pool_size;
    bool *min_given = xcalloc(t->n + 1, sizeof(bool));
    bool *max_given = xcalloc(t->n + 1, sizeof(bool));
    int rc = -1;
    for (size_t i = 0; i < cfg->pool_min.n; i++)
        if (configure_pool_item(t, cfg->pool_min.items[i], false, min_given, err) < 0)
            goto out;
    for (size_t i = 0; i < cfg->pool_max.n; i++)
        if (configure_pool_item(t, cfg->pool_max.items[i], true, max_given, err) < 0)
            goto out;
    for (size_t i = 0; i < t->n; i++) {
        struct langtable_lang *l = &t->langs[i];
        if (l->pool_size <= l->pool_max)
            continue;
        if (min_given[i] && max_given[i]) {
            err_set(err, ERR_INVALID, "--pool-min %s=%lld is above --pool-max %s=%lld", l->name,
                    l->pool_size, l->name, l->pool_max);
            goto out;
        }
        if (max_given[i])
            l->pool_size = l->pool_max;
        else
            l->pool_max = l->pool_size;
    }
    rc = 0;
out:
    free(min_given);
    free(max_given);
    return rc;
}

struct reqs_rules langtable_packages_rules(const struct langtable_packages *p)
{
    return (struct reqs_rules){.allow = (const char *const *)p->allow.v,
                               .n_allow = p->allow.n,
                               .deny = (const char *const *)p->deny.v,
                               .n_deny = p->deny.n};
}

int langtable_configure(struct langtable *t, const struct config *cfg, struct err *err)
{
    if (configure_subset(t, &cfg->languages, err) < 0)
        return -1;
    for (size_t i = 0; i < CONFIG_LEGACY_LANGUAGES; i++) {
        struct config_legacy o = config_legacy(cfg, i);
        if (configure_legacy(t, &o, err) < 0)
            return -1;
    }
    if (configure_pools(t, cfg, err) < 0)
        return -1;
    if (check_network(t, cfg, err) < 0 || configure_egress(t, cfg, err) < 0)
        return -1;
    for (size_t i = 0; i < cfg->packages_index.n; i++)
        if (configure_index_item(t, cfg->packages_index.items[i], err) < 0)
            return -1;
    if (cfg->dry_run_create && *cfg->dry_run_create && !langtable_find(t, cfg->dry_run_create))
        return err_set(err, ERR_INVALID, "--dry-run-create: '%.64s' is not a language of the table",
                       cfg->dry_run_create);
    return 0;
}
