#include "base/log.h"

#include <stdio.h>
#include <string.h>

atomic_int log_threshold = LOG_LVL_INFO;

void log_set_threshold(enum log_level level)
{
    atomic_store(&log_threshold, (int)level);
}

static _Thread_local char trace[LOG_TRACE_CAP];

void log_trace_set(const char *traceparent)
{
    if (!traceparent)
        trace[0] = '\0';
    else
        snprintf(trace, sizeof(trace), "%s", traceparent);
}

static const char *const level_names[] = {"error", "warn", "info", "debug"};

int log_level_from_name(const char *name)
{
    for (size_t i = 0; i < ARRAY_SIZE(level_names); i++)
        if (strcmp(name, level_names[i]) == 0)
            return (int)i;
    return -1;
}

const char *log_field(char *buf, size_t cap, const char *s, size_t n)
{
    if (!s)
        s = "(null)";
    if (n == LOG_FIELD_STRLEN)
        n = strlen(s);
    util_escape(buf, cap, s, n);
    return buf;
}

void log_write(enum log_level level, const char *fmt, ...)
{
    char line[2048];
    char when[UTIL_RFC3339_CAP];
    util_rfc3339_ms(when, util_wall_ms());
    int n = snprintf(line, sizeof(line), "%s mcp-sandboxd %s: ", when, level_names[level]);
    if (n < 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (m < 0)
        return;
    size_t len = (size_t)n + (size_t)m;
    if (len > sizeof(line) - 2)
        len = sizeof(line) - 2;
    static const char tag[] = " trace=";
    size_t tlen = strlen(trace);
    if (tlen && len + sizeof(tag) - 1 + tlen <= sizeof(line) - 2) {
        memcpy(line + len, tag, sizeof(tag) - 1);
        memcpy(line + len + sizeof(tag) - 1, trace, tlen + 1); /* (its NUL is overwritten) */
        len += sizeof(tag) - 1 + tlen;
    }
    line[len++] = '\n';
    /* One write per line keeps lines from concurrent threads whole. */
    (void)util_write_all(STDERR_FILENO, line, len);
}
