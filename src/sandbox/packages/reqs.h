/* Package requirements as a caller gives them ("httpx==0.27.*" for pip,
 * "zod@^3.22.0" for npm): parsed, refused or normalized before anything
 * runs. A list comes from an untrusted client and ends up as words on an
 * installer's command line (inside a sandbox of its own), so this is a
 * boundary: only the registry forms below pass, each requirement becomes
 * exactly one argv word that the installer can read only as a name with
 * an optional version, never an option, a path, a URL or a file.
 *
 * pip: a subset of PEP 508: NAME, optional [EXTRA,...], optional version
 * clauses (==, !=, <=, >=, <, >, ~=, each a PEP 440 public version; ==
 * and != may end in .*), ASCII spaces allowed between tokens, none inside.
 * Names and extras are normalized as PEP 503 says (lowercase, each run of
 * '-', '_', '.' one '-'), extras and clauses sorted. Refused: environment
 * markers (';'), direct references ("NAME @ URL"), URLs, paths, ===,
 * local version labels (+...), parenthesized clauses.
 * npm: NAME or @SCOPE/NAME (npm's rules: lowercase [a-z0-9._-], at most
 * 214 bytes, no part starting with '.' or '_'), optionally '@' and a
 * version, a semver range (^1.2, ~1, >=1 <2, 1.x, 1 - 2, a || b) or a
 * dist-tag (latest, next). Refused: git, file, URL, tarball, GitHub
 * shortcut (user/repo) and alias (npm:) specs. A range's canonical text
 * has single spaces between its tokens.
 * Both: nothing starting with '-', no control byte, no byte past ASCII,
 * nothing a word the installer could take for a local archive (.whl,
 * .tgz, .gem, ...).
 * gem: NAME ([A-Za-z0-9._-], a letter or digit first; matched lowercase),
 * optionally ':' and one requirement, an operator (= != > < >= <= ~>;
 * '=' when none) and a version ("rack:~> 2.2"); canonical "rack:~> 2.2".
 * composer is named so that a table can say so; its requirements are
 * refused as not supported yet.
 *
 * A list (reqs_parse) is at most REQS_MAX_COUNT strings, each at most
 * REQS_MAX_LEN bytes, REQS_MAX_TOTAL together; one name twice is merged
 * when the two normalize to the same text and refused otherwise; the
 * result is sorted by name. Its canonical text (reqs_canonical: the
 * requirements' texts, one a line) is what a cache key takes, its words
 * (reqs_argv) what the installer is given.
 *
 * Rules: allow and deny lists of names, each an exact name or a "PREFIX*"
 * pattern, normalized as names are (reqs_rule_normalize). A name a deny
 * rule matches is refused; with a non-empty allow list, so is a name no
 * allow rule matches.
 *
 * Every error is ERR_INVALID (ERR_TOO_BIG past a cap) and says which
 * string, escaped and cut to REQS_QUOTE_MAX, and why. */
#ifndef MCPSBX_REQS_H
#define MCPSBX_REQS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

#define REQS_MAX_COUNT  32
#define REQS_MAX_LEN    200
#define REQS_MAX_TOTAL  4096
#define REQS_NAME_MAX   214 /* npm's limit; pip's names get the same */
#define REQS_EXTRAS_MAX 16
#define REQS_CLAUSE_MAX 8  /* pip version clauses, npm range tokens: 4x */
#define REQS_TAG_MAX    64 /* an npm dist-tag */
#define REQS_RULES_MAX  256
#define REQS_QUOTE_MAX  64 /* of a string, escaped, in a message */

enum reqs_installer {
    REQS_PIP,
    REQS_NPM,
    REQS_GEM,
    REQS_COMPOSER, /* named only: not supported yet */
};

#define REQS_INSTALLERS 4

/* "pip", "npm", "gem", "composer". */
const char *reqs_installer_name(enum reqs_installer i);

/* The installer named s[0..n); false when none is. */
bool reqs_installer_from_name(const char *s, size_t n, enum reqs_installer *out);

/* Whether requirements for i can be parsed (pip, npm and gem). */
bool reqs_installer_supported(enum reqs_installer i);

/* One requirement: its normalized name ("httpx", "@types/node") and its
 * canonical text ("httpx[http2]<1,>=0.27", "@types/node@20"), one argv
 * word. */
struct reqs_item {
    char *name;
    char *text;
};

/* A parsed list: items sorted by name, each name once. */
struct reqs_list {
    enum reqs_installer installer;
    struct reqs_item *v;
    size_t n;
};

/* Normalized rules (reqs_rule_normalize's texts); either list may be
 * empty. */
struct reqs_rules {
    const char *const *allow;
    size_t n_allow;
    const char *const *deny;
    size_t n_deny;
};

/* Parses s[0..n) (NULs refused) as one requirement for i. Returns 0 with
 * *out filled (reqs_item_free), or -1 with err. */
int reqs_parse_one(enum reqs_installer i, const char *s, size_t n, struct reqs_item *out,
                   struct err *err);

void reqs_item_free(struct reqs_item *it);

/* Parses strs[0..n) (lens may be NULL: NUL-terminated) as one list for i,
 * each name checked against rules (may be NULL). Messages name a string
 * as "what[k]" ("packages[2]"). Returns 0 with *out (reqs_list_free), or
 * -1 with err and *out empty. */
int reqs_parse(enum reqs_installer i, const char *const *strs, const size_t *lens, size_t n,
               const struct reqs_rules *rules, const char *what, struct reqs_list *out,
               struct err *err);

void reqs_list_free(struct reqs_list *l);

/* The requirements' texts, one a line, no newline after the last; "" for
 * none. Caller frees. */
char *reqs_canonical(const struct reqs_list *l);

/* The installer's words, one per requirement, NULL-terminated; the
 * strings are l's (the array is the caller's to free). */
const char **reqs_argv(const struct reqs_list *l);

/* s[0..n) as a rule for i: an exact name or "PREFIX*" (a '*' only at the
 * end; "*" alone matches every name), normalized as a name. Returns 0 with
 * *out (caller frees), or -1 with err. */
int reqs_rule_normalize(enum reqs_installer i, const char *s, size_t n, char **out,
                        struct err *err);

/* Whether rules let the normalized name through: 0, or -1 with err naming
 * the package and the rule (or the allow list) that refuses it. */
int reqs_check_rules(const struct reqs_rules *rules, const char *name, struct err *err);

#endif
