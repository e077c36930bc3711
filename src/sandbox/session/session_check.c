#include "sandbox/session/session_check.h"

#include <string.h>

#include "base/handle.h"

/* s (NUL-terminated): 1 to max printable ASCII characters, no space. */
static bool printable_word(const char *s, size_t max)
{
    return util_ascii_word(s, strnlen(s, max + 1), max);
}

bool session_check_owner(const struct code_session_owner *who)
{
    return who && printable_word(who->owner, sizeof(who->owner) - 1) &&
           printable_word(who->principal, sizeof(who->principal) - 1);
}

int session_check_language(const char *language, struct err *err)
{
    if (!language || !printable_word(language, CODE_SESSION_LANGUAGE_MAX))
        return err_set(err, ERR_INVALID, "language: 1 to %d printable ASCII characters",
                       CODE_SESSION_LANGUAGE_MAX);
    return 0;
}

int session_check_name(const char *name, struct err *err)
{
    size_t n = strnlen(name, CODE_SESSION_NAME_MAX + 1);
    if (n > CODE_SESSION_NAME_MAX)
        return err_set(err, ERR_INVALID, "name: at most %d bytes", CODE_SESSION_NAME_MAX);
    if (!util_utf8_valid(name, n))
        return err_set(err, ERR_INVALID, "name: not valid UTF-8");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        /* C1 (U+0080..U+009F) is 0xc2 0x80..0x9f in UTF-8. */
        unsigned char next = i + 1 < n ? (unsigned char)name[i + 1] : 0;
        if (c < 0x20 || c == 0x7f || (c == 0xc2 && next >= 0x80 && next <= 0x9f))
            return err_set(err, ERR_INVALID, "name: control characters are not allowed");
    }
    return 0;
}

bool session_check_id(const char *id)
{
    return handle_parse(id, NULL) == HANDLE_MINE;
}
