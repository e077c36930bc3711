/* The Docker Engine API operations the daemon needs, against Docker or
 * Podman's compatible API, with a pinned API version. Thread-safe. */
#ifndef MCPSBX_ENGINE_H
#define MCPSBX_ENGINE_H

#include <json-c/json.h>
#include <stdbool.h>

#include "backend/backend.h"
#include "backend/docker/engine_http.h"
#include "base/err.h"

#define ENGINE_API_VERSION "v1.41"

/* Labels put on every container we create, used to find our leftovers. */
#define ENGINE_LABEL_MANAGED  "io.mcp-sandboxd.managed"
#define ENGINE_LABEL_INSTANCE "io.mcp-sandboxd.instance"
/* Unix time after which nobody needs the container: any daemon removes it. */
#define ENGINE_LABEL_EXPIRES "io.mcp-sandboxd.expires"
/* The process that created it, so a daemon on the same host can tell a
 * crashed predecessor's orphans from another live daemon's containers. */
#define ENGINE_LABEL_OWNER "io.mcp-sandboxd.owner"
/* On a pooled container: the pool it was made for ("python"). */
#define ENGINE_LABEL_POOL "io.mcp-sandboxd.pool"
/* The uid it runs as: the list endpoint shows labels, not Config.User. */
#define ENGINE_LABEL_UID "io.mcp-sandboxd.uid"

struct engine;

/* socket_path is a filesystem path (no unix:// prefix); copied. */
struct engine *engine_new(const char *socket_path);
void engine_free(struct engine *e);
const char *engine_socket(const struct engine *e);

/* GET /version: fills *name ("Docker Engine" / "Podman Engine" / ...) and
 * *version (caller frees both). Short timeout. */
int engine_version(struct engine *e, char **name, char **version, struct err *err);

/* GET /_ping with a short timeout: cheap reachability for health checks. */
int engine_ping(struct engine *e, struct err *err);

/* create, attach and start take deadline_ms, a util_now_ms() time their
 * request must end by (0 = their usual timeouts only), so a stalled engine
 * cannot hold a run past its time limit. */

/* POST /containers/create with body (borrowed). *id is allocated. A missing
 * image fails with ERR_NOT_FOUND and a message naming the image. */
int engine_create(struct engine *e, json_object *body, double deadline_ms, char **id,
                  struct err *err);

/* POST /containers/{id}/attach?stream=1&stdin=1&stdout=1&stderr=1, upgraded. */
int engine_attach(struct engine *e, const char *id, double deadline_ms,
                  struct engine_http_conn **out, struct err *err);

int engine_start(struct engine *e, const char *id, double deadline_ms, struct err *err);

/* POST /containers/{id}/kill (SIGKILL). A container that already stopped
 * is not an error. */
int engine_kill(struct engine *e, const char *id, struct err *err);

/* Room for an OCI runtime's name as inspect reports it (cut beyond). */
#define ENGINE_RUNTIME_MAX 64

/* POST /containers/{id}/wait with a timeout, then inspect for OOMKilled
 * and the runtime the container ran under ("" when unknown or gone).
 * Podman 4.3 (runc, cgroup v1) reports OOMKilled false even for an OOM
 * kill: there, exit code 137 under a memory limit is the only sign. */
int engine_wait(struct engine *e, const char *id, long timeout_ms, struct backend_state *st,
                char runtime[ENGINE_RUNTIME_MAX], struct err *err);

/* GET /containers/{id}/json -> State. */
int engine_inspect_state(struct engine *e, const char *id, struct backend_state *st,
                         struct err *err);

/* 1 when State.OOMKilled can be trusted (Docker), 0 when the engine is
 * known to leave it false after a real OOM kill (Podman 4), -1 while the
 * engine's kind is unknown (engine_version has not answered yet). */
int engine_oom_flag_reliable(const struct engine *e);

/* Whether the engine is Podman, asking GET /version first (by deadline_ms,
 * as create) when no answer to it came yet: 1, 0, or -1 with err. */
int engine_is_podman(struct engine *e, double deadline_ms, struct err *err);

/* Whether the engine runs runtime (runsc) with an argument that lets a
 * sandbox connect to a host unix socket bound into it: 1 or 0, by GET
 * /info's Runtimes; -1 with err when the engine does not answer. A
 * runtime the engine does not list has no such argument. */
int engine_runtime_host_uds(struct engine *e, const char *runtime, struct err *err);

/* DELETE /containers/{id}?force=1&v=1, once. A container already gone is
 * not an error. Failures can be brief (Podman refuses with 500 "container
 * state improper" while the container is stopping; a moment later the same
 * request succeeds): the caller retries. */
int engine_remove(struct engine *e, const char *id, struct err *err);

/* GET /containers/json?all=1 filtered by label ENGINE_LABEL_MANAGED, within
 * timeout_ms (0 = the usual control timeout). expires, instance, owner
 * and uid come from ENGINE_LABEL_EXPIRES, _INSTANCE, _OWNER and _UID. *out is an
 * allocated array of *n entries; free with backend_container_list_free. */
int engine_list_managed(struct engine *e, long timeout_ms, struct backend_container **out,
                        size_t *n, struct err *err);

#endif
