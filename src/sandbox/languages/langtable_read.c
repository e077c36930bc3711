#include "sandbox/languages/langtable_read.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "base/jsonpos.h"
#include "sandbox/languages/langtable_packages.h"

/* The file, its languages array, an entry, its packages object, one of
 * its lists: deeper is never valid, and the tokener stops there. */
#define JSON_DEPTH 8

#define NAME_FORM "a name ([a-z][a-z0-9+#-]*, at most 32)"
#define ARG_FORM  "a command-line argument"

static const char *const checker_names[] = {
    [LANGTABLE_CHECKER_NONE] = "none",
    [LANGTABLE_CHECKER_TSC] = "tsc",
};

/* ---- messages and memory ---------------------------------------------------- */

int langtable_fail_at(struct err *err, const struct origin *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = xvasprintf(fmt, ap);
    va_end(ap);
    if (o->line > 0)
        err_set(err, ERR_INVALID, "%s:%d: %s", o->file, o->line, msg);
    else
        err_set(err, ERR_INVALID, "%s: %s", o->file, msg);
    free(msg);
    return -1;
}

const char *langtable_quote(char *buf, size_t cap, const char *s, size_t n)
{
    util_printable_ascii(buf, cap, s, n, true);
    return buf;
}

void langtable_strv_free(struct langtable_strv *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    *s = (struct langtable_strv){0};
}

void langtable_lang_free(struct langtable_lang *l)
{
    for (size_t f = 0; f < N_FIELDS; f++) {
        void *at = (char *)l + langtable_fields[f].offset;
        if (langtable_fields[f].kind == K_STRING)
            free(*(char **)at);
        else if (langtable_fields[f].kind == K_LIST)
            langtable_strv_free(at);
        else if (langtable_fields[f].kind == K_EGRESS)
            free(*(struct egress_patterns **)at);
        else if (langtable_fields[f].kind == K_PACKAGES)
            langtable_packages_free(*(struct langtable_packages **)at);
    }
    free(l->preload_joined);
    memset(l, 0, sizeof(*l));
}

void langtable_drafts_free(struct file_drafts *fd)
{
    for (size_t i = 0; i < fd->n; i++)
        langtable_lang_free(&fd->d[i].l);
    free(fd->d);
    *fd = (struct file_drafts){0};
}

/* ---- the forms of values ------------------------------------------------------ */

static bool is_lower_alnum(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(unsigned char c)
{
    return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* Whether s[0..n) is min to max characters, each a letter or digit (lower
 * case only when lower) or one of punct; a NUL byte never is one. */
static bool spelled(const char *s, size_t n, size_t min, size_t max, bool lower, const char *punct)
{
    if (n < min || n > max)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!(lower ? is_lower_alnum(c) : is_alnum(c)) && (c == '\0' || !strchr(punct, c)))
            return false;
    }
    return true;
}

/* A name or an alias: [a-z][a-z0-9+#-]*. */
static bool valid_name(const char *s, size_t n)
{
    return n > 0 && s[0] >= 'a' && s[0] <= 'z' && spelled(s, n, 1, LANGTABLE_NAME_MAX, true, "+#-");
}

static bool valid_image(const char *s, size_t n)
{
    return util_ascii_word(s, n, LANGTABLE_IMAGE_MAX);
}

static bool valid_source_file(const char *s, size_t n)
{
    return n > 0 && s[0] != '.' && spelled(s, n, 1, LANGTABLE_SOURCE_FILE_MAX, false, "._+-");
}

/* An argv element: no control characters (the runner's request and the
 * engine's create body carry it as text). */
static bool valid_arg(const char *s, size_t n)
{
    if (n == 0 || n > LANGTABLE_ARG_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return false;
    return true;
}

/* Debian's package names: [a-z0-9][a-z0-9+.-]+. */
static bool valid_package(const char *s, size_t n)
{
    return n >= 2 && is_lower_alnum((unsigned char)s[0]) &&
           spelled(s, n, 2, LANGTABLE_PACKAGE_MAX, true, "+.-");
}

/* An OCI runtime's name, as --runtime takes it. */
static bool valid_runtime(const char *s, size_t n)
{
    return spelled(s, n, 1, LANGTABLE_RUNTIME_MAX, false, "._-");
}

bool langtable_valid_env(const char *s, size_t n)
{
    const char *eq = memchr(s, '=', n);
    if (!eq || eq == s || !valid_arg(s, n) || (s[0] >= '0' && s[0] <= '9'))
        return false;
    for (const char *p = s; p < eq; p++)
        if (!is_alnum((unsigned char)*p) && *p != '_')
            return false;
    return true;
}

/* What a preload list holds is checked against the runner kind after the
 * merge, when the runner is known. */
bool langtable_valid_module(const char *s, size_t n, enum langtable_runner r)
{
    bool python = r == LANGTABLE_RUNNER_PYTHON;
    /* A leading '/' is a path, which the node runner would load as a file. */
    if (n == 0 || n > LANGTABLE_MODULE_MAX || s[0] == '/')
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        bool ok = is_alnum(c) || c == '_' || c == '.' || (!python && (c == ':' || c == '/'));
        if (!ok)
            return false;
        if (python && c == '.' && (i == 0 || i + 1 == n || s[i - 1] == '.'))
            return false;
        if (python && c >= '0' && c <= '9' && (i == 0 || s[i - 1] == '.'))
            return false;
    }
    return true;
}

/* ---- the keys ------------------------------------------------------------------ */

#define AT(field) offsetof(struct langtable_lang, field)

const struct field_def langtable_fields[N_FIELDS] = {
    [F_NAME] = {"name", AT(name), .kind = K_STRING, .valid = valid_name, .form = NAME_FORM},
    [F_ALIASES] = {"aliases", AT(aliases), .kind = K_LIST, .max = LANGTABLE_MAX_ALIASES,
                   .valid = valid_name, .form = NAME_FORM},
    [F_IMAGE] = {"image", AT(image), .kind = K_STRING, .valid = valid_image,
                 .form = "an image name (printable ASCII, no spaces)"},
    [F_SOURCE_FILE] = {"source_file", AT(source_file), .kind = K_STRING, .valid = valid_source_file,
                       .form = "a plain file name ([A-Za-z0-9._+-], no '/', not starting with "
                               "'.')"},
    [F_RUNNER] = {"runner", AT(runner), .kind = K_RUNNER},
    [F_COMPILE] = {"compile", AT(compile), .kind = K_LIST, .nullable = true, .argv = true,
                   .max = LANGTABLE_ARGV_MAX, .valid = valid_arg, .form = ARG_FORM},
    [F_COMPILE_TIMEOUT] = {"compile_timeout_ms", AT(compile_timeout_ms), .kind = K_INT,
                           .lo = LANGTABLE_COMPILE_TIMEOUT_MIN_MS,
                           .hi = LANGTABLE_COMPILE_TIMEOUT_MAX_MS},
    [F_TYPECHECK] = {"typecheck", AT(typecheck), .kind = K_LIST, .nullable = true, .argv = true,
                     .max = LANGTABLE_ARGV_MAX, .valid = valid_arg, .form = ARG_FORM},
    [F_TYPECHECK_WARM] = {"typecheck_warm", AT(typecheck_warm), .kind = K_CHECKER},
    [F_RUN] = {"run", AT(run), .kind = K_LIST, .argv = true, .max = LANGTABLE_ARGV_MAX,
               .valid = valid_arg, .form = ARG_FORM},
    [F_VERSION] = {"version", AT(version), .kind = K_LIST, .argv = true, .max = LANGTABLE_ARGV_MAX,
                   .valid = valid_arg, .form = ARG_FORM},
    [F_POOL_SIZE] = {"pool_size", AT(pool_size), .kind = K_INT, .lo = 0, .hi = LANGTABLE_POOL_MAX},
    [F_POOL_MAX] = {"pool_max", AT(pool_max), .kind = K_INT, .lo = 0, .hi = LANGTABLE_POOL_MAX},
    /* The form depends on the runner, known after the merge. */
    [F_PRELOAD] = {"preload", AT(preload), .kind = K_LIST, .max = LANGTABLE_PRELOAD_MAX,
                   .valid = valid_arg, .form = "a module name"},
    [F_NETWORK] = {"network_allowed", AT(network_allowed), .kind = K_BOOL},
    [F_IMAGE_PACKAGES] = {"image_packages", AT(image_packages), .kind = K_LIST,
                          .max = LANGTABLE_PACKAGES_MAX, .valid = valid_package,
                          .form = "a Debian package name"},
    [F_PACKAGES] = {"packages", AT(packages), .kind = K_PACKAGES, .nullable = true},
    [F_PLOTS] = {"plots", AT(plots), .kind = K_BOOL},
    [F_ENVIRONMENT] = {"environment", AT(environment), .kind = K_LIST, .max = LANGTABLE_ENV_MAX,
                       .valid = langtable_valid_env,
                       .form = "a variable (NAME=value, NAME [A-Za-z_][A-Za-z0-9_]*)"},
    [F_RUNTIME] = {"runtime", AT(runtime), .kind = K_STRING, .nullable = true,
                   .valid = valid_runtime, .form = "a runtime name ([A-Za-z0-9._-], at most 64)"},
    [F_EGRESS] = {"egress", AT(egress), .kind = K_EGRESS, .nullable = true,
                  .max = EGRESS_PATTERNS_MAX},
    [F_DISABLED] = {"disabled", 0, .kind = K_DISABLED},
};

#undef AT

/* ---- reading values ------------------------------------------------------------- */

static int get_string(json_object *v, const struct field_def *f, char **out, struct err *err)
{
    if (!json_object_is_type(v, json_type_string))
        return err_set(err, ERR_INVALID, "'%s' must be a string", f->key);
    const char *s = json_object_get_string(v);
    size_t n = (size_t)json_object_get_string_len(v);
    char q[LANGTABLE_QUOTE_MAX + 1];
    if (!f->valid(s, n))
        return err_set(err, ERR_INVALID, "'%s': \"%s\" is not %s", f->key,
                       langtable_quote(q, sizeof(q), s, n), f->form);
    free(*out);
    *out = xstrndup(s, n);
    return 0;
}

/* A list of strings, each checked with f->valid; an argv must not be
 * empty. */
static int get_list(json_object *v, const struct field_def *f, struct langtable_strv *out,
                    struct err *err)
{
    if (!json_object_is_type(v, json_type_array))
        return err_set(err, ERR_INVALID, "'%s' must be an array of strings", f->key);
    size_t n = json_object_array_length(v);
    if (f->argv && n == 0)
        return err_set(err, ERR_INVALID, "'%s' must not be empty", f->key);
    if (n > f->max)
        return err_set(err, ERR_INVALID, "'%s' has more than %zu items", f->key, f->max);
    struct langtable_strv s = {.v = xcalloc(n + 1, sizeof(char *))};
    for (size_t i = 0; i < n; i++) {
        json_object *item = json_object_array_get_idx(v, i);
        if (!json_object_is_type(item, json_type_string)) {
            langtable_strv_free(&s);
            return err_set(err, ERR_INVALID, "'%s'[%zu] must be a string", f->key, i);
        }
        const char *str = json_object_get_string(item);
        size_t len = (size_t)json_object_get_string_len(item);
        char q[LANGTABLE_QUOTE_MAX + 1];
        if (!f->valid(str, len)) {
            langtable_strv_free(&s);
            return err_set(err, ERR_INVALID, "'%s'[%zu]: \"%s\" is not %s", f->key, i,
                           langtable_quote(q, sizeof(q), str, len), f->form);
        }
        s.v[s.n++] = xstrndup(str, len);
    }
    langtable_strv_free(out);
    *out = s;
    return 0;
}

/* Host patterns (egress/pattern.h), one a string; none is NULL. */
static int get_egress(json_object *v, const struct field_def *f, struct egress_patterns **out,
                      struct err *err)
{
    if (!json_object_is_type(v, json_type_array))
        return err_set(err, ERR_INVALID, "'%s' must be an array of host patterns", f->key);
    size_t n = json_object_array_length(v);
    if (n > f->max)
        return err_set(err, ERR_INVALID, "'%s' has more than %zu items", f->key, f->max);
    struct egress_patterns *list = n ? xcalloc(1, sizeof(*list)) : NULL;
    for (size_t i = 0; i < n; i++) {
        json_object *item = json_object_array_get_idx(v, i);
        if (!json_object_is_type(item, json_type_string)) {
            free(list);
            return err_set(err, ERR_INVALID, "'%s'[%zu] must be a string", f->key, i);
        }
        if (egress_patterns_add(list, json_object_get_string(item),
                                (size_t)json_object_get_string_len(item), err) < 0) {
            free(list);
            return err_wrap(err, "'%s'[%zu]", f->key, i);
        }
    }
    free(*out);
    *out = list;
    return 0;
}

static int get_int(json_object *v, const struct field_def *f, long long *out, struct err *err)
{
    if (!json_object_is_type(v, json_type_int))
        return err_set(err, ERR_INVALID, "'%s' must be an integer", f->key);
    errno = 0;
    int64_t x = json_object_get_int64(v);
    if (errno || x < f->lo || x > f->hi)
        return err_set(err, ERR_INVALID, "'%s' must be in [%lld, %lld]", f->key, f->lo, f->hi);
    *out = (long long)x;
    return 0;
}

static int get_bool(json_object *v, const char *key, bool *out, struct err *err)
{
    if (!json_object_is_type(v, json_type_boolean))
        return err_set(err, ERR_INVALID, "'%s' must be true or false", key);
    *out = json_object_get_boolean(v);
    return 0;
}

static int get_runner(json_object *v, enum langtable_runner *out, struct err *err)
{
    const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
    for (int r = LANGTABLE_RUNNER_PYTHON; s && r <= LANGTABLE_RUNNER_GENERIC; r++)
        if (strcmp(s, langtable_runner_name((enum langtable_runner)r)) == 0) {
            *out = (enum langtable_runner)r;
            return 0;
        }
    return err_set(err, ERR_INVALID, "'runner' must be \"python\", \"node\" or \"generic\"");
}

static int get_checker(json_object *v, enum langtable_checker *out, struct err *err)
{
    if (json_object_is_type(v, json_type_null)) {
        *out = LANGTABLE_CHECKER_NONE;
        return 0;
    }
    const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
    for (size_t i = 0; s && i < ARRAY_SIZE(checker_names); i++)
        if (strcmp(s, checker_names[i]) == 0) {
            *out = (enum langtable_checker)i;
            return 0;
        }
    return err_set(err, ERR_INVALID, "'typecheck_warm' must be \"tsc\", \"none\" or null");
}

const char *langtable_checker_name(enum langtable_checker c)
{
    return (size_t)c < ARRAY_SIZE(checker_names) ? checker_names[c] : "?";
}

/* Reads one value into d; d->set and d->from record it. */
static int read_field(struct draft *d, enum field f, json_object *v, const struct origin *o,
                      struct err *err)
{
    const struct field_def *def = &langtable_fields[f];
    void *at = (char *)&d->l + def->offset;
    bool disabled = false;
    int rc = 0;
    if (def->nullable && json_object_is_type(v, json_type_null)) {
        if (def->kind == K_STRING) {
            free(*(char **)at);
            *(char **)at = NULL;
        } else if (def->kind == K_EGRESS) {
            free(*(struct egress_patterns **)at);
            *(struct egress_patterns **)at = NULL;
        } else if (def->kind == K_PACKAGES) {
            langtable_packages_free(*(struct langtable_packages **)at);
            *(struct langtable_packages **)at = NULL;
        } else {
            langtable_strv_free(at);
        }
    } else {
        switch (def->kind) {
        case K_STRING:
            rc = get_string(v, def, at, err);
            break;
        case K_LIST:
            rc = get_list(v, def, at, err);
            break;
        case K_INT:
            rc = get_int(v, def, at, err);
            break;
        case K_BOOL:
            rc = get_bool(v, def->key, at, err);
            break;
        case K_RUNNER:
            rc = get_runner(v, at, err);
            break;
        case K_CHECKER:
            rc = get_checker(v, at, err);
            break;
        case K_EGRESS:
            rc = get_egress(v, def, at, err);
            break;
        case K_PACKAGES:
            rc = langtable_packages_read(v, at, err);
            break;
        case K_DISABLED:
            rc = get_bool(v, def->key, &disabled, err);
            if (rc == 0 && !disabled)
                return 0; /* "disabled": false changes nothing */
            break;
        }
    }
    if (rc < 0)
        return -1;
    d->set[f] = true;
    d->from[f] = *o;
    return 0;
}

static int field_of(const char *key)
{
    for (int f = 0; f < N_FIELDS; f++)
        if (strcmp(langtable_fields[f].key, key) == 0)
            return f;
    return -1;
}

/* ---- one entry ------------------------------------------------------------------ */

/* Where in the file an entry's key is: its own line, else the entry's. */
static struct origin key_origin(const struct origin *entry, const struct jsonpos *pos, size_t node,
                                const char *key)
{
    struct origin o = *entry;
    int line = jsonpos_line(pos, jsonpos_member(pos, node, key));
    if (line > 0)
        o.line = line;
    return o;
}

/* Reads entry i of a file (node in pos) into d. */
static int read_entry(json_object *entry, const struct origin *eo, const struct jsonpos *pos,
                      size_t node, size_t i, struct draft *d, struct err *err)
{
    memset(d, 0, sizeof(*d));
    d->entry = *eo;
    if (!json_object_is_type(entry, json_type_object))
        return langtable_fail_at(err, eo, "languages[%zu] must be an object", i);
    size_t twice = jsonpos_repeated(pos, node);
    if (twice != JSONPOS_NONE ||
        jsonpos_count(pos, node) != (size_t)json_object_object_length(entry)) {
        struct origin o = *eo;
        if (jsonpos_line(pos, twice) > 0)
            o.line = jsonpos_line(pos, twice);
        return langtable_fail_at(err, &o, "languages[%zu] has a key twice", i);
    }
    json_object *name = NULL;
    if (!json_object_object_get_ex(entry, "name", &name))
        return langtable_fail_at(err, eo, "languages[%zu] has no 'name'", i);
    struct origin no = key_origin(eo, pos, node, "name");
    if (read_field(d, F_NAME, name, &no, err) < 0)
        return langtable_fail_at(err, &no, "languages[%zu]: %s", i, err_msg(err));
    json_object_object_foreach(entry, key, val)
    {
        struct origin ko = key_origin(eo, pos, node, key);
        int f = field_of(key);
        char q[LANGTABLE_QUOTE_MAX + 1];
        if (f < 0)
            return langtable_fail_at(err, &ko, "language '%s': unknown key '%s'", d->l.name,
                                     langtable_quote(q, sizeof(q), key, strlen(key)));
        if (f == F_NAME)
            continue;
        /* "packages" was the image's Debian packages' key. */
        if (f == F_PACKAGES && json_object_is_type(val, json_type_array))
            f = F_IMAGE_PACKAGES;
        if (read_field(d, (enum field)f, val, &ko, err) < 0)
            return langtable_fail_at(err, &ko, "language '%s': %s", d->l.name, err_msg(err));
    }
    for (int f = 0; d->set[F_DISABLED] && f < N_FIELDS; f++)
        if (f != F_NAME && f != F_DISABLED && d->set[f])
            return langtable_fail_at(err, &d->from[f],
                                     "language '%s': a disabled language takes no other key",
                                     d->l.name);
    return 0;
}

/* ---- one file ------------------------------------------------------------------- */

/* The JSON itself: strict, exactly one value, no escaped NUL (json-c ends
 * a key there, and C strings end there). *root is NULL for the JSON null. */
static int parse(const char *text, size_t len, json_object **root, struct origin *fo,
                 struct err *err)
{
    const char *nul = memmem(text, len, "\\u0000", 6);
    if (nul) {
        jsonpos_where(text, len, (size_t)(nul - text), &fo->line, NULL);
        return langtable_fail_at(err, fo, "\\u0000 is not allowed");
    }
    struct json_exact why;
    if (json_parse_exact(text, len, JSON_DEPTH, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8,
                         root, &why) == 0)
        return 0;
    jsonpos_where(text, len, why.offset, &fo->line, NULL);
    switch (why.status) {
    case JSON_EXACT_INCOMPLETE:
        langtable_fail_at(err, fo, "the JSON ends too early");
        break;
    case JSON_EXACT_TRAILING:
        langtable_fail_at(err, fo, "more text after the JSON value");
        break;
    case JSON_EXACT_NOMEM:
        langtable_fail_at(err, fo, "out of memory");
        break;
    case JSON_EXACT_SYNTAX:
    case JSON_EXACT_OK:
        langtable_fail_at(err, fo, "not valid JSON: %s", why.why);
        break;
    }
    return -1;
}

/* The file's one key, "languages", and its array; fo's line becomes that
 * key's. NULL with err otherwise. */
static json_object *languages_of(json_object *root, const struct jsonpos *pos, struct origin *fo,
                                 struct err *err)
{
    fo->line = 1;
    if (!json_object_is_type(root, json_type_object)) {
        langtable_fail_at(err, fo, "must be an object {\"languages\": [...]}");
        return NULL;
    }
    size_t twice = jsonpos_repeated(pos, JSONPOS_ROOT);
    if (twice != JSONPOS_NONE ||
        jsonpos_count(pos, JSONPOS_ROOT) != (size_t)json_object_object_length(root)) {
        fo->line = jsonpos_line(pos, twice);
        langtable_fail_at(err, fo, "a top-level key appears twice");
        return NULL;
    }
    json_object *langs = NULL;
    json_object_object_foreach(root, key, val)
    {
        char q[LANGTABLE_QUOTE_MAX + 1];
        if (strcmp(key, "languages") != 0) {
            langtable_fail_at(err, fo, "unknown top-level key '%s' (only \"languages\")",
                              langtable_quote(q, sizeof(q), key, strlen(key)));
            return NULL;
        }
        langs = val;
    }
    int line = jsonpos_line(pos, jsonpos_member(pos, JSONPOS_ROOT, "languages"));
    fo->line = line > 0 ? line : 1;
    if (!langs)
        langtable_fail_at(err, fo, "no \"languages\" array");
    else if (!json_object_is_type(langs, json_type_array))
        langtable_fail_at(err, fo, "\"languages\" must be an array");
    else if (json_object_array_length(langs) > LANGTABLE_MAX_LANGUAGES)
        langtable_fail_at(err, fo, "more than %d languages", LANGTABLE_MAX_LANGUAGES);
    else
        return langs;
    return NULL;
}

/* Each entry of langs read on its own, and no name twice in one file. */
static int read_entries(json_object *langs, const struct jsonpos *pos, const char *name, int level,
                        struct file_drafts *fd, struct err *err)
{
    size_t n = json_object_array_length(langs);
    size_t array = jsonpos_member(pos, JSONPOS_ROOT, "languages");
    fd->d = xcalloc(n ? n : 1, sizeof(struct draft));
    for (size_t i = 0; i < n; i++) {
        size_t node = jsonpos_element(pos, array, i);
        struct origin eo = {.file = name, .line = jsonpos_line(pos, node), .level = level};
        if (read_entry(json_object_array_get_idx(langs, i), &eo, pos, node, i, &fd->d[i], err) <
            0) {
            langtable_lang_free(&fd->d[i].l);
            return -1;
        }
        fd->n++;
        for (size_t k = 0; k < i; k++)
            if (strcmp(fd->d[k].l.name, fd->d[i].l.name) == 0)
                return langtable_fail_at(err, &fd->d[i].from[F_NAME],
                                         "language '%s' is listed twice (line %d)", fd->d[i].l.name,
                                         fd->d[k].entry.line);
    }
    return 0;
}

int langtable_read_file(const char *text, size_t len, const char *name, int level,
                        struct file_drafts *out, struct err *err)
{
    struct origin fo = {.file = name, .line = 0, .level = level};
    struct jsonpos *pos = NULL;
    struct file_drafts fd = {0};
    int rc = -1;
    *out = (struct file_drafts){0};
    if (len > LANGTABLE_FILE_MAX_BYTES)
        return langtable_fail_at(err, &fo, "larger than %d bytes", LANGTABLE_FILE_MAX_BYTES);
    json_object *root = NULL;
    if (parse(text, len, &root, &fo, err) < 0)
        return -1;
    pos = jsonpos_scan(text, len);
    json_object *langs = languages_of(root, pos, &fo, err);
    if (!langs || read_entries(langs, pos, name, level, &fd, err) < 0)
        goto out;
    *out = fd;
    fd = (struct file_drafts){0};
    rc = 0;
out:
    langtable_drafts_free(&fd);
    jsonpos_free(pos);
    json_object_put(root);
    return rc;
}
