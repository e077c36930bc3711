/* Logging to stderr only: stdout belongs to the stdio transport. Formatting
 * is skipped below the threshold. Never pass a secret's value. */
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

void log_write(enum log_level level, const char *fmt, ...) ATTR_PRINTF(2, 3);

/* Returns the level for "error|warn|info|debug", or -1. */
int log_level_from_name(const char *name);

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
