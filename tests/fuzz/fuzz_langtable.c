/* libFuzzer harness for the operator's languages file (sandbox/langtable.h):
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
 *     runners and within the runner's argument cap.
 *
 * Replay one input: build/fuzz/fuzz_langtable FILE */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "fuzz.h"
#include "sandbox/langtable.h"

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
        check_strv(&l->compile, true);
        check_strv(&l->run, true);
        CHECK(l->run.n >= 1);
        check_strv(&l->version, true);
        check_strv(&l->preload, false);
        check_strv(&l->packages, false);
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
    }
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
    langtable_free(t);
    return 0;
}
