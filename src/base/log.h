/* Logging to stderr only: stdout belongs to the stdio transport. Formatting
 * is skipped below the threshold. Never pass a secret's value, nor raw
 * bytes that came from a client or a sandbox: those go through LOG_FIELD,
 * so that no newline forges a line and no escape sequence reaches a
 * terminal. */
#ifndef MCPSBX_LOG_H
#define MCPSBX_LOG_H

#include <stdatomic.h>

#include "base/util.h"

enum log_level {
    LOG_LVL_ERROR = 0,
    LOG_LVL_WARN,
    LOG_LVL_INFO,
    LOG_LVL_DEBUG,
};

/* Set once at start, read by every thread: atomic so that is never a race. */
extern atomic_int log_threshold;

void log_set_threshold(enum log_level level);

/* The W3C traceparent a thread works for (NULL: none), appended to its
 * log lines as " trace=<traceparent>" so a request can be followed from
 * the client's trace. The caller has checked its form (lowercase hex and
 * dashes); it is copied. */
#define LOG_TRACE_CAP 56
void log_trace_set(const char *traceparent);

void log_write(enum log_level level, const char *fmt, ...) ATTR_PRINTF(2, 3);

/* Returns the level for "error|warn|info|debug", or -1. */
int log_level_from_name(const char *name);

/* The most of one field from outside that a line shows. */
#define LOG_FIELD_MAX 512

/* s[0..n) (n LOG_FIELD_STRLEN: s is NUL-terminated; s NULL: "(null)")
 * escaped into buf[cap] (util_escape: control characters and invalid
 * UTF-8 as escapes, cut with "..."); returns buf. */
#define LOG_FIELD_STRLEN ((size_t)-1)
const char *log_field(char *buf, size_t cap, const char *s, size_t n);

/* A client's or a sandbox's text as a "%s" argument, escaped and cut, in a
 * buffer that lives until the end of the enclosing block:
 *     log_info("client '%s'", LOG_FIELD(name)); */
#define LOG_FIELD(s)      log_field((char[LOG_FIELD_MAX]){0}, LOG_FIELD_MAX, (s), LOG_FIELD_STRLEN)
#define LOG_FIELD_N(s, n) log_field((char[LOG_FIELD_MAX]){0}, LOG_FIELD_MAX, (s), (n))

#define log_at(level, ...)                                                                         \
    do {                                                                                           \
        if ((int)(level) <= atomic_load_explicit(&log_threshold, memory_order_relaxed))            \
            log_write((level), __VA_ARGS__);                                                       \
    } while (0)

#define log_error(...) log_at(LOG_LVL_ERROR, __VA_ARGS__)
#define log_warn(...)  log_at(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...)  log_at(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...) log_at(LOG_LVL_DEBUG, __VA_ARGS__)

#endif
