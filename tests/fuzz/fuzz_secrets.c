/* libFuzzer harness for the gateway's insertion of --secret values into a
 * request's head (src/egress/secrets.h). The placeholders are fixed here
 * (a run's are random) so that inputs can hold them: A is API_KEY's
 * ("mcpsbx_" then 13 'A'), B is TOKEN's ("mcpsbx_" then 13 'B'), whose
 * value needs percent-encoding in a query. The input's first byte picks
 * the connection: bit 0 a bound host (else one without a binding), bit 1
 * a small output cap; the rest is the head.
 *
 * Checks, beyond "no crash":
 *   - an unbound host gets the head back as it was, no substitution;
 *   - a bound one: as many LF bytes as before (a value never ends a
 *     line), the request line unchanged up to its first '?' (no path is
 *     touched), no more substitutions than placeholders fit in the input,
 *     and with no placeholder prefix in the input the head unchanged;
 *   - past the cap: -1, nothing written counts (*out_len 0), and the
 *     bytes written are zeroed (no value left behind).
 *
 * Replay one input: build/fuzz/fuzz_secrets FILE */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress/secrets.h"
#include "fuzz.h"

#define KEY       "k3y-VALUE-0123456789" /* 20 bytes */
#define TOKEN     "t&k=v/a+l%u e#12345!" /* 20 bytes, most encoded */
#define INPUT_MAX (EGRESS_SECRETS_HEAD_MAX / 3)

static struct egress_secrets *table;
static struct egress_run_secrets *rs;
static char *out;

static void init(void)
{
    static char *env[] = {"API_KEY=" KEY, "TOKEN=" TOKEN, NULL};
    static char *items[] = {"API_KEY=bound.test:80", "TOKEN=*.test:80"};
    CHECK(egress_secrets_new(items, 2, env, NULL, &table, NULL) == 0 && table->n == 2);
    CHECK(egress_run_secrets_new(table, &rs, NULL) == 0 && rs->n == 2);
    for (size_t i = 0; i < 2; i++) {
        size_t len = strlen(rs->placeholders[i]);
        memset(rs->placeholders[i] + 7, i ? 'B' : 'A', len - 7);
    }
    out = malloc(EGRESS_SECRETS_HEAD_MAX);
    CHECK(out);
}

static size_t count_lf(const char *p, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += p[i] == '\n';
    return k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!table)
        init();
    if (size < 1 || size - 1 > INPUT_MAX)
        return 0;
    bool bound = data[0] & 1;
    bool small = data[0] & 2;
    const char *head = (const char *)data + 1;
    size_t len = size - 1;
    size_t cap = small ? len / 2 + 1 : EGRESS_SECRETS_HEAD_MAX;
    size_t out_len = 7;
    memset(out, 0, EGRESS_SECRETS_HEAD_MAX);
    int n = egress_secrets_substitute_head(rs, bound ? "bound.test" : "other.example", 80, head,
                                           len, out, cap, &out_len, NULL);
    if (n < 0) {
        CHECK(small && out_len == 0);
        CHECK(!memmem(out, cap, KEY, 8) && !memmem(out, cap, "t%26k%3D", 8));
        return 0;
    }
    CHECK(out_len <= cap);
    if (!bound) {
        CHECK(n == 0 && out_len == len && memcmp(out, head, len) == 0);
        return 0;
    }
    CHECK((size_t)n <= len / EGRESS_PLACEHOLDER_MIN);
    CHECK(count_lf(out, out_len) == count_lf(head, len));
    if (!memmem(head, len, EGRESS_PLACEHOLDER_PREFIX, 7))
        CHECK(n == 0 && out_len == len && memcmp(out, head, len) == 0);
    const char *lf = memchr(head, '\n', len);
    size_t line = lf ? (size_t)(lf - head) : len;
    const char *q = memchr(head, '?', line);
    size_t keep = q ? (size_t)(q - head) : line;
    CHECK(out_len >= keep && memcmp(out, head, keep) == 0);
    return 0;
}
