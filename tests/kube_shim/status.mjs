// The API server's error bodies: metav1.Status objects, with the members in
// the order the Go encoder writes them (kind, apiVersion, metadata, status,
// message, reason, details, code) and the messages apimachinery's
// api/errors package writes, so a client that parses or compares them sees
// what a cluster sends.

export class ApiError extends Error {
  constructor(st) {
    super(st.message);
    this.status = st;
  }
}

export function failure(code, reason, message, details) {
  const s = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason };
  if (details !== undefined) s.details = details;
  s.code = code;
  return s;
}

// A Status as the attach error channel carries it: json.Marshal of
// metav1.Status, so no kind/apiVersion (TypeMeta is empty there).
export function channelStatus(st) {
  const { kind, apiVersion, ...rest } = st;
  return rest;
}

export const SUCCESS = { metadata: {}, status: 'Success' };

export const unauthorized = () => failure(401, 'Unauthorized', 'Unauthorized');

export const notFound = (name, kind = 'pods') =>
  failure(404, 'NotFound', `${kind} "${name}" not found`, { name, kind });

export const noRoute = () =>
  failure(404, 'NotFound', 'the server could not find the requested resource', {});

export const alreadyExists = (name) =>
  failure(409, 'AlreadyExists', `pods "${name}" already exists`, { name, kind: 'pods' });

export const conflict = (name, why) =>
  failure(409, 'Conflict', `Operation cannot be fulfilled on pods "${name}": ${why}`, {
    name,
    kind: 'pods',
  });

export const badRequest = (message) => failure(400, 'BadRequest', message);

export const forbidden = (name, why) =>
  failure(403, 'Forbidden', `pods "${name}" is forbidden: ${why}`, { name, kind: 'pods' });

export const methodNotAllowed = () =>
  failure(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource', {});

export const tooLarge = (limit) =>
  failure(413, 'RequestEntityTooLarge', `Request entity too large: limit is ${limit}`);

export const unsupportedMedia = (type) =>
  failure(
    415,
    'UnsupportedMediaType',
    `the body of the request was in an unknown format - accepted media types include: application/json`,
    { causes: [{ reason: 'UnexpectedServerResponse', message: String(type) }] },
  );

export const tooManyRequests = () =>
  failure(429, 'TooManyRequests', 'Too many requests, please try again later.', {
    retryAfterSeconds: 1,
  });

export const expired = (message) => failure(410, 'Expired', message);

export const internal = (err) =>
  failure(500, 'InternalError', `Internal error occurred: ${err}`, {
    causes: [{ message: String(err) }],
  });

// Validation errors: field.ErrorList as a 422 Invalid, one cause a field,
// the message "Pod \"p\" is invalid: f: msg" or "[f1: m1, f2: m2]".
export function invalid(name, errs) {
  const parts = errs.map((e) => `${e.field}: ${e.message}`);
  const text = parts.length === 1 ? parts[0] : `[${parts.join(', ')}]`;
  return failure(422, 'Invalid', `Pod "${name}" is invalid: ${text}`, {
    name,
    kind: 'Pod',
    causes: errs.map((e) => ({ reason: e.reason, message: e.message, field: e.field })),
  });
}

// field.Error constructors: the texts of apimachinery's validation/field.
const show = (v) => (typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v) ?? 'null');
export const fe = {
  required: (field, detail) => ({
    field,
    reason: 'FieldValueRequired',
    message: detail ? `Required value: ${detail}` : 'Required value',
  }),
  invalid: (field, value, detail) => ({
    field,
    reason: 'FieldValueInvalid',
    message: `Invalid value: ${show(value)}${detail ? `: ${detail}` : ''}`,
  }),
  forbidden: (field, detail) => ({
    field,
    reason: 'FieldValueForbidden',
    message: `Forbidden: ${detail}`,
  }),
  notSupported: (field, value, allowed) => ({
    field,
    reason: 'FieldValueNotSupported',
    message: `Unsupported value: ${show(value)}: supported values: ${allowed.map(show).join(', ')}`,
  }),
  duplicate: (field, value) => ({
    field,
    reason: 'FieldValueDuplicate',
    message: `Duplicate value: ${show(value)}`,
  }),
};
