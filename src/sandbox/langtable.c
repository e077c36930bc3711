#include "sandbox/langtable.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/buf.h"
#include "base/config.h"
#include "base/json.h"
#include "base/util.h"

/* Generated from src/sandbox/languages/builtin.json (Makefile). */
extern const char langtable_builtin_src[];

/* The file, its languages array, an entry, one of its lists: deeper is
 * never valid, and the tokener stops there. */
#define JSON_DEPTH 8
/* Keys of one entry whose line is remembered; more are all errors. */
#define KEYS_KEPT    24
#define KEY_KEPT_MAX 31
/* A message quotes at most this much of the file. */
#define QUOTE_MAX 40

struct langtable {
    struct langtable_lang *langs;
    size_t n;
};

enum field {
    F_NAME,
    F_ALIASES,
    F_IMAGE,
    F_SOURCE_FILE,
    F_RUNNER,
    F_COMPILE,
    F_COMPILE_TIMEOUT,
    F_TYPECHECK,
    F_TYPECHECK_WARM,
    F_RUN,
    F_VERSION,
    F_POOL_SIZE,
    F_PRELOAD,
    F_NETWORK,
    F_PACKAGES,
    F_DISABLED,
    N_FIELDS
};

static const char *const field_keys[N_FIELDS] = {
    [F_NAME] = "name",
    [F_ALIASES] = "aliases",
    [F_IMAGE] = "image",
    [F_SOURCE_FILE] = "source_file",
    [F_RUNNER] = "runner",
    [F_COMPILE] = "compile",
    [F_COMPILE_TIMEOUT] = "compile_timeout_ms",
    [F_TYPECHECK] = "typecheck",
    [F_TYPECHECK_WARM] = "typecheck_warm",
    [F_RUN] = "run",
    [F_VERSION] = "version",
    [F_POOL_SIZE] = "pool_size",
    [F_PRELOAD] = "preload",
    [F_NETWORK] = "network_allowed",
    [F_PACKAGES] = "packages",
    [F_DISABLED] = "disabled",
};

static const char *const checker_names[] = {
    [LANGTABLE_CHECKER_NONE] = "none",
    [LANGTABLE_CHECKER_TSC] = "tsc",
};

static const char *const runner_names[] = {
    [LANGTABLE_RUNNER_PYTHON] = "python",
    [LANGTABLE_RUNNER_NODE] = "node",
    [LANGTABLE_RUNNER_GENERIC] = "generic",
};

/* Where a value came from, for messages after the merge. */
struct origin {
    const char *file;
    int line;  /* 0: unknown */
    int level; /* 0 built-in, 1 the operator's file */
};

/* A language while the table is built: the values, which keys set them,
 * and where. */
struct draft {
    struct langtable_lang l;
    bool set[N_FIELDS];
    struct origin from[N_FIELDS];
    struct origin entry;
};

/* Line numbers of one file's entries and their keys, found by a scan of
 * text json-c already accepted (json-c keeps no positions). */
struct key_pos {
    char key[KEY_KEPT_MAX + 1];
    int line;
};

struct entry_pos {
    int line;
    size_t n_keys; /* all of them, duplicates included */
    struct key_pos keys[KEYS_KEPT];
    int dup_line; /* a key seen twice (raw spelling), 0: none seen */
};

struct positions {
    struct entry_pos entries[LANGTABLE_MAX_LANGUAGES];
    size_t n_entries; /* may exceed the array: counted on */
    size_t n_top_keys;
    int languages_line; /* of the "languages" key */
    int dup_top_line;
};

/* ---- messages ------------------------------------------------------------ */

static int fail_at(struct err *err, const struct origin *o, const char *fmt, ...) ATTR_PRINTF(3, 4);

static int fail_at(struct err *err, const struct origin *o, const char *fmt, ...)
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

static int line_at(const char *text, size_t offset)
{
    int line = 1;
    for (size_t i = 0; i < offset; i++)
        if (text[i] == '\n')
            line++;
    return line;
}

/* ---- strings and lists ----------------------------------------------------- */

static void strv_free(struct langtable_strv *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i]);
    free(s->v);
    *s = (struct langtable_strv){0};
}

static void lang_free(struct langtable_lang *l)
{
    free(l->name);
    strv_free(&l->aliases);
    free(l->image);
    free(l->source_file);
    strv_free(&l->compile);
    strv_free(&l->typecheck);
    strv_free(&l->run);
    strv_free(&l->version);
    strv_free(&l->preload);
    free(l->preload_joined);
    strv_free(&l->packages);
    memset(l, 0, sizeof(*l));
}

static bool is_lower_alnum(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(unsigned char c)
{
    return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* A name or an alias: [a-z][a-z0-9+#-]*. */
static bool valid_name(const char *s, size_t n)
{
    if (n == 0 || n > LANGTABLE_NAME_MAX || !(s[0] >= 'a' && s[0] <= 'z'))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!is_lower_alnum((unsigned char)s[i]) && !strchr("+#-", s[i]))
            return false;
    return true;
}

static bool valid_image(const char *s, size_t n)
{
    if (n == 0 || n > LANGTABLE_IMAGE_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] <= ' ' || s[i] > '~')
            return false;
    return true;
}

static bool valid_source_file(const char *s, size_t n)
{
    if (n == 0 || n > LANGTABLE_SOURCE_FILE_MAX || s[0] == '.')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!is_alnum((unsigned char)s[i]) && !strchr("._+-", s[i]))
            return false;
    return true;
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
    if (n < 2 || n > LANGTABLE_PACKAGE_MAX || !is_lower_alnum((unsigned char)s[0]))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!is_lower_alnum((unsigned char)s[i]) && !strchr("+.-", s[i]))
            return false;
    return true;
}

/* What a preload list holds, checked against the runner kind after the
 * merge (python: dotted identifiers; node: a built-in such as "fs",
 * "node:fs", "fs/promises"). */
static bool valid_module(const char *s, size_t n, enum langtable_runner r)
{
    bool python = r == LANGTABLE_RUNNER_PYTHON;
    if (n == 0 || n > LANGTABLE_MODULE_MAX)
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

/* Quotes text from a file in a message: printable, cut. */
static const char *quote(char *buf, size_t cap, const char *s, size_t n)
{
    util_printable_ascii(buf, cap, s, n, true);
    return buf;
}

/* ---- reading one entry ------------------------------------------------------ */

static const struct key_pos *find_key(const struct entry_pos *ep, const char *key)
{
    if (!ep)
        return NULL;
    size_t kept = ep->n_keys < KEYS_KEPT ? ep->n_keys : KEYS_KEPT;
    for (size_t i = 0; i < kept; i++)
        if (strcmp(ep->keys[i].key, key) == 0)
            return &ep->keys[i];
    return NULL;
}

static struct origin key_origin(const struct origin *entry, const struct entry_pos *ep,
                                const char *key)
{
    struct origin o = *entry;
    const struct key_pos *kp = find_key(ep, key);
    if (kp)
        o.line = kp->line;
    return o;
}

static int get_string(json_object *v, const char *key, bool (*valid)(const char *, size_t),
                      const char *form, char **out, struct err *err)
{
    if (!json_object_is_type(v, json_type_string))
        return err_set(err, ERR_INVALID, "'%s' must be a string", key);
    const char *s = json_object_get_string(v);
    size_t n = (size_t)json_object_get_string_len(v);
    char q[QUOTE_MAX + 1];
    if (!valid(s, n))
        return err_set(err, ERR_INVALID, "'%s': \"%s\" is not %s", key, quote(q, sizeof(q), s, n),
                       form);
    free(*out);
    *out = xstrndup(s, n);
    return 0;
}

/* A list of strings, each checked with valid; an argv must not be empty. */
static int get_list(json_object *v, const char *key, size_t max, bool argv,
                    bool (*valid)(const char *, size_t), const char *form,
                    struct langtable_strv *out, struct err *err)
{
    if (!json_object_is_type(v, json_type_array))
        return err_set(err, ERR_INVALID, "'%s' must be an array of strings", key);
    size_t n = json_object_array_length(v);
    if (argv && n == 0)
        return err_set(err, ERR_INVALID, "'%s' must not be empty", key);
    if (n > max)
        return err_set(err, ERR_INVALID, "'%s' has more than %zu items", key, max);
    struct langtable_strv s = {.v = xcalloc(n + 1, sizeof(char *))};
    for (size_t i = 0; i < n; i++) {
        json_object *item = json_object_array_get_idx(v, i);
        if (!json_object_is_type(item, json_type_string)) {
            strv_free(&s);
            return err_set(err, ERR_INVALID, "'%s'[%zu] must be a string", key, i);
        }
        const char *str = json_object_get_string(item);
        size_t len = (size_t)json_object_get_string_len(item);
        char q[QUOTE_MAX + 1];
        if (!valid(str, len)) {
            strv_free(&s);
            return err_set(err, ERR_INVALID, "'%s'[%zu]: \"%s\" is not %s", key, i,
                           quote(q, sizeof(q), str, len), form);
        }
        s.v[s.n++] = xstrndup(str, len);
    }
    strv_free(out);
    *out = s;
    return 0;
}

static int get_int(json_object *v, const char *key, long long min, long long max, long long *out,
                   struct err *err)
{
    if (!json_object_is_type(v, json_type_int))
        return err_set(err, ERR_INVALID, "'%s' must be an integer", key);
    errno = 0;
    int64_t x = json_object_get_int64(v);
    if (errno || x < min || x > max)
        return err_set(err, ERR_INVALID, "'%s' must be in [%lld, %lld]", key, min, max);
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

/* The index of v's string in names[0..n), or -1 (not one of them, or not
 * a string). */
static int name_index(json_object *v, const char *const *names, size_t n)
{
    if (!json_object_is_type(v, json_type_string))
        return -1;
    const char *s = json_object_get_string(v);
    for (size_t i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0)
            return (int)i;
    return -1;
}

static int get_runner(json_object *v, enum langtable_runner *out, struct err *err)
{
    int i = name_index(v, runner_names, ARRAY_SIZE(runner_names));
    if (i < 0)
        return err_set(err, ERR_INVALID, "'runner' must be \"python\", \"node\" or \"generic\"");
    *out = (enum langtable_runner)i;
    return 0;
}

static int get_checker(json_object *v, enum langtable_checker *out, struct err *err)
{
    int i = json_object_is_type(v, json_type_null)
                ? LANGTABLE_CHECKER_NONE
                : name_index(v, checker_names, ARRAY_SIZE(checker_names));
    if (i < 0)
        return err_set(err, ERR_INVALID, "'typecheck_warm' must be \"tsc\", \"none\" or null");
    *out = (enum langtable_checker)i;
    return 0;
}

static int field_of(const char *key)
{
    for (int f = 0; f < N_FIELDS; f++)
        if (strcmp(field_keys[f], key) == 0)
            return f;
    return -1;
}

/* Reads one value into d; d->set and d->from record it. */
static int read_field(struct draft *d, int f, json_object *v, const struct origin *o,
                      struct err *err)
{
    struct langtable_lang *l = &d->l;
    const char *key = field_keys[f];
    int rc = 0;
    switch ((enum field)f) {
    case F_NAME:
        rc =
            get_string(v, key, valid_name, "a name ([a-z][a-z0-9+#-]*, at most 32)", &l->name, err);
        break;
    case F_ALIASES:
        rc = get_list(v, key, LANGTABLE_MAX_ALIASES, false, valid_name,
                      "a name ([a-z][a-z0-9+#-]*, at most 32)", &l->aliases, err);
        break;
    case F_IMAGE:
        rc = get_string(v, key, valid_image, "an image name (printable ASCII, no spaces)",
                        &l->image, err);
        break;
    case F_SOURCE_FILE:
        rc = get_string(v, key, valid_source_file,
                        "a plain file name ([A-Za-z0-9._+-], no '/', not starting with '.')",
                        &l->source_file, err);
        break;
    case F_RUNNER:
        rc = get_runner(v, &l->runner, err);
        break;
    case F_COMPILE:
        if (json_object_is_type(v, json_type_null)) {
            strv_free(&l->compile);
            break;
        }
        rc = get_list(v, key, LANGTABLE_ARGV_MAX, true, valid_arg, "a command-line argument",
                      &l->compile, err);
        break;
    case F_COMPILE_TIMEOUT:
        rc = get_int(v, key, LANGTABLE_COMPILE_TIMEOUT_MIN_MS, LANGTABLE_COMPILE_TIMEOUT_MAX_MS,
                     &l->compile_timeout_ms, err);
        break;
    case F_TYPECHECK:
        if (json_object_is_type(v, json_type_null)) {
            strv_free(&l->typecheck);
            break;
        }
        rc = get_list(v, key, LANGTABLE_ARGV_MAX, true, valid_arg, "a command-line argument",
                      &l->typecheck, err);
        break;
    case F_TYPECHECK_WARM:
        rc = get_checker(v, &l->typecheck_warm, err);
        break;
    case F_RUN:
        rc = get_list(v, key, LANGTABLE_ARGV_MAX, true, valid_arg, "a command-line argument",
                      &l->run, err);
        break;
    case F_VERSION:
        rc = get_list(v, key, LANGTABLE_ARGV_MAX, true, valid_arg, "a command-line argument",
                      &l->version, err);
        break;
    case F_POOL_SIZE:
        rc = get_int(v, key, 0, LANGTABLE_POOL_MAX, &l->pool_size, err);
        break;
    case F_PRELOAD:
        /* The form depends on the runner, known after the merge. */
        rc = get_list(v, key, LANGTABLE_PRELOAD_MAX, false, valid_arg, "a module name", &l->preload,
                      err);
        break;
    case F_NETWORK:
        rc = get_bool(v, key, &l->network_allowed, err);
        break;
    case F_PACKAGES:
        rc = get_list(v, key, LANGTABLE_PACKAGES_MAX, false, valid_package, "a Debian package name",
                      &l->packages, err);
        break;
    case F_DISABLED: {
        bool b = false;
        rc = get_bool(v, key, &b, err);
        if (rc == 0 && !b)
            return 0; /* "disabled": false changes nothing */
        break;
    }
    case N_FIELDS:
        break;
    }
    if (rc < 0)
        return -1;
    d->set[f] = true;
    d->from[f] = *o;
    return 0;
}

/* Reads entry i of a file into d. */
static int read_entry(json_object *entry, const struct origin *eo, const struct entry_pos *ep,
                      size_t i, struct draft *d, struct err *err)
{
    memset(d, 0, sizeof(*d));
    d->entry = *eo;
    if (!json_object_is_type(entry, json_type_object))
        return fail_at(err, eo, "languages[%zu] must be an object", i);
    if (ep && ep->dup_line) {
        struct origin o = *eo;
        o.line = ep->dup_line;
        return fail_at(err, &o, "languages[%zu] has a key twice", i);
    }
    if (ep && ep->n_keys != (size_t)json_object_object_length(entry))
        return fail_at(err, eo, "languages[%zu] has a key twice", i);
    json_object *name = NULL;
    if (!json_object_object_get_ex(entry, "name", &name)) {
        return fail_at(err, eo, "languages[%zu] has no 'name'", i);
    }
    struct origin no = key_origin(eo, ep, "name");
    if (read_field(d, F_NAME, name, &no, err) < 0)
        return fail_at(err, &no, "languages[%zu]: %s", i, err_msg(err));
    json_object_object_foreach(entry, key, val)
    {
        struct origin ko = key_origin(eo, ep, key);
        int f = field_of(key);
        char q[QUOTE_MAX + 1];
        if (f < 0)
            return fail_at(err, &ko, "language '%s': unknown key '%s'", d->l.name,
                           quote(q, sizeof(q), key, strlen(key)));
        if (f == F_NAME)
            continue;
        if (read_field(d, f, val, &ko, err) < 0)
            return fail_at(err, &ko, "language '%s': %s", d->l.name, err_msg(err));
    }
    if (d->set[F_DISABLED]) {
        for (int f = 0; f < N_FIELDS; f++)
            if (f != F_NAME && f != F_DISABLED && d->set[f])
                return fail_at(err, &d->from[f],
                               "language '%s': a disabled language takes no other key", d->l.name);
    }
    return 0;
}

/* ---- positions ---------------------------------------------------------------- */

/* Walks text that json-c accepted as strict JSON (so strings are closed
 * and brackets balanced), noting the line of each top-level key, of each
 * object in the "languages" array and of its keys. */
static void scan_positions(const char *text, size_t len, struct positions *pos)
{
    memset(pos, 0, sizeof(*pos));
    int line = 1;
    int depth = 0;
    bool in_languages = false;
    bool seen_languages = false;
    struct entry_pos *cur = NULL;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (c == '\n') {
            line++;
            continue;
        }
        if (c == '"') {
            size_t start = ++i;
            while (i < len && text[i] != '"') {
                if (text[i] == '\n')
                    line++;
                i += text[i] == '\\' ? 2 : 1;
            }
            if (i >= len)
                return;
            size_t n = i - start;
            size_t j = i + 1;
            while (j < len && strchr(" \t\r\n", text[j]) && text[j] != '\0')
                j++;
            if (j >= len || text[j] != ':')
                continue;
            if (depth == 1) {
                pos->n_top_keys++;
                in_languages = n == 9 && memcmp(text + start, "languages", 9) == 0;
                if (in_languages) {
                    if (seen_languages && !pos->dup_top_line)
                        pos->dup_top_line = line;
                    seen_languages = true;
                    pos->languages_line = line;
                }
            } else if (depth == 3 && cur) {
                size_t kept = cur->n_keys < KEYS_KEPT ? cur->n_keys : KEYS_KEPT;
                for (size_t k = 0; k < kept; k++)
                    if (strlen(cur->keys[k].key) == n &&
                        memcmp(cur->keys[k].key, text + start, n) == 0 && !cur->dup_line)
                        cur->dup_line = line;
                if (cur->n_keys < KEYS_KEPT && n <= KEY_KEPT_MAX) {
                    struct key_pos *kp = &cur->keys[cur->n_keys];
                    memcpy(kp->key, text + start, n);
                    kp->key[n] = '\0';
                    kp->line = line;
                }
                cur->n_keys++;
            }
            continue;
        }
        if (c == '{' || c == '[') {
            if (c == '{' && depth == 2 && in_languages) {
                cur =
                    pos->n_entries < LANGTABLE_MAX_LANGUAGES ? &pos->entries[pos->n_entries] : NULL;
                if (cur)
                    cur->line = line;
                pos->n_entries++;
            }
            depth++;
        } else if (c == '}' || c == ']') {
            depth--;
            if (depth == 2)
                cur = NULL;
        }
    }
}

/* ---- one file --------------------------------------------------------------- */

struct file_drafts {
    struct draft *d;
    size_t n;
};

static void drafts_free(struct file_drafts *fd)
{
    for (size_t i = 0; i < fd->n; i++)
        lang_free(&fd->d[i].l);
    free(fd->d);
    *fd = (struct file_drafts){0};
}

/* Parses a whole file into drafts, one per entry, each checked on its
 * own (the merge checks the rest). */
static int read_file_text(const char *text, size_t len, const char *name, int level,
                          struct file_drafts *out, struct err *err)
{
    struct origin fo = {.file = name, .line = 0, .level = level};
    json_object *root = NULL;
    struct positions *pos = NULL;
    struct file_drafts fd = {0};
    int rc = -1;
    *out = (struct file_drafts){0};
    if (len > LANGTABLE_FILE_MAX_BYTES) {
        fail_at(err, &fo, "larger than %d bytes", LANGTABLE_FILE_MAX_BYTES);
        goto out;
    }
    /* json-c ends a key at an escaped NUL and C strings end there. */
    const char *nul = memmem(text, len, "\\u0000", 6);
    if (nul) {
        fo.line = line_at(text, (size_t)(nul - text));
        fail_at(err, &fo, "\\u0000 is not allowed");
        goto out;
    }
    struct json_exact why;
    if (json_parse_exact(text, len, JSON_DEPTH, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8,
                         &root, &why) < 0) {
        fo.line = line_at(text, why.offset < len ? why.offset : len);
        switch (why.status) {
        case JSON_EXACT_INCOMPLETE:
            fail_at(err, &fo, "the JSON ends too early");
            break;
        case JSON_EXACT_TRAILING:
            fail_at(err, &fo, "more text after the JSON value");
            break;
        case JSON_EXACT_NOMEM:
            fail_at(err, &fo, "out of memory");
            break;
        case JSON_EXACT_SYNTAX:
        case JSON_EXACT_OK:
            fail_at(err, &fo, "not valid JSON: %s", why.why);
            break;
        }
        goto out;
    }
    fo.line = 1;
    if (!json_object_is_type(root, json_type_object)) {
        fail_at(err, &fo, "must be an object {\"languages\": [...]}");
        goto out;
    }
    pos = xcalloc(1, sizeof(*pos));
    scan_positions(text, len, pos);
    if (pos->dup_top_line || pos->n_top_keys != (size_t)json_object_object_length(root)) {
        fo.line = pos->dup_top_line;
        fail_at(err, &fo, "a top-level key appears twice");
        goto out;
    }
    json_object *langs = NULL;
    json_object_object_foreach(root, key, val)
    {
        char q[QUOTE_MAX + 1];
        if (strcmp(key, "languages") != 0) {
            fail_at(err, &fo, "unknown top-level key '%s' (only \"languages\")",
                    quote(q, sizeof(q), key, strlen(key)));
            goto out;
        }
        langs = val;
    }
    fo.line = pos->languages_line ? pos->languages_line : 1;
    if (!langs) {
        fail_at(err, &fo, "no \"languages\" array");
        goto out;
    }
    if (!json_object_is_type(langs, json_type_array)) {
        fail_at(err, &fo, "\"languages\" must be an array");
        goto out;
    }
    size_t n = json_object_array_length(langs);
    if (n > LANGTABLE_MAX_LANGUAGES) {
        fail_at(err, &fo, "more than %d languages", LANGTABLE_MAX_LANGUAGES);
        goto out;
    }
    /* The scan and json-c must agree on the entries, or no line is named. */
    bool lines = pos->n_entries == n;
    fd.d = xcalloc(n ? n : 1, sizeof(struct draft));
    for (size_t i = 0; i < n; i++) {
        const struct entry_pos *ep = lines ? &pos->entries[i] : NULL;
        struct origin eo = {.file = name, .line = ep ? ep->line : 0, .level = level};
        if (read_entry(json_object_array_get_idx(langs, i), &eo, ep, i, &fd.d[i], err) < 0) {
            lang_free(&fd.d[i].l);
            goto out;
        }
        fd.n++;
        for (size_t k = 0; k < i; k++)
            if (strcmp(fd.d[k].l.name, fd.d[i].l.name) == 0) {
                fail_at(err, &fd.d[i].from[F_NAME], "language '%s' is listed twice (line %d)",
                        fd.d[i].l.name, fd.d[k].entry.line);
                goto out;
            }
    }
    *out = fd;
    fd = (struct file_drafts){0};
    rc = 0;
out:
    drafts_free(&fd);
    free(pos);
    json_object_put(root);
    return rc;
}

/* ---- merge and final checks ---------------------------------------------------- */

/* Overrides base's fields with those src sets (src is left empty). */
static void draft_override(struct draft *base, struct draft *src)
{
    struct langtable_lang *b = &base->l;
    struct langtable_lang *s = &src->l;
#define TAKE_STR(field)                                                                            \
    do {                                                                                           \
        free(b->field);                                                                            \
        b->field = s->field;                                                                       \
        s->field = NULL;                                                                           \
    } while (0)
#define TAKE_STRV(field)                                                                           \
    do {                                                                                           \
        strv_free(&b->field);                                                                      \
        b->field = s->field;                                                                       \
        s->field = (struct langtable_strv){0};                                                     \
    } while (0)
    for (int f = 0; f < N_FIELDS; f++) {
        if (!src->set[f] || f == F_NAME)
            continue;
        base->set[f] = true;
        base->from[f] = src->from[f];
        switch ((enum field)f) {
        case F_ALIASES:
            TAKE_STRV(aliases);
            break;
        case F_IMAGE:
            TAKE_STR(image);
            break;
        case F_SOURCE_FILE:
            TAKE_STR(source_file);
            break;
        case F_RUNNER:
            b->runner = s->runner;
            break;
        case F_COMPILE:
            TAKE_STRV(compile);
            break;
        case F_COMPILE_TIMEOUT:
            b->compile_timeout_ms = s->compile_timeout_ms;
            break;
        case F_TYPECHECK:
            TAKE_STRV(typecheck);
            break;
        case F_TYPECHECK_WARM:
            b->typecheck_warm = s->typecheck_warm;
            break;
        case F_RUN:
            TAKE_STRV(run);
            break;
        case F_VERSION:
            TAKE_STRV(version);
            break;
        case F_POOL_SIZE:
            b->pool_size = s->pool_size;
            break;
        case F_PRELOAD:
            TAKE_STRV(preload);
            break;
        case F_NETWORK:
            b->network_allowed = s->network_allowed;
            break;
        case F_PACKAGES:
            TAKE_STRV(packages);
            break;
        case F_NAME:
        case F_DISABLED:
        case N_FIELDS:
            break;
        }
    }
#undef TAKE_STR
#undef TAKE_STRV
}

/* Replaces "{source}" and "{stem}" in every element of argv; any other
 * "{word}" is an error. */
static int expand_argv(struct langtable_strv *argv, const char *source, struct err *err)
{
    const char *dot = strrchr(source, '.');
    size_t stem_len = dot ? (size_t)(dot - source) : strlen(source);
    for (size_t i = 0; i < argv->n; i++) {
        const char *a = argv->v[i];
        if (!strchr(a, '{'))
            continue;
        struct buf b;
        buf_init(&b, LANGTABLE_ARG_MAX);
        for (const char *p = a; *p;) {
            const char *close = NULL;
            size_t w = 0;
            if (*p == '{') {
                while (p[1 + w] && ((p[1 + w] >= 'a' && p[1 + w] <= 'z') || p[1 + w] == '_'))
                    w++;
                close = w && p[1 + w] == '}' ? p + 1 + w : NULL;
            }
            int rc = 0;
            if (close && w == 6 && memcmp(p + 1, "source", 6) == 0) {
                rc = buf_add(&b, source, strlen(source));
            } else if (close && w == 4 && memcmp(p + 1, "stem", 4) == 0) {
                rc = buf_add(&b, source, stem_len);
            } else if (close) {
                buf_free(&b);
                return err_set(err, ERR_INVALID,
                               "'%.*s' is not a placeholder ({source}, {stem}) in \"%.40s\"",
                               (int)(w + 2 > QUOTE_MAX ? QUOTE_MAX : w + 2), p, a);
            } else {
                rc = buf_add(&b, p, 1);
            }
            if (rc < 0) {
                buf_free(&b);
                return err_set(err, ERR_INVALID, "an argument is longer than %d bytes",
                               LANGTABLE_ARG_MAX);
            }
            p = close ? close + 1 : p + 1;
        }
        free(argv->v[i]);
        argv->v[i] = buf_take(&b, NULL);
    }
    return 0;
}

static const enum field required_fields[] = {F_IMAGE, F_SOURCE_FILE, F_RUNNER, F_RUN};

/* Of two keys that contradict each other, the one the operator's file
 * set (so a built-in value is never blamed for an override). */
static const struct origin *blame(const struct draft *d, enum field a, enum field b)
{
    return d->from[b].level > d->from[a].level ? &d->from[b] : &d->from[a];
}

/* Checks one merged language and fills in its defaults, the expanded
 * argvs and the joined preload list. */
static int finish_lang(struct draft *d, struct err *err)
{
    struct langtable_lang *l = &d->l;
    for (size_t i = 0; i < ARRAY_SIZE(required_fields); i++)
        if (!d->set[required_fields[i]])
            return fail_at(err, &d->entry, "language '%s': '%s' is missing", l->name,
                           field_keys[required_fields[i]]);
    bool generic = l->runner == LANGTABLE_RUNNER_GENERIC;
    if (l->compile.n && !generic)
        return fail_at(err, blame(d, F_COMPILE, F_RUNNER),
                       "language '%s': 'compile' needs the generic runner, not %s", l->name,
                       runner_names[l->runner]);
    if (l->typecheck.n && !generic)
        return fail_at(err, blame(d, F_TYPECHECK, F_RUNNER),
                       "language '%s': 'typecheck' needs the generic runner, not %s", l->name,
                       runner_names[l->runner]);
    if (l->typecheck_warm != LANGTABLE_CHECKER_NONE && l->typecheck.n == 0) {
        /* The built-in checker of a typecheck the operator removed goes
         * with it; one set where there is no typecheck is a mistake. */
        if (d->set[F_TYPECHECK] && d->from[F_TYPECHECK_WARM].level < d->from[F_TYPECHECK].level)
            l->typecheck_warm = LANGTABLE_CHECKER_NONE;
        else
            return fail_at(err, &d->from[F_TYPECHECK_WARM],
                           "language '%s': 'typecheck_warm' needs a typecheck", l->name);
    }
    if (l->compile.n == 0) {
        /* A timeout left over from the built-in entry whose compile step
         * the operator removed means nothing; one set with no compile step
         * is a mistake. */
        if (d->set[F_COMPILE_TIMEOUT] &&
            (!d->set[F_COMPILE] || d->from[F_COMPILE_TIMEOUT].level >= d->from[F_COMPILE].level))
            return fail_at(err, &d->from[F_COMPILE_TIMEOUT],
                           "language '%s': 'compile_timeout_ms' without a compile step", l->name);
        l->compile_timeout_ms = 0;
    } else if (!d->set[F_COMPILE_TIMEOUT]) {
        l->compile_timeout_ms = LANGTABLE_COMPILE_TIMEOUT_DEFAULT_MS;
    }
    if (l->preload.n && generic)
        return fail_at(err, blame(d, F_PRELOAD, F_RUNNER),
                       "language '%s': 'preload' needs the python or node runner", l->name);
    struct buf joined;
    buf_init(&joined, CONFIG_PRELOAD_MAX);
    for (size_t i = 0; i < l->preload.n; i++) {
        const char *m = l->preload.v[i];
        char q[QUOTE_MAX + 1];
        if (!valid_module(m, strlen(m), l->runner)) {
            buf_free(&joined);
            return fail_at(err, blame(d, F_PRELOAD, F_RUNNER),
                           "language '%s': 'preload'[%zu]: \"%s\" is not a %s module name", l->name,
                           i, quote(q, sizeof(q), m, strlen(m)), runner_names[l->runner]);
        }
        if ((i && buf_add(&joined, ",", 1) < 0) || buf_add(&joined, m, strlen(m)) < 0) {
            buf_free(&joined);
            return fail_at(err, &d->from[F_PRELOAD],
                           "language '%s': 'preload' is longer than %d bytes joined", l->name,
                           CONFIG_PRELOAD_MAX);
        }
    }
    free(l->preload_joined);
    l->preload_joined = buf_take(&joined, NULL);
    const struct {
        enum field f;
        struct langtable_strv *argv;
    } argvs[] = {{F_COMPILE, &l->compile},
                 {F_TYPECHECK, &l->typecheck},
                 {F_RUN, &l->run},
                 {F_VERSION, &l->version}};
    for (size_t i = 0; i < ARRAY_SIZE(argvs); i++)
        if (expand_argv(argvs[i].argv, l->source_file, err) < 0)
            return fail_at(err, &d->from[argvs[i].f], "language '%s': '%s': %s", l->name,
                           field_keys[argvs[i].f], err_msg(err));
    /* Lists never NULL, so a caller can pass v as an argv. */
    struct langtable_strv *lists[] = {&l->aliases, &l->compile, &l->typecheck, &l->run,
                                      &l->version, &l->preload, &l->packages};
    for (size_t i = 0; i < ARRAY_SIZE(lists); i++)
        if (!lists[i]->v)
            lists[i]->v = xcalloc(1, sizeof(char *));
    return 0;
}

/* Which language already answers to name, if any, among d[0..n). */
static const struct draft *claimed(const struct draft *d, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(d[i].l.name, name) == 0)
            return &d[i];
        for (size_t k = 0; k < d[i].l.aliases.n; k++)
            if (strcmp(d[i].l.aliases.v[k], name) == 0)
                return &d[i];
    }
    return NULL;
}

/* Where to report a clash between mine and the place c claims name from:
 * the operator's file rather than the built-in table, since only the
 * operator's file can be changed to resolve it. */
static const struct origin *clash_at(const struct origin *mine, const struct draft *c,
                                     const char *name)
{
    const struct origin *theirs = &c->from[strcmp(c->l.name, name) == 0 ? F_NAME : F_ALIASES];
    return theirs->level > mine->level ? theirs : mine;
}

static int check_unique(const struct draft *d, size_t n, struct err *err)
{
    for (size_t i = 0; i < n; i++) {
        const struct langtable_lang *l = &d[i].l;
        const struct draft *c = claimed(d, i, l->name);
        if (c)
            return fail_at(err, clash_at(&d[i].from[F_NAME], c, l->name),
                           "language '%s': its name is already taken by language '%s'", l->name,
                           c->l.name);
        for (size_t k = 0; k < l->aliases.n; k++) {
            const char *a = l->aliases.v[k];
            c = claimed(d, i, a);
            bool own = strcmp(a, l->name) == 0;
            for (size_t j = 0; j < k && !own; j++)
                own = strcmp(a, l->aliases.v[j]) == 0;
            if (!c && own)
                return fail_at(err, &d[i].from[F_ALIASES],
                               "language '%s': alias '%s' is listed twice or repeats the name",
                               l->name, a);
            /* A later name equal to an earlier alias is caught here too:
             * report it on the later language. */
            if (c)
                return fail_at(err, clash_at(&d[i].from[F_ALIASES], c, a),
                               "language '%s': alias '%s' is already taken by language '%s'",
                               l->name, a, c->l.name);
        }
    }
    return 0;
}

static void table_free_langs(struct langtable_lang *langs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        lang_free(&langs[i]);
    free(langs);
}

/* Merges user (may be empty) into base and builds the table. */
static int build(struct file_drafts *base, struct file_drafts *user, struct langtable **out,
                 struct err *err)
{
    size_t cap = base->n + user->n;
    struct draft *all = xcalloc(cap ? cap : 1, sizeof(struct draft));
    bool *gone = xcalloc(cap ? cap : 1, sizeof(bool));
    size_t n = 0;
    int rc = -1;
    for (size_t i = 0; i < base->n; i++) {
        all[n++] = base->d[i];
        base->d[i] = (struct draft){0};
    }
    base->n = 0;
    for (size_t i = 0; i < user->n; i++) {
        struct draft *u = &user->d[i];
        struct draft *have = NULL;
        for (size_t k = 0; k < n && !have; k++)
            if (!gone[k] && strcmp(all[k].l.name, u->l.name) == 0)
                have = &all[k];
        if (u->set[F_DISABLED]) {
            if (!have) {
                fail_at(err, &u->from[F_DISABLED],
                        "language '%s': disables a language that does not exist", u->l.name);
                goto out;
            }
            gone[have - all] = true;
        } else if (have) {
            draft_override(have, u);
        } else {
            all[n++] = *u;
            *u = (struct draft){0};
        }
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (gone[i])
            lang_free(&all[i].l);
        else
            all[k++] = all[i];
    }
    n = k;
    if (n == 0) {
        struct origin o = user->n ? user->d[0].entry : (struct origin){.file = "languages"};
        fail_at(err, &o, "no language is left");
        goto out;
    }
    if (n > LANGTABLE_MAX_LANGUAGES) {
        fail_at(err, &all[n - 1].entry, "more than %d languages", LANGTABLE_MAX_LANGUAGES);
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        if (finish_lang(&all[i], err) < 0)
            goto out;
    if (check_unique(all, n, err) < 0)
        goto out;
    struct langtable *t = xcalloc(1, sizeof(*t));
    t->langs = xcalloc(n, sizeof(struct langtable_lang));
    for (size_t i = 0; i < n; i++) {
        t->langs[i] = all[i].l;
        t->langs[i].index = i;
        all[i].l = (struct langtable_lang){0};
    }
    t->n = n;
    *out = t;
    rc = 0;
out:
    for (size_t i = 0; i < n; i++)
        lang_free(&all[i].l);
    free(all);
    free(gone);
    return rc;
}

/* ---- the API ---------------------------------------------------------------------- */

int langtable_load_text(const char *text, size_t len, const char *name, struct langtable **out,
                        struct err *err)
{
    struct file_drafts base = {0};
    struct file_drafts user = {0};
    int rc = -1;
    *out = NULL;
    if (read_file_text(langtable_builtin_src, strlen(langtable_builtin_src), LANGTABLE_BUILTIN_NAME,
                       0, &base, err) < 0)
        goto out;
    if (text && read_file_text(text, len, name ? name : "languages", 1, &user, err) < 0)
        goto out;
    rc = build(&base, &user, out, err);
out:
    drafts_free(&base);
    drafts_free(&user);
    return rc;
}

int langtable_load(const char *path, struct langtable **out, struct err *err)
{
    *out = NULL;
    if (!path || !*path)
        return langtable_load_text(NULL, 0, NULL, out, err);
    FILE *fp = fopen(path, "re");
    if (!fp)
        return err_set(err, ERR_IO, "cannot open languages file %s: %s", path, strerror(errno));
    char *text = xmalloc(LANGTABLE_FILE_MAX_BYTES + 2);
    size_t n = fread(text, 1, LANGTABLE_FILE_MAX_BYTES + 1, fp);
    bool bad = ferror(fp) != 0;
    fclose(fp);
    int rc;
    if (bad)
        rc = err_set(err, ERR_IO, "cannot read languages file %s", path);
    else if (n > LANGTABLE_FILE_MAX_BYTES)
        rc = err_set(err, ERR_TOO_BIG, "%s: larger than %d bytes", path, LANGTABLE_FILE_MAX_BYTES);
    else
        rc = langtable_load_text(text, n, path, out, err);
    free(text);
    return rc;
}

void langtable_free(struct langtable *t)
{
    if (!t)
        return;
    table_free_langs(t->langs, t->n);
    free(t);
}

size_t langtable_count(const struct langtable *t)
{
    return t ? t->n : 0;
}

const struct langtable_lang *langtable_get(const struct langtable *t, size_t i)
{
    return t && i < t->n ? &t->langs[i] : NULL;
}

const struct langtable_lang *langtable_find(const struct langtable *t, const char *name)
{
    if (!t || !name)
        return NULL;
    for (size_t i = 0; i < t->n; i++) {
        const struct langtable_lang *l = &t->langs[i];
        if (strcasecmp(l->name, name) == 0)
            return l;
        for (size_t k = 0; k < l->aliases.n; k++)
            if (strcasecmp(l->aliases.v[k], name) == 0)
                return l;
    }
    return NULL;
}

const char *langtable_checker_name(enum langtable_checker c)
{
    return (size_t)c < ARRAY_SIZE(checker_names) ? checker_names[c] : "?";
}

const char *langtable_runner_name(enum langtable_runner r)
{
    return (size_t)r < ARRAY_SIZE(runner_names) ? runner_names[r] : "?";
}

/* ---- the daemon's options --------------------------------------------------------- */

static struct langtable_lang *find_mutable(struct langtable *t, const char *name)
{
    const struct langtable_lang *l = langtable_find(t, name);
    return l ? &t->langs[l->index] : NULL;
}

static void set_preload(struct langtable_lang *l, const char *joined)
{
    strv_free(&l->preload);
    free(l->preload_joined);
    l->preload_joined = xstrdup(joined);
    size_t n = 0;
    for (const char *p = joined; *p; p++)
        n += *p == ',';
    l->preload.v = xcalloc(n + 2, sizeof(char *));
    for (const char *p = joined; *joined && p;) {
        const char *comma = strchr(p, ',');
        l->preload.v[l->preload.n++] = comma ? xstrndup(p, (size_t)(comma - p)) : xstrdup(p);
        p = comma ? comma + 1 : NULL;
    }
}

/* The python/javascript options of config.h, on the first language of
 * that runner kind under its built-in name. */
static void configure_builtin(struct langtable *t, const char *name, enum langtable_runner kind,
                              const char *image, const char *preload)
{
    struct langtable_lang *l = find_mutable(t, name);
    if (!l || strcmp(l->name, name) != 0 || l->runner != kind)
        return;
    if (image && *image) {
        free(l->image);
        l->image = xstrdup(image);
    }
    if (preload)
        set_preload(l, preload);
}

int langtable_configure(struct langtable *t, const struct config *cfg, struct err *err)
{
    const struct config_list *on = &cfg->languages;
    for (size_t i = 0; i < on->n; i++)
        if (!langtable_find(t, on->items[i]))
            return err_set(err, ERR_INVALID, "--languages: '%s' is not a language of the table",
                           on->items[i]);
    if (on->n) {
        bool *keep = xcalloc(t->n, sizeof(bool));
        for (size_t i = 0; i < on->n; i++)
            keep[langtable_find(t, on->items[i])->index] = true;
        size_t k = 0;
        for (size_t i = 0; i < t->n; i++) {
            if (!keep[i]) {
                lang_free(&t->langs[i]);
                continue;
            }
            t->langs[k] = t->langs[i];
            t->langs[k].index = k;
            k++;
        }
        t->n = k;
        free(keep);
    }
    configure_builtin(t, "python", LANGTABLE_RUNNER_PYTHON, cfg->python_image, cfg->python_preload);
    configure_builtin(t, "javascript", LANGTABLE_RUNNER_NODE, cfg->js_image, cfg->js_preload);
    for (size_t i = 0; cfg->pool_size >= 0 && i < t->n; i++)
        t->langs[i].pool_size = cfg->pool_size;
    for (size_t i = 0; i < cfg->allow_network.n; i++) {
        const char *name = cfg->allow_network.items[i];
        const struct langtable_lang *l = langtable_find(t, name);
        if (!l)
            return err_set(err, ERR_INVALID,
                           "--allow-network: '%s' is not a language of the table (or not enabled)",
                           name);
        if (!l->network_allowed)
            return err_set(err, ERR_INVALID,
                           "--allow-network: language '%s' never gets a network "
                           "(its network_allowed is false)",
                           l->name);
    }
    if (cfg->dry_run_create && *cfg->dry_run_create && !langtable_find(t, cfg->dry_run_create))
        return err_set(err, ERR_INVALID, "--dry-run-create: '%.64s' is not a language of the table",
                       cfg->dry_run_create);
    return 0;
}

bool langtable_network(const struct langtable_lang *l, const struct config *cfg)
{
    if (!l->network_allowed)
        return false;
    for (size_t i = 0; i < cfg->allow_network.n; i++) {
        const char *name = cfg->allow_network.items[i];
        if (strcasecmp(name, l->name) == 0)
            return true;
        for (size_t k = 0; k < l->aliases.n; k++)
            if (strcasecmp(name, l->aliases.v[k]) == 0)
                return true;
    }
    return false;
}
