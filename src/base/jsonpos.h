/* Where the parts of a JSON text are, for messages to the person who
 * edits the file: json-c keeps no positions, so once it has accepted a
 * text (json_parse_exact), one pass over the same bytes records where each
 * value starts (for an object member, where its key starts) and how the
 * values nest. A caller walks a key path from the root: member "languages",
 * its element 2, that one's member "image", and asks for the line.
 *
 * Values are numbered in the order they start; the root is 0.
 * JSONPOS_NONE stands for a value that is not there: its line is 0, and
 * every walk from it ends there too. Keys are compared as json-c decodes
 * them ("n\u0061me" is "name"). */
#ifndef MCPSBX_JSONPOS_H
#define MCPSBX_JSONPOS_H

#include <stddef.h>

#define JSONPOS_NONE ((size_t)-1)
#define JSONPOS_ROOT ((size_t)0)

struct jsonpos;

/* Scans text[0..len), one JSON value that json-c accepted (strict or not:
 * anything it does not recognise ends the scan, and later values are not
 * there). Free with jsonpos_free. */
struct jsonpos *jsonpos_scan(const char *text, size_t len);

void jsonpos_free(struct jsonpos *p);

/* The member of object with this key (the first, if the key is repeated),
 * or JSONPOS_NONE (none, or object is not an object). */
size_t jsonpos_member(const struct jsonpos *p, size_t object, const char *key);

/* The i-th element of array, or JSONPOS_NONE. */
size_t jsonpos_element(const struct jsonpos *p, size_t array, size_t i);

/* How many members (duplicates included) or elements node has; 0 for a
 * scalar and for JSONPOS_NONE. */
size_t jsonpos_count(const struct jsonpos *p, size_t node);

/* The first member of object, in the text's order, whose key an earlier
 * member of it has, or JSONPOS_NONE. json-c keeps only one of them. */
size_t jsonpos_repeated(const struct jsonpos *p, size_t object);

/* The line (from 1) where node starts: its key's for a member. 0 for
 * JSONPOS_NONE. */
int jsonpos_line(const struct jsonpos *p, size_t node);

/* The line and column (from 1; a column counts bytes) of byte offset of
 * text; an offset past len is len's. Either pointer may be NULL. */
void jsonpos_where(const char *text, size_t len, size_t offset, int *line, int *column);

#endif
