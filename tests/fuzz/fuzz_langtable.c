/* libFuzzer harness for the operator's languages file (sandbox/languages/langtable.h):
 * the input is the file's bytes, merged into the built-in table.
 *
 * Checks:
 *   - a refused file gives no table and a message naming the file;
 *   - an accepted table keeps the invariants the later wiring relies on:
 *     1..LANGTABLE_MAX_LANGUAGES languages, each name and alias finds its
 *     own language (so none is shared), the names, files and images in
 *     their forms, argvs non-empty, NULL-terminated and with no
 *     placeholder left, a compile step only for the generic runner and
 *     with a timeout in bounds, a preload list only for the in-process
 *     runners and within the runner's argument cap, a typecheck step only
 *     for the generic runner, plots only for the python runner, the
 *     environment's items NAME=value with each name once and none of the
 *     daemon's own, a runtime in its form, an egress list NULL or of 1 to
 *     EGRESS_PATTERNS_MAX patterns, installs (packages) with an installer
 *     fitting the runner, limits in bounds and a canonical preinstall list
 *     the rules let through;
 *   - langtable_configure over an accepted table, with options the input's
 *     first bytes pick (a subset named by the table's own names and
 *     aliases, the images, the preloads, the runtimes, a pool size, a
 *     network), keeps the same invariants, with indexes 0..n-1 in order,
 *     only languages the subset named, and the options applied to the
 *     rows config_legacy names (image and preload where the runner is
 *     theirs), and no language with both a network and an egress list;
 *     one naming a language the table lacks is refused with a message
 *     naming the option.
 *
 * Replay one input: build/fuzz/fuzz_langtable FILE */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "base/util.h"
#include "fuzz.h"
#include "sandbox/languages/langtable.h"
#include "sandbox/run/policy.h"

static void check_strv(const struct langtable_strv *s, bool argv)
{
    CHECK(s->v != NULL);
    CHECK(s->v[s->n] == NULL);
    CHECK(!argv || s->n <= LANGTABLE_ARGV_MAX);
    for (size_t i = 0; i < s->n; i++) {
        CHECK(s->v[i] != NULL && s->v[i][0] != '\0');
        if (argv) {
            CHECK(strlen(s->v[i]) <= LANGTABLE_ARG_MAX);
            CHECK(!strstr(s->v[i], "{source}") && !strstr(s->v[i], "{stem}"));
        }
    }
}

static void check_name(const char *s)
{
    size_t n = strlen(s);
    CHECK(n >= 1 && n <= LANGTABLE_NAME_MAX);
    CHECK(s[0] >= 'a' && s[0] <= 'z');
    for (size_t i = 0; i < n; i++)
        CHECK((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || strchr("+#-", s[i]));
}

static void check_environment(const struct langtable_strv *e)
{
    check_strv(e, false);
    CHECK(e->n <= LANGTABLE_ENV_MAX);
    for (size_t i = 0; i < e->n; i++) {
        const char *eq = strchr(e->v[i], '=');
        CHECK(eq && eq > e->v[i]);
        size_t n = (size_t)(eq - e->v[i]);
        CHECK(!policy_env_is_base(e->v[i], n));
        for (size_t k = 0; k < i; k++)
            CHECK(strncmp(e->v[k], e->v[i], n + 1) != 0);
    }
}

/* Installs on demand: an installer that fits the runner, limits in
 * bounds, the index's URLs in form, the preinstall list canonical (each
 * parses to itself) and let through by the rules. */
static void check_packages(const struct langtable_lang *l)
{
    const struct langtable_packages *p = l->packages;
    if (!p)
        return;
    CHECK(p->installer == REQS_PIP || p->installer == REQS_NPM || p->installer == REQS_GEM);
    CHECK(p->installer != REQS_PIP || l->runner == LANGTABLE_RUNNER_PYTHON);
    CHECK(p->installer != REQS_NPM || l->runner != LANGTABLE_RUNNER_PYTHON);
    CHECK(p->installer != REQS_GEM || (l->runner == LANGTABLE_RUNNER_GENERIC && p->scripts));
    CHECK(p->timeout_ms >= LANGTABLE_PKG_TIMEOUT_MIN_MS &&
          p->timeout_ms <= LANGTABLE_PKG_TIMEOUT_MAX_MS);
    CHECK(p->max_bytes >= LANGTABLE_PKG_MAX_BYTES_MIN &&
          p->max_bytes <= LANGTABLE_PKG_MAX_BYTES_MAX);
    check_strv(&p->index, false);
    check_strv(&p->allow, false);
    check_strv(&p->deny, false);
    check_strv(&p->preinstall, false);
    CHECK(p->index.n <= LANGTABLE_INDEX_MAX && p->preinstall.n <= REQS_MAX_COUNT);
    for (size_t k = 0; k < p->index.n; k++)
        CHECK(strncmp(p->index.v[k], "http://", 7) == 0 ||
              strncmp(p->index.v[k], "https://", 8) == 0);
    struct reqs_rules rules = langtable_packages_rules(p);
    for (size_t k = 0; k < p->preinstall.n; k++) {
        struct reqs_item it;
        const char *s = p->preinstall.v[k];
        CHECK(reqs_parse_one(p->installer, s, strlen(s), &it, NULL) == 0);
        CHECK(strcmp(it.text, s) == 0);
        CHECK(reqs_check_rules(&rules, it.name, NULL) == 0);
        reqs_item_free(&it);
    }
}

static void check_table(const struct langtable *t)
{
    size_t n = langtable_count(t);
    CHECK(n >= 1 && n <= LANGTABLE_MAX_LANGUAGES);
    CHECK(langtable_get(t, n) == NULL);
    for (size_t i = 0; i < n; i++) {
        const struct langtable_lang *l = langtable_get(t, i);
        CHECK(l != NULL);
        check_name(l->name);
        CHECK(langtable_find(t, l->name) == l);
        CHECK(l->aliases.n <= LANGTABLE_MAX_ALIASES);
        check_strv(&l->aliases, false);
        for (size_t k = 0; k < l->aliases.n; k++) {
            check_name(l->aliases.v[k]);
            CHECK(langtable_find(t, l->aliases.v[k]) == l);
        }
        CHECK(l->image && l->image[0] && strlen(l->image) <= LANGTABLE_IMAGE_MAX);
        CHECK(!strchr(l->image, ' '));
        CHECK(l->source_file && l->source_file[0] && l->source_file[0] != '.');
        CHECK(!strchr(l->source_file, '/'));
        CHECK(strlen(l->source_file) <= LANGTABLE_SOURCE_FILE_MAX);
        CHECK(l->index == i);
        check_strv(&l->compile, true);
        check_strv(&l->typecheck, true);
        CHECK(l->typecheck.n == 0 || l->runner == LANGTABLE_RUNNER_GENERIC);
        check_strv(&l->run, true);
        CHECK(l->run.n >= 1);
        check_strv(&l->version, true);
        check_strv(&l->preload, false);
        check_strv(&l->image_packages, false);
        check_packages(l);
        CHECK(l->runner == LANGTABLE_RUNNER_PYTHON || l->runner == LANGTABLE_RUNNER_NODE ||
              l->runner == LANGTABLE_RUNNER_GENERIC);
        if (l->compile.n) {
            CHECK(l->runner == LANGTABLE_RUNNER_GENERIC);
            CHECK(l->compile_timeout_ms >= LANGTABLE_COMPILE_TIMEOUT_MIN_MS &&
                  l->compile_timeout_ms <= LANGTABLE_COMPILE_TIMEOUT_MAX_MS);
        } else {
            CHECK(l->compile_timeout_ms == 0);
        }
        CHECK(l->preload.n == 0 || l->runner != LANGTABLE_RUNNER_GENERIC);
        CHECK(l->preload_joined && strlen(l->preload_joined) <= CONFIG_PRELOAD_MAX);
        CHECK((l->preload.n == 0) == (l->preload_joined[0] == '\0'));
        CHECK(l->pool_size >= 0 && l->pool_size <= LANGTABLE_POOL_MAX);
        CHECK(!l->plots || l->runner == LANGTABLE_RUNNER_PYTHON);
        check_environment(&l->environment);
        CHECK(!l->egress || (l->egress->n >= 1 && l->egress->n <= EGRESS_PATTERNS_MAX));
        CHECK(!l->runtime || (l->runtime[0] && strlen(l->runtime) <= LANGTABLE_RUNTIME_MAX &&
                              strspn(l->runtime, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRST"
                                                 "UVWXYZ0123456789._-") == strlen(l->runtime)));
    }
}

/* A list option's items (config_list: NULL-terminated, owned). */
static void list_set(struct config_list *l, const char *const *items, size_t n)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->items[i]);
    free(l->items);
    l->items = xcalloc(n + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        l->items[i] = xstrdup(items[i]);
    l->n = n;
}

/* The daemon's options over a fresh copy of the table the input made. */
static void check_configure(const uint8_t *data, size_t size, const struct langtable *base)
{
    unsigned sel = size ? data[0] : 0;
    unsigned pick = size > 1 ? data[1] : 0;
    bool runtimes = size > 2 && (data[2] & 1);
    struct langtable *t = NULL;
    struct err err = ERR_INIT;
    CHECK(langtable_load_text((const char *)data, size, "fuzz.json", &t, &err) == 0);
    struct config cfg;
    config_init(&cfg);
    /* A subset by name or alias (the bits of the second byte). */
    const char *names[LANGTABLE_MAX_LANGUAGES];
    size_t n = 0, total = langtable_count(base);
    for (size_t i = 0; i < total && i < 8; i++) {
        const struct langtable_lang *l = langtable_get(base, i);
        if (pick & (1u << i))
            names[n++] = (sel & 0x40) && l->aliases.n ? l->aliases.v[0] : l->name;
    }
    if (sel & 0x01)
        list_set(&cfg.languages, names, n);
    if (sel & 0x02) {
        free(cfg.python_image);
        cfg.python_image = xstrdup("fuzz/python:1");
        free(cfg.js_image);
        cfg.js_image = xstrdup("fuzz/node:1");
    }
    if (sel & 0x04) {
        cfg.python_preload = xstrdup("json,os.path");
        cfg.js_preload = xstrdup("");
    }
    if (sel & 0x08)
        cfg.pool_size = (long long)(sel >> 4);
    if (runtimes) {
        free(cfg.python_runtime);
        cfg.python_runtime = xstrdup("runsc");
        free(cfg.runtime);
        cfg.runtime = xstrdup("runc");
    }
    bool unknown = (sel & 0x30) == 0x30;
    if (sel & 0x80) {
        const char *net[] = {unknown ? "no-such-language" : n ? names[0] : "python"};
        list_set(&cfg.allow_network, net, 1);
    }
    int rc = langtable_configure(t, &cfg, &err);
    if (rc < 0) {
        CHECK(t != NULL);
        CHECK(err.code == ERR_INVALID);
        CHECK(strncmp(err_msg(&err), "--", 2) == 0);
        /* Only a network option can be refused here. */
        CHECK(sel & 0x80);
        err_clear(&err);
    } else {
        CHECK(!(unknown && (sel & 0x80)));
        check_table(t);
        size_t got = langtable_count(t);
        if ((sel & 0x01) && n)
            CHECK(got <= n);
        else
            CHECK(got == total);
        for (size_t i = 0; i < got; i++) {
            const struct langtable_lang *l = langtable_get(t, i);
            const struct langtable_lang *b = langtable_find(base, l->name);
            CHECK(b != NULL);
            if (i > 0)
                CHECK(b->index > langtable_find(base, langtable_get(t, i - 1)->name)->index);
            if (sel & 0x08)
                CHECK(l->pool_size == cfg.pool_size);
            else
                CHECK(l->pool_size == b->pool_size);
            /* The option set naming it, if any, and whether its runner
             * is the one the image and preload options are for. */
            struct config_legacy o = {0};
            bool named = false;
            for (size_t k = 0; k < CONFIG_LEGACY_LANGUAGES && !named; k++) {
                o = config_legacy(&cfg, k);
                named = strcmp(o.language, l->name) == 0;
            }
            bool own = named && strcmp(o.runner, langtable_runner_name(l->runner)) == 0;
            if ((sel & 0x02) && own)
                CHECK(strcmp(l->image, o.image) == 0);
            else
                CHECK(strcmp(l->image, b->image) == 0);
            if ((sel & 0x04) && own)
                CHECK(strcmp(l->preload_joined, o.preload) == 0);
            else
                CHECK(strcmp(l->preload_joined, b->preload_joined) == 0);
            const char *rt = langtable_runtime(l, &cfg);
            if (named && *o.runtime)
                CHECK(rt && strcmp(rt, o.runtime) == 0);
            else if (b->runtime)
                CHECK(rt && strcmp(rt, b->runtime) == 0);
            else
                CHECK(runtimes ? rt && strcmp(rt, "runc") == 0 : rt == NULL);
            CHECK(langtable_network(l, &cfg) == false || l->network_allowed);
            CHECK(!(langtable_network(l, &cfg) && l->egress));
            CHECK((l->egress == NULL) == (b->egress == NULL));
        }
    }
    config_free(&cfg);
    langtable_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct langtable *t = NULL;
    struct err err = ERR_INIT;
    int rc = langtable_load_text((const char *)data, size, "fuzz.json", &t, &err);
    if (rc < 0) {
        CHECK(rc == -1);
        CHECK(t == NULL);
        CHECK(err.code != ERR_OK);
        CHECK(strncmp(err_msg(&err), "fuzz.json:", 10) == 0);
        CHECK(strlen(err_msg(&err)) > 12);
        err_clear(&err);
        return 0;
    }
    CHECK(rc == 0 && t != NULL);
    check_table(t);
    check_configure(data, size, t);
    langtable_free(t);
    return 0;
}
