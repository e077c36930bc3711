/* For the unit tests: the language table as main makes it (the built-in
 * table, or a file's text over it, with the daemon's options applied by
 * langtable_configure), and a language of it by name. Include after
 * cmocka.h: a table that cannot be made fails the test. */
#ifndef MCPSBX_TEST_LANGS_H
#define MCPSBX_TEST_LANGS_H

#include <string.h>

#include "base/config.h"
#include "sandbox/languages/langtable.h"

/* text NULL: the built-in table alone. Free with langtable_free. */
static inline struct langtable *test_langs_text(const struct config *cfg, const char *text)
{
    struct langtable *t = NULL;
    struct err err = ERR_INIT;
    if (langtable_load_text(text, text ? strlen(text) : 0, "test-languages.json", &t, &err) < 0 ||
        langtable_configure(t, cfg, &err) < 0) {
        langtable_free(t);
        fail_msg("the language table: %s", err_msg(&err));
    }
    return t;
}

static inline struct langtable *test_langs(const struct config *cfg)
{
    return test_langs_text(cfg, NULL);
}

/* The language of t with this name or alias; fails the test without one. */
static inline const struct langtable_lang *test_lang(const struct langtable *t, const char *name)
{
    const struct langtable_lang *l = langtable_find(t, name);
    if (!l)
        fail_msg("the language table has no '%s'", name);
    return l;
}

#endif
