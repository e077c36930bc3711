#include "base/config_doc.h"

#include <ctype.h>
#include <string.h>

#include "base/config_table.h"

/* --help: a column of options, then the help wrapped beside it. */
#define USAGE_WIDTH  80
#define USAGE_INDENT 33
/* The sample file's comment lines. */
#define SAMPLE_WIDTH 76
#define MAX_DOC_TEXT 2048
#define MAX_DEFAULT  256

static const char sample_header[] =
    "# mcp-sandboxd configuration file. Use with: mcp-sandboxd --config FILE\n"
    "# (or MCPSANDBOXD_CONFIG=FILE). Lines are \"name = value\"; names are the\n"
    "# long command-line options without the dashes. Precedence:\n"
    "# built-in defaults < this file < MCPSANDBOXD_* environment < command line.\n"
    "# Every setting below shows its default; where the default is not one\n"
    "# value, the line shows the form a value takes. Lists are comma-separated\n"
    "# (egress's items: ';'), and a list option given on several lines adds\n"
    "# them up.\n"
    "#\n"
    "# Generated from the option table (src/base/config_table.c): change the\n"
    "# table, then run `make config-sample`.\n";

/* Joins the words of a short default, "(default 8)", in put_wrapped. */
#define NBSP      '\x01'
#define NBSP_UPTO 32

/* Writes text's words from column col of a line that starts with indent
 * (col is its length on a line without words yet), each line at most
 * width columns where the words allow; returns the column reached. NBSP
 * is a space that does not break. */
static size_t put_words(FILE *fp, const char *text, size_t col, const char *indent, size_t width)
{
    size_t start = strlen(indent);
    const char *p = text;
    while (*p) {
        while (*p == ' ')
            p++;
        size_t n = strcspn(p, " ");
        if (n == 0)
            break;
        if (col > start && col + 1 + n > width) {
            fprintf(fp, "\n%s", indent);
            col = start;
        }
        if (col > start) {
            fputc(' ', fp);
            col++;
        }
        for (size_t i = 0; i < n; i++)
            fputc(p[i] == NBSP ? ' ' : p[i], fp);
        col += n;
        p += n;
    }
    return col;
}

/* text as whole lines after indent (already written on the first). */
static void put_wrapped(FILE *fp, const char *text, const char *indent, size_t width)
{
    put_words(fp, text, strlen(indent), indent, width);
    fputc('\n', fp);
}

/* " = 256 KiB" for a byte count (an option named *-bytes or *-bytes-*)
 * that is a whole number of KiB or more. */
static void bytes_note(const struct config_opt *o, long long v, char *out, size_t cap)
{
    static const char *const units[] = {"KiB", "MiB", "GiB"};
    size_t len = strlen(o->name);
    bool named = (len >= 6 && strcmp(o->name + len - 6, "-bytes") == 0) ||
                 strstr(o->name, "-bytes-") != NULL;
    out[0] = '\0';
    if (!named || v < 1024 || v % 1024)
        return;
    size_t u = 0;
    v /= 1024;
    while (u + 1 < sizeof(units) / sizeof(units[0]) && v >= 1024 && v % 1024 == 0) {
        v /= 1024;
        u++;
    }
    snprintf(out, cap, " = %lld %s", v, units[u]);
}

/* o's default as a value ("30000", "0.5", a text); false when it has none. */
static bool default_value(const struct config_opt *o, char *out, size_t cap)
{
    switch (o->type) {
    case OPT_INT:
        snprintf(out, cap, "%lld", o->def_int);
        return true;
    case OPT_DOUBLE:
        snprintf(out, cap, "%g", o->def_real);
        return true;
    case OPT_STR:
    case OPT_LIST:
    case OPT_FLAG: /* a setting's "false"; an action has none */
        if (o->def)
            snprintf(out, cap, "%s", o->def);
        return o->def != NULL;
    }
    return false;
}

/* o's default as --help shows it, "(default 30000)" or "(default: the
 * engine's)"; "" when there is none to show. */
static void default_text(const struct config_opt *o, char *out, size_t cap)
{
    /* Room for the words around the value and its note in MAX_DEFAULT. */
    char value[MAX_DEFAULT - 48], note[32] = "";
    out[0] = '\0';
    if (o->def_doc) {
        snprintf(out, cap, "(default: %s)", o->def_doc);
        return;
    }
    if (!default_value(o, value, sizeof(value)) || !value[0])
        return;
    if (o->type == OPT_INT)
        bytes_note(o, o->def_int, note, sizeof(note));
    snprintf(out, cap, "(default %s%s)", value, note);
}

/* o's help with its default after it, as one text. */
static void help_text(const struct config_opt *o, char *out, size_t cap)
{
    char def[MAX_DEFAULT];
    default_text(o, def, sizeof(def));
    if (strlen(def) <= NBSP_UPTO)
        for (char *p = def; *p; p++)
            if (*p == ' ')
                *p = NBSP;
    snprintf(out, cap, "%s%s%s", o->help, *def ? " " : "", def);
}

/* The other ways to set an option, and the actions that are only
 * command-line options. */
static void put_footer(FILE *fp)
{
    size_t actions = 0;
    for (size_t i = 0; i < config_opts_n; i++)
        actions += config_opts[i].cli_only;
    fputc('\n', fp);
    size_t col = put_words(fp, "Every option but", 0, "", USAGE_WIDTH);
    for (size_t i = 0; i < config_opts_n; i++) {
        if (!config_opts[i].cli_only)
            continue;
        char word[64];
        snprintf(word, sizeof(word), "--%s%s", config_opts[i].name, --actions ? "," : "");
        col = put_words(fp, word, col, "", USAGE_WIDTH);
    }
    put_words(fp,
              "can also be set as MCPSANDBOXD_<OPTION> in the environment (e.g. "
              "MCPSANDBOXD_TIMEOUT_MS=10000) or as 'option = value' in the --config file "
              "(config/mcp-sandboxd.conf shows them all). CONTAINER_IMAGE with "
              "CONTAINER_LANGUAGE (python or javascript) sets the image of that language.",
              col, "", USAGE_WIDTH);
    fputc('\n', fp);
}

void config_usage(FILE *fp, const char *argv0)
{
    char indent[USAGE_INDENT + 1];
    memset(indent, ' ', USAGE_INDENT);
    indent[USAGE_INDENT] = '\0';
    fprintf(fp,
            "Usage: %s [OPTION]...\n"
            "MCP server that runs untrusted code in fresh hardened containers.\n"
            "Speaks MCP (JSON-RPC, one message per line) on stdin/stdout, or over HTTP with\n"
            "--http; logs go to stderr.\n\n",
            argv0);
    for (size_t i = 0; i < config_opts_n; i++) {
        const struct config_opt *o = &config_opts[i];
        char left[64];
        char text[MAX_DOC_TEXT];
        int n = snprintf(left, sizeof(left), "  --%s%s%s", o->name, o->arg ? " " : "",
                         o->arg ? o->arg : "");
        help_text(o, text, sizeof(text));
        /* A name too long for the column has its help on the next line. */
        if (n < USAGE_INDENT - 1)
            fprintf(fp, "%-*s ", USAGE_INDENT - 1, left);
        else
            fprintf(fp, "%s\n%s", left, indent);
        put_wrapped(fp, text, indent, USAGE_WIDTH);
    }
    put_footer(fp);
}

/* The value a sample line shows: the default where a file can say it
 * (an int's only within its range), else the form a value takes. */
static void sample_value(const struct config_opt *o, char *out, size_t cap)
{
    bool in_range = o->type != OPT_INT || (o->def_int >= o->min && o->def_int <= o->max);
    if (!in_range || !default_value(o, out, cap))
        snprintf(out, cap, "%s", o->arg ? o->arg : "");
}

void config_print_sample(FILE *fp)
{
    fputs(sample_header, fp);
    for (size_t i = 0; i < config_opts_n; i++) {
        const struct config_opt *o = &config_opts[i];
        if (o->cli_only)
            continue;
        char text[MAX_DOC_TEXT];
        help_text(o, text, sizeof(text));
        text[0] = (char)toupper((unsigned char)text[0]);
        size_t n = strlen(text);
        if (n + 1 < sizeof(text) && text[n - 1] != '.')
            memcpy(text + n, ".", 2);
        char value[MAX_DEFAULT];
        sample_value(o, value, sizeof(value));
        fputs("\n# ", fp);
        put_wrapped(fp, text, "# ", SAMPLE_WIDTH);
        fprintf(fp, "# %s =%s%s\n", o->name, *value ? " " : "", value);
    }
}
