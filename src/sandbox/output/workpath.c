#include "sandbox/output/workpath.h"

#include <string.h>

#include "base/buf.h"
#include "base/util.h"

/* The program's own files: main.<ext> of every built-in language, the
 * binary a compile step makes (main), its JavaScript (main.js for
 * TypeScript), and the runners' .mcpsbx* files. */
static bool reserved(const char *first, size_t n)
{
    if ((n == 4 && memcmp(first, "main", 4) == 0) || (n > 5 && memcmp(first, "main.", 5) == 0))
        return true;
    return n >= 7 && memcmp(first, ".mcpsbx", 7) == 0;
}

enum mode { PATH_IN, PATH_PATTERN, PATH_OUT };

static int check(const char *path, size_t len, enum mode mode, char **out, struct err *err)
{
    bool pattern = mode == PATH_PATTERN;
    *out = NULL;
    const char *what = pattern ? "pattern" : "path";
    if (len == 0)
        return err_set(err, ERR_INVALID, "the %s is empty", what);
    if (len > WORKPATH_MAX_BYTES)
        return err_set(err, ERR_INVALID, "the %s is over %d bytes", what, WORKPATH_MAX_BYTES);
    if (path[0] == '/')
        return err_set(err, ERR_INVALID,
                       "the %s is absolute; it must be relative to the working "
                       "directory",
                       what);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)path[i];
        if (c < 0x20 || c == 0x7f)
            return err_set(err, ERR_INVALID, "the %s holds a NUL or control character", what);
    }
    if (!util_utf8_valid(path, len))
        return err_set(err, ERR_INVALID, "the %s is not UTF-8", what);
    if (path[len - 1] == '/')
        return err_set(err, ERR_INVALID, "the %s ends in a slash (a directory)", what);

    struct buf norm;
    buf_init(&norm, WORKPATH_MAX_BYTES);
    int rc = 0;
    bool first = true;
    for (size_t i = 0; i < len && rc == 0;) {
        const char *slash = memchr(path + i, '/', len - i);
        size_t n = slash ? (size_t)(slash - (path + i)) : len - i;
        const char *name = path + i;
        i += n + 1;
        if (n == 0 || (n == 1 && name[0] == '.'))
            continue;
        if (n == 2 && name[0] == '.' && name[1] == '.') {
            rc = err_set(err, ERR_INVALID, "the %s has a '..' component", what);
        } else if (n > WORKPATH_MAX_COMPONENT) {
            rc = err_set(err, ERR_INVALID, "the %s has a name over %d bytes", what,
                         WORKPATH_MAX_COMPONENT);
        } else if (pattern && memmem(name, n, "**", 2) && n != 2) {
            rc = err_set(err, ERR_INVALID,
                         "the pattern has '**' inside a name; it stands only "
                         "alone, for any number of directories");
        } else if (mode == PATH_IN && first && reserved(name, n)) {
            rc = err_set(err, ERR_INVALID,
                         "the path is the program's or the runner's own (main, "
                         "main.* and .mcpsbx* are taken)");
        } else if ((norm.len && buf_add(&norm, "/", 1) < 0) || buf_add(&norm, name, n) < 0) {
            rc = err_set(err, ERR_INVALID, "the %s is over %d bytes", what, WORKPATH_MAX_BYTES);
        }
        first = false;
    }
    if (rc == 0 && norm.len == 0)
        rc = err_set(err, ERR_INVALID, "the %s names the working directory itself", what);
    if (rc < 0) {
        buf_free(&norm);
        return rc;
    }
    size_t n = 0;
    *out = buf_take(&norm, &n);
    return 0;
}

int workpath_normalize(const char *path, size_t len, char **out, struct err *err)
{
    return check(path, len, PATH_IN, out, err);
}

int workpath_output(const char *path, size_t len, char **out, struct err *err)
{
    return check(path, len, PATH_OUT, out, err);
}

int workpath_pattern(const char *pattern, size_t len, char **out, struct err *err)
{
    return check(pattern, len, PATH_PATTERN, out, err);
}

bool workpath_is_prefix(const char *a, const char *b)
{
    size_t n = strlen(a);
    return strncmp(a, b, n) == 0 && (b[n] == '\0' || b[n] == '/');
}
