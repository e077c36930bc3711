/* seccomp_file.c: where the profile file goes, that it holds exactly the
 * profile, and that a directory others could write is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/docker/seccomp_file.h"
#include "base/util.h"

static char base[64];

static int setup(void **state)
{
    (void)state;
    snprintf(base, sizeof(base), "/tmp/seccomp_file.XXXXXX");
    return mkdtemp(base) ? 0 : -1;
}

static void rm_file(const char *path)
{
    if (path)
        unlink(path);
}

static int teardown(void **state)
{
    (void)state;
    char *cmd = xasprintf("rm -rf '%s'", base);
    int rc = system(cmd);
    free(cmd);
    return rc == 0 ? 0 : -1;
}

static void test_writes_whole_profile(void **state)
{
    (void)state;
    char *dir = xasprintf("%s/run", base);
    char *list = xasprintf("%s:/elsewhere", dir); /* systemd may list several */
    setenv("RUNTIME_DIRECTORY", list, 1);
    struct err err = ERR_INIT;
    char *a = seccomp_file_write("{\"defaultAction\":\"SCMP_ACT_ERRNO\"}", &err);
    if (!a)
        fail_msg("%s", err_msg(&err));
    assert_memory_equal(a, dir, strlen(dir));
    struct stat st;
    assert_int_equal(stat(a, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0644);
    FILE *f = fopen(a, "re");
    assert_non_null(f);
    char got[128] = {0};
    size_t n = fread(got, 1, sizeof(got) - 1, f);
    fclose(f);
    assert_int_equal(n, strlen("{\"defaultAction\":\"SCMP_ACT_ERRNO\"}"));
    assert_string_equal(got, "{\"defaultAction\":\"SCMP_ACT_ERRNO\"}");
    /* The same text, the same file; another text, another file. */
    char *again = seccomp_file_write("{\"defaultAction\":\"SCMP_ACT_ERRNO\"}", &err);
    char *other = seccomp_file_write("{\"defaultAction\":\"SCMP_ACT_KILL\"}", &err);
    assert_non_null(again);
    assert_non_null(other);
    assert_string_equal(a, again);
    assert_string_not_equal(a, other);
    rm_file(a);
    rm_file(other);
    free(a);
    free(again);
    free(other);
    free(list);
    free(dir);
}

static void test_refuses_open_directory(void **state)
{
    (void)state;
    char *dir = xasprintf("%s/open", base);
    assert_int_equal(mkdir(dir, 0700), 0);
    assert_int_equal(chmod(dir, 0777), 0);
    setenv("RUNTIME_DIRECTORY", dir, 1);
    struct err err = ERR_INIT;
    char *p = seccomp_file_write("{}", &err);
    assert_null(p);
    assert_non_null(strstr(err_msg(&err), dir));
    assert_non_null(strstr(err_msg(&err), "only it can write"));
    err_clear(&err);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_writes_whole_profile, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refuses_open_directory, setup, teardown),
    };
    return cmocka_run_group_tests_name("seccomp_file", tests, NULL, NULL);
}
