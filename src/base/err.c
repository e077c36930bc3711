#include "base/err.h"

#include <stdio.h>

static const char *const code_names[] = {
    [ERR_OK] = "ok",
    [ERR_INVALID] = "invalid input",
    [ERR_TOO_BIG] = "too big",
    [ERR_ENGINE] = "container engine error",
    [ERR_NOT_FOUND] = "not found",
    [ERR_IO] = "I/O error",
    [ERR_TIMEOUT] = "timed out",
    [ERR_CANCELLED] = "cancelled",
    [ERR_PROTOCOL] = "protocol error",
    [ERR_INTERNAL] = "internal error",
};

const char *err_code_name(enum err_code code)
{
    if ((size_t)code < ARRAY_SIZE(code_names) && code_names[code])
        return code_names[code];
    return "error";
}

int err_jsonrpc_code(enum err_code code)
{
    switch (code) {
    case ERR_OK:
        return 0;
    case ERR_PROTOCOL:
        return ERR_JSONRPC_PARSE;
    case ERR_TOO_BIG:
        return ERR_JSONRPC_INVALID_REQUEST;
    case ERR_INVALID:
        return ERR_JSONRPC_INVALID_PARAMS;
    case ERR_INTERNAL:
        return ERR_JSONRPC_INTERNAL;
    case ERR_ENGINE:
    case ERR_NOT_FOUND:
    case ERR_IO:
    case ERR_TIMEOUT:
    case ERR_CANCELLED:
        return ERR_JSONRPC_SERVER;
    }
    return ERR_JSONRPC_INTERNAL;
}

const char *err_tool_status(enum err_code code)
{
    switch (code) {
    case ERR_OK:
        return "ok";
    case ERR_CANCELLED:
        return "cancelled";
    case ERR_INVALID:
    case ERR_TOO_BIG:
    case ERR_ENGINE:
    case ERR_NOT_FOUND:
    case ERR_IO:
    case ERR_TIMEOUT:
    case ERR_PROTOCOL:
    case ERR_INTERNAL:
        return "error";
    }
    return "error";
}

int err_set(struct err *err, enum err_code code, const char *fmt, ...)
{
    if (!err)
        return -1;
    free(err->msg);
    va_list ap;
    va_start(ap, fmt);
    err->msg = xvasprintf(fmt, ap);
    va_end(ap);
    err->code = code;
    return -1;
}

int err_wrap(struct err *err, const char *fmt, ...)
{
    if (!err)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    char *ctx = xvasprintf(fmt, ap);
    va_end(ap);
    if (err->code == ERR_OK && !err->msg) {
        err->msg = ctx;
        err->code = ERR_INTERNAL;
        return -1;
    }
    char *msg = xasprintf("%s: %s", ctx, err_msg(err));
    free(ctx);
    free(err->msg);
    err->msg = msg;
    if (err->code == ERR_OK)
        err->code = ERR_INTERNAL;
    return -1;
}

void err_clear(struct err *err)
{
    if (!err)
        return;
    free(err->msg);
    err->msg = NULL;
    err->code = ERR_OK;
}

void err_move(struct err *dst, struct err *src)
{
    if (!dst || !src || dst == src)
        return;
    free(dst->msg);
    dst->msg = src->msg;
    dst->code = src->code;
    src->msg = NULL;
    src->code = ERR_OK;
}

const char *err_msg(const struct err *err)
{
    if (!err)
        return "";
    if (err->msg)
        return err->msg;
    return err_code_name(err->code);
}
