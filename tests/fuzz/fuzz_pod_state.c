/* libFuzzer harness for reading a Pod object from the API server
 * (backend/kubernetes/pod_state.h): the input is the JSON text of a Pod,
 * as a GET, a list's item or a watch event would carry it.
 *
 * Checks:
 *   - text json-c does not take, or a Pod of the wrong shape, is refused
 *     with ERR_PROTOCOL and a message;
 *   - a Pod read gives a state a caller can trust: the reason
 *     NUL-terminated within POD_REASON_MAX, printable ASCII only (it
 *     reaches log lines), an exit code of -1 or 0..255, never running
 *     once ended, OOM only with an end, and no pid;
 *   - the same text read as a listed Pod (pod_container_read) gives a
 *     valid Kubernetes name as its id and printable marks within
 *     BACKEND_TEXT_MAX, or ERR_PROTOCOL.
 *
 * Replay one input: build/fuzz/fuzz_pod_state FILE */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/kubernetes/pod_spec.h"
#include "backend/kubernetes/pod_state.h"
#include "fuzz.h"

static void check_text(const char *s)
{
    if (!s)
        return;
    size_t n = strlen(s);
    CHECK(n <= BACKEND_TEXT_MAX);
    for (size_t i = 0; i < n; i++)
        CHECK(s[i] >= 0x20 && s[i] < 0x7f);
}

static void listed(json_object *pod)
{
    struct backend_container c;
    struct err err = ERR_INIT;
    if (pod_container_read(pod, &c, &err) < 0) {
        CHECK(err.code == ERR_PROTOCOL);
        err_clear(&err);
        return;
    }
    CHECK(c.id && pod_name_ok(c.id, strlen(c.id)));
    check_text(c.instance);
    check_text(c.owner);
    CHECK(c.expires >= 0 && c.uid >= -1 && c.uid <= 0xffffffffLL);
    free(c.id);
    free(c.instance);
    free(c.owner);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_tokener *tok = json_tokener_new_ex(32);
    CHECK(tok != NULL);
    json_object *pod = json_tokener_parse_ex(tok, (const char *)data, (int)(size & 0xfffff));
    json_tokener_free(tok);
    listed(pod);
    struct pod_state s;
    struct err err = ERR_INIT;
    if (pod_state_read(pod, &s, &err) < 0) {
        CHECK(err.code == ERR_PROTOCOL);
        CHECK(err_msg(&err)[0] != '\0');
        err_clear(&err);
        json_object_put(pod);
        return 0;
    }
    size_t n = strnlen(s.reason, POD_REASON_MAX);
    CHECK(n < POD_REASON_MAX);
    for (size_t i = 0; i < n; i++)
        CHECK(s.reason[i] >= 0x20 && s.reason[i] < 0x7f);
    CHECK(s.st.exit_code >= -1 && s.st.exit_code <= 255);
    CHECK(!(s.ended && s.st.running));
    CHECK(!s.st.oom_killed || s.ended);
    CHECK(s.st.pid == 0);
    json_object_put(pod);
    return 0;
}
