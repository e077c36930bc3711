#include "sandbox/run/commands.h"

#include <string.h>

#include "base/util.h"
#include "sandbox/run/policy.h"
#include "sandbox/runner/runner.h"

/* The argv of lang's warm checker after the generic runner's "warm": the
 * typecheck's arguments but its first and the source file go to the
 * checker (runner.h, runner_tscheck_src). NULL-terminated; k is its length. */
static size_t checker_argv(const struct langtable_lang *lang, const char **v)
{
    size_t k = 0;
    if (lang->typecheck_warm != LANGTABLE_CHECKER_TSC || lang->typecheck.n == 0)
        return 0;
    v[k++] = "node";
    v[k++] = "-e";
    v[k++] = runner_tscheck_src;
    v[k++] = "--";
    for (size_t i = 1; i < lang->typecheck.n; i++)
        if (strcmp(lang->typecheck.v[i], lang->source_file) != 0)
            v[k++] = lang->typecheck.v[i];
    return k;
}

/* The container's command for lang: its runner, and the warm runner's
 * argument when extra is not NULL (sandbox/runner/runner.h), followed for the
 * generic one by its checker's argv. */
static const char **lang_cmd(const struct langtable_lang *lang, const char *extra)
{
    size_t n =
        lang->runner == LANGTABLE_RUNNER_GENERIC ? 3 + 4 + lang->typecheck.n : lang->run.n + 2;
    const char **v = xcalloc(n + 2, sizeof(char *));
    size_t k = 0;
    switch (lang->runner) {
    case LANGTABLE_RUNNER_PYTHON:
    case LANGTABLE_RUNNER_NODE:
        for (size_t i = 0; i < lang->run.n; i++)
            v[k++] = lang->run.v[i];
        v[k++] = lang->runner == LANGTABLE_RUNNER_PYTHON ? "-c" : "-e";
        v[k++] = lang->runner == LANGTABLE_RUNNER_PYTHON ? runner_python_src : runner_node_src;
        break;
    case LANGTABLE_RUNNER_GENERIC:
        /* perl is the generic runner's one need of an image (containers/README.md). */
        v[k++] = "perl";
        v[k++] = "-e";
        v[k++] = runner_generic_src;
        break;
    }
    if (extra)
        v[k++] = extra;
    if (extra && lang->runner == LANGTABLE_RUNNER_GENERIC)
        k += checker_argv(lang, v + k);
    v[k] = NULL;
    return v;
}

const char **commands_on_demand(const struct langtable_lang *lang)
{
    return lang_cmd(lang, NULL);
}

const char **commands_warm(const struct langtable_lang *lang, const char *modules)
{
    return lang_cmd(lang, modules);
}

void commands_free(struct lang_cmds *c, size_t n)
{
    for (size_t i = 0; c && i < n; i++) {
        free(c[i].cmd);
        free(c[i].warm);
        free(c[i].lean);
        free(c[i].env);
    }
    free(c);
}

struct lang_cmds *commands_new(const struct langtable *langs, bool egress_ca)
{
    size_t n = langtable_count(langs);
    struct lang_cmds *c = xcalloc(n ? n : 1, sizeof(*c));
    for (size_t i = 0; i < n; i++) {
        const struct langtable_lang *l = langtable_get(langs, i);
        bool generic = l->runner == LANGTABLE_RUNNER_GENERIC;
        c[i].cmd = lang_cmd(l, NULL);
        c[i].warm = lang_cmd(l, generic ? "warm" : l->preload_joined);
        c[i].lean = !generic && *l->preload_joined ? lang_cmd(l, "") : NULL;
        c[i].env =
            policy_env_new((const char *const *)l->environment.v, l->egress != NULL, egress_ca);
    }
    return c;
}
