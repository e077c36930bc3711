/* What a loaded configuration must satisfy beyond each option's own
 * range: the checks across options (--timeout-ms under --max-timeout-ms,
 * a token off loopback, ...), the forms of the text options, and their
 * normal forms (a preload list as the runner takes it, --http split into
 * host and port, one session's shares over stdio). Also the forms of a
 * list option's items, which the option table names (config_table.h). */
#ifndef MCPSBX_CONFIG_CHECK_H
#define MCPSBX_CONFIG_CHECK_H

#include <stddef.h>

#include "base/config.h"
#include "base/err.h"

/* Checks cfg once every layer is applied and puts its values in their
 * normal forms. */
int config_check(struct config *cfg, struct err *err);

/* Refuses --http off loopback without a token (run after the token is
 * loaded). */
int config_check_listen_auth(const struct config *cfg, struct err *err);

/* The forms of list items, s[0..n): 1 if valid. */
int config_item_env_name(const char *s, size_t n); /* a variable's name */
int config_item_token(const char *s, size_t n);    /* 1 to 256 visible ASCII */
int config_item_label(const char *s, size_t n);    /* KEY=VALUE, not the daemon's key */
int config_item_language(const char *s, size_t n); /* a language's name or alias */
int config_item_egress(const char *s, size_t n);   /* LANGUAGE=text, printable */
int config_item_secret(const char *s, size_t n);   /* NAME=text, printable */
int config_item_pool(const char *s, size_t n);     /* LANGUAGE=N, N 0..64 */

#endif
