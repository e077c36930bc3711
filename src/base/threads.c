#include "base/threads.h"

#include <string.h>

int thread_start(pthread_t *t, bool *started, thread_main_fn fn, void *arg, const char *what,
                 struct err *err)
{
    int e = pthread_create(t, NULL, fn, arg);
    if (e != 0)
        return err_set(err, ERR_INTERNAL, "cannot start %s: %s", what, strerror(e));
    *started = true;
    return 0;
}

void thread_join(pthread_t *t, bool *started)
{
    if (!*started)
        return;
    pthread_join(*t, NULL);
    *started = false;
}

int threads_start(pthread_t *t, size_t n, size_t *started, thread_main_fn fn, void *arg,
                  const char *what, struct err *err)
{
    for (*started = 0; *started < n; (*started)++) {
        int e = pthread_create(&t[*started], NULL, fn, arg);
        if (e != 0)
            return err_set(err, ERR_INTERNAL, "cannot start %s (%zu of %zu): %s", what,
                           *started + 1, n, strerror(e));
    }
    return 0;
}

void threads_join(pthread_t *t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        pthread_join(t[i], NULL);
}
