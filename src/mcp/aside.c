#include "mcp/aside.h"

#include <stddef.h>
#include <string.h>

#include "base/util.h"

/* Plain C data only: the request's id and arguments are copied out of the
 * parsed message, which stays on the thread that received it. */
struct aside_call {
    struct admission_job job;
    struct mcp_session *s;
    struct jsonrpc_id id;
    char *tool;
    char *args; /* JSON text, or NULL */
    struct tools_features features;
    struct reply reply;
};

static struct aside_call *of_job(struct admission_job *job)
{
    return (struct aside_call *)(void *)((char *)job - offsetof(struct aside_call, job));
}

static void aside_free(struct aside_call *c)
{
    jsonrpc_id_clear(&c->id);
    free(c->tool);
    free(c->args);
    free(c);
}

/* Answers with result (taken), frees c and lets the session know. */
static void aside_finish(struct aside_call *c, json_object *result)
{
    struct mcp_session *s = c->s;
    reply_result_for(&c->reply, &c->id, result);
    aside_free(c);
    session_call_ended(s);
}

static void aside_run(struct admission_job *job)
{
    struct aside_call *c = of_job(job);
    json_object *args = c->args ? json_tokener_parse(c->args) : NULL;
    struct tools_caller who = mcp_caller_of(c->s);
    json_object *result =
        tools_answer(&c->s->srv->env, tools_find(c->tool), args, &who, &c->features);
    json_object_put(args);
    aside_finish(c, result);
}

static void aside_refuse(struct admission_job *job, enum admission_refusal why)
{
    struct aside_call *c = of_job(job);
    aside_finish(c, tools_error_result(why == ADMISSION_STOPPING
                                           ? "server busy: shutting down"
                                           : "server busy: too many answers waiting; try again",
                                       &c->features));
}

struct admission *aside_new(struct err *err)
{
    return admission_new(1, ASIDE_MAX_WAITING, ASIDE_MAX_WAITING, err);
}

void aside_answer(struct mcp_session *s, const struct jsonrpc_msg *m, struct reply *r,
                  const char *tool, json_object *args)
{
    struct aside_call *c = xcalloc(1, sizeof(*c));
    c->s = s;
    c->reply = *r;
    c->reply.env = NULL; /* the receiving thread's */
    c->tool = xstrdup(tool);
    if (args) {
        size_t n = 0;
        const char *text = json_object_to_json_string_length(args, JSON_C_TO_STRING_PLAIN, &n);
        c->args = xstrndup(text, n);
    }
    jsonrpc_id_copy(&c->id, m->id);
    c->job.run = aside_run;
    c->job.refuse = aside_refuse;
    c->job.deadline_ms = util_now_ms() + ASIDE_WAIT_MS;
    pthread_mutex_lock(&s->lock);
    bool closing = s->closing;
    c->features = mcp_features_of(s->version);
    if (!closing)
        s->inflight++;
    pthread_mutex_unlock(&s->lock);
    if (closing) { /* as calls.c: a closing session's requests get no answer */
        reply_done(&c->reply, NULL);
        aside_free(c);
        return;
    }
    enum admission_verdict v = admission_submit(s->srv->aside, &c->job);
    if (v != ADMISSION_QUEUED)
        aside_refuse(&c->job, v == ADMISSION_STOPPED ? ADMISSION_STOPPING : ADMISSION_EXPIRED);
}
