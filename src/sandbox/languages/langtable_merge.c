#include "sandbox/languages/langtable_merge.h"

#include <string.h>

#include "base/buf.h"
#include "base/config.h"
#include "sandbox/languages/langtable_packages.h"
#include "sandbox/run/policy.h"

static const enum field required_fields[] = {F_IMAGE, F_SOURCE_FILE, F_RUNNER, F_RUN};

/* ---- overriding ------------------------------------------------------------------ */

/* Moves one value from src to dst (the two are the same field of two
 * languages); src's is left empty. */
static void take_value(const struct field_def *f, void *dst, void *src)
{
    switch (f->kind) {
    case K_STRING:
        free(*(char **)dst);
        *(char **)dst = *(char **)src;
        *(char **)src = NULL;
        break;
    case K_LIST:
        langtable_strv_free(dst);
        *(struct langtable_strv *)dst = *(struct langtable_strv *)src;
        *(struct langtable_strv *)src = (struct langtable_strv){0};
        break;
    case K_INT:
        *(long long *)dst = *(long long *)src;
        break;
    case K_BOOL:
        *(bool *)dst = *(bool *)src;
        break;
    case K_RUNNER:
        *(enum langtable_runner *)dst = *(enum langtable_runner *)src;
        break;
    case K_CHECKER:
        *(enum langtable_checker *)dst = *(enum langtable_checker *)src;
        break;
    case K_EGRESS:
        free(*(struct egress_patterns **)dst);
        *(struct egress_patterns **)dst = *(struct egress_patterns **)src;
        *(struct egress_patterns **)src = NULL;
        break;
    case K_PACKAGES:
        langtable_packages_free(*(struct langtable_packages **)dst);
        *(struct langtable_packages **)dst = *(struct langtable_packages **)src;
        *(struct langtable_packages **)src = NULL;
        break;
    case K_DISABLED:
        break;
    }
}

/* Overrides base's fields with those src sets (src is left empty). */
static void draft_override(struct draft *base, struct draft *src)
{
    for (int f = 0; f < N_FIELDS; f++) {
        if (!src->set[f] || f == F_NAME)
            continue;
        base->set[f] = true;
        base->from[f] = src->from[f];
        const struct field_def *def = &langtable_fields[f];
        take_value(def, (char *)&base->l + def->offset, (char *)&src->l + def->offset);
    }
}

/* ---- one language, whole ----------------------------------------------------------- */

/* Replaces "{source}" and "{stem}" in one argument; any other "{word}" is
 * an error. */
static char *expand_arg(const char *a, const char *source, struct err *err)
{
    const char *dot = strrchr(source, '.');
    size_t stem_len = dot ? (size_t)(dot - source) : strlen(source);
    struct buf b;
    buf_init(&b, LANGTABLE_ARG_MAX);
    for (const char *p = a; *p;) {
        const char *close = NULL;
        size_t w = 0;
        if (*p == '{') {
            while (p[1 + w] && ((p[1 + w] >= 'a' && p[1 + w] <= 'z') || p[1 + w] == '_'))
                w++;
            close = w && p[1 + w] == '}' ? p + 1 + w : NULL;
        }
        int rc = 0;
        if (close && w == 6 && memcmp(p + 1, "source", 6) == 0) {
            rc = buf_add(&b, source, strlen(source));
        } else if (close && w == 4 && memcmp(p + 1, "stem", 4) == 0) {
            rc = buf_add(&b, source, stem_len);
        } else if (close) {
            buf_free(&b);
            err_set(err, ERR_INVALID, "'%.*s' is not a placeholder ({source}, {stem}) in \"%.40s\"",
                    (int)(w + 2 > LANGTABLE_QUOTE_MAX ? LANGTABLE_QUOTE_MAX : w + 2), p, a);
            return NULL;
        } else {
            rc = buf_add(&b, p, 1);
        }
        if (rc < 0) {
            buf_free(&b);
            err_set(err, ERR_INVALID, "an argument is longer than %d bytes", LANGTABLE_ARG_MAX);
            return NULL;
        }
        p = close ? close + 1 : p + 1;
    }
    return buf_take(&b, NULL);
}

/* The argvs with their placeholders replaced. */
static int expand_argvs(struct draft *d, struct err *err)
{
    static const enum field argvs[] = {F_COMPILE, F_TYPECHECK, F_RUN, F_VERSION};
    struct langtable_lang *l = &d->l;
    for (size_t i = 0; i < ARRAY_SIZE(argvs); i++) {
        const struct field_def *def = &langtable_fields[argvs[i]];
        struct langtable_strv *argv = (void *)((char *)l + def->offset);
        for (size_t k = 0; k < argv->n; k++) {
            if (!strchr(argv->v[k], '{'))
                continue;
            char *a = expand_arg(argv->v[k], l->source_file, err);
            if (!a)
                return langtable_fail_at(err, &d->from[argvs[i]], "language '%s': '%s': %s",
                                         l->name, def->key, err_msg(err));
            free(argv->v[k]);
            argv->v[k] = a;
        }
    }
    return 0;
}

/* Of two keys that contradict each other, the one the operator's file
 * set (so a built-in value is never blamed for an override). */
static const struct origin *blame(const struct draft *d, enum field a, enum field b)
{
    return d->from[b].level > d->from[a].level ? &d->from[b] : &d->from[a];
}

/* A value the built-in table gives only for a runner the operator then
 * changed goes with it (set below the runner's level); one set with a
 * runner it does not suit is a mistake. */
static bool follows_runner(const struct draft *d, enum field f)
{
    return d->set[F_RUNNER] && d->from[f].level < d->from[F_RUNNER].level;
}

/* The keys that only some runners take. */
static int check_runner_keys(struct draft *d, struct err *err)
{
    struct langtable_lang *l = &d->l;
    const char *runner = langtable_runner_name(l->runner);
    bool generic = l->runner == LANGTABLE_RUNNER_GENERIC;
    if (l->compile.n && !generic)
        return langtable_fail_at(err, blame(d, F_COMPILE, F_RUNNER),
                                 "language '%s': 'compile' needs the generic runner, not %s",
                                 l->name, runner);
    if (l->typecheck.n && !generic)
        return langtable_fail_at(err, blame(d, F_TYPECHECK, F_RUNNER),
                                 "language '%s': 'typecheck' needs the generic runner, not %s",
                                 l->name, runner);
    if (l->typecheck_warm != LANGTABLE_CHECKER_NONE && l->typecheck.n == 0) {
        /* The built-in checker of a typecheck the operator removed goes
         * with it; one set where there is no typecheck is a mistake. */
        if (d->set[F_TYPECHECK] && d->from[F_TYPECHECK_WARM].level < d->from[F_TYPECHECK].level)
            l->typecheck_warm = LANGTABLE_CHECKER_NONE;
        else
            return langtable_fail_at(err, &d->from[F_TYPECHECK_WARM],
                                     "language '%s': 'typecheck_warm' needs a typecheck", l->name);
    }
    if (l->preload.n && generic)
        return langtable_fail_at(err, blame(d, F_PRELOAD, F_RUNNER),
                                 "language '%s': 'preload' needs the python or node runner",
                                 l->name);
    if (l->plots && l->runner != LANGTABLE_RUNNER_PYTHON) {
        if (!follows_runner(d, F_PLOTS))
            return langtable_fail_at(err, blame(d, F_PLOTS, F_RUNNER),
                                     "language '%s': 'plots' needs the python runner, not %s",
                                     l->name, runner);
        l->plots = false;
    }
    return 0;
}

static int settle_compile_timeout(struct draft *d, struct err *err)
{
    struct langtable_lang *l = &d->l;
    if (l->compile.n == 0) {
        /* A timeout left over from the built-in entry whose compile step
         * the operator removed means nothing; one set with no compile step
         * is a mistake. */
        if (d->set[F_COMPILE_TIMEOUT] &&
            (!d->set[F_COMPILE] || d->from[F_COMPILE_TIMEOUT].level >= d->from[F_COMPILE].level))
            return langtable_fail_at(err, &d->from[F_COMPILE_TIMEOUT],
                                     "language '%s': 'compile_timeout_ms' without a compile step",
                                     l->name);
        l->compile_timeout_ms = 0;
    } else if (!d->set[F_COMPILE_TIMEOUT]) {
        l->compile_timeout_ms = LANGTABLE_COMPILE_TIMEOUT_DEFAULT_MS;
    }
    return 0;
}

/* pool_max at least pool_size; unset, it follows pool_size, so a file
 * that only raises pool_size raises both. */
static int settle_pool_max(struct draft *d, struct err *err)
{
    struct langtable_lang *l = &d->l;
    if (!d->set[F_POOL_MAX] ||
        (d->set[F_POOL_SIZE] && d->from[F_POOL_SIZE].level > d->from[F_POOL_MAX].level)) {
        long long m = l->pool_size * LANGTABLE_POOL_GROWTH;
        l->pool_max = m > LANGTABLE_POOL_MAX ? LANGTABLE_POOL_MAX : m;
        if (l->pool_max < l->pool_size)
            l->pool_max = l->pool_size;
    } else if (l->pool_max < l->pool_size) {
        return langtable_fail_at(err, blame(d, F_POOL_MAX, F_POOL_SIZE),
                                 "language '%s': 'pool_max' %lld is below 'pool_size' %lld",
                                 l->name, l->pool_max, l->pool_size);
    }
    return 0;
}

/* The preload list checked as its runner's modules, and joined "a,b,c":
 * the runner's one argument. */
static int join_preload(struct draft *d, struct err *err)
{
    struct langtable_lang *l = &d->l;
    struct buf joined;
    buf_init(&joined, CONFIG_PRELOAD_MAX);
    for (size_t i = 0; i < l->preload.n; i++) {
        const char *m = l->preload.v[i];
        char q[LANGTABLE_QUOTE_MAX + 1];
        if (!langtable_valid_module(m, strlen(m), l->runner)) {
            buf_free(&joined);
            return langtable_fail_at(err, blame(d, F_PRELOAD, F_RUNNER),
                                     "language '%s': 'preload'[%zu]: \"%s\" is not a %s module "
                                     "name",
                                     l->name, i, langtable_quote(q, sizeof(q), m, strlen(m)),
                                     langtable_runner_name(l->runner));
        }
        if ((i && buf_add(&joined, ",", 1) < 0) || buf_add(&joined, m, strlen(m)) < 0) {
            buf_free(&joined);
            return langtable_fail_at(err, &d->from[F_PRELOAD],
                                     "language '%s': 'preload' is longer than %d bytes joined",
                                     l->name, CONFIG_PRELOAD_MAX);
        }
    }
    free(l->preload_joined);
    l->preload_joined = buf_take(&joined, NULL);
    return 0;
}

/* Each variable once, and none the daemon sets itself. */
static int check_environment(const struct draft *d, struct err *err)
{
    const struct langtable_strv *e = &d->l.environment;
    for (size_t i = 0; i < e->n; i++) {
        size_t n = (size_t)(strchr(e->v[i], '=') - e->v[i]);
        if (policy_env_is_base(e->v[i], n))
            return langtable_fail_at(err, &d->from[F_ENVIRONMENT],
                                     "language '%s': 'environment'[%zu]: %.*s is set by the "
                                     "daemon itself",
                                     d->l.name, i, (int)n, e->v[i]);
        for (size_t k = 0; k < i; k++)
            if (strncmp(e->v[k], e->v[i], n + 1) == 0)
                return langtable_fail_at(err, &d->from[F_ENVIRONMENT],
                                         "language '%s': 'environment' sets %.*s twice", d->l.name,
                                         (int)n, e->v[i]);
    }
    return 0;
}

/* Checks one merged language and fills in its defaults, the expanded
 * argvs and the joined preload list. */
static int finish_lang(struct draft *d, struct err *err)
{
    struct langtable_lang *l = &d->l;
    for (size_t i = 0; i < ARRAY_SIZE(required_fields); i++)
        if (!d->set[required_fields[i]])
            return langtable_fail_at(err, &d->entry, "language '%s': '%s' is missing", l->name,
                                     langtable_fields[required_fields[i]].key);
    if (check_runner_keys(d, err) < 0 || settle_compile_timeout(d, err) < 0 ||
        settle_pool_max(d, err) < 0 || join_preload(d, err) < 0 || check_environment(d, err) < 0 ||
        expand_argvs(d, err) < 0 || langtable_packages_settle(d, err) < 0)
        return -1;
    /* Lists never NULL, so a caller can pass v as an argv. */
    for (size_t f = 0; f < N_FIELDS; f++) {
        struct langtable_strv *s = (void *)((char *)l + langtable_fields[f].offset);
        if (langtable_fields[f].kind == K_LIST && !s->v)
            s->v = xcalloc(1, sizeof(char *));
    }
    return 0;
}

/* ---- the table's names ---------------------------------------------------------- */

/* Which language already answers to name, if any, among d[0..n). */
static const struct draft *claimed(const struct draft *d, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(d[i].l.name, name) == 0)
            return &d[i];
        for (size_t k = 0; k < d[i].l.aliases.n; k++)
            if (strcmp(d[i].l.aliases.v[k], name) == 0)
                return &d[i];
    }
    return NULL;
}

/* Where to report a clash between mine and the place c claims name from:
 * the operator's file rather than the built-in table, since only the
 * operator's file can be changed to resolve it. */
static const struct origin *clash_at(const struct origin *mine, const struct draft *c,
                                     const char *name)
{
    const struct origin *theirs = &c->from[strcmp(c->l.name, name) == 0 ? F_NAME : F_ALIASES];
    return theirs->level > mine->level ? theirs : mine;
}

static int check_unique(const struct draft *d, size_t n, struct err *err)
{
    for (size_t i = 0; i < n; i++) {
        const struct langtable_lang *l = &d[i].l;
        const struct draft *c = claimed(d, i, l->name);
        if (c)
            return langtable_fail_at(err, clash_at(&d[i].from[F_NAME], c, l->name),
                                     "language '%s': its name is already taken by language '%s'",
                                     l->name, c->l.name);
        for (size_t k = 0; k < l->aliases.n; k++) {
            const char *a = l->aliases.v[k];
            c = claimed(d, i, a);
            bool own = strcmp(a, l->name) == 0;
            for (size_t j = 0; j < k && !own; j++)
                own = strcmp(a, l->aliases.v[j]) == 0;
            if (!c && own)
                return langtable_fail_at(
                    err, &d[i].from[F_ALIASES],
                    "language '%s': alias '%s' is listed twice or repeats the name", l->name, a);
            /* A later name equal to an earlier alias is caught here too:
             * report it on the later language. */
            if (c)
                return langtable_fail_at(
                    err, clash_at(&d[i].from[F_ALIASES], c, a),
                    "language '%s': alias '%s' is already taken by language '%s'", l->name, a,
                    c->l.name);
        }
    }
    return 0;
}

/* ---- the merge --------------------------------------------------------------------- */

/* The user's entries applied to all[0..*n) in the file's order; gone marks
 * the removed ones. */
static int apply_user(struct draft *all, bool *gone, size_t *n, struct file_drafts *user,
                      struct err *err)
{
    for (size_t i = 0; i < user->n; i++) {
        struct draft *u = &user->d[i];
        struct draft *have = NULL;
        for (size_t k = 0; k < *n && !have; k++)
            if (!gone[k] && strcmp(all[k].l.name, u->l.name) == 0)
                have = &all[k];
        if (u->set[F_DISABLED]) {
            if (!have)
                return langtable_fail_at(err, &u->from[F_DISABLED],
                                         "language '%s': disables a language that does not exist",
                                         u->l.name);
            gone[have - all] = true;
        } else if (have) {
            draft_override(have, u);
        } else {
            all[(*n)++] = *u;
            *u = (struct draft){0};
        }
    }
    return 0;
}

int langtable_merge(struct file_drafts *base, struct file_drafts *user,
                    struct langtable_lang **langs, size_t *count, struct err *err)
{
    size_t cap = base->n + user->n;
    struct draft *all = xcalloc(cap ? cap : 1, sizeof(struct draft));
    bool *gone = xcalloc(cap ? cap : 1, sizeof(bool));
    size_t n = 0;
    int rc = -1;
    for (size_t i = 0; i < base->n; i++) {
        all[n++] = base->d[i];
        base->d[i] = (struct draft){0};
    }
    if (apply_user(all, gone, &n, user, err) < 0)
        goto out;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (gone[i])
            langtable_lang_free(&all[i].l);
        else
            all[k++] = all[i];
    }
    n = k;
    if (n == 0) {
        struct origin o = user->n ? user->d[0].entry : (struct origin){.file = "languages"};
        langtable_fail_at(err, &o, "no language is left");
        goto out;
    }
    if (n > LANGTABLE_MAX_LANGUAGES) {
        langtable_fail_at(err, &all[n - 1].entry, "more than %d languages",
                          LANGTABLE_MAX_LANGUAGES);
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        if (finish_lang(&all[i], err) < 0)
            goto out;
    if (check_unique(all, n, err) < 0)
        goto out;
    *langs = xcalloc(n, sizeof(struct langtable_lang));
    for (size_t i = 0; i < n; i++) {
        (*langs)[i] = all[i].l;
        (*langs)[i].index = i;
        all[i].l = (struct langtable_lang){0};
    }
    *count = n;
    rc = 0;
out:
    for (size_t i = 0; i < n; i++)
        langtable_lang_free(&all[i].l);
    free(all);
    free(gone);
    langtable_drafts_free(base);
    langtable_drafts_free(user);
    return rc;
}
