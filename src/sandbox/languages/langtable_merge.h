/* The operator's languages file over the built-in one (sandbox/languages/langtable.h):
 * an entry of a new name adds a language, one of an existing name
 * overrides the keys it sets, a disabled one removes it; then every
 * language is checked whole (its keys against each other, its names
 * against the others') and given its defaults. Internal to the language
 * table. */
#ifndef MCPSBX_LANGTABLE_MERGE_H
#define MCPSBX_LANGTABLE_MERGE_H

#include "sandbox/languages/langtable_read.h"

/* Merges user (may be empty) into base, both emptied. Returns 0 with
 * *langs (n of them, indexed in order; free each with
 * langtable_lang_free, then the array), or -1 with err naming the file
 * and line to change. */
int langtable_merge(struct file_drafts *base, struct file_drafts *user,
                    struct langtable_lang **langs, size_t *n, struct err *err);

#endif
