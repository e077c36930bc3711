#include "sandbox/run/launch.h"

#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "base/util.h"

/* Set-ups of one launch at most: the first, and one after BACKEND_RETRY. */
#define LAUNCH_TRIES 2

struct launcher {
    struct backend *backend;
    struct reaper *reaper;
    struct uids *uids; /* NULL: every sandbox runs as its spec's user */
};

struct launcher *launcher_new(struct backend *b, struct reaper *r, struct uids *uids)
{
    struct launcher *l = xcalloc(1, sizeof(*l));
    l->backend = b;
    l->reaper = r;
    l->uids = uids;
    return l;
}

void launcher_free(struct launcher *l)
{
    free(l);
}

/* *out is spec with the user a new sandbox runs as: with sandbox uids, one
 * taken for it, which create hands to the reaper with the container (or
 * gives back when there is none). */
static int own_user(struct launcher *l, const struct backend_spec *spec, struct backend_spec *out,
                    struct err *err)
{
    *out = *spec;
    if (!l->uids)
        return 0;
    uid_t uid = 0;
    if (uids_take(l->uids, &uid, err) < 0)
        return -1;
    out->uid = uid;
    out->gid = (gid_t)uid;
    return 0;
}

/* spec's uid goes with the container to the reaper, which gives it back
 * once the container is gone; after a failed create at once: a container
 * the engine made all the same (a create that timed out) is never
 * started, so nothing runs as that uid. */
static int create(struct launcher *l, const struct backend_spec *spec, bool fallback,
                  double deadline_ms, char **id, struct backend_pending **pending, struct err *err)
{
    reaper_create_begin(l->reaper);
    int rc = backend_create(l->backend, spec, fallback, deadline_ms, id, pending, err);
    reaper_create_end(l->reaper, rc == 0 ? *id : NULL,
                      rc == 0 && l->uids ? (long long)spec->uid : -1);
    if (rc < 0 && l->uids)
        uids_give_back(l->uids, spec->uid);
    if (rc == 0)
        log_debug("created container %.12s (%s)", *id, spec->pool ? spec->pool : "on demand");
    return rc;
}

static void discard(struct launcher *l, char **id)
{
    if (*id)
        reaper_remove(l->reaper, *id);
    free(*id);
    *id = NULL;
}

/* A retried sandbox gets a uid of its own again: the one discarded may
 * still run as its uid until the reaper has removed it. */
int launch(struct launcher *l, const struct backend_spec *spec, double deadline_ms, int stop_fd,
           char **id, struct backend_stream **stream, struct err *err)
{
    *id = NULL;
    *stream = NULL;
    int rc = -1;
    for (int tries = 0; tries < LAUNCH_TRIES; tries++) {
        struct backend_spec s;
        struct backend_pending *pending = NULL;
        if (own_user(l, spec, &s, err) < 0 ||
            create(l, &s, tries > 0, deadline_ms, id, &pending, err) < 0)
            return -1;
        if (util_fd_signalled(stop_fd)) {
            backend_pending_free(l->backend, pending);
            rc = 1;
        } else {
            rc = backend_start(l->backend, *id, pending, deadline_ms, stop_fd, stream, err);
        }
        if (rc == 0)
            return 0;
        discard(l, id);
        if (rc != BACKEND_RETRY)
            break;
        err_clear(err);
    }
    if (rc == BACKEND_RETRY) /* the fallback asked for another: not one */
        return err_set(err, ERR_INTERNAL, "the backend asked to set a sandbox up a third time");
    return rc;
}
