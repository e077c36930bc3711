#include "tools/packages_result.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/util.h"

/* s cut to max bytes and made valid UTF-8, as a JSON string. */
static json_object *clean_string(const char *s, size_t max)
{
    size_t len = 0;
    char *clean = util_utf8_sanitize(s, strnlen(s, max), &len);
    json_object *o = json_object_new_string_len(clean, (int)len);
    free(clean);
    return o;
}

json_object *packages_result_json(const struct packages_report *r)
{
    json_object *a = json_object_new_array();
    for (size_t i = 0; r && i < r->n; i++) {
        const struct packages_report_item *it = &r->items[i];
        json_object *o = json_object_new_object();
        json_object_object_add(o, "name", clean_string(it->name ? it->name : "", REQS_NAME_MAX));
        json_object_object_add(
            o, "version", it->version ? clean_string(it->version, PACKAGES_VERSION_MAX) : NULL);
        json_object_object_add(o, "source",
                               json_object_new_string(r->cached ? "cached" : "installed"));
        json_object_object_add(o, "ms", json_new_ms(r->ms));
        json_object_array_add(a, o);
    }
    return a;
}

void packages_result_add(const struct packages_report *r, json_object *sc)
{
    json_object_object_add(sc, "packages", packages_result_json(r));
}

int packages_result_text(const struct packages_report *r, struct buf *text)
{
    if (!r || !r->n)
        return 0;
    if (text->len && text->data[text->len - 1] != '\n' && buf_add(text, "\n", 1) < 0)
        return -1;
    int rc = buf_addf(text, "--- packages:");
    size_t named = r->n < PACKAGES_RESULT_TEXT_ITEMS ? r->n : PACKAGES_RESULT_TEXT_ITEMS;
    for (size_t i = 0; i < named; i++) {
        const struct packages_report_item *it = &r->items[i];
        const char *name = it->name ? it->name : "";
        rc |= buf_addf(text, "%s %.*s", i ? "," : "", (int)strnlen(name, REQS_NAME_MAX), name);
        if (it->version)
            rc |= buf_addf(text, " %.*s", (int)strnlen(it->version, PACKAGES_VERSION_MAX),
                           it->version);
    }
    if (r->n > named)
        rc |= buf_addf(text, ", %zu more", r->n - named);
    double ms = r->ms < 0 || isnan(r->ms) ? 0.0 : r->ms > 1e12 ? 1e12 : r->ms;
    if (r->cached)
        rc |= buf_addf(text, " (cached, %.0f ms) ---", ms);
    else
        rc |= buf_addf(text, " (installed in %.0f ms) ---", ms);
    return rc;
}
