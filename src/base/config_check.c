#include "base/config_check.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/handle.h"
#include "base/log.h"
#include "base/netaddr.h"

/* KEY=VALUE: a key of letters, digits, '.', '-', '_' and '/' starting
 * with a letter, not in the daemon's namespace; a value of printable
 * ASCII. */
int config_item_label(const char *s, size_t n)
{
    static const char reserved[] = "io.mcp-sandboxd.";
    const char *eq = memchr(s, '=', n);
    size_t kn = eq ? (size_t)(eq - s) : 0;
    if (!eq || kn == 0 || kn > 128 || n - kn - 1 > 256 || !isalpha((unsigned char)s[0]))
        return 0;
    if (kn >= sizeof(reserved) - 1 && strncmp(s, reserved, sizeof(reserved) - 1) == 0)
        return 0;
    for (size_t i = 0; i < kn; i++)
        if (!(isalnum((unsigned char)s[i]) || strchr(".-_/", s[i])))
            return 0;
    for (size_t i = kn + 1; i < n; i++)
        if (s[i] < 0x20 || s[i] > 0x7e)
            return 0;
    return 1;
}

/* A language's name as the table spells them (sandbox/languages/langtable.h), any
 * case; whether the table has it is checked once the table is loaded. */
int config_item_language(const char *s, size_t n)
{
    if (n == 0 || n > 32 || !isalpha((unsigned char)s[0]))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || strchr("+#-", s[i])))
            return 0;
    return 1;
}

/* KEY=TEXT: KEY (blanks around it allowed) passes key_ok, TEXT is
 * printable ASCII, tabs and blanks allowed. */
static int key_then_text(const char *s, size_t n, int (*key_ok)(const char *, size_t))
{
    const char *eq = memchr(s, '=', n);
    if (!eq)
        return 0;
    size_t kn = (size_t)(eq - s);
    while (kn && isblank((unsigned char)s[kn - 1]))
        kn--;
    size_t k0 = 0;
    while (k0 < kn && isblank((unsigned char)s[k0]))
        k0++;
    if (!key_ok(s + k0, kn - k0))
        return 0;
    for (size_t i = kn; i < n; i++)
        if (s[i] != '\t' && (s[i] < 0x20 || s[i] > 0x7e))
            return 0;
    return 1;
}

/* LANGUAGE=PATTERNS: the language's form here, the patterns' once the
 * table is loaded (langtable_configure, with the egress/ rules). */
int config_item_egress(const char *s, size_t n)
{
    return key_then_text(s, n, config_item_language);
}

/* A size of 0 to 64, digits alone: a pool bound (the table's
 * LANGTABLE_POOL_MAX, which base/ does not see). */
static int pool_bound_ok(const char *s, size_t n)
{
    while (n && isblank((unsigned char)*s))
        s++, n--;
    while (n && isblank((unsigned char)s[n - 1]))
        n--;
    if (n == 0 || n > 2)
        return 0;
    int v = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return 0;
        v = 10 * v + (s[i] - '0');
    }
    return v <= 64;
}

/* LANGUAGE=N: the language's form here (the table checks the name),
 * N a pool bound. */
int config_item_pool(const char *s, size_t n)
{
    const char *eq = memchr(s, '=', n);
    if (!eq || !key_then_text(s, n, config_item_language))
        return 0;
    return pool_bound_ok(eq + 1, n - (size_t)(eq - s) - 1);
}

/* NAME=HOSTS: a variable's name, then the hosts (egress patterns, which
 * egress/secrets.h checks). */
int config_item_secret(const char *s, size_t n)
{
    return key_then_text(s, n, config_item_env_name);
}

/* A variable may be passed through as it is or bound as a secret, not
 * both: the sandbox would hold the value, which --secret keeps out. */
static int check_secret_names(const struct config *cfg, struct err *err)
{
    for (size_t i = 0; i < cfg->secret.n; i++) {
        const char *item = cfg->secret.items[i];
        item += strspn(item, " \t");
        size_t kn = strcspn(item, "= \t");
        for (size_t j = 0; j < cfg->pass_through_env.n; j++) {
            const char *name = cfg->pass_through_env.items[j];
            if (strlen(name) == kn && strncmp(item, name, kn) == 0)
                return err_set(err, ERR_INVALID,
                               "%s is in both --pass-through-env and --secret: choose one "
                               "(--secret keeps the value out of the sandbox)",
                               name);
        }
    }
    return 0;
}

int config_item_env_name(const char *s, size_t n)
{
    if (n == 0 || n > 128 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
            return 0;
    return 1;
}

int config_item_token(const char *s, size_t n)
{
    if (n == 0 || n > 256)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!isgraph((unsigned char)s[i]))
            return 0;
    return 1;
}

/* "host:port", "[v6]:port"; port 0 picks a free port (tests). */
static int parse_listen(struct config *cfg, struct err *err)
{
    const char *s = cfg->http_listen;
    const char *colon;
    const char *host = s;
    size_t host_len;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close || close[1] != ':')
            return err_set(err, ERR_INVALID, "--http: expected [ADDRESS]:PORT, got '%s'", s);
        host = s + 1;
        host_len = (size_t)(close - host);
        colon = close + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon)
            return err_set(err, ERR_INVALID, "--http: expected HOST:PORT, got '%s'", s);
        host_len = (size_t)(colon - s);
    }
    char *end = NULL;
    errno = 0;
    unsigned long port = strtoul(colon + 1, &end, 10);
    if (host_len == 0 || !isdigit((unsigned char)colon[1]) || errno || *end != '\0' || port > 65535)
        return err_set(err, ERR_INVALID, "--http: expected HOST:PORT, got '%s'", s);
    free(cfg->http_host);
    cfg->http_host = xstrndup(host, host_len);
    cfg->http_port = (unsigned)port;
    return 0;
}

/* Anyone who reaches a listener off loopback could run code with the
 * pass-through secrets: there the daemon does not start without a token.
 * On loopback it serves without one (scripts and tests start it so) and
 * warns at start (main.c). The modes that print and exit bind nothing. */
int config_check_listen_auth(const struct config *cfg, struct err *err)
{
    if (!*cfg->http_listen || cfg->auth_token || cfg->print_engine || cfg->list_images ||
        *cfg->dry_run_create)
        return 0;
    bool loopback = false;
    char addr[NETADDR_TEXT_MAX];
    if (netaddr_listen_is_loopback(cfg->http_host, &loopback, addr, sizeof(addr), err) < 0)
        return -1;
    if (loopback)
        return 0;
    return err_set(err, ERR_INVALID,
                   "--http %.300s: %s is not a loopback address, and whoever reaches it could "
                   "run code with this daemon's pass-through secrets, so it needs a bearer "
                   "token: write one to a file only the daemon can read and pass "
                   "--auth-token-file FILE (or set MCPSANDBOXD_AUTH_TOKEN), or bind 127.0.0.1",
                   cfg->http_listen, addr);
}

/* A numeric, non-root "uid:gid": names would depend on the image. */
static int valid_user(const char *s)
{
    char *end = NULL;
    errno = 0;
    unsigned long uid = strtoul(s, &end, 10);
    if (!isdigit((unsigned char)s[0]) || errno || *end != ':' || uid == 0 || uid > 0x7fffffffUL)
        return 0;
    const char *g = end + 1;
    unsigned long gid = strtoul(g, &end, 10);
    if (!isdigit((unsigned char)g[0]) || errno || *end != '\0' || gid == 0 || gid > 0x7fffffffUL)
        return 0;
    return 1;
}

/* The sandboxes' own uids stay below the ids that mean "none" and
 * "nobody" and that tools reading them as signed numbers get wrong, and
 * never include this process's user: a peer of the daemon's uid may use
 * any sandbox's stream socket (backend/docker/channel.h). */
static int check_uid_range(const struct config *cfg, struct err *err)
{
    long long last = cfg->sandbox_uid_base + cfg->sandbox_uid_count - 1;
    if (cfg->sandbox_uid_count == 0)
        return 0;
    if (last > 0x7ffffffeLL)
        return err_set(err, ERR_INVALID,
                       "--sandbox-uid-base %lld with --sandbox-uid-count %lld ends at %lld, past "
                       "the highest uid a sandbox may have (2147483646)",
                       cfg->sandbox_uid_base, cfg->sandbox_uid_count, last);
    long long me = (long long)geteuid();
    if (me >= cfg->sandbox_uid_base && me <= last)
        return err_set(err, ERR_INVALID,
                       "--sandbox-uid-base %lld with --sandbox-uid-count %lld includes this "
                       "process's own uid %lld",
                       cfg->sandbox_uid_base, cfg->sandbox_uid_count, me);
    return 0;
}

/* What any runner's module name is made of (Python's dotted identifiers,
 * a Node built-in's "fs", "node:fs", "fs/promises"); langtable_configure
 * checks each against its language's runner. */
static int valid_module(const char *s, size_t n)
{
    if (n == 0 || n > 128)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!isalnum(c) && c != '_' && c != '.' && c != ':' && c != '/')
            return 0;
    }
    return 1;
}

/* Checks a preload list and rewrites it as "a,b,c" (spaces and empty items
 * dropped), the form the runner takes as one argument. */
static int normalize_preload(char **list, const char *opt, struct err *err)
{
    char *out = xcalloc(1, strlen(*list) + 1);
    size_t k = 0;
    for (const char *p = *list; *p;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        const char *item = p;
        while (n && isspace((unsigned char)*item))
            item++, n--;
        while (n && isspace((unsigned char)item[n - 1]))
            n--;
        if (n) {
            if (!valid_module(item, n)) {
                free(out);
                return err_set(err, ERR_INVALID, "--%s: '%.*s' is not a module name", opt,
                               (int)(n > 64 ? 64 : n), item);
            }
            if (k)
                out[k++] = ',';
            memcpy(out + k, item, n);
            k += n;
        }
        if (!comma)
            break;
        p = comma + 1;
    }
    out[k] = '\0';
    if (k > CONFIG_PRELOAD_MAX) {
        free(out);
        return err_set(err, ERR_INVALID, "--%s: the list is over %d bytes", opt,
                       CONFIG_PRELOAD_MAX);
    }
    free(*list);
    *list = out;
    return 0;
}

int config_check(struct config *cfg, struct err *err)
{
    if ((cfg->python_preload &&
         normalize_preload(&cfg->python_preload, "python-preload", err) < 0) ||
        (cfg->js_preload && normalize_preload(&cfg->js_preload, "js-preload", err) < 0))
        return -1;
    if (*cfg->daemon_id && !handle_daemon_valid(cfg->daemon_id))
        return err_set(err, ERR_INVALID,
                       "--daemon-id: '%.64s' is not 1 to 63 of a-z, 0-9 and '-', starting and "
                       "ending with a letter or digit",
                       cfg->daemon_id);
    if (cfg->task_max_timeout_ms < cfg->max_timeout_ms)
        return err_set(err, ERR_INVALID,
                       "--task-max-timeout-ms (%lld) is below --max-timeout-ms (%lld): a task "
                       "may run at least as long as any call",
                       cfg->task_max_timeout_ms, cfg->max_timeout_ms);
    if (cfg->timeout_ms > cfg->max_timeout_ms)
        return err_set(err, ERR_INVALID, "--timeout-ms (%lld) exceeds --max-timeout-ms (%lld)",
                       cfg->timeout_ms, cfg->max_timeout_ms);
    if (cfg->memory_mb > cfg->max_memory_mb)
        return err_set(err, ERR_INVALID, "--memory-mb (%lld) exceeds --max-memory-mb (%lld)",
                       cfg->memory_mb, cfg->max_memory_mb);
    if (log_level_from_name(cfg->log_level) < 0)
        return err_set(err, ERR_INVALID, "--log-level: '%s' is not error, warn, info or debug",
                       cfg->log_level);
    if (!valid_user(cfg->sandbox_user))
        return err_set(err, ERR_INVALID,
                       "--sandbox-user must be numeric UID:GID other than root, got '%s'",
                       cfg->sandbox_user);
    if (check_uid_range(cfg, err) < 0)
        return -1;
    if (strcmp(cfg->sandbox_io, "socket") != 0 && strcmp(cfg->sandbox_io, "attach") != 0)
        return err_set(err, ERR_INVALID, "--sandbox-io: '%.64s' is not socket or attach",
                       cfg->sandbox_io);
    /* It becomes part of a bind ("HOST:TARGET:ro") and a socket path (108
     * bytes with the directory and socket names). */
    if (cfg->sandbox_io_dir[0] != '/' || strlen(cfg->sandbox_io_dir) > 64 ||
        strpbrk(cfg->sandbox_io_dir, ":,\\\"") || strstr(cfg->sandbox_io_dir, "/.."))
        return err_set(err, ERR_INVALID,
                       "--sandbox-io-dir must be an absolute path of at most 64 bytes without "
                       "':', ',', '\\', '\"' or '..', got '%.64s'",
                       cfg->sandbox_io_dir);
    /* It becomes the source of a read-only bind ("HOST:TARGET:ro"). */
    bool control = false;
    for (const char *p = cfg->packages_cache_dir; *p; p++)
        control |= (unsigned char)*p < 0x20 || *p == 0x7f;
    if (cfg->packages_cache_dir[0] != '/' || strlen(cfg->packages_cache_dir) > 200 || control ||
        strpbrk(cfg->packages_cache_dir, ":,\\\"") || strstr(cfg->packages_cache_dir, "/.."))
        return err_set(err, ERR_INVALID,
                       "--packages-cache-dir must be an absolute path of at most 200 bytes "
                       "without ':', ',', '\\', '\"' or '..', got '%.64s'",
                       cfg->packages_cache_dir);
    const struct {
        const char *opt, *val;
    } runtimes[] = {{"runtime", cfg->runtime},
                    {"python-runtime", cfg->python_runtime},
                    {"js-runtime", cfg->js_runtime}};
    for (size_t i = 0; i < ARRAY_SIZE(runtimes); i++)
        for (const char *p = runtimes[i].val; *p; p++)
            if (!(isalnum((unsigned char)*p) || *p == '-' || *p == '_' || *p == '.'))
                return err_set(err, ERR_INVALID, "--%s: '%.64s' is not a valid runtime name",
                               runtimes[i].opt, runtimes[i].val);
    if (cfg->max_code_sessions > 0 && cfg->max_code_sessions_per_owner > cfg->max_code_sessions)
        return err_set(err, ERR_INVALID,
                       "--max-code-sessions-per-owner (%lld) exceeds --max-code-sessions (%lld)",
                       cfg->max_code_sessions_per_owner, cfg->max_code_sessions);
    if (cfg->code_session_idle_ms > cfg->code_session_max_age_ms)
        return err_set(err, ERR_INVALID,
                       "--code-session-idle-ms (%lld) exceeds --code-session-max-age-ms (%lld)",
                       cfg->code_session_idle_ms, cfg->code_session_max_age_ms);
    if (*cfg->http_listen && parse_listen(cfg, err) < 0)
        return -1;
    if (check_secret_names(cfg, err) < 0)
        return -1;
    /* Over stdio the daemon has one client, who shares with nobody: its
     * session may use every slot, the whole queue and the whole store. */
    if (!*cfg->http_listen) {
        cfg->max_session_inflight = cfg->max_concurrent + cfg->max_queued;
        cfg->max_session_queued = cfg->max_queued;
        cfg->run_store_session_max_bytes = cfg->run_store_max_bytes;
    }
    /* The message must fit the code it carries plus JSON escaping. */
    if (cfg->max_message_bytes < cfg->max_code_bytes)
        return err_set(err, ERR_INVALID, "--max-message-bytes must be at least --max-code-bytes");
    if (cfg->max_inflight_body_bytes < cfg->max_message_bytes)
        return err_set(err, ERR_INVALID,
                       "--max-inflight-body-bytes must be at least --max-message-bytes");
    return 0;
}
