#include "mcp/envelope.h"

#include <stdio.h>
#include <string.h>

#include "base/util.h"

static const char *const level_names[] = {"debug", "info",     "notice", "warning",
                                          "error", "critical", "alert",  "emergency"};

const char *envelope_level_name(enum envelope_level level)
{
    if ((int)level < 0 || (size_t)level >= ARRAY_SIZE(level_names))
        return "none";
    return level_names[level];
}

static int fail(struct envelope_error *e, int code, const char *msg)
{
    e->code = code;
    snprintf(e->msg, sizeof(e->msg), "%s", msg);
    return -1;
}

static bool is_lower_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

static bool all_zero(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != '0')
            return false;
    return true;
}

/* W3C traceparent: "vv-<trace id>-<parent id>-<flags>", lowercase hex,
 * version ff and all-zero ids invalid. Only this form is kept: it goes
 * into log lines and a sandbox's environment as it is. */
static bool traceparent_ok(const char *s, size_t n)
{
    return n == ENVELOPE_TRACEPARENT_LEN && s[2] == '-' && s[35] == '-' && s[52] == '-' &&
           is_lower_hex(s, 2) && memcmp(s, "ff", 2) != 0 && is_lower_hex(s + 3, 32) &&
           !all_zero(s + 3, 32) && is_lower_hex(s + 36, 16) && !all_zero(s + 36, 16) &&
           is_lower_hex(s + 53, 2);
}

/* tracestate: printable ASCII, no quote or backslash (it is written into
 * log lines and an environment value as it is). */
static bool tracestate_ok(const char *s, size_t n)
{
    if (n == 0 || n > ENVELOPE_TRACESTATE_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] < 0x20 || s[i] > 0x7e || s[i] == '"' || s[i] == '\\')
            return false;
    return true;
}

static const char *string_of(json_object *o, const char *key, size_t *len)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
        return NULL;
    *len = (size_t)json_object_get_string_len(v);
    return json_object_get_string(v);
}

static unsigned caps_of(json_object *caps)
{
    static const struct {
        const char *key;
        unsigned bit;
    } known[] = {{"sampling", ENVELOPE_CAP_SAMPLING},
                 {"elicitation", ENVELOPE_CAP_ELICITATION},
                 {"roots", ENVELOPE_CAP_ROOTS}};
    unsigned bits = 0;
    json_object *v = NULL;
    for (size_t i = 0; i < ARRAY_SIZE(known); i++)
        if (json_object_object_get_ex(caps, known[i].key, &v) &&
            json_object_is_type(v, json_type_object))
            bits |= known[i].bit;
    json_object *ext = NULL;
    if (json_object_object_get_ex(caps, "extensions", &ext) &&
        json_object_is_type(ext, json_type_object) &&
        json_object_object_get_ex(ext, ENVELOPE_TASKS_EXT, &v) &&
        json_object_is_type(v, json_type_object))
        bits |= ENVELOPE_CAP_TASKS;
    return bits;
}

/* The optional fields: kept when well formed, dropped otherwise. */
static void read_optional(json_object *meta, struct envelope *out)
{
    size_t n = 0;
    json_object *info = NULL;
    const char *s;
    if (json_object_object_get_ex(meta, ENVELOPE_KEY_INFO, &info) &&
        json_object_is_type(info, json_type_object)) {
        if ((s = string_of(info, "name", &n)))
            util_printable_ascii(out->client_name, sizeof(out->client_name), s, n, true);
        if ((s = string_of(info, "version", &n)))
            util_printable_ascii(out->client_version, sizeof(out->client_version), s, n, true);
    }
    if ((s = string_of(meta, "traceparent", &n)) && traceparent_ok(s, n)) {
        memcpy(out->traceparent, s, n);
        out->traceparent[n] = '\0';
        if ((s = string_of(meta, "tracestate", &n)) && tracestate_ok(s, n)) {
            memcpy(out->tracestate, s, n);
            out->tracestate[n] = '\0';
        }
    }
}

int envelope_read(json_object *params, struct envelope *out, struct envelope_error *e)
{
    memset(out, 0, sizeof(*out));
    out->level = ENVELOPE_LEVEL_NONE;
    e->code = 0;
    e->msg[0] = '\0';
    json_object *meta = NULL, *ver = NULL, *caps = NULL, *lvl = NULL;
    if (!params || !json_object_is_type(params, json_type_object) ||
        !json_object_object_get_ex(params, "_meta", &meta) ||
        !json_object_is_type(meta, json_type_object) ||
        !json_object_object_get_ex(meta, ENVELOPE_KEY_VERSION, &ver))
        return 0;
    out->modern = true;
    size_t n =
        json_object_is_type(ver, json_type_string) ? (size_t)json_object_get_string_len(ver) : 0;
    const char *v = n ? json_object_get_string(ver) : "";
    for (size_t i = 0; i < n; i++)
        if (v[i] <= 0x20 || v[i] > 0x7e)
            n = 0;
    if (n == 0 || n > ENVELOPE_VERSION_MAX)
        return fail(e, -32602,
                    "Invalid params: _meta's " ENVELOPE_KEY_VERSION
                    " must be a protocol version (a short string)");
    memcpy(out->version, v, n);
    out->version[n] = '\0';
    if (!json_object_object_get_ex(meta, ENVELOPE_KEY_CAPS, &caps) ||
        !json_object_is_type(caps, json_type_object))
        return fail(e, -32602,
                    "Invalid params: _meta must carry " ENVELOPE_KEY_CAPS
                    " (an object; {} for none)");
    out->caps = caps_of(caps);
    if (json_object_object_get_ex(meta, ENVELOPE_KEY_LOGLEVEL, &lvl)) {
        const char *name =
            json_object_is_type(lvl, json_type_string) ? json_object_get_string(lvl) : "";
        for (size_t i = 0; i < ARRAY_SIZE(level_names); i++)
            if (strcmp(name, level_names[i]) == 0)
                out->level = (enum envelope_level)i;
        if (out->level == ENVELOPE_LEVEL_NONE)
            return fail(e, -32602,
                        "Invalid params: _meta's " ENVELOPE_KEY_LOGLEVEL
                        " must be one of debug, info, notice, warning, error, critical, "
                        "alert, emergency");
    }
    read_optional(meta, out);
    return 0;
}

json_object *envelope_missing_caps_data(unsigned need)
{
    json_object *caps = json_object_new_object();
    if (need & ENVELOPE_CAP_SAMPLING)
        json_object_object_add(caps, "sampling", json_object_new_object());
    if (need & ENVELOPE_CAP_ELICITATION)
        json_object_object_add(caps, "elicitation", json_object_new_object());
    if (need & ENVELOPE_CAP_ROOTS)
        json_object_object_add(caps, "roots", json_object_new_object());
    if (need & ENVELOPE_CAP_TASKS) {
        json_object *ext = json_object_new_object();
        json_object_object_add(ext, ENVELOPE_TASKS_EXT, json_object_new_object());
        json_object_object_add(caps, "extensions", ext);
    }
    json_object *data = json_object_new_object();
    json_object_object_add(data, "requiredCapabilities", caps);
    return data;
}
