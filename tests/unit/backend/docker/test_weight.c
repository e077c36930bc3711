/* backend/docker/weight.c: the container's cpu cgroup is found from its
 * init's cgroup list (v1 and v2), only a path naming the container is
 * taken, and the weight and idle flag are written (backend.c). A fake /proc and mount table
 * under a temporary directory stand in for the host's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/backend.h"
#include "backend/docker/weight.h"

#define ID "3757a4cea4d2c4250e1adef0e493637f45320ca51bf9d3fc32861f951a602042"

static const char V1[] = "9:name=systemd:/docker/" ID "\n"
                         "3:cpuset:/docker/" ID "\n"
                         "2:cpuacct:/docker/" ID "\n"
                         "1:cpu:/docker/" ID "\n"
                         "0::/docker/" ID "\n";
static const char V1_JOINED[] = "4:cpu,cpuacct:/system.slice/docker-" ID ".scope\n"
                                "0::/system.slice/docker-" ID ".scope\n";
static const char V2[] = "0::/machine.slice/libpod-" ID ".scope/container\n";

static void test_path(void **state)
{
    (void)state;
    char out[WEIGHT_PATH_MAX];
    bool v2 = true;
    struct err err = ERR_INIT;
    assert_int_equal(weight_cgroup_path(V1, strlen(V1), ID, out, &v2, &err), 0);
    assert_string_equal(out, "/docker/" ID);
    assert_false(v2);
    assert_int_equal(weight_cgroup_path(V1_JOINED, strlen(V1_JOINED), ID, out, &v2, &err), 0);
    assert_string_equal(out, "/system.slice/docker-" ID ".scope");
    assert_false(v2);
    assert_int_equal(weight_cgroup_path(V2, strlen(V2), ID, out, &v2, &err), 0);
    assert_string_equal(out, "/machine.slice/libpod-" ID ".scope/container");
    assert_true(v2);
    /* Not the container's: the root, another id, a cpuset-only line. */
    const char *no[] = {"1:cpu:/\n0::/\n",           "1:cpu:/docker/0123\n",
                        "3:cpuset:/docker/" ID "\n", "1:cpuacct:/docker/" ID "\n",
                        "1:cpu:docker/" ID "\n",     ""};
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
        assert_int_equal(weight_cgroup_path(no[i], strlen(no[i]), ID, out, &v2, &err), -1);
        assert_int_equal(err.code, ERR_NOT_FOUND);
        err_clear(&err);
    }
    /* An empty id names nothing. */
    assert_int_equal(weight_cgroup_path(V2, strlen(V2), "", out, &v2, &err), -1);
    err_clear(&err);
}

static void put(const char *dir, const char *rel, const char *text)
{
    char p[1024];
    snprintf(p, sizeof(p), "%s/%s", dir, rel);
    for (char *s = strchr(p + strlen(dir) + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        mkdir(p, 0700);
        *s = '/';
    }
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void read_back(const char *dir, const char *rel, char *out, size_t cap)
{
    char p[1024];
    snprintf(p, sizeof(p), "%s/%s", dir, rel);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    size_t n = fread(out, 1, cap - 1, f);
    out[n] = '\0';
    fclose(f);
}

static void test_open_and_write(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_weight.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char proc[600], mounts[600], line[1200];
    snprintf(proc, sizeof(proc), "%s/proc", dir);
    snprintf(mounts, sizeof(mounts), "%s/mountinfo", dir);
    put(dir, "proc/42/cgroup", V1);
    put(dir, "proc/43/cgroup", V2);
    snprintf(line, sizeof(line),
             "30 25 0:26 / %s/cpu rw,relatime shared:9 - cgroup cgroup rw,cpu\n"
             "31 25 0:27 / %s/unified rw,relatime shared:10 - cgroup2 cgroup2 rw\n"
             "32 25 0:28 /sub %s/elsewhere rw - cgroup cgroup rw,cpu\n",
             dir, dir, dir);
    put(dir, "mountinfo", line);
    put(dir, "cpu/docker/" ID "/cpu.shares", "2\n");
    put(dir, "cpu/docker/" ID "/cpu.idle", "0\n");
    put(dir, "unified/machine.slice/libpod-" ID ".scope/container/cpu.weight", "1\n");

    bool v2 = true;
    int idle_fd = -1;
    struct err err = ERR_INIT;
    int fd = weight_open(proc, mounts, 42, ID, &v2, &idle_fd, &err);
    if (fd < 0)
        fail_msg("%s", err_msg(&err));
    assert_false(v2);
    assert_true(idle_fd >= 0);
    /* The idle flag of the same cgroup is set while the sandbox waits;
     * a raise clears it and writes the normal weight. */
    struct backend_weight w = {.fd = fd, .idle_fd = idle_fd, .normal = WEIGHT_V1_NORMAL};
    backend_weight_idle(&w);
    assert_int_equal(w.idle_fd, idle_fd);
    char got[32];
    read_back(dir, "cpu/docker/" ID "/cpu.idle", got, sizeof(got));
    assert_int_equal(got[0], '1');
    /* cgroup files take each write whole, wherever the offset is. */
    assert_int_equal(lseek(w.idle_fd, 0, SEEK_SET), 0);
    assert_int_equal(backend_weight_raise(&w, &err), 0);
    read_back(dir, "cpu/docker/" ID "/cpu.idle", got, sizeof(got));
    assert_int_equal(got[0], '0');
    read_back(dir, "cpu/docker/" ID "/cpu.shares", got, sizeof(got));
    assert_int_equal(strncmp(got, WEIGHT_V1_NORMAL, strlen(WEIGHT_V1_NORMAL)), 0);
    backend_weight_close(&w);
    assert_int_equal(w.fd, -1);
    assert_int_equal(w.idle_fd, -1);

    /* A flag that cannot be written is let go: the least weight holds. */
    char flag[700];
    snprintf(flag, sizeof(flag), "%s/cpu/docker/" ID "/cpu.idle", dir);
    w = (struct backend_weight){.fd = -1, .idle_fd = open(flag, O_RDONLY | O_CLOEXEC)};
    assert_true(w.idle_fd >= 0);
    backend_weight_idle(&w);
    assert_int_equal(w.idle_fd, -1);

    /* A cgroup without the flag (an older kernel): the weight alone. */
    fd = weight_open(proc, mounts, 43, ID, &v2, &idle_fd, &err);
    if (fd < 0)
        fail_msg("%s", err_msg(&err));
    assert_int_equal(idle_fd, -1);
    assert_true(v2);
    w = (struct backend_weight){.fd = fd, .idle_fd = idle_fd, .normal = WEIGHT_V2_NORMAL};
    backend_weight_idle(&w);
    assert_int_equal(backend_weight_raise(&w, &err), 0);
    backend_weight_close(&w);
    read_back(dir, "unified/machine.slice/libpod-" ID ".scope/container/cpu.weight", got,
              sizeof(got));
    assert_int_equal(strncmp(got, WEIGHT_V2_NORMAL, strlen(WEIGHT_V2_NORMAL)), 0);

    /* No process, another container's id, no such pid. */
    assert_int_equal(weight_open(proc, mounts, 0, ID, &v2, &idle_fd, &err), -1);
    err_clear(&err);
    assert_int_equal(weight_open(proc, mounts, 42, "feedface", &v2, &idle_fd, &err), -1);
    assert_int_equal(err.code, ERR_NOT_FOUND);
    err_clear(&err);
    assert_int_equal(weight_open(proc, mounts, 44, ID, &v2, &idle_fd, &err), -1);
    assert_int_equal(err.code, ERR_IO);
    err_clear(&err);

    char cmd[700];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_path),
        cmocka_unit_test(test_open_and_write),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
