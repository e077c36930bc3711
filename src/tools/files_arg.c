#include "tools/files_arg.h"

#include <stdlib.h>
#include <string.h>

#include "base/codec.h"
#include "base/json.h"
#include "base/util.h"
#include "sandbox/sandbox.h"

static char *own(struct run *fa, const char *s, size_t n)
{
    char *copy = xmalloc(n + 1);
    memcpy(copy, s, n);
    copy[n] = '\0';
    fa->file_data = xrealloc(fa->file_data, (fa->n_file_data + 1) * sizeof(*fa->file_data));
    fa->file_data[fa->n_file_data++] = copy;
    return copy;
}

static int parse_files(const struct config *cfg, json_object *list, struct run *out,
                       struct err *err)
{
    size_t n = json_object_array_length(list);
    if ((long long)n > cfg->max_files_in)
        return err_set(err, ERR_TOO_BIG,
                       "argument 'files' has %zu files; the limit is %lld "
                       "(--max-files-in)",
                       n, cfg->max_files_in);
    out->files = xcalloc(n ? n : 1, sizeof(*out->files));
    long long total = 0;
    for (size_t i = 0; i < n; i++) {
        json_object *f = json_object_array_get_idx(list, i);
        size_t plen = 0;
        size_t clen = 0;
        size_t elen = 0;
        const char *path = json_get_string(f, "path", &plen);
        const char *content = json_get_string(f, "content", &clen);
        const char *enc = json_get_string(f, "encoding", &elen);
        if (!path || !content)
            return err_set(err, ERR_INTERNAL,
                           "the schema lets a file through without path or "
                           "content");
        bool base64 = enc && strcmp(enc, "base64") == 0;
        char *norm = NULL;
        struct err why = ERR_INIT;
        if (workpath_normalize(path, plen, &norm, &why) < 0) {
            err_set(err, ERR_INVALID, "argument 'files[%zu].path': %s", i, err_msg(&why));
            err_clear(&why);
            return -1;
        }
        long long size = base64 ? codec_base64_decode(content, clen, NULL)
                                : (util_utf8_valid(content, clen) ? (long long)clen : -2);
        for (size_t j = 0; j < i && size >= 0; j++) {
            if (workpath_is_prefix(out->files[j].path, norm) ||
                workpath_is_prefix(norm, out->files[j].path)) {
                free(norm);
                return err_set(err, ERR_INVALID,
                               "argument 'files[%zu].path': it clashes with "
                               "files[%zu] (the same file, or one inside the "
                               "other)",
                               i, j);
            }
        }
        /* Kept before any return below, so run_files_free frees it. */
        out->files[i].path = own(out, norm, strlen(norm));
        out->n_files = i + 1;
        free(norm);
        if (size == -1)
            return err_set(err, ERR_INVALID,
                           "argument 'files[%zu].content' is not base64 (the "
                           "standard alphabet, '=' padding, no line breaks)",
                           i);
        if (size == -2)
            return err_set(err, ERR_INVALID,
                           "argument 'files[%zu].content' is not UTF-8 text; "
                           "send it with \"encoding\": \"base64\"",
                           i);
        if (size > cfg->max_file_in_bytes)
            return err_set(err, ERR_TOO_BIG,
                           "argument 'files[%zu]' is %lld bytes; the limit is "
                           "%lld bytes (--max-file-in-bytes)",
                           i, size, cfg->max_file_in_bytes);
        total += size;
        if (total > cfg->max_files_in_bytes)
            return err_set(err, ERR_TOO_BIG,
                           "argument 'files' holds more than %lld bytes "
                           "(--max-files-in-bytes)",
                           cfg->max_files_in_bytes);
        out->files[i].content = own(out, content, clen);
        out->files[i].content_len = clen;
        out->files[i].base64 = base64;
    }
    return 0;
}

static int parse_patterns(json_object *list, struct run *out, struct err *err)
{
    size_t n = json_object_array_length(list);
    if (n > FILES_ARG_MAX_PATTERNS)
        return err_set(err, ERR_TOO_BIG,
                       "argument 'output_files' has %zu patterns; the limit is "
                       "%d",
                       n, FILES_ARG_MAX_PATTERNS);
    out->patterns = xcalloc(n ? n : 1, sizeof(*out->patterns));
    for (size_t i = 0; i < n; i++) {
        json_object *p = json_object_array_get_idx(list, i);
        struct err why = ERR_INIT;
        if (!json_object_is_type(p, json_type_string) ||
            workpath_pattern(json_object_get_string(p), (size_t)json_object_get_string_len(p),
                             &out->patterns[i], &why) < 0) {
            err_set(err, ERR_INVALID, "argument 'output_files[%zu]': %s", i,
                    err_msg(&why)[0] ? err_msg(&why) : "not a string");
            err_clear(&why);
            return -1;
        }
        out->n_patterns = i + 1;
    }
    return 0;
}

int files_arg_parse(const struct config *cfg, json_object *args, struct run *out, struct err *err)
{
    json_object *v = NULL;
    int rc = 0;
    if (json_object_object_get_ex(args, "files", &v) && json_object_is_type(v, json_type_array))
        rc = parse_files(cfg, v, out, err);
    if (rc == 0 && json_object_object_get_ex(args, "output_files", &v) &&
        json_object_is_type(v, json_type_array))
        rc = parse_patterns(v, out, err);
    if (rc < 0)
        run_files_free(out);
    return rc;
}
