/* libFuzzer harness for the operator's kubeconfig
 * (backend/kubernetes/kube_config.h, through yaml_json.h): the input is
 * the file's text, read for its current context and for a context named
 * "other".
 *
 * Checks:
 *   - a refused file gives nothing and ERR_INVALID (or, for a file it
 *     names, ERR_NOT_FOUND or ERR_TOO_BIG) with a message;
 *   - an accepted one gives what the backend relies on: an https server,
 *     a token or a client certificate with its key (never one without the
 *     other), relative file names made absolute against the directory.
 *
 * Replay one input: build/fuzz/fuzz_kube_config FILE */
#include <stdint.h>
#include <string.h>

#include "backend/kubernetes/kube_config.h"
#include "fuzz.h"

static void one(const char *text, size_t n, const char *context)
{
    struct kube_config c;
    struct err err = ERR_INIT;
    if (kube_config_parse(text, n, context, "/etc/kube", &c, &err) < 0) {
        CHECK(err.code == ERR_INVALID || err.code == ERR_NOT_FOUND || err.code == ERR_TOO_BIG);
        CHECK(err_msg(&err)[0] != '\0');
        CHECK(c.server == NULL && c.token == NULL && c.cert_pem == NULL);
        err_clear(&err);
        return;
    }
    CHECK(c.server && strncmp(c.server, "https://", 8) == 0);
    bool cert = c.cert_file || c.cert_pem, key = c.key_file || c.key_pem;
    CHECK(cert == key);
    CHECK(c.token || cert);
    const char *files[] = {c.ca_file, c.cert_file, c.key_file};
    for (size_t i = 0; i < 3; i++)
        CHECK(!files[i] || files[i][0] == '/');
    kube_config_free(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > KUBE_CONFIG_MAX)
        return 0;
    one((const char *)data, size, NULL);
    one((const char *)data, size, "other");
    return 0;
}
