#include "backend/kubernetes/yaml_json.h"

#include <limits.h>
#include <stdlib.h>
#include <yaml.h>

#include "base/util.h"

/* The nodes being built: a mapping waits for its key's value. */
struct frame {
    json_object *node;
    char *key; /* a mapping's pending key, or NULL */
};

struct build {
    struct frame stack[YAML_JSON_DEPTH];
    size_t depth;
    json_object *root;
    bool done; /* the first document's root is complete */
};

static int fail(struct err *err, const char *what, const yaml_event_t *ev, const char *why)
{
    return err_set(err, ERR_INVALID, "%s, line %zu: %s", what, ev->start_mark.line + 1, why);
}

/* Puts v where the innermost open node wants it; takes v. */
static int place(struct build *b, json_object *v, const yaml_event_t *ev, const char *what,
                 struct err *err)
{
    if (b->depth == 0) {
        if (b->root || b->done) {
            json_object_put(v);
            return fail(err, what, ev, "more than one document");
        }
        b->root = v;
        return 0;
    }
    struct frame *f = &b->stack[b->depth - 1];
    if (json_object_is_type(f->node, json_type_array)) {
        if (json_object_array_add(f->node, v) == 0)
            return 0;
        json_object_put(v);
        return fail(err, what, ev, "out of memory");
    }
    if (!f->key) {
        json_object_put(v);
        return fail(err, what, ev, "a key that is not a plain value");
    }
    json_object_object_add(f->node, f->key, v);
    free(f->key);
    f->key = NULL;
    return 0;
}

static int open_node(struct build *b, json_object *node, const yaml_event_t *ev, const char *what,
                     struct err *err)
{
    if (b->depth == YAML_JSON_DEPTH) {
        json_object_put(node);
        return fail(err, what, ev, "nested too deep");
    }
    /* The node goes into its parent now, and is filled in place. */
    if (place(b, json_object_get(node), ev, what, err) < 0) {
        json_object_put(node);
        return -1;
    }
    b->stack[b->depth++] = (struct frame){.node = node};
    return 0;
}

static void close_node(struct build *b)
{
    struct frame *f = &b->stack[--b->depth];
    free(f->key);
    json_object_put(f->node);
    if (b->depth == 0)
        b->done = true;
}

static int on_event(struct build *b, const yaml_event_t *ev, const char *what, struct err *err)
{
    switch (ev->type) {
    case YAML_ALIAS_EVENT:
        return fail(err, what, ev, "aliases are not taken");
    case YAML_SCALAR_EVENT: {
        const char *s = (const char *)ev->data.scalar.value;
        size_t n = ev->data.scalar.length;
        struct frame *f = b->depth ? &b->stack[b->depth - 1] : NULL;
        if (f && !f->key && json_object_is_type(f->node, json_type_object)) {
            f->key = xstrndup(s, n);
            return 0;
        }
        int rc = place(b, json_object_new_string_len(s, (int)n), ev, what, err);
        if (rc == 0 && b->depth == 0)
            b->done = true;
        return rc;
    }
    case YAML_MAPPING_START_EVENT:
        return open_node(b, json_object_new_object(), ev, what, err);
    case YAML_SEQUENCE_START_EVENT:
        return open_node(b, json_object_new_array(), ev, what, err);
    case YAML_MAPPING_END_EVENT:
    case YAML_SEQUENCE_END_EVENT:
        close_node(b);
        return 0;
    case YAML_NO_EVENT:
    case YAML_STREAM_START_EVENT:
    case YAML_STREAM_END_EVENT:
    case YAML_DOCUMENT_START_EVENT:
    case YAML_DOCUMENT_END_EVENT:
        return 0;
    }
    return 0;
}

json_object *yaml_json_parse(const char *text, size_t n, const char *what, struct err *err)
{
    if (n > INT_MAX) {
        err_set(err, ERR_TOO_BIG, "%s is too large", what);
        return NULL;
    }
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        err_set(err, ERR_INTERNAL, "%s: cannot start the YAML parser", what);
        return NULL;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, n);
    struct build b = {0};
    int rc = 0;
    for (bool end = false; !end && rc == 0;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            rc = err_set(err, ERR_INVALID, "%s, line %zu: %s", what, parser.problem_mark.line + 1,
                         parser.problem ? parser.problem : "not YAML");
            break;
        }
        end = ev.type == YAML_STREAM_END_EVENT;
        rc = on_event(&b, &ev, what, err);
        yaml_event_delete(&ev);
    }
    while (b.depth > 0)
        close_node(&b);
    yaml_parser_delete(&parser);
    if (rc < 0) {
        json_object_put(b.root);
        return NULL;
    }
    if (!b.root || (json_object_is_type(b.root, json_type_string) &&
                    json_object_get_string_len(b.root) == 0)) {
        json_object_put(b.root);
        return json_object_new_object();
    }
    return b.root;
}
