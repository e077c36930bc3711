#include "sandbox/run/packages_run.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/json.h"
#include "base/log.h"
#include "base/threads.h"
#include "base/util.h"
#include "sandbox/packages/install.h"

/* What a call waits for a set another call is installing, past the
 * install's own time limit (the engine's setup and teardown). */
#define PACKAGES_WAIT_SLACK_MS 60000.0
/* An install's working directory (a tmpfs, where the installer writes
 * before the set is copied out) holds the set and the installer's own
 * temporary files: this much beyond the language's max_bytes. */
#define PACKAGES_WORK_EXTRA_MB 256
/* The processes and threads an install may have, at least: an installer
 * is a runtime running another (npm is node under node, each with its
 * thread pools), and under gVisor the pids cgroup counts gVisor's own
 * threads too. The install's time limit bounds it still. */
#define PACKAGES_INSTALL_PIDS_MIN 512

static const char npm_cafile[] = "npm_config_cafile=" BACKEND_EGRESS_CA_BUNDLE;

/* The language whose runner runs lang's installer: lang itself when its
 * runner is the installer's, else the table's first with that runner
 * (TypeScript's npm runs under the node runner); NULL when none. */
static const struct langtable_lang *install_host(const struct exec_ctx *ctx,
                                                 const struct langtable_lang *lang)
{
    enum langtable_runner want = install_runner(lang->packages->installer);
    if (lang->runner == want)
        return lang;
    for (size_t i = 0; i < langtable_count(ctx->langs); i++)
        if (langtable_get(ctx->langs, i)->runner == want)
            return langtable_get(ctx->langs, i);
    return NULL;
}

/* lang's install run but for its code, egress and target: the host's
 * runner in the installer's image, the install's time, its working
 * directory (a tmpfs) counted in its memory, its processes; and the pool's
 * profile of ready installers for lang, if any. */
static void install_shape(const struct exec_ctx *ctx, const struct langtable_lang *lang,
                          const struct langtable_lang *host, struct run *ir, struct run_install *in)
{
    const struct langtable_packages *pk = lang->packages;
    long long work_mb = pk->max_bytes / (1024 * 1024) + PACKAGES_WORK_EXTRA_MB;
    const struct packages_ctx *p = ctx->packages;
    *in = (struct run_install){
        .image = install_image(lang),
        .env = p->install_env[lang->index],
        .workdir_mb = work_mb,
        .pids_limit = ctx->cfg->pids_limit > PACKAGES_INSTALL_PIDS_MIN ? ctx->cfg->pids_limit
                                                                       : PACKAGES_INSTALL_PIDS_MIN,
        .pool = p->spare_profile ? p->spare_profile[lang->index] : -1,
    };
    run_init(ir);
    ir->language = host;
    ir->timeout_ms = pk->timeout_ms;
    ir->memory_mb = ctx->cfg->memory_mb + work_mb; /* the tmpfs counts */
    ir->install = in;
}

/* An install run's environment for lang: its language's variables, the
 * proxy, the CA bundle for every client that reads one (npm's own
 * setting too: Node's extra CAs alone would not trust the host's roots). */
static const char **install_env_for(const struct exec_ctx *ctx, const struct langtable_lang *lang)
{
    size_t n = lang->environment.n;
    const char **own = xcalloc(n + 2, sizeof(*own));
    for (size_t i = 0; i < n; i++)
        own[i] = lang->environment.v[i];
    if (ctx->egress_ca_bundle && lang->packages->installer == REQS_NPM)
        own[n] = npm_cafile;
    const char **env = policy_env_new(own, true, ctx->egress_ca_bundle != NULL);
    free(own);
    return env;
}

void packages_start(struct exec_ctx *ctx)
{
    struct packages_ctx *p = xcalloc(1, sizeof(*p));
    ctx->packages = p;
    size_t n = langtable_count(ctx->langs);
    bool any = false;
    for (size_t i = 0; i < n; i++)
        any = any || langtable_get(ctx->langs, i)->packages;
    if (!any)
        return;
    if (!backend_host_dirs_possible(ctx->backend)) {
        p->off_reason = xasprintf("the %s backend's sandboxes cannot see the daemon's package "
                                  "cache",
                                  backend_kind(ctx->backend));
        log_info("packages: %s; calls that ask for packages are refused", p->off_reason);
        return;
    }
    const char *dir = ctx->cfg->packages_cache_dir;
    struct err err = ERR_INIT;
    if (pkgcache_open(dir, (unsigned long long)ctx->cfg->packages_cache_max_bytes, &p->cache,
                      &err) < 0) {
        p->off_reason = xasprintf("the package cache %s cannot be used (%s)", dir, err_msg(&err));
        log_warn("packages: %s; calls that ask for packages are refused", p->off_reason);
        err_clear(&err);
        return;
    }
    p->sets_dir = xasprintf("%s/sets", dir);
    p->n_langs = n;
    p->install_env = xcalloc(n, sizeof(*p->install_env));
    for (size_t i = 0; i < n; i++) {
        const struct langtable_lang *lang = langtable_get(ctx->langs, i);
        if (lang->packages)
            p->install_env[i] = install_env_for(ctx, lang);
    }
    log_info("packages: cache %s, %lld bytes at most%s", dir, ctx->cfg->packages_cache_max_bytes,
             ctx->cfg->packages_offline ? ", offline (cached sets only)" : "");
}

void packages_stop(struct exec_ctx *ctx)
{
    struct packages_ctx *p = ctx->packages;
    if (!p)
        return;
    for (size_t i = 0; i < p->n_langs; i++) {
        free(p->install_env[i]);
        if (p->spare_names) {
            free(p->spare_names[i]);
            free(p->spare_cmds[i]);
        }
    }
    free(p->install_env);
    free(p->spare_names);
    free(p->spare_cmds);
    free(p->spare_profile);
    pkgcache_close(p->cache);
    free(p->sets_dir);
    free(p->off_reason);
    free(p);
    ctx->packages = NULL;
}

/* ---- ready installers ------------------------------------------------------- */

static int spare_make(void *arg, char **path, struct err *err)
{
    return pkgcache_stage_new(arg, path, err);
}

static void spare_drop(void *arg, const char *path)
{
    pkgcache_stage_drop(arg, path);
}

void packages_spare_drop(struct exec_ctx *ctx, char *dir)
{
    if (ctx->packages->cache)
        pkgcache_stage_drop(ctx->packages->cache, dir);
    free(dir);
}

long long packages_longest_install_ms(const struct exec_ctx *ctx)
{
    long long ms = 0;
    for (size_t i = 0; ctx->packages->cache && i < langtable_count(ctx->langs); i++) {
        const struct langtable_packages *pk = langtable_get(ctx->langs, i)->packages;
        if (pk && pk->timeout_ms > ms)
            ms = pk->timeout_ms;
    }
    return ms;
}

size_t packages_pool_profiles(struct exec_ctx *ctx, struct pool_profile *out, size_t first)
{
    struct packages_ctx *p = ctx->packages;
    if (!p->cache || ctx->cfg->packages_offline || ctx->cfg->packages_ready_installers <= 0)
        return 0;
    size_t n = langtable_count(ctx->langs), k = 0;
    p->spare_profile = xcalloc(n, sizeof(*p->spare_profile));
    p->spare_names = xcalloc(n, sizeof(*p->spare_names));
    p->spare_cmds = xcalloc(n, sizeof(*p->spare_cmds));
    for (size_t i = 0; i < n; i++) {
        const struct langtable_lang *lang = langtable_get(ctx->langs, i);
        const struct langtable_lang *host = lang->packages ? install_host(ctx, lang) : NULL;
        p->spare_profile[i] = -1;
        if (!host || lang->pool_max <= 0)
            continue;
        struct run_install in;
        struct run ir;
        install_shape(ctx, lang, host, &ir, &in);
        struct backend_spec spec;
        run_spec(ctx, &ir, util_now_ms(), ir.timeout_ms, &spec);
        /* The host's runner waiting for its request, with what its
         * installer loads (nothing of the language's own preloads). */
        const struct lang_cmds *lc = &ctx->cmds[host->index];
        const char *pre = install_preload(lang->packages->installer);
        if (pre && host->runner != LANGTABLE_RUNNER_GENERIC)
            p->spare_cmds[i] = commands_warm(host, pre);
        spec.cmd = p->spare_cmds[i] ? p->spare_cmds[i] : lc->lean ? lc->lean : lc->warm;
        p->spare_names[i] = xasprintf("%s-installer", lang->name);
        spec.pool = p->spare_names[i];
        out[k] = (struct pool_profile){
            .name = p->spare_names[i],
            .spec = spec,
            .lean = spec,
            .min = (size_t)ctx->cfg->packages_ready_installers,
            .max = (size_t)ctx->cfg->packages_ready_installers,
            .dirs = {.make = spare_make, .drop = spare_drop, .arg = p->cache},
            .later = true,
        };
        out[k].lean.cmd = NULL;
        p->spare_profile[i] = (int)(first + k++);
    }
    return k;
}

/* One language's preinstall list into the cache, as a call asking for it
 * would; logged either way. */
static void warm_one(struct exec_ctx *ctx, const struct langtable_lang *lang)
{
    const struct langtable_packages *pk = lang->packages;
    struct reqs_list *list = xcalloc(1, sizeof(*list));
    struct err err = ERR_INIT;
    if (reqs_parse(pk->installer, (const char *const *)pk->preinstall.v, NULL, pk->preinstall.n,
                   NULL, "preinstall", list, &err) < 0) {
        log_warn("packages: %s's preinstall list: %s", lang->name, err_msg(&err));
        err_clear(&err);
        free(list);
        return;
    }
    struct run r;
    run_init(&r);
    r.language = lang;
    r.packages = list;
    r.cancel = ctx->packages->warm_cancel;
    struct packages_use use;
    struct exec_result res;
    exec_result_init(&res);
    if (packages_run_ready(ctx, &r, &use, &res, &err) == 0)
        log_info("packages: %s's preinstall list is ready (%s, %.0f ms)", lang->name,
                 res.packages->cached ? "cached" : "installed", res.packages->ms);
    else
        log_warn("packages: %s's preinstall list: %s", lang->name, err_msg(&err));
    packages_run_done(ctx, &use);
    exec_result_free(&res);
    err_clear(&err);
    r.cancel = NULL; /* the context's */
    run_free(&r);
}

static void *warm_main(void *arg)
{
    struct exec_ctx *ctx = arg;
    for (size_t i = 0; i < langtable_count(ctx->langs); i++) {
        const struct langtable_lang *lang = langtable_get(ctx->langs, i);
        if (exec_cancelled(ctx->packages->warm_cancel))
            break;
        if (lang->packages && lang->packages->preinstall.n > 0)
            warm_one(ctx, lang);
    }
    return NULL;
}

void packages_warm_start(struct exec_ctx *ctx)
{
    struct packages_ctx *p = ctx->packages;
    bool any = false;
    for (size_t i = 0; i < langtable_count(ctx->langs); i++) {
        const struct langtable_lang *lang = langtable_get(ctx->langs, i);
        any = any || (lang->packages && lang->packages->preinstall.n > 0);
    }
    if (!p || !p->cache || !any)
        return;
    p->warm_cancel = exec_cancel_new();
    struct err err = ERR_INIT;
    if (thread_start(&p->warm, &p->warming, warm_main, ctx, "the preinstall thread", &err) < 0)
        log_warn("packages: %s; the lists install on first use", err_msg(&err));
    err_clear(&err);
}

void packages_warm_stop(struct exec_ctx *ctx)
{
    struct packages_ctx *p = ctx->packages;
    if (!p || !p->warm_cancel)
        return;
    exec_cancel(p->warm_cancel);
    thread_join(&p->warm, &p->warming);
    exec_cancel_free(p->warm_cancel);
    p->warm_cancel = NULL;
}

const char *packages_sets_dir(const struct exec_ctx *ctx, const struct langtable_lang *lang)
{
    return lang->packages && ctx->packages->cache ? ctx->packages->sets_dir : NULL;
}

/* The set's key: what decides its contents. The image names stand for
 * their contents (a rebuilt image under the same name keeps its sets). */
static void set_key(const struct langtable_lang *lang, const struct reqs_list *reqs,
                    char key[PKGCACHE_KEY_LEN + 1])
{
    const struct langtable_packages *pk = lang->packages;
    char *canon = reqs_canonical(reqs);
    char *index = xstrdup("");
    for (size_t i = 0; i < pk->index.n; i++) {
        char *next = xasprintf("%s%s\n", index, pk->index.v[i]);
        free(index);
        index = next;
    }
    const char *parts[] = {"mcpsbx-packages-1",
                           lang->image,
                           install_image(lang),
                           reqs_installer_name(pk->installer),
                           index,
                           pk->scripts ? "scripts" : "no-scripts",
                           canon};
    (void)pkgcache_key(parts, ARRAY_SIZE(parts), key);
    free(index);
    free(canon);
}

/* Whether the tree at path holds a top-level module lang's pooled
 * sandboxes import before the run (its preload): the pool's would shadow
 * it. */
static bool shadows_preload(const struct langtable_lang *lang, const char *path)
{
    for (size_t i = 0; i < lang->preload.n; i++) {
        const char *mod = lang->preload.v[i];
        size_t n = strcspn(mod, ".");
        char *dir = xasprintf("%s/%.*s", path, (int)n, mod);
        char *file = xasprintf("%s/%.*s.py", path, (int)n, mod);
        struct stat st;
        bool hit = lstat(dir, &st) == 0 || lstat(file, &st) == 0;
        free(dir);
        free(file);
        if (hit)
            return true;
    }
    return false;
}

/* The set's manifest: what was asked and what came, and whether it
 * shadows lang's preload (worked out once, here, not at every hit; by
 * language, as languages sharing an image share its sets). */
static char *manifest_text(const char *key, const struct langtable_lang *lang,
                           const struct reqs_list *reqs, const struct packages_report *rep,
                           bool shadows)
{
    json_object *m = json_object_new_object();
    json_object_object_add(m, "key", json_object_new_string(key));
    json_object_object_add(m, "installer",
                           json_object_new_string(reqs_installer_name(reqs->installer)));
    json_object *items = json_object_new_array();
    for (size_t i = 0; i < rep->n; i++) {
        json_object *it = json_object_new_object();
        json_object_object_add(it, "name", json_object_new_string(rep->items[i].name));
        json_object_object_add(it, "requirement", json_object_new_string(reqs->v[i].text));
        json_object_object_add(it, "version",
                               rep->items[i].version ? json_object_new_string(rep->items[i].version)
                                                     : NULL);
        json_object_array_add(items, it);
    }
    json_object_object_add(m, "packages", items);
    json_object *sh = json_object_new_object();
    json_object_object_add(sh, lang->name, json_object_new_boolean(shadows));
    json_object_object_add(m, "shadows_preload", sh);
    char *text = xstrdup(json_object_to_json_string_ext(m, JSON_C_TO_STRING_PLAIN));
    json_object_put(m);
    return text;
}

/* At most cap bytes of path (O_NOFOLLOW), NUL-terminated; NULL when it
 * cannot be read. */
static char *read_capped(const char *path, size_t cap, size_t *len)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    char *data = xmalloc(cap + 1);
    size_t have = 0;
    ssize_t n;
    while (have < cap && (n = read(fd, data + have, cap - have)) > 0)
        have += (size_t)n;
    close(fd);
    data[have] = '\0';
    *len = have;
    return data;
}

/* A cached set's report and whether it shadows lang's preload, from its
 * manifest (the daemon's own file, in a tree no sandbox can write; its
 * versions came from an installer and are read as untrusted still). A
 * manifest without lang's flag has it worked out from the tree. */
static struct packages_report *report_from_set(const struct langtable_lang *lang, const char *set,
                                               const struct reqs_list *reqs, bool *shadows)
{
    char *path = xasprintf("%s/%s", set, PKGCACHE_MANIFEST_NAME);
    size_t len = 0;
    char *text = read_capped(path, PKGCACHE_MANIFEST_MAX, &len);
    free(path);
    json_object *m = NULL, *items = NULL, *sh = NULL, *flag = NULL;
    json_object *v = json_object_new_object();
    struct json_exact why;
    if (text && json_parse_exact(text, len, 8, 0, &m, &why) == 0 &&
        json_object_object_get_ex(m, "packages", &items) &&
        json_object_is_type(items, json_type_array))
        for (size_t i = 0; i < json_object_array_length(items); i++) {
            json_object *it = json_object_array_get_idx(items, i), *n = NULL, *ver = NULL;
            if (json_object_object_get_ex(it, "name", &n) &&
                json_object_is_type(n, json_type_string) &&
                json_object_object_get_ex(it, "version", &ver) && ver)
                json_object_object_add(v, json_object_get_string(n), json_object_get(ver));
        }
    if (m && json_object_object_get_ex(m, "shadows_preload", &sh) &&
        json_object_object_get_ex(sh, lang->name, &flag) &&
        json_object_is_type(flag, json_type_boolean))
        *shadows = json_object_get_boolean(flag);
    else
        *shadows = shadows_preload(lang, set);
    struct packages_report *r = install_report_versions(reqs, v);
    json_object_put(v);
    json_object_put(m);
    free(text);
    return r;
}

/* "a, b, c" for an error. */
static char *names_of(const struct reqs_list *reqs)
{
    char *s = xstrdup("");
    for (size_t i = 0; i < reqs->n; i++) {
        char *next = xasprintf("%s%s%s", s, i ? ", " : "", reqs->v[i].text);
        free(s);
        s = next;
    }
    return s;
}

/* Why an install run did not install: its status and its last lines. */
static void install_failed(const struct run *req, const struct exec_result *ires,
                           const struct err *run_err, struct err *err)
{
    char *names = names_of(req->packages);
    const struct buf *out = ires->err.len ? &ires->err : &ires->out;
    char *quote = install_quote(out->data ? out->data : "", out->len);
    if (run_err && run_err->code != ERR_OK)
        err_set(err, ERR_ENGINE, "installing %s failed: %s", names, err_msg(run_err));
    else if (ires->status == EXEC_TIMEOUT)
        err_set(err, ERR_INVALID, "installing %s took longer than %lld ms; its last lines:\n%s",
                names, req->language->packages->timeout_ms, quote);
    else if (ires->status == EXEC_OOM)
        err_set(err, ERR_INVALID,
                "installing %s ran out of room (memory, or its %lld bytes); "
                "its last lines:\n%s",
                names, req->language->packages->max_bytes, quote);
    else if (ires->status == EXEC_OK)
        err_set(err, ERR_INVALID, "installing %s failed (exit %d); the installer's last lines:\n%s",
                names, ires->exit_code, quote);
    else
        err_set(err, ERR_INVALID, "installing %s failed (%s); the installer's last lines:\n%s",
                names, exec_status_name(ires->status), quote);
    free(quote);
    free(names);
}

/* Runs the install into the INSTALL lease's staging directory and
 * publishes it: 0 with *rep and the lease a HIT, or -1 with err and the
 * lease ended (waiting calls get err too). */
static int install(struct exec_ctx *ctx, const struct run *req, struct packages_use *use,
                   struct packages_report **rep, struct err *err)
{
    const struct langtable_lang *lang = req->language;
    const struct langtable_packages *pk = lang->packages;
    const struct langtable_lang *host = install_host(ctx, lang);
    struct egress_patterns *hosts = xmalloc(sizeof(*hosts));
    char *code = NULL;
    int rc = -1;
    if (!host)
        err_set(err, ERR_INVALID, "no language here has the %s runner that %s installs need",
                langtable_runner_name(install_runner(pk->installer)),
                reqs_installer_name(pk->installer));
    else if ((code = install_code(pk, req->packages, err)) && install_egress(pk, hosts, err) == 0 &&
             /* The sandbox's uid writes it; tmp/ (0700) keeps everyone
              * else out, and only this sandbox has it bound. */
             chmod(use->lease.path, 0777) == 0)
        rc = 0;
    else if (code && err->code == ERR_OK)
        err_set(err, ERR_IO, "staging %s: %s", use->lease.path, strerror(errno));
    if (rc < 0) {
        pkgcache_abort(ctx->packages->cache, &use->lease, err);
        goto out;
    }
    struct run_install in;
    struct run ir;
    install_shape(ctx, lang, host, &ir, &in);
    in.dir = use->lease.path;
    ir.code = code;
    ir.code_len = strlen(code);
    ir.egress = hosts;
    ir.cancel = req->cancel; /* borrowed: ir is never run_free'd */
    struct exec_result ires;
    exec_result_init(&ires);
    struct err run_err = ERR_INIT;
    rc = exec_run(ctx, &ir, &ires, &run_err);
    /* A ready installer wrote into a directory of its own: the lease's
     * now, to publish or abort as if it had been there all along. */
    if (in.taken_dir &&
        pkgcache_adopt(ctx->packages->cache, &use->lease, in.taken_dir, &run_err) < 0 && rc == 0)
        rc = -1;
    free(in.taken_dir);
    if (rc == 0 && ires.status == EXEC_OK && ires.has_exit_code && ires.exit_code == 0) {
        *rep = install_report(req->packages, ires.out.data ? ires.out.data : "", ires.out.len);
        use->cold = shadows_preload(lang, use->lease.path);
        char *manifest = manifest_text(use->lease.key, lang, req->packages, *rep, use->cold);
        rc = pkgcache_publish(ctx->packages->cache, &use->lease, manifest, err);
        free(manifest);
        if (rc < 0)
            err_wrap(err, "the installed set was refused");
    } else {
        install_failed(req, &ires, &run_err, err);
        pkgcache_abort(ctx->packages->cache, &use->lease, err);
        rc = -1;
    }
    err_clear(&run_err);
    exec_result_free(&ires);
out:
    free(code);
    free(hosts);
    return rc;
}

int packages_run_ready(struct exec_ctx *ctx, const struct run *req, struct packages_use *use,
                       struct exec_result *res, struct err *err)
{
    memset(use, 0, sizeof(*use));
    if (!req->packages)
        return 0;
    const struct langtable_packages *pk = req->language->packages;
    struct pkgcache *cache = ctx->packages->cache;
    if (!pk)
        return err_set(err, ERR_INVALID, "%s has no package installer", req->language->name);
    if (!cache)
        return err_set(err, ERR_INVALID, "%s", ctx->packages->off_reason);
    double t0 = util_now_ms();
    char key[PKGCACHE_KEY_LEN + 1];
    set_key(req->language, req->packages, key);
    double deadline = t0 + (double)pk->timeout_ms + PACKAGES_WAIT_SLACK_MS;
    if (pkgcache_acquire(cache, key, deadline, &use->lease, err) < 0)
        return -1;
    struct packages_report *rep = NULL;
    if (use->lease.kind == PKGCACHE_INSTALL && ctx->cfg->packages_offline) {
        char *names = names_of(req->packages);
        err_set(err, ERR_INVALID, "--packages-offline: %s is not in the package cache", names);
        free(names);
        pkgcache_abort(cache, &use->lease, err);
    } else if (use->lease.kind == PKGCACHE_INSTALL) {
        if (install(ctx, req, use, &rep, err) == 0)
            rep->cached = false;
    } else {
        rep = report_from_set(req->language, use->lease.path, req->packages, &use->cold);
        rep->cached = true;
    }
    if (use->lease.kind != PKGCACHE_HIT || !rep) {
        if (use->lease.kind == PKGCACHE_HIT)
            pkgcache_release(cache, &use->lease);
        packages_report_free(rep);
        memset(use, 0, sizeof(*use));
        return -1;
    }
    rep->ms = util_now_ms() - t0;
    packages_report_free(res->packages);
    res->packages = rep;
    snprintf(use->dir, sizeof(use->dir), "%s/%s", BACKEND_PACKAGES_DIR, key);
    return 0;
}

void packages_run_done(struct exec_ctx *ctx, struct packages_use *use)
{
    if (use->lease.kind == PKGCACHE_HIT)
        pkgcache_release(ctx->packages->cache, &use->lease);
    memset(use, 0, sizeof(*use));
}

bool packages_held_room(const struct packages_held *held)
{
    return held->n < PACKAGES_SESSION_SETS_MAX;
}

void packages_hold(struct exec_ctx *ctx, struct packages_held *held, struct packages_use *use)
{
    if (use->lease.kind != PKGCACHE_HIT)
        return;
    bool have = !packages_held_room(held);
    for (size_t i = 0; i < held->n && !have; i++)
        have = strcmp(held->v[i].key, use->lease.key) == 0;
    if (have) {
        packages_run_done(ctx, use);
        return;
    }
    held->v = xrealloc(held->v, (held->n + 1) * sizeof(*held->v));
    held->v[held->n++] = use->lease;
    memset(use, 0, sizeof(*use));
}

void packages_held_release(struct exec_ctx *ctx, struct packages_held *held)
{
    for (size_t i = 0; i < held->n; i++)
        pkgcache_release(ctx->packages->cache, &held->v[i]);
    free(held->v);
    memset(held, 0, sizeof(*held));
}
