#include "tools/egress_result.h"

static json_object *count(unsigned long long n)
{
    return json_object_new_int64(n > INT64_MAX ? INT64_MAX : (int64_t)n);
}

static json_object *entry_json(const struct egress_entry *e)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "host", json_object_new_string(e->host));
    json_object_object_add(o, "port", json_object_new_int((int)e->port));
    json_object_object_add(o, "allowed", json_object_new_boolean(e->allowed));
    if (e->status)
        json_object_object_add(o, "status", json_object_new_int(e->status));
    if (e->reason[0])
        json_object_object_add(o, "reason", json_object_new_string(e->reason));
    json_object_object_add(o, "bytes_up", count(e->up));
    json_object_object_add(o, "bytes_down", count(e->down));
    if (e->secrets)
        json_object_object_add(o, "secrets", json_object_new_int((int)e->secrets));
    if (e->intercepted)
        json_object_object_add(o, "intercepted", json_object_new_boolean(true));
    return o;
}

void egress_result_add(const struct egress_report *r, json_object *sc)
{
    json_object *eg = json_object_new_object();
    json_object *list = json_object_new_array_ext((int)r->n);
    for (size_t i = 0; i < r->n; i++)
        json_object_array_add(list, entry_json(&r->entries[i]));
    json_object_object_add(eg, "connections", list);
    if (r->more)
        json_object_object_add(eg, "more", count(r->more));
    json_object_object_add(eg, "allowed", count(r->allowed));
    json_object_object_add(eg, "refused", count(r->refused));
    json_object_object_add(eg, "bytes_up", count(r->up));
    json_object_object_add(eg, "bytes_down", count(r->down));
    json_object_object_add(sc, "egress", eg);
}

int egress_result_text(const struct egress_report *r, struct buf *text)
{
    if (!r->refused)
        return 0;
    if (text->len && text->data[text->len - 1] != '\n' && buf_add(text, "\n", 1) < 0)
        return -1;
    int rc = buf_addf(text, "--- egress refused %zu connection%s:", r->refused,
                      r->refused == 1 ? "" : "s");
    size_t named = 0;
    for (size_t i = 0; i < r->n && named < EGRESS_RESULT_TEXT_REFUSALS; i++) {
        const struct egress_entry *e = &r->entries[i];
        if (e->allowed)
            continue;
        rc |= buf_addf(text, "%s %s:%u (%s)", named ? ";" : "", e->host[0] ? e->host : "-", e->port,
                       e->reason);
        named++;
    }
    if (r->refused > named)
        rc |= buf_addf(text, "; %zu more", r->refused - named);
    rc |= buf_add(text, " ---", 4);
    return rc;
}
