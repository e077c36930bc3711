/* The checks on what a code session is named and looked up by, made before
 * the registry (sessions.h) keeps or looks up anything: an owner, a
 * language, a name and an id. Apart from the registry so that a caller
 * checking a client's arguments gives the same answers it would. */
#ifndef MCPSBX_SESSION_CHECK_H
#define MCPSBX_SESSION_CHECK_H

#include <stdbool.h>

#include "base/err.h"
#include "sandbox/session/sessions.h"

/* who is not NULL and its owner and principal are printable ASCII without
 * spaces, neither empty, each NUL-terminated within its array. */
bool session_check_owner(const struct code_session_owner *who);

/* language: 1 to CODE_SESSION_LANGUAGE_MAX printable ASCII characters
 * without spaces; otherwise -1 with ERR_INVALID. */
int session_check_language(const char *language, struct err *err);

/* name: at most CODE_SESSION_NAME_MAX bytes of UTF-8 without control
 * characters (C0, DEL, C1), as it goes back to clients and into log lines;
 * otherwise -1 with ERR_INVALID saying which. "" is fine. */
int session_check_name(const char *name, struct err *err);

/* id: a handle of this daemon's (what the registry makes); false for
 * anything else, NULL too. */
bool session_check_id(const char *id);

#endif
