#include "tools/variables.h"

#include <string.h>

#include "base/util.h"

#define STRINGIFY_(x) #x
#define STRINGIFY(x)  STRINGIFY_(x)

static const char *names_of(enum exec_language lang)
{
    return lang == EXEC_PYTHON ? variables_python_names : variables_javascript_names;
}

/* Whether list (one name per line, '#' comment lines) holds name. A scan:
 * a few hundred short lines, and no state to share between threads. */
static bool listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && *p != '#' && memcmp(p, name, n) == 0)
            return true;
        p += len + (end ? 1 : 0);
    }
    return false;
}

static bool identifier(enum exec_language lang, const char *name)
{
    bool js = lang == EXEC_JAVASCRIPT;
    for (const char *p = name; *p; p++) {
        unsigned char c = (unsigned char)*p;
        bool letter =
            (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || (js && c == '$');
        if (!letter && !(p > name && c >= '0' && c <= '9'))
            return false;
    }
    return *name != '\0';
}

bool variables_name_ok(enum exec_language lang, const char *name, const char **why)
{
    if (strlen(name) > VARIABLES_MAX_NAME) {
        *why = "is longer than " STRINGIFY(VARIABLES_MAX_NAME) " bytes";
        return false;
    }
    if (!identifier(lang, name)) {
        *why = lang == EXEC_PYTHON ? "is not an ASCII Python identifier"
                                   : "is not an ASCII JavaScript identifier";
        return false;
    }
    if (strncmp(name, "__", 2) == 0) {
        *why = "begins with two underscores (the interpreter's own names)";
        return false;
    }
    if (listed(names_of(lang), name)) {
        *why = lang == EXEC_PYTHON
                   ? "would hide a Python keyword, builtin or loaded module"
                   : "would hide a JavaScript reserved word, global or Object.prototype member";
        return false;
    }
    return true;
}

int variables_encode(json_object *vars, enum exec_language lang, long long max_bytes, char **json,
                     size_t *len, struct err *err)
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
            return err_set(err, ERR_INVALID, "variable '%.*s' %s", VARIABLES_MAX_NAME, name, why);
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
