/* libFuzzer harness for the answer to a Kubernetes attach's WebSocket
 * upgrade (backend/kubernetes/kube_ws.h, kube_ws_check_answer): the
 * input is the answer's head as the API server (or anything posing as
 * it) sends it.
 *
 * Checks:
 *   - a refused head is ERR_PROTOCOL with a message;
 *   - an accepted 101 names websocket and carries the key's accept value
 *     (so a head that does not cannot pass);
 *   - the status is three digits and a content length is -1 or >= 0.
 *
 * Replay one input: build/fuzz/fuzz_kube_ws FILE */
#include <stdint.h>
#include <string.h>

#include "backend/kubernetes/kube_ws.h"
#include "fuzz.h"

#define KEY "dGhlIHNhbXBsZSBub25jZQ=="

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > KUBE_WS_MAX_HEAD)
        return 0;
    struct kube_ws_answer a;
    struct err err = ERR_INIT;
    if (kube_ws_check_answer((const char *)data, size, KEY, &a, &err) < 0) {
        CHECK(err.code == ERR_PROTOCOL);
        CHECK(err_msg(&err)[0] != '\0');
        err_clear(&err);
        return 0;
    }
    CHECK(a.status >= 0 && a.status <= 999);
    CHECK(a.content_length >= -1);
    if (a.status == 101)
        CHECK(memmem(data, size, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", 28) != NULL);
    return 0;
}
