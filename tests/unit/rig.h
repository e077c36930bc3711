/* For the unit tests that reach the fake engine (tests/fake_engine/)
 * through a backend: the backends' process-wide setup, as main() makes
 * it, as a cmocka group's setup and teardown. Include after cmocka.h.
 * (The tests above the backend use unit/server_rig.h.) */
#ifndef MCPSBX_TEST_RIG_H
#define MCPSBX_TEST_RIG_H

#include "backend/backends.h"

static inline int rig_group_setup(void **state)
{
    (void)state;
    struct err err = ERR_INIT;
    int rc = backends_init(&err);
    err_clear(&err);
    return rc;
}

static inline int rig_group_teardown(void **state)
{
    (void)state;
    backends_cleanup();
    return 0;
}

#endif
