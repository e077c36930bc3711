#include "sandbox/run/egress_run.h"

#include <stdio.h>

#include "base/log.h"
#include "sandbox/run/exec.h"

int egress_run_begin(const struct exec_ctx *ctx, const struct run *req,
                     const struct egress_run_secrets *secrets, struct backend_stream *stream,
                     const char *id, struct egress_acceptor **a, struct err *err)
{
    /* A call that narrowed its list to nothing still gets the gateway:
     * its requests are refused with a reason, not left to hang. */
    static const struct egress_patterns none;
    *a = NULL;
    if (backend_stream_egress_fd(stream) < 0) {
        if (!req->egress)
            return 0;
        return err_set(err, ERR_INTERNAL, "this %s sandbox has no way to the egress gateway",
                       req->language->name);
    }
    char label[EGRESS_LABEL_CAP];
    snprintf(label, sizeof(label), "%s %.12s", req->language->name, id);
    struct egress_run_spec spec = {
        .label = label,
        .patterns = req->egress ? req->egress : &none,
        .pins = ctx->egress_pins,
        .allow = ctx->egress_allow,
        .caps = &ctx->egress_caps,
        .secrets = secrets,
        .ca = ctx->egress_ca,
        .upstream_tls = ctx->egress_upstream_tls,
    };
    if (egress_acceptor_start(stream, &spec, a, err) < 0)
        return err_wrap(err, "starting the run's egress gateway");
    return 0;
}

void egress_run_end(struct egress_acceptor *a, struct exec_result *res)
{
    if (!a)
        return;
    if (!res->egress)
        res->egress = xmalloc(sizeof(*res->egress));
    egress_acceptor_finish(a, res->egress);
}

int egress_run_secrets_for(const struct exec_ctx *ctx, const struct run *req,
                           struct egress_run_secrets **out, struct err *err)
{
    *out = NULL;
    if (!req->language->egress)
        return 0;
    return egress_run_secrets_new(ctx->egress_secrets, out, err);
}

/* Whether some language's egress list allows every port p allows. */
static bool reachable(const struct exec_ctx *ctx, const struct egress_pattern *p)
{
    struct egress_patterns one = {.n = 1, .items = {*p}};
    for (size_t i = 0; i < langtable_count(ctx->langs); i++) {
        const struct langtable_lang *lang = langtable_get(ctx->langs, i);
        if (lang->egress && egress_patterns_narrow(lang->egress, &one, &one, NULL) == 0)
            return true;
    }
    return false;
}

void egress_run_check_secrets(const struct exec_ctx *ctx)
{
    const struct egress_secrets *t = ctx->egress_secrets;
    for (size_t i = 0; t && i < t->n; i++)
        for (size_t k = 0; k < t->items[i].hosts.n; k++) {
            const struct egress_pattern *p = &t->items[i].hosts.items[k];
            if (reachable(ctx, p))
                continue;
            char text[EGRESS_PATTERN_TEXT_MAX + 1];
            egress_pattern_format(p, text, sizeof(text));
            log_warn("--secret %s: %s is in no language's egress list (--egress), so no run can "
                     "reach it",
                     t->items[i].name, text);
        }
}
