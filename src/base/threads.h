/* Starting and joining a module's own threads, so that each owner fails
 * the same way when the host has no thread left: err says which thread,
 * and exactly the threads that did start are joined when the owner is
 * freed (its free function runs on a half-made object too). */
#ifndef MCPSBX_THREADS_H
#define MCPSBX_THREADS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"

typedef void *(*thread_main_fn)(void *arg);

/* Starts fn(arg) on *t and sets *started; on failure err says "cannot
 * start <what>" and *started is left as it was. */
int thread_start(pthread_t *t, bool *started, thread_main_fn fn, void *arg, const char *what,
                 struct err *err);

/* Joins *t if *started, and clears it. */
void thread_join(pthread_t *t, bool *started);

/* Starts n threads of fn(arg) into t[0..n). *started counts those
 * running, on failure too: threads_join(t, *started) ends them. */
int threads_start(pthread_t *t, size_t n, size_t *started, thread_main_fn fn, void *arg,
                  const char *what, struct err *err);

void threads_join(pthread_t *t, size_t n);

#endif
