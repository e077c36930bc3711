#include "sandbox/run/egress_run.h"

#include <stdio.h>

#include "sandbox/run/exec.h"

int egress_run_begin(const struct exec_ctx *ctx, const struct run *req,
                     struct backend_stream *stream, const char *id, struct egress_acceptor **a,
                     struct err *err)
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
