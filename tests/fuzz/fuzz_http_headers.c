/* libFuzzer harness for the parsers of client header values
 * (src/transport/http_headers.h): the input is one header value, given to
 * every parser (as a NUL-terminated string, and to the Host parser as an
 * exact-size buffer, so reading past its end is caught).
 *
 * Checks, beyond "no crash":
 *   - Host: an accepted value splits into a name and an optional port that
 *     put back together give the value; an IPv6 name is one bracketed
 *     literal, any other name holds no ':';
 *   - Origin: accepted exactly when the scheme is http or https and the
 *     rest is an accepted Host, with the same result;
 *   - Last-Event-ID and Content-Type agree with plain reference parsers;
 *   - Accept: appending an element for the type always matches, appending
 *     one with q=0 changes nothing, and ASCII case never matters;
 *   - Authorization: a bearer token lies inside the value, without blanks
 *     around it;
 *   - MCP-Protocol-Version: an accepted value is a date, YYYY-MM-DD;
 *   - Mcp-Session-Id (and every handle a client sends back): a handle read
 *     as this daemon's or another's is a DNS label, a dot and 32 lowercase
 *     hex digits, and the daemon it names is that label.
 *
 * Replay one input: build/fuzz/fuzz_http_headers FILE */
#include <ctype.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/handle.h"
#include "fuzz.h"
#include "transport/http_headers.h"

static const char *const media_types[] = {"application/json", "text/event-stream"};

static void check_host(const char *s, size_t n)
{
    struct http_host h;
    if (!http_parse_host(s, n, &h))
        return;
    CHECK(h.name == s);
    CHECK(h.name_len >= 1 && h.name_len <= n);
    if (s[0] == '[') {
        CHECK(s[h.name_len - 1] == ']');
        CHECK(memchr(s, ']', h.name_len - 1) == NULL);
    } else {
        CHECK(memchr(s, ':', h.name_len) == NULL);
    }
    if (!h.has_port) {
        CHECK(h.name_len == n);
        CHECK(h.port == 0);
        return;
    }
    size_t digits = n - h.name_len - 1;
    CHECK(s[h.name_len] == ':' && digits >= 1 && digits <= 5);
    unsigned v = 0;
    for (size_t i = h.name_len + 1; i < n; i++) {
        CHECK(isdigit((unsigned char)s[i]));
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    CHECK(v == h.port && h.port <= 99999);
    CHECK(http_is_loopback_name(h.name, h.name_len) ==
          (http_token_is(h.name, h.name_len, "localhost") ||
           http_token_is(h.name, h.name_len, "127.0.0.1") ||
           http_token_is(h.name, h.name_len, "[::1]")));
}

static void check_origin(const char *s)
{
    struct http_host h;
    bool ok = http_parse_origin(s, &h);
    size_t skip = strncasecmp(s, "http://", 7) == 0    ? 7
                  : strncasecmp(s, "https://", 8) == 0 ? 8
                                                       : 0;
    if (!skip) {
        CHECK(!ok);
        return;
    }
    struct http_host ref;
    CHECK(ok == http_parse_host(s + skip, strlen(s + skip), &ref));
    if (ok)
        CHECK(h.name == s + skip && h.name_len == ref.name_len && h.has_port == ref.has_port &&
              h.port == ref.port);
}

/* Digits with saturation, as strtoul does. */
static const char *ref_number(const char *p, unsigned long *v)
{
    *v = 0;
    for (; isdigit((unsigned char)*p); p++) {
        unsigned d = (unsigned)(*p - '0');
        *v = *v > (ULONG_MAX - d) / 10 ? ULONG_MAX : *v * 10 + d;
    }
    return p;
}

static void check_event_id(const char *s)
{
    unsigned long no = 0;
    unsigned long seq = 0;
    bool ok = http_parse_event_id(s, &no, &seq);
    unsigned long rno = 0;
    unsigned long rseq = 0;
    const char *p = ref_number(s, &rno);
    bool ref = p != s && *p == '-';
    if (ref) {
        const char *q = ref_number(p + 1, &rseq);
        ref = q != p + 1 && *q == '\0' && rno > 0 && rseq < ULONG_MAX;
    }
    CHECK(ok == ref);
    if (ok)
        CHECK(no == rno && seq == rseq);
}

static void check_media_type(const char *s)
{
    for (size_t i = 0; i < sizeof(media_types) / sizeof(media_types[0]); i++) {
        const char *type = media_types[i];
        const char *a = s;
        while (*a == ' ' || *a == '\t')
            a++;
        size_t n = strcspn(a, ";");
        while (n && (a[n - 1] == ' ' || a[n - 1] == '\t'))
            n--;
        bool ref = n == strlen(type) && strncasecmp(a, type, n) == 0;
        CHECK(http_media_type_is(s, type) == ref);
    }
    CHECK(!http_media_type_is(NULL, media_types[0]));
}

static void check_accept(const char *s)
{
    size_t n = strlen(s);
    char *buf = malloc(n + 64);
    for (size_t i = 0; i < sizeof(media_types) / sizeof(media_types[0]); i++) {
        const char *type = media_types[i];
        bool base = http_accept_lists(s, type);
        snprintf(buf, n + 64, "%s,%s", s, type);
        CHECK(http_accept_lists(buf, type));
        snprintf(buf, n + 64, "%s, %s;q=0", s, type);
        CHECK(http_accept_lists(buf, type) == base);
        for (size_t k = 0; k <= n; k++)
            buf[k] = (char)toupper((unsigned char)s[k]);
        CHECK(http_accept_lists(buf, type) == base);
        CHECK(http_accept_lists(type, type));
    }
    free(buf);
}

static void check_bearer(const char *s)
{
    size_t len = 0;
    const char *tok = http_bearer_token(s, &len);
    if (!tok) {
        CHECK(strncasecmp(s, "Bearer ", 7) != 0);
        return;
    }
    CHECK(strncasecmp(s, "Bearer ", 7) == 0);
    CHECK(tok >= s + 7 && tok + len <= s + strlen(s));
    CHECK(len == 0 || (tok[0] != ' ' && tok[0] != '\t'));
    CHECK(len == 0 || (tok[len - 1] != ' ' && tok[len - 1] != '\t'));
    for (const char *p = tok + len; *p; p++)
        CHECK(*p == ' ' || *p == '\t');
}

static void check_version(const char *s)
{
    CHECK(http_protocol_version_ok(NULL));
    if (!http_protocol_version_ok(s))
        return;
    CHECK(strlen(s) == 10 && s[4] == '-' && s[7] == '-');
    for (size_t i = 0; i < 10; i++)
        CHECK(i == 4 || i == 7 || isdigit((unsigned char)s[i]));
}

static void check_content_length(const char *s)
{
    CHECK(!http_content_length_over(s, ULLONG_MAX));
    CHECK(!http_content_length_over(NULL, 0));
    if (http_content_length_over(s, 1000))
        CHECK(http_content_length_over(s, 999));
}

int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Named as a daemon in a fleet is: bare ids are then no one's. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return handle_set_daemon("fuzz-0", NULL);
}

static void check_handle(const char *s)
{
    char daemon[HANDLE_DAEMON_MAX + 1] = "";
    enum handle_kind k = handle_parse(s, daemon);
    if (k == HANDLE_BAD)
        return;
    const char *tail = handle_tail(s);
    CHECK(strlen(tail) == HANDLE_RANDOM_LEN);
    CHECK(strspn(tail, "0123456789abcdef") == HANDLE_RANDOM_LEN);
    size_t n = (size_t)(tail - s);
    CHECK(n >= 2 && s[n - 1] == '.');
    char label[HANDLE_DAEMON_MAX + 1];
    CHECK(n - 1 <= HANDLE_DAEMON_MAX);
    memcpy(label, s, n - 1);
    label[n - 1] = '\0';
    CHECK(handle_daemon_valid(label));
    CHECK(strcmp(label, k == HANDLE_MINE ? handle_daemon() : daemon) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *exact = malloc(size ? size : 1);
    if (size)
        memcpy(exact, data, size);
    check_host(exact, size);
    free(exact);

    /* Header values reach the parsers as C strings: up to the first NUL. */
    char *s = malloc(size + 1);
    if (size)
        memcpy(s, data, size);
    s[size] = '\0';
    check_host(s, strlen(s));
    check_origin(s);
    check_event_id(s);
    check_media_type(s);
    check_accept(s);
    check_bearer(s);
    check_version(s);
    check_content_length(s);
    check_handle(s);
    free(s);
    return 0;
}
