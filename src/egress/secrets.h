/* Credentials the sandboxed code never sees (--secret NAME=HOST,...): the
 * sandbox's environment holds a placeholder for NAME, and the gateway puts
 * the real value in its place only in requests to NAME's hosts.
 *
 * The daemon-wide table (struct egress_secrets) is built once at start
 * from the option's items and the daemon's environment and is read-only
 * after, so every run and connection thread shares it without a lock. The
 * values live in memory only and are zeroed when the table is freed.
 *
 * A run's placeholders (struct egress_run_secrets) are made for each run
 * (a code session's for the session): one per secret, as long as the
 * value (EGRESS_PLACEHOLDER_MIN at least, so a short value does not get a
 * guessable placeholder), EGRESS_PLACEHOLDER_PREFIX then letters and
 * digits from the system's CSPRNG. The prefix makes them easy to tell in
 * output and costs no length: with the minimum it still leaves 9 random
 * characters (about 53 bits), and more for any real key. No placeholder
 * of a run is a prefix of another, so a match is never ambiguous. They
 * are not secret (the program sees them); their length says the value's.
 *
 * Substitution (egress_secrets_substitute_head) works on a request head as
 * the gateway writes it upstream, for one connection's host and port:
 * only the secrets bound to that host and port (egress_patterns_match over
 * their host patterns; a pattern without a port binds 443 only, so a
 * value crosses the network in the clear only toward a port the operator
 * named) are replaced, only in field values (as they are)
 * and in the request target's query (percent-encoded: every byte but RFC
 * 3986's unreserved ones), never in the method, the path, field names or
 * what follows the head. A placeholder sent anywhere else stays what it
 * is. A value must be printable ASCII (checked at start) so that it can
 * never end a field line or a request line. */
#ifndef MCPSBX_EGRESS_SECRETS_H
#define MCPSBX_EGRESS_SECRETS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "egress/pattern.h"

/* How many --secret items the daemon takes. */
#define EGRESS_SECRETS_MAX 32
/* The longest value (bytes), and the longest NAME. */
#define EGRESS_SECRET_VALUE_MAX 4096
#define EGRESS_SECRET_NAME_MAX  128
/* The shortest placeholder, and how every one begins. */
#define EGRESS_PLACEHOLDER_MIN    16
#define EGRESS_PLACEHOLDER_PREFIX "mcpsbx_"
/* The largest head after substitution: a percent-encoded value in the
 * query may take three times its length. */
#define EGRESS_SECRETS_HEAD_MAX (48 * 1024)

struct egress_secret {
    char *name;
    char *value; /* the real one: never logged, never in a result */
    size_t len;
    struct egress_patterns hosts;
};

struct egress_secrets {
    size_t n;
    struct egress_secret *items;
};

/* The table from items ("NAME=HOST[,HOST...]", --secret's) and envp (the
 * daemon's environment): a NAME not set there is skipped and reported
 * through missing_cb (name only; may be NULL). *out is allocated even
 * when empty. Fails with ERR_INVALID naming the option and the item (never
 * a value) for a malformed item, a NAME given twice, a value that is
 * empty, too long or not printable ASCII, and more than
 * EGRESS_SECRETS_MAX items. */
int egress_secrets_new(char *const *items, size_t n_items, char *const *envp,
                       void (*missing_cb)(const char *name), struct egress_secrets **out,
                       struct err *err);

/* Zeroes the values, then frees. NULL is fine. */
void egress_secrets_free(struct egress_secrets *t);

/* One run's placeholders, by the table's index. names[i] is borrowed from
 * the table (which must outlive it); placeholders[i] is the run's own. */
struct egress_run_secrets {
    const struct egress_secrets *table;
    size_t n;
    char **names;
    char **placeholders;
};

/* Fresh placeholders for every secret of t (NULL or empty: *out NULL, no
 * run secrets). Fails only when the CSPRNG does. */
int egress_run_secrets_new(const struct egress_secrets *t, struct egress_run_secrets **out,
                           struct err *err);
void egress_run_secrets_free(struct egress_run_secrets *rs);

/* Whether some secret of rs is bound to host:port (rs NULL: no). */
bool egress_secrets_bound(const struct egress_run_secrets *rs, const char *host, unsigned port);

/* Writes head[0..len) to out (cap bytes) with the placeholders of the
 * secrets bound to host:port replaced by their values (the rules above);
 * *out_len gets the length written. Returns how many were replaced, or -1
 * with ERR_TOO_BIG when the result does not fit in cap. rs NULL: a copy. */
int egress_secrets_substitute_head(const struct egress_run_secrets *rs, const char *host,
                                   unsigned port, const char *head, size_t len, char *out,
                                   size_t cap, size_t *out_len, struct err *err);

#endif
