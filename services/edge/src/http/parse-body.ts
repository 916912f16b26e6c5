// The one way a zod refusal of what a caller sent becomes 400 invalid_request: the first issue, named by its
// field's path (`questions.q1.criteria`), an unknown field by its own name rather than its parent's.
import { type AppError, errors } from '@gensvc/errors';
import type { z } from 'zod';

/** The body checked against `schema`; it must be a JSON object, and 400 invalid_request names the first bad field. */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw errors.invalidRequest('The request body must be a JSON object sent with Content-Type: application/json.');
  }
  return parseFields(schema, body);
}

/** `value` (a body, form fields, a query) checked against `schema`, or 400 invalid_request naming the bad field. */
export function parseFields<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw invalidField(parsed.error.issues[0]!);
}

function invalidField(issue: z.core.$ZodIssue): AppError {
  const unknown = issue.code === 'unrecognized_keys';
  const path = unknown ? [...issue.path, issue.keys[0]!] : issue.path;
  // A key is the caller's text: a long one is cut so the rule after it still shows (errorBody escapes the rest).
  const param = path.map((k) => (String(k).length > 64 ? `${String(k).slice(0, 64)}…` : String(k))).join('.') || null;
  const message = unknown ? 'is not a field of this request' : issue.message;
  return errors.invalidRequest(param ? `${param}: ${message}` : message, param);
}
