/* Files runs returned, kept so that the session that ran them can read
 * them with resources/read (mcp-sandboxd://runs/<run-id>/...): each for
 * --run-store-ttl-ms, one session's under --run-store-session-max-bytes
 * and all together under --run-store-max-bytes. A new file makes room by
 * evicting its own session's oldest files first, so that one session
 * cannot push out another's; only when the whole store is still full do
 * the oldest files of all go. Only bytes and strings live here (no json-c
 * object): the workers that finish runs put, the threads that answer
 * requests get, under one lock. */
#ifndef MCPSBX_RUNSTORE_H
#define MCPSBX_RUNSTORE_H

#include <stdbool.h>
#include <stddef.h>

struct runstore;

/* Per-entry bookkeeping counted against the byte caps, so that many tiny
 * files cannot outgrow them. */
#define RUNSTORE_ENTRY_OVERHEAD 256
/* Entries at most, whatever their size; one owner gets the share of them
 * that its byte cap is of the store's. */
#define RUNSTORE_MAX_ENTRIES 65536

/* owner_max_bytes: one owner's files together; 0 or more than max_bytes
 * means max_bytes. */
struct runstore *runstore_new(long long ttl_ms, long long max_bytes, long long owner_max_bytes);
void runstore_free(struct runstore *rs);

/* Keeps a copy of data under uri for owner (an opaque session token).
 * Returns 0, or -1 when the file alone is larger than an owner may keep. */
int runstore_put(struct runstore *rs, const char *owner, const char *uri, const char *mime,
                 const char *data, size_t size);

/* The same, kept for ttl_ms instead of the store's time (0: the store's).
 * An entry that expires before older ones is unreadable from then on and
 * its bytes go when the older ones have (or to make room). */
int runstore_put_for(struct runstore *rs, const char *owner, const char *uri, const char *mime,
                     const char *data, size_t size, long long ttl_ms);

/* A copy of what uri holds, when owner put it and it has not expired or
 * been evicted; *data has a NUL after size bytes. Returns 0, or -1 for
 * every other case alike (a session learns nothing of another's runs). */
int runstore_get(struct runstore *rs, const char *owner, const char *uri, char **mime, char **data,
                 size_t *size);

/* Bytes held now, counting RUNSTORE_ENTRY_OVERHEAD each: all of them, and
 * owner's. */
size_t runstore_bytes(struct runstore *rs);
size_t runstore_owner_bytes(struct runstore *rs, const char *owner);

#endif
