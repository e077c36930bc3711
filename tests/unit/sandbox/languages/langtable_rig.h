/* The language table's tests' helpers (test_langtable.c,
 * test_langtable_egress.c): a table loaded from a file's text, refusals
 * checked by the message's start and words, and the daemon's options
 * applied (langtable_configure). Include after cmocka.h. */
#ifndef MCPSBX_TEST_LANGTABLE_RIG_H
#define MCPSBX_TEST_LANGTABLE_RIG_H

#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "sandbox/languages/langtable.h"
#include "unit/options.h"

static inline struct langtable *load_ok(const char *text)
{
    struct langtable *t = NULL;
    struct err err = ERR_INIT;
    if (langtable_load_text(text, text ? strlen(text) : 0, "test.json", &t, &err) < 0)
        fail_msg("refused: %s", err_msg(&err));
    assert_non_null(t);
    return t;
}

/* The file's bytes must be refused with a message starting with want
 * ("test.json:7: ") and holding needle. */
static inline void load_bad(const char *text, size_t len, const char *want, const char *needle)
{
    struct langtable *t = NULL;
    struct err err = ERR_INIT;
    if (langtable_load_text(text, len, "test.json", &t, &err) == 0) {
        langtable_free(t);
        fail_msg("accepted: %s", text);
    }
    assert_null(t);
    const char *msg = err_msg(&err);
    if (strncmp(msg, want, strlen(want)) != 0 || !strstr(msg, needle))
        fail_msg("message '%s' does not start with '%s' and mention '%s'", msg, want, needle);
    err_clear(&err);
}

static inline void bad(const char *text, const char *want, const char *needle)
{
    load_bad(text, strlen(text), want, needle);
}

/* The built-in table (or text over it) configured by these options;
 * returns langtable_configure's answer, *out the table on success. */
static inline int configure(char **argv, const char *text, struct langtable **out, struct err *err)
{
    struct config cfg;
    options_load(&cfg, argv);
    struct langtable *t = load_ok(text);
    int rc = langtable_configure(t, &cfg, err);
    config_free(&cfg);
    if (rc < 0) {
        langtable_free(t);
        t = NULL;
    }
    *out = t;
    return rc;
}

static inline struct langtable *configure_ok(char **argv, const char *text)
{
    struct langtable *t = NULL;
    struct err err = ERR_INIT;
    if (configure(argv, text, &t, &err) < 0)
        fail_msg("langtable_configure: %s", err_msg(&err));
    return t;
}

static inline void configure_bad(char **argv, const char *text, const char *needle1,
                                 const char *needle2)
{
    struct langtable *t = NULL;
    struct err err = ERR_INIT;
    if (configure(argv, text, &t, &err) == 0) {
        langtable_free(t);
        fail_msg("accepted: %s %s", argv[1], argv[2]);
    }
    assert_null(t);
    assert_int_equal(err.code, ERR_INVALID);
    const char *msg = err_msg(&err);
    if (!strstr(msg, needle1) || !strstr(msg, needle2))
        fail_msg("message '%s' does not mention '%s' and '%s'", msg, needle1, needle2);
    err_clear(&err);
}

#endif
