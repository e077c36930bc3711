#include "tools/variables.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

#define STRINGIFY_(x) #x
#define STRINGIFY(x)  STRINGIFY_(x)

/* A name list as sorted (pointer, length) pairs into the embedded text,
 * built once: a call may bring a hundred thousand names. */
struct name {
    const char *p;
    size_t len;
};

struct name_table {
    struct name *names;
    size_t n;
};

/* By runner kind (sandbox/languages/langtable.h): the generic runner's programs get
 * scalar variables as environment variables, so its list is of those. */
static struct name_table tables[3];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static int name_cmp(const void *a, const void *b)
{
    const struct name *x = a;
    const struct name *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->p, y->p, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* One name per line; '#' starts a comment line. */
static void table_build(struct name_table *t, const char *text)
{
    size_t cap = 1;
    for (const char *p = text; *p; p++)
        cap += *p == '\n';
    t->names = xcalloc(cap, sizeof(*t->names));
    for (const char *p = text; *p;) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len && *p != '#')
            t->names[t->n++] = (struct name){p, len};
        p += len + (end ? 1 : 0);
    }
    qsort(t->names, t->n, sizeof(*t->names), name_cmp);
}

static void tables_build(void)
{
    table_build(&tables[LANGTABLE_RUNNER_PYTHON], variables_python_names);
    table_build(&tables[LANGTABLE_RUNNER_NODE], variables_javascript_names);
    table_build(&tables[LANGTABLE_RUNNER_GENERIC], variables_environment_names);
}

static bool listed(enum langtable_runner kind, const char *name)
{
    pthread_once(&tables_once, tables_build);
    const struct name_table *t = &tables[kind];
    struct name key = {name, strlen(name)};
    return bsearch(&key, t->names, t->n, sizeof(*t->names), name_cmp) != NULL;
}

static bool identifier(enum langtable_runner kind, const char *name)
{
    bool js = kind == LANGTABLE_RUNNER_NODE;
    for (const char *p = name; *p; p++) {
        unsigned char c = (unsigned char)*p;
        bool letter =
            (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || (js && c == '$');
        if (!letter && !(p > name && c >= '0' && c <= '9'))
            return false;
    }
    return *name != '\0';
}

bool variables_name_ok(const struct langtable_lang *lang, const char *name, const char **why)
{
    enum langtable_runner kind = lang->runner;
    if (strlen(name) > VARIABLES_MAX_NAME) {
        *why = "is longer than " STRINGIFY(VARIABLES_MAX_NAME) " bytes";
        return false;
    }
    if (!identifier(kind, name)) {
        *why = kind == LANGTABLE_RUNNER_PYTHON ? "is not an ASCII Python identifier"
               : kind == LANGTABLE_RUNNER_NODE ? "is not an ASCII JavaScript identifier"
                                               : "is not an environment variable name "
                                                 "([A-Za-z_][A-Za-z0-9_]*)";
        return false;
    }
    if (strncmp(name, "__", 2) == 0) {
        *why = "begins with two underscores (the interpreter's own names)";
        return false;
    }
    if (kind == LANGTABLE_RUNNER_GENERIC &&
        (strncmp(name, "LD_", 3) == 0 || strncmp(name, "MCPSBX_", 7) == 0 ||
         strncmp(name, "BASH_", 5) == 0)) {
        *why = "is an environment variable the sandbox, the loader or the shell reads";
        return false;
    }
    if (listed(kind, name)) {
        *why = kind == LANGTABLE_RUNNER_PYTHON
                   ? "would hide a Python keyword, builtin or loaded module"
               : kind == LANGTABLE_RUNNER_NODE
                   ? "would hide a JavaScript reserved word, global or Object.prototype member"
                   : "is an environment variable the sandbox, the loader or the shell reads";
        return false;
    }
    return true;
}

int variables_encode(json_object *vars, const struct langtable_lang *lang, long long max_bytes,
                     char **json, size_t *len, struct err *err)
{
    *json = NULL;
    *len = 0;
    if (!json_object_is_type(vars, json_type_object))
        return err_set(err, ERR_INVALID, "argument 'variables' must be an object");
    json_object_object_foreach(vars, name, value)
    {
        (void)value;
        const char *why = NULL;
        if (!variables_name_ok(lang, name, &why))
            return err_set(err, ERR_INVALID, "variable '%.*s' %s",
                           util_utf8_prefix(name, VARIABLES_MAX_NAME), name, why);
    }
    size_t n = 0;
    const char *text = json_object_to_json_string_length(
        vars, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
    if (!text)
        return err_set(err, ERR_INTERNAL, "cannot encode the variables");
    if ((long long)n > max_bytes)
        return err_set(err, ERR_TOO_BIG,
                       "argument 'variables' is %zu bytes as JSON; the limit is %lld bytes", n,
                       max_bytes);
    *json = xstrdup(text);
    *len = n;
    return 0;
}
