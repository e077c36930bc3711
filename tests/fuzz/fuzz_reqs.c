/* libFuzzer harness for package requirements (src/sandbox/packages/reqs.h),
 * which come from a client and become an installer's argv words. The
 * input's first byte picks the installer (bit 0: npm, else bit 2: gem,
 * else pip) and the mode (bit 1: a list, the rest split at '\n'; else one
 * requirement).
 *
 * Checks, beyond "no crash":
 *   - an accepted requirement's text is printable ASCII (a space only
 *     inside an npm range), starts with a letter, a digit or '@' (never
 *     '-'; gem: an uppercase letter too), holds none of the characters
 *     of a URL, a path or a marker (pip: '@' ':' '/' '\' ';' space; npm:
 *     ':' '\' '#', '/' only in the scope; gem: '/' '\' '@' '#' ';', one
 *     ':' at most, a space only after it), and starts with its name (gem:
 *     its lowercase);
 *   - normalizing is a fixpoint: the text parses again to itself;
 *   - a refusal leaves the item empty and says which string (a quote);
 *   - an accepted list is sorted by name, each name once, at most as
 *     many as given, and its canonical text has one line per item.
 *
 * Replay one input: build/fuzz/fuzz_reqs FILE */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fuzz.h"
#include "sandbox/packages/reqs.h"

static void check_text(enum reqs_installer i, const struct reqs_item *it)
{
    const char *t = it->text;
    size_t n = strlen(t);
    size_t nn = strlen(it->name);
    CHECK(n > 0 && nn > 0 && n >= nn);
    CHECK(i == REQS_GEM ? strncasecmp(t, it->name, nn) == 0 : strncmp(t, it->name, nn) == 0);
    CHECK((t[0] >= 'a' && t[0] <= 'z') || (t[0] >= '0' && t[0] <= '9') || t[0] == '@' ||
          (i == REQS_GEM && t[0] >= 'A' && t[0] <= 'Z'));
    for (size_t k = 0; k < n; k++)
        CHECK(t[k] >= 0x20 && t[k] < 0x7f);
    if (i == REQS_PIP) {
        CHECK(!strpbrk(t, "@:/\\; "));
    } else if (i == REQS_GEM) {
        const char *colon = strchr(t, ':');
        CHECK(!strpbrk(t, "/\\@#;") && t[0] != '@');
        CHECK(!colon || !strchr(colon + 1, ':'));
        CHECK(!strchr(t, ' ') || (colon && strchr(t, ' ') > colon));
        CHECK(t[n - 1] != ' ');
    } else {
        CHECK(!strpbrk(t, ":\\#"));
        const char *slash = strchr(t, '/');
        CHECK(!slash || (t[0] == '@' && slash < t + strlen(it->name)));
        CHECK(!slash || !strchr(slash + 1, '/'));
        CHECK(t[n - 1] != ' ');
    }
    struct reqs_item again;
    CHECK(reqs_parse_one(i, t, n, &again, NULL) == 0);
    CHECK(strcmp(again.text, t) == 0 && strcmp(again.name, it->name) == 0);
    reqs_item_free(&again);
}

static void one(enum reqs_installer i, const char *s, size_t n)
{
    struct reqs_item it;
    struct err err = ERR_INIT;
    if (reqs_parse_one(i, s, n, &it, &err) == 0) {
        check_text(i, &it);
        reqs_item_free(&it);
        return;
    }
    CHECK(!it.name && !it.text && err_msg(&err)[0] == '"');
    err_clear(&err);
}

static void list(enum reqs_installer i, const char *s, size_t n)
{
    const char *strs[REQS_MAX_COUNT + 2];
    size_t lens[REQS_MAX_COUNT + 2], count = 0;
    while (count < REQS_MAX_COUNT + 2) {
        const char *nl = memchr(s, '\n', n);
        size_t len = nl ? (size_t)(nl - s) : n;
        strs[count] = s;
        lens[count++] = len;
        if (!nl)
            break;
        s += len + 1;
        n -= len + 1;
    }
    static const char *const allow[] = {"a*", "@s/*", "requests"};
    static const char *const deny[] = {"ab", "@s/x*"};
    struct reqs_rules rules = {.allow = allow, .n_allow = 3, .deny = deny, .n_deny = 2};
    struct reqs_list l;
    struct err err = ERR_INIT;
    bool ruled = count & 1;
    if (reqs_parse(i, strs, lens, count, ruled ? &rules : NULL, "packages", &l, &err) < 0) {
        CHECK(l.n == 0 && !l.v && strncmp(err_msg(&err), "packages", 8) == 0);
        err_clear(&err);
        return;
    }
    CHECK(l.n <= count);
    for (size_t k = 0; k < l.n; k++) {
        check_text(i, &l.v[k]);
        CHECK(k == 0 || strcmp(l.v[k - 1].name, l.v[k].name) < 0);
        CHECK(!ruled || reqs_check_rules(&rules, l.v[k].name, NULL) == 0);
    }
    char *canon = reqs_canonical(&l);
    size_t lines = 0;
    for (const char *p = canon; *p; p++)
        lines += *p == '\n';
    CHECK(l.n == 0 ? canon[0] == '\0' : lines == l.n - 1);
    free(canon);
    const char **argv = reqs_argv(&l);
    CHECK(argv[l.n] == NULL);
    free(argv);
    reqs_list_free(&l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 8192)
        return 0;
    enum reqs_installer i = data[0] & 1 ? REQS_NPM : data[0] & 4 ? REQS_GEM : REQS_PIP;
    const char *s = (const char *)data + 1;
    if (data[0] & 2)
        list(i, s, size - 1);
    else
        one(i, s, size - 1);
    return 0;
}
