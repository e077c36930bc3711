/* Handles: the ids a client is given for state that lives in one daemon (a
 * code session, a run's returned files, a task, an HTTP session). A handle
 * is "<daemon>.<32 hex>": the daemon's name (--daemon-id) and 128 random
 * bits. A front end for several daemons routes on the part before the dot;
 * a daemon handed another's handle can say whose it is instead of "no such
 * thing". The name is a DNS label so that a pod or host name fits and the
 * first dot always ends it.
 *
 * The name is set once at start, before any thread that makes or reads a
 * handle runs, and only read afterwards. Unset (unit tests), handles are
 * the bare 32 hex digits. */
#ifndef MCPSBX_HANDLE_H
#define MCPSBX_HANDLE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

#define HANDLE_DAEMON_MAX   63 /* a DNS label */
#define HANDLE_RANDOM_BYTES 16
#define HANDLE_RANDOM_LEN   (2 * HANDLE_RANDOM_BYTES)
#define HANDLE_MAX          (HANDLE_DAEMON_MAX + 1 + HANDLE_RANDOM_LEN)

enum handle_kind {
    HANDLE_BAD,   /* not a handle at all */
    HANDLE_MINE,  /* this daemon's form (it may still name nothing) */
    HANDLE_OTHER, /* another daemon's, or this one's under an earlier name */
};

/* True when name is a DNS label: 1 to 63 of [a-z0-9-], not starting or
 * ending with '-'. */
bool handle_daemon_valid(const char *name);

/* Sets this daemon's name; "" picks 8 random hex digits, so handles from
 * an earlier start are told apart. -1 with ERR_INVALID for a bad name. */
int handle_set_daemon(const char *name, struct err *err);

/* This daemon's name; "" until handle_set_daemon. */
const char *handle_daemon(void);

/* A fresh handle into out; -1 when the system gives no random bytes. */
int handle_new(char out[HANDLE_MAX + 1]);

/* What h is. For HANDLE_OTHER the daemon it names goes to daemon (which may
 * be NULL); it is a valid name, so it is safe to echo and log. */
enum handle_kind handle_parse(const char *h, char daemon[HANDLE_DAEMON_MAX + 1]);

/* The random part of a handle that handle_parse accepted: log lines show
 * its first few digits, never the whole handle, which is a bearer secret
 * without auth. */
const char *handle_tail(const char *h);

/* Same handle, compared in time independent of where they differ. */
bool handle_equal(const char *a, const char *b);

#endif
