/* libFuzzer harness for a Kubernetes watch event about a Pod
 * (backend/kubernetes/kube_pods.h, kube_pods_event): the input is one
 * event line as the API server (or anything posing as it) sends it.
 *
 * Checks:
 *   - a line that is not an event is KUBE_POD_BAD with ERR_PROTOCOL and a
 *     message, and nothing else is;
 *   - a state read is consistent: a running sandbox has not ended, and
 *     the reason is a NUL-terminated printable text.
 *
 * Replay one input: build/fuzz/fuzz_kube_pods FILE */
#include <stdint.h>
#include <string.h>

#include "backend/kubernetes/kube_pods.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > KUBE_API_MAX_EVENT)
        return 0;
    struct pod_state st;
    memset(&st, 0, sizeof(st));
    struct err err = ERR_INIT;
    enum kube_pod_event e = kube_pods_event((const char *)data, size, &st, &err);
    if (e == KUBE_POD_BAD) {
        CHECK(err.code == ERR_PROTOCOL);
        CHECK(err_msg(&err)[0] != '\0');
        err_clear(&err);
        return 0;
    }
    CHECK(err.code == ERR_OK);
    if (e == KUBE_POD_STATE) {
        size_t n = strnlen(st.reason, sizeof(st.reason));
        CHECK(n < sizeof(st.reason));
        for (size_t i = 0; i < n; i++)
            CHECK(st.reason[i] >= ' ' && st.reason[i] < 0x7f);
        CHECK(!(st.st.running && st.ended));
    }
    return 0;
}
