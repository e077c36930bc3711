/* YAML text as a json-c tree, for the one YAML file the daemon reads: a
 * kubeconfig (kube_config.h). libyaml parses; this builds mappings as
 * objects, sequences as arrays and every scalar as a string (the caller
 * reads the members it knows, by their types). The file is the
 * operator's but parsed as untrusted: its size is capped by the caller,
 * nesting at YAML_JSON_DEPTH, and aliases (which can multiply a small
 * file into a huge tree) are refused, as are keys that are not scalars
 * and a second document. */
#ifndef MCPSBX_KUBERNETES_YAML_JSON_H
#define MCPSBX_KUBERNETES_YAML_JSON_H

#include <json-c/json.h>
#include <stddef.h>

#include "base/err.h"

#define YAML_JSON_DEPTH 32

/* text[0..n) as a tree (caller owns; an empty document is an empty
 * object), or NULL with err (ERR_INVALID) naming the line. what names
 * the text in messages. */
json_object *yaml_json_parse(const char *text, size_t n, const char *what, struct err *err);

#endif
