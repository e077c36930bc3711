#include "base/config.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/config_check.h"
#include "base/config_table.h"

#define MAX_CONFIG_LINE 4096

/* The field of cfg a row sets. */
static void *slot_of(struct config *cfg, const struct config_opt *o)
{
    return (char *)cfg + o->offset;
}

static int add_list(struct config_list *list, const struct config_opt *o, const char *value,
                    struct err *err)
{
    const char *p = value;
    while (*p) {
        const char *comma = strchr(p, o->sep ? o->sep : ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        /* Tolerate "A, B" as operators write it. */
        while (n && isspace((unsigned char)*p))
            p++, n--;
        while (n && isspace((unsigned char)p[n - 1]))
            n--;
        if (n) {
            if (o->check_item && !o->check_item(p, n))
                return err_set(err, ERR_INVALID, "--%s: '%.*s' is not valid (%s)", o->name,
                               (int)(n > 64 ? 64 : n), p, o->arg);
            int dup = 0;
            for (size_t i = 0; i < list->n; i++)
                if (strlen(list->items[i]) == n && memcmp(list->items[i], p, n) == 0)
                    dup = 1;
            if (!dup) {
                list->items = xrealloc(list->items, (list->n + 2) * sizeof(char *));
                list->items[list->n++] = xstrndup(p, n);
                list->items[list->n] = NULL;
            }
        }
        if (!comma)
            break;
        p = comma + 1;
    }
    return 0;
}

/* Empty, NULL or -1 where a row's default means "not given": another
 * table's value holds (config_table.c says whose). */
void config_init(struct config *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    for (size_t i = 0; i < config_opts_n; i++) {
        const struct config_opt *o = &config_opts[i];
        void *slot = slot_of(cfg, o);
        switch (o->type) {
        case OPT_STR:
            *(char **)slot = o->def ? xstrdup(o->def) : NULL;
            break;
        case OPT_INT:
            *(long long *)slot = o->def_int;
            break;
        case OPT_DOUBLE:
            *(double *)slot = o->def_real;
            break;
        case OPT_LIST: {
            struct config_list *list = slot;
            list->items = xcalloc(1, sizeof(char *));
            /* Checked by test_config, like every default. */
            (void)add_list(list, o, o->def ? o->def : "", NULL);
            break;
        }
        case OPT_FLAG:
            *(bool *)slot = false;
            break;
        }
    }
}

static void free_list(char **list)
{
    if (!list)
        return;
    for (char **p = list; *p; p++)
        free(*p);
    free(list);
}

/* The options' one mention of their languages: each set's language and
 * runner, its options' prefix and fields, and the CONTAINER_LANGUAGE
 * values that pick its image. */
#define AT(field) offsetof(struct config, field)
static const struct legacy_set {
    const char *language, *runner, *prefix;
    const char *container_names[3];
    size_t image, preload, runtime; /* in struct config */
} legacy_sets[CONFIG_LEGACY_LANGUAGES] = {
    {.language = "python",
     .runner = "python",
     .prefix = "python",
     .container_names = {"python"},
     .image = AT(python_image),
     .preload = AT(python_preload),
     .runtime = AT(python_runtime)},
    {.language = "javascript",
     .runner = "node",
     .prefix = "js",
     .container_names = {"javascript", "js", "node"},
     .image = AT(js_image),
     .preload = AT(js_preload),
     .runtime = AT(js_runtime)},
};
#undef AT

static char *const *legacy_slot(const struct config *cfg, size_t offset)
{
    return (char *const *)(const void *)((const char *)cfg + offset);
}

struct config_legacy config_legacy(const struct config *cfg, size_t i)
{
    const struct legacy_set *s = &legacy_sets[i < CONFIG_LEGACY_LANGUAGES ? i : 0];
    return (struct config_legacy){
        .language = s->language,
        .runner = s->runner,
        .prefix = s->prefix,
        .image = *legacy_slot(cfg, s->image),
        .preload = *legacy_slot(cfg, s->preload),
        .runtime = *legacy_slot(cfg, s->runtime),
    };
}

void config_free(struct config *cfg)
{
    for (size_t i = 0; i < config_opts_n; i++) {
        const struct config_opt *o = &config_opts[i];
        if (o->type == OPT_STR)
            free(*(char **)slot_of(cfg, o));
        else if (o->type == OPT_LIST)
            free_list(((struct config_list *)slot_of(cfg, o))->items);
    }
    free(cfg->http_host);
    if (cfg->auth_token) {
        explicit_bzero(cfg->auth_token, strlen(cfg->auth_token));
        free(cfg->auth_token);
    }
    memset(cfg, 0, sizeof(*cfg));
}

static int set_option(struct config *cfg, const struct config_opt *o, const char *value,
                      struct err *err)
{
    if (!value && o->type != OPT_FLAG)
        return err_set(err, ERR_INVALID, "--%s needs a value", o->name);
    void *slot = slot_of(cfg, o);
    switch (o->type) {
    case OPT_STR:
        free(*(char **)slot);
        *(char **)slot = xstrdup(value);
        return 0;
    case OPT_INT: {
        char *end = NULL;
        errno = 0;
        long long v = strtoll(value, &end, 10);
        if (errno || end == value || *end != '\0')
            return err_set(err, ERR_INVALID, "--%s: '%s' is not an integer", o->name, value);
        if (v < o->min || v > o->max)
            return err_set(err, ERR_INVALID, "--%s: %lld is out of range [%lld, %lld]", o->name, v,
                           o->min, o->max);
        *(long long *)slot = v;
        return 0;
    }
    case OPT_DOUBLE: {
        char *end = NULL;
        errno = 0;
        double v = strtod(value, &end);
        if (errno || end == value || *end != '\0' || !(v > 0) || v > (double)o->max)
            return err_set(err, ERR_INVALID, "--%s: '%s' must be a number in (0, %lld]", o->name,
                           value, o->max);
        *(double *)slot = v;
        return 0;
    }
    case OPT_LIST:
        return add_list(slot, o, value, err);
    case OPT_FLAG: {
        bool *flag = slot;
        if (!value || !*value || strcmp(value, "1") == 0 || strcmp(value, "true") == 0 ||
            strcmp(value, "yes") == 0)
            *flag = true;
        else if (strcmp(value, "0") == 0 || strcmp(value, "false") == 0 || strcmp(value, "no") == 0)
            *flag = false;
        else
            return err_set(err, ERR_INVALID, "--%s: expected true or false, got '%s'", o->name,
                           value);
        return 0;
    }
    }
    return err_set(err, ERR_INTERNAL, "bad option type");
}

static const char *env_get(char **envp, const char *name)
{
    const char *entry = util_env_entry(envp, name);
    return entry ? entry + strlen(name) + 1 : NULL;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

static int load_file(struct config *cfg, const char *path, struct err *err)
{
    FILE *fp = fopen(path, "re");
    if (!fp)
        return err_set(err, ERR_IO, "cannot open config file %s: %s", path, strerror(errno));
    char line[MAX_CONFIG_LINE];
    int lineno = 0;
    int rc = 0;
    while (fgets(line, sizeof(line), fp)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(fp)) {
            rc = err_set(err, ERR_INVALID, "%s:%d: line too long", path, lineno);
            break;
        }
        char *s = trim(line);
        if (*s == '\0' || *s == '#')
            continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            rc = err_set(err, ERR_INVALID, "%s:%d: expected 'name = value'", path, lineno);
            break;
        }
        *eq = '\0';
        char *name = trim(s);
        char *value = trim(eq + 1);
        const struct config_opt *o = config_opt_find(name, strlen(name));
        if (!o || o->cli_only) {
            rc = err_set(err, ERR_INVALID, "%s:%d: unknown option '%s'", path, lineno, name);
            break;
        }
        if (set_option(cfg, o, value, err) < 0) {
            rc = err_wrap(err, "%s:%d", path, lineno);
            break;
        }
    }
    fclose(fp);
    return rc;
}

static int apply_container_image_pair(struct config *cfg, char **envp, struct err *err)
{
    const char *image = env_get(envp, "CONTAINER_IMAGE");
    const char *lang = env_get(envp, "CONTAINER_LANGUAGE");
    if (!image || !*image) {
        if (lang && *lang)
            return err_set(err, ERR_INVALID,
                           "CONTAINER_LANGUAGE is set but CONTAINER_IMAGE is not");
        return 0;
    }
    /* Unset: the first set's (python's). */
    const struct legacy_set *set = lang ? NULL : &legacy_sets[0];
    for (size_t i = 0; i < ARRAY_SIZE(legacy_sets) && !set; i++)
        for (size_t k = 0; k < ARRAY_SIZE(legacy_sets[i].container_names) && !set; k++)
            if (legacy_sets[i].container_names[k] &&
                strcmp(lang, legacy_sets[i].container_names[k]) == 0)
                set = &legacy_sets[i];
    if (!set)
        return err_set(err, ERR_INVALID,
                       "CONTAINER_LANGUAGE must be python or javascript, got '%.64s'", lang);
    char **slot = (char **)(void *)((char *)cfg + set->image);
    free(*slot);
    *slot = xstrdup(image);
    return 0;
}

#define MAX_TOKEN_BYTES 4096

/* The bearer token, from --auth-token-file or else MCPSANDBOXD_AUTH_TOKEN;
 * never logged. */
static int load_token(struct config *cfg, char **envp, struct err *err)
{
    const char *env_token = env_get(envp, "MCPSANDBOXD_AUTH_TOKEN");
    char *token = NULL;
    if (cfg->auth_token_file && *cfg->auth_token_file) {
        FILE *fp = fopen(cfg->auth_token_file, "re");
        if (!fp)
            return err_set(err, ERR_IO, "--auth-token-file: cannot open %s: %s",
                           cfg->auth_token_file, strerror(errno));
        char buf[MAX_TOKEN_BYTES + 2];
        size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
        fclose(fp);
        if (n > MAX_TOKEN_BYTES)
            return err_set(err, ERR_INVALID, "--auth-token-file: token longer than %d bytes",
                           MAX_TOKEN_BYTES);
        buf[n] = '\0';
        token = xstrdup(trim(buf));
        explicit_bzero(buf, sizeof(buf));
    } else if (env_token && *env_token) {
        token = xstrdup(env_token);
    }
    if (!token)
        return 0;
    if (!config_item_token(token, strlen(token))) {
        explicit_bzero(token, strlen(token));
        free(token);
        return err_set(err, ERR_INVALID,
                       "the auth token must be 1 to 256 visible ASCII characters");
    }
    cfg->auth_token = token;
    return 0;
}

/* MCPSANDBOXD_<OPTION> variables, then the CONTAINER_IMAGE pair. */
static int apply_environment(struct config *cfg, char **envp, struct err *err)
{
    char envname[96];
    for (size_t i = 0; i < config_opts_n; i++) {
        const struct config_opt *o = &config_opts[i];
        if (o->cli_only)
            continue;
        config_opt_env_name(o, envname, sizeof(envname));
        const char *v = env_get(envp, envname);
        if (v && set_option(cfg, o, v, err) < 0)
            return err_wrap(err, "%s", envname);
    }
    return apply_container_image_pair(cfg, envp, err);
}

/* The command line, last so it wins. */
static int apply_command_line(struct config *cfg, int argc, char **argv,
                              const struct option *longopts, struct err *err)
{
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "hV", longopts, NULL)) != -1) {
        if (c == 'h') {
            cfg->help = true;
        } else if (c == 'V') {
            cfg->version = true;
        } else if (c >= 1000) {
            const struct config_opt *o = &config_opts[c - 1000];
            if (strcmp(o->name, "config") == 0)
                continue;
            if (set_option(cfg, o, optarg, err) < 0)
                return -1;
        } else {
            const char *arg = argv[optind - 1];
            return err_set(err, ERR_INVALID, "unknown or incomplete option '%s' (see --help)",
                           arg ? arg : "?");
        }
    }
    if (optind < argc)
        return err_set(err, ERR_INVALID, "unexpected argument '%s' (see --help)", argv[optind]);
    return 0;
}

/* getopt_long's table: row i answers 1000 + i. */
static struct option *make_longopts(void)
{
    struct option *longopts = xcalloc(config_opts_n + 1, sizeof(*longopts));
    for (size_t i = 0; i < config_opts_n; i++) {
        longopts[i].name = config_opts[i].name;
        longopts[i].has_arg = config_opts[i].type == OPT_FLAG ? no_argument : required_argument;
        longopts[i].val = 1000 + (int)i;
    }
    return longopts;
}

int config_load(struct config *cfg, int argc, char **argv, char **envp, struct err *err)
{
    cleanup_free struct option *longopts = make_longopts();

    /* Pass 1 finds --config (and --help/--version, which need no checks). */
    const char *cfgfile = env_get(envp, "MCPSANDBOXD_CONFIG");
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "hV", longopts, NULL)) != -1) {
        if (c >= 1000 && strcmp(config_opts[c - 1000].name, "config") == 0)
            cfgfile = optarg;
    }
    if (cfgfile && *cfgfile) {
        free(cfg->config_file);
        cfg->config_file = xstrdup(cfgfile);
        if (load_file(cfg, cfgfile, err) < 0)
            return -1;
    }

    if (apply_environment(cfg, envp, err) < 0)
        return -1;

    int rc = apply_command_line(cfg, argc, argv, longopts, err);
    if (rc < 0 || cfg->help || cfg->version)
        return rc;
    if (config_check(cfg, err) < 0 || load_token(cfg, envp, err) < 0)
        return -1;
    return config_check_listen_auth(cfg, err);
}
