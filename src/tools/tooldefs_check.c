/* build/tooldefs-check FILE...: checks tool definition files
 * (src/tools/defs/) with the daemon's own validator before the Makefile
 * embeds them, so a bad definition fails `make`, not the daemon's start.
 * output_schema.json is the outputSchema all tools share; any other FILE
 * is one tool, whose name must be the file's name without ".json" (the
 * embedded symbol is named after the file). Prints "FILE: problem" on
 * stderr for each bad file and exits 1 if there is one. A program of the
 * build (the Makefile's PROGRAMS), not part of the daemon. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "tools/tooldef.h"

#define MAX_FILE_BYTES (1024 * 1024)

static int read_file(const char *path, struct buf *b, struct err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return err_set(err, ERR_IO, "cannot open");
    char chunk[4096];
    size_t n = 0;
    int rc = 0;
    while (rc == 0 && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        if (buf_add(b, chunk, n) < 0)
            rc = err_set(err, ERR_TOO_BIG, "larger than %d bytes", MAX_FILE_BYTES);
    if (rc == 0 && ferror(f))
        rc = err_set(err, ERR_IO, "read error");
    fclose(f);
    return rc;
}

static int check_file(const char *path, struct err *err)
{
    struct buf b;
    buf_init(&b, MAX_FILE_BYTES);
    if (read_file(path, &b, err) < 0) {
        buf_free(&b);
        return -1;
    }
    json_object *o = tooldef_parse(buf_cstr(&b), b.len, err);
    buf_free(&b);
    if (!o)
        return -1;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t stem = strlen(base);
    if (stem < 5 || strcmp(base + stem - 5, ".json") != 0) {
        json_object_put(o);
        return err_set(err, ERR_INVALID, "the file name must end in .json");
    }
    stem -= 5;
    int rc = 0;
    struct tooldef_checked def;
    if (strcmp(base, "output_schema.json") == 0)
        rc = tooldef_check_output_schema(o, err);
    else if ((rc = tooldef_check(o, &def, err)) == 0 &&
             (strlen(def.name) != stem || strncmp(def.name, base, stem) != 0))
        rc = err_set(err, ERR_INVALID, "name \"%s\" differs from the file's name", def.name);
    json_object_put(o);
    return rc;
}

int main(int argc, char **argv)
{
    int bad = 0;
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE.json...\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        struct err err = ERR_INIT;
        if (check_file(argv[i], &err) < 0) {
            fprintf(stderr, "%s: %s\n", argv[i], err_msg(&err));
            bad = 1;
        }
        err_clear(&err);
    }
    return bad;
}
