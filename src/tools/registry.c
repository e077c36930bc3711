#include "tools/registry.h"

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/util.h"
#include "tools/schema.h"
#include "tools/tooldef.h"

static const struct registry_entry tools[] = {
    {"run_python_code", tooldef_run_python_code, .kind = TOOL_LANGUAGE, .language = "python",
     .runner = LANGTABLE_RUNNER_PYTHON},
    {"run_js_code", tooldef_run_js_code, .kind = TOOL_LANGUAGE, .language = "javascript",
     .runner = LANGTABLE_RUNNER_NODE},
    {"execute_code", tooldef_execute_code, .kind = TOOL_EXECUTE},
    {"validate_code", tooldef_validate_code, .kind = TOOL_VALIDATE},
    {"list_languages", tooldef_list_languages, .kind = TOOL_LIST_LANGUAGES},
    {"create_session", tooldef_create_session, .kind = TOOL_CREATE_SESSION},
    {"list_sessions", tooldef_list_sessions, .kind = TOOL_LIST_SESSIONS},
    {"close_session", tooldef_close_session, .kind = TOOL_CLOSE_SESSION},
    {"install_packages", tooldef_install_packages, .kind = TOOL_INSTALL_PACKAGES},
};

_Static_assert(ARRAY_SIZE(tools) == REGISTRY_TOOLS, "REGISTRY_TOOLS counts the tools");

size_t registry_index(const struct registry_entry *t)
{
    return (size_t)(t - tools);
}

const struct registry_entry *registry_at(size_t i)
{
    return i < ARRAY_SIZE(tools) ? &tools[i] : NULL;
}

const struct registry_entry *registry_find(const char *name)
{
    for (size_t i = 0; i < ARRAY_SIZE(tools); i++)
        if (strcmp(tools[i].name, name) == 0)
            return &tools[i];
    return NULL;
}

const struct registry_entry *registry_for_kind(enum tool_kind kind)
{
    for (size_t i = 0; i < ARRAY_SIZE(tools); i++)
        if (tools[i].kind == kind)
            return &tools[i];
    return NULL;
}

bool registry_takes(const struct registry_entry *t, const struct langtable_lang *l)
{
    switch (t->kind) {
    case TOOL_LANGUAGE:
        return strcmp(t->language, l->name) == 0 && l->runner == t->runner;
    case TOOL_EXECUTE:
    case TOOL_CREATE_SESSION:
        return true;
    case TOOL_VALIDATE:
        return l->runner != LANGTABLE_RUNNER_GENERIC;
    case TOOL_INSTALL_PACKAGES:
        return l->packages != NULL;
    case TOOL_LIST_LANGUAGES:
    case TOOL_LIST_SESSIONS:
    case TOOL_CLOSE_SESSION:
        break;
    }
    return false;
}

bool registry_is_session_tool(const struct registry_entry *t)
{
    return t->kind == TOOL_CREATE_SESSION || t->kind == TOOL_LIST_SESSIONS ||
           t->kind == TOOL_CLOSE_SESSION || t->kind == TOOL_INSTALL_PACKAGES;
}

bool registry_offered(const struct registry_entry *t, const struct config *cfg)
{
    return !registry_is_session_tool(t) || cfg->max_code_sessions > 0;
}

const struct registry_entry *registry_own_tool(const struct langtable_lang *l)
{
    for (size_t i = 0; i < ARRAY_SIZE(tools); i++)
        if (tools[i].kind == TOOL_LANGUAGE && registry_takes(&tools[i], l))
            return &tools[i];
    return NULL;
}

size_t registry_variant(const struct tools_features *f)
{
    return (f->annotations ? 1u : 0u) | (f->structured ? 2u : 0u) | (f->tasks ? 4u : 0u);
}

/* The names of the languages that have a network (egress false) or an
 * egress list (true), ", "-separated; *n counts them. */
static char *names_with(const struct config *cfg, const struct langtable *langs, bool egress,
                        size_t *n)
{
    struct buf b;
    buf_init(&b, 4096);
    *n = 0;
    for (size_t i = 0; i < langtable_count(langs); i++) {
        const struct langtable_lang *l = langtable_get(langs, i);
        bool has = egress ? l->egress != NULL : langtable_network(l, cfg);
        /* 64 names of 32 bytes fit the buffer. */
        if (has && buf_addf(&b, "%s%s", (*n)++ ? ", " : "", l->name) < 0)
            break;
    }
    char *list = buf_take(&b, NULL);
    return list ? list : xstrdup("");
}

/* "No network access; a call cannot change that", or which languages
 * have one, and which reach named hosts through the egress gateway; *any
 * when some do either. */
static char *network_text(const struct config *cfg, const struct langtable *langs, bool *any)
{
    size_t n = 0, n_egress = 0, total = langtable_count(langs);
    char *list = names_with(cfg, langs, false, &n);
    char *egress = names_with(cfg, langs, true, &n_egress);
    char *net = n == 0 ? xstrdup("No network access")
                : n == total
                    ? xstrdup("Network access (the operator allows it)")
                    : xasprintf("Network access for %s only (the operator allows it)", list);
    char *text = n_egress == 0
                     ? xasprintf("%s; a call cannot change that", net)
                     : xasprintf("%s but through the daemon's HTTP proxy, to the hosts of the "
                                 "egress allow-list list_languages shows for %s; a call can "
                                 "narrow that list (egress), never widen it, nor change the rest",
                                 net, egress);
    *any = n > 0 || n_egress > 0;
    free(list);
    free(egress);
    free(net);
    return text;
}

/* Which languages install packages, with their installers ("python
 * (pip), javascript (npm)"), and whether only the cache serves them; *any
 * when an install may reach an index. */
static char *installs_text(const struct config *cfg, const struct langtable *langs, bool *any)
{
    struct buf b;
    buf_init(&b, 4096);
    size_t n = 0;
    for (size_t i = 0; i < langtable_count(langs); i++) {
        const struct langtable_lang *l = langtable_get(langs, i);
        /* 64 names of 32 bytes and their installers fit the buffer. */
        if (l->packages && buf_addf(&b, "%s%s (%s)", n++ ? ", " : "", l->name,
                                    reqs_installer_name(l->packages->installer)) < 0)
            break;
    }
    char *list = buf_take(&b, NULL);
    *any = n > 0 && !cfg->packages_offline;
    char *text = n == 0 ? xstrdup("No language installs packages on this server.")
                 : cfg->packages_offline
                     ? xasprintf("Languages that install packages here: %s; offline: only sets "
                                 "already in the server's cache.",
                                 list)
                     : xasprintf("Languages that install packages here: %s.", list);
    free(list);
    return text;
}

/* t's description with the server's facts: a run tool's network and
 * limits, create_session's limits, install_packages' languages; *open
 * when the tool may reach the world outside the sandbox's. */
static char *description(const struct tooldef_checked *t, enum tool_kind kind,
                         const struct config *cfg, const struct langtable *langs, bool *open)
{
    *open = false;
    if (kind == TOOL_LANGUAGE || kind == TOOL_EXECUTE) {
        char *net = network_text(cfg, langs, open);
        char *desc = xasprintf("%s %s. Default limits: %lld ms, %lld MiB memory (at most %lld ms, "
                               "%lld MiB); output kept up to %lld bytes.",
                               t->description, net, cfg->timeout_ms, cfg->memory_mb,
                               cfg->max_timeout_ms, cfg->max_memory_mb, cfg->max_output_bytes);
        free(net);
        return desc;
    }
    if (kind == TOOL_CREATE_SESSION)
        return xasprintf("%s At most %lld open sessions per client; a session ends after %lld ms "
                         "without a call, and %lld ms after it was created.",
                         t->description, cfg->max_code_sessions_per_owner,
                         cfg->code_session_idle_ms, cfg->code_session_max_age_ms);
    if (kind == TOOL_INSTALL_PACKAGES) {
        char *installs = installs_text(cfg, langs, open);
        char *desc = xasprintf("%s %s", t->description, installs);
        free(installs);
        return desc;
    }
    return xstrdup(t->description);
}

/* One Tool object for f from a checked definition; shares the schemas
 * (reference counts: everything here stays on the calling thread). A tool
 * that runs code gets the limits in its description and the runs' output
 * schema; a check or a listing is read-only and closed to the world. */
static json_object *tool_json(const struct tooldef_checked *t, enum tool_kind kind,
                              json_object *output_schema, const struct config *cfg,
                              const struct langtable *langs, const struct tools_features *f)
{
    bool runs = kind == TOOL_LANGUAGE || kind == TOOL_EXECUTE;
    /* A check or a listing changes nothing anywhere. */
    bool read_only = !runs && kind != TOOL_CREATE_SESSION && kind != TOOL_CLOSE_SESSION &&
                     kind != TOOL_INSTALL_PACKAGES;
    json_object *o = json_object_new_object();
    json_object_object_add(o, "name", json_object_new_string(t->name));
    if (f->structured)
        json_object_object_add(o, "title", json_object_new_string(t->title));
    bool open = false;
    char *desc = description(t, kind, cfg, langs, &open);
    json_object_object_add(o, "description", json_object_new_string(desc));
    free(desc);
    json_object_object_add(o, "inputSchema", json_object_get(t->input_schema));
    if (f->structured)
        json_object_object_add(
            o, "outputSchema",
            json_object_get(t->output_schema ? t->output_schema : output_schema));
    if (f->annotations) {
        /* Each run is a fresh sandbox (or its session's); closing a
         * session removes what its calls left. */
        json_object *a = json_object_new_object();
        json_object_object_add(a, "title", json_object_new_string(t->title));
        json_object_object_add(a, "readOnlyHint", json_object_new_boolean(read_only));
        json_object_object_add(a, "destructiveHint",
                               json_object_new_boolean(kind == TOOL_CLOSE_SESSION));
        /* Installing a set the session already has changes nothing. */
        json_object_object_add(a, "idempotentHint",
                               json_object_new_boolean(read_only || kind == TOOL_INSTALL_PACKAGES));
        /* Open only where the operator gave sandboxes a network or
         * named hosts, or installs reach a package index. */
        json_object_object_add(a, "openWorldHint", json_object_new_boolean(open));
        json_object_object_add(o, "annotations", a);
    }
    /* A call that takes a run slot may run as a task; the others answer
     * at once. */
    if (f->tasks && kind != TOOL_LIST_LANGUAGES && kind != TOOL_LIST_SESSIONS &&
        kind != TOOL_CLOSE_SESSION) {
        json_object *e = json_object_new_object();
        json_object_object_add(e, "taskSupport", json_object_new_string("optional"));
        json_object_object_add(o, "execution", e);
    }
    return o;
}

static json_object *builtin(const char *text, const char *what, struct err *err)
{
    json_object *o = tooldef_parse(text, strlen(text), err);
    if (!o)
        err_wrap(err, "built-in %s", what);
    return o;
}

/* e (taken) as the enum of schema's "language" property, if it has one. */
static void set_enum(json_object *def, const char *schema_key, json_object *e)
{
    json_object *schema = NULL, *props = NULL, *lang = NULL;
    if (!json_object_object_get_ex(def, schema_key, &schema) ||
        !json_object_object_get_ex(schema, "properties", &props) ||
        !json_object_object_get_ex(props, "language", &lang)) {
        json_object_put(e);
        return;
    }
    json_object_object_add(lang, "enum", e);
}

/* The names of the languages t takes, in the table's order, then their
 * aliases when with_aliases; NULL for none. */
static json_object *names_taken(const struct registry_entry *t, const struct langtable *langs,
                                bool with_aliases)
{
    json_object *e = json_object_new_array();
    for (size_t i = 0; i < langtable_count(langs); i++)
        if (registry_takes(t, langtable_get(langs, i)))
            json_object_array_add(e, json_object_new_string(langtable_get(langs, i)->name));
    for (size_t i = 0; with_aliases && i < langtable_count(langs); i++) {
        const struct langtable_lang *l = langtable_get(langs, i);
        for (size_t k = 0; registry_takes(t, l) && k < l->aliases.n; k++)
            json_object_array_add(e, json_object_new_string(l->aliases.v[k]));
    }
    if (json_object_array_length(e) == 0) {
        json_object_put(e);
        return NULL;
    }
    return e;
}

json_object *registry_definition(const struct registry_entry *t, const struct langtable *langs,
                                 struct err *err)
{
    json_object *def = builtin(t->def, t->name, err);
    json_object *e = NULL;
    if (def && (t->kind == TOOL_EXECUTE || t->kind == TOOL_CREATE_SESSION) &&
        (e = names_taken(t, langs, true)))
        set_enum(def, "inputSchema", e);
    if (def && t->kind == TOOL_VALIDATE && (e = names_taken(t, langs, false))) {
        set_enum(def, "inputSchema", e);
        set_enum(def, "outputSchema", names_taken(t, langs, false));
    }
    return def;
}

int registry_serialize(const struct config *cfg, const struct langtable *langs,
                       char *json[TOOLS_VARIANTS], size_t len[TOOLS_VARIANTS],
                       struct schema_node *inputs[REGISTRY_TOOLS], struct err *err)
{
    for (size_t i = 0; i < REGISTRY_TOOLS; i++)
        inputs[i] = NULL;
    for (size_t v = 0; v < TOOLS_VARIANTS; v++) {
        json[v] = NULL;
        len[v] = 0;
    }
    json_object *defs[ARRAY_SIZE(tools)] = {NULL};
    struct tooldef_checked parsed[ARRAY_SIZE(tools)];
    int rc = -1;
    json_object *output = builtin(tooldef_output_schema, "output schema", err);
    if (!output)
        goto out;
    if (tooldef_check_output_schema(output, err) < 0) {
        err_wrap(err, "built-in output schema");
        goto out;
    }
    for (size_t i = 0; i < ARRAY_SIZE(tools); i++) {
        defs[i] = registry_definition(&tools[i], langs, err);
        if (!defs[i])
            goto out;
        if (tooldef_check(defs[i], &parsed[i], err) < 0) {
            err_wrap(err, "built-in definition of %s", tools[i].name);
            goto out;
        }
        if (strcmp(parsed[i].name, tools[i].name) != 0) {
            err_set(err, ERR_INTERNAL, "the built-in definition of %s is named %s", tools[i].name,
                    parsed[i].name);
            goto out;
        }
        inputs[i] = schema_compile(parsed[i].input_schema);
    }
    for (size_t v = 0; v < TOOLS_VARIANTS; v++) {
        struct tools_features f = {
            .annotations = (v & 1u) != 0, .structured = (v & 2u) != 0, .tasks = (v & 4u) != 0};
        json_object *arr = json_object_new_array();
        for (size_t i = 0; i < ARRAY_SIZE(tools); i++)
            if (registry_offered(&tools[i], cfg))
                json_object_array_add(arr,
                                      tool_json(&parsed[i], tools[i].kind, output, cfg, langs, &f));
        size_t n = 0;
        const char *text = json_object_to_json_string_length(
            arr, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
        json[v] = xstrndup(text, n);
        len[v] = n;
        json_object_put(arr);
    }
    rc = 0;
out:
    /* The build checked every definition; this is a build that did not. */
    if (rc < 0 && err)
        err->code = ERR_INTERNAL;
    for (size_t i = 0; i < ARRAY_SIZE(tools); i++)
        json_object_put(defs[i]);
    json_object_put(output);
    if (rc < 0) {
        registry_serialized_free(json, len);
        registry_inputs_free(inputs);
    }
    return rc;
}

void registry_inputs_free(struct schema_node *inputs[REGISTRY_TOOLS])
{
    for (size_t i = 0; i < REGISTRY_TOOLS; i++) {
        schema_node_free(inputs[i]);
        inputs[i] = NULL;
    }
}

void registry_serialized_free(char *json[TOOLS_VARIANTS], size_t len[TOOLS_VARIANTS])
{
    for (size_t v = 0; v < TOOLS_VARIANTS; v++) {
        free(json[v]);
        json[v] = NULL;
        len[v] = 0;
    }
}
