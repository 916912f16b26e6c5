// What the OpenAPI document knows of one route: written once, beside the route's zod schemas (routes/<resource>/
// openapi.ts), and turned into the document by document.ts. The request schemas are the ones the route validates
// with; nothing of the document is written by hand. A route registered with Express and missing here (or here and
// not registered) fails openapi.int.test.ts.
import { ERROR_CODES, type ErrorCode, type ErrorType } from '@gensvc/errors';
import { z } from 'zod';

type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** How the route is authenticated: the security scheme(s) of the document, and the error body the route answers. */
export type Auth = 'bearer' | 'anthropic' | 'google' | 'signed-link' | 'none';

export interface ResponseDoc {
  description: string;
  /** A JSON body (io: output); absent for a body that is not JSON (use `content`). */
  schema?: z.ZodType;
  /** Non-JSON content, e.g. `{ 'image/png': 'binary' }` or `{ 'text/event-stream': 'text' }`. */
  content?: Record<string, 'binary' | 'text'>;
  headers?: Record<string, string>;
}

export interface ApiOperation {
  method: HttpMethod;
  /**
   * The path exactly as registered with Express (a string with `:params`, several of them, or the RegExp the route
   * was registered with). The coverage test compares these with the app's router stack.
   */
  route: string | readonly string[] | RegExp;
  /** The OpenAPI path(s) of a RegExp route, e.g. `/v1beta/models/{model}:generateContent`. */
  paths?: readonly string[];
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  auth: Auth;
  /** The API-key scope the route requires. */
  scope?: string;
  /** Path parameters (all strings in the path); names as in the route. */
  params?: z.ZodObject;
  query?: z.ZodObject;
  /** Request headers the route reads itself (Idempotency-Key, ...). */
  headers?: z.ZodObject;
  /** The request body: as JSON, as a multipart/form-data form, or either. */
  body?: { json?: z.ZodType; multipart?: z.ZodType };
  responses: Record<number, ResponseDoc>;
  /** Every error code the route may answer; grouped by their one status (ERROR_CODES) into responses. */
  errors: readonly ErrorCode[];
}

/** One entry; a function only so that an entry's fields are checked where it is written. */
export const operation = (op: ApiOperation): ApiOperation => op;

// Error sets shared by many routes.
export const HOSTILE_INPUT: readonly ErrorCode[] = [
  'invalid_encoding',
  'invalid_character',
  'request_timeout',
  'internal_error',
];
export const KEY_AUTH: readonly ErrorCode[] = [
  'missing_api_key',
  'malformed_api_key',
  'invalid_api_key',
  'revoked_api_key',
  'expired_api_key',
  'key_creator_left',
  'conflicting_api_keys',
  'insufficient_scope',
  'wrong_credential_class',
  ...HOSTILE_INPUT,
];
/** paidCall's chain (auth, scope, rate, balance and cap, body, Idempotency-Key). */
export const PAID_CALL: readonly ErrorCode[] = [
  ...KEY_AUTH,
  'rate_limit_exceeded',
  'insufficient_balance',
  'spending_cap_exhausted',
  'invalid_json',
  'json_too_deep',
  'payload_too_large',
  'invalid_request',
  'idempotency_key_reused',
  'idempotency_in_progress',
  'service_unavailable',
];
export const UPSTREAM: readonly ErrorCode[] = [
  'model_not_found',
  'model_not_supported',
  'no_channel_available',
  'upstream_rejected_request',
  'upstream_rejected',
  'upstream_request_too_large',
  'upstream_unprocessable_request',
  'upstream_error',
  'upstream_invalid_response',
  'upstream_timeout',
];

export const idempotencyHeader = z.object({
  'Idempotency-Key': z
    .string()
    .max(255)
    .optional()
    .describe(
      'Makes the call safe to retry: the same key with the same body within 24 h answers the first answer again.',
    ),
});

// Error bodies (DESIGN.md §4), one per credential style.
const ERROR_TYPES = [
  'invalid_request_error',
  'authentication_error',
  'billing_error',
  'permission_error',
  'not_found_error',
  'conflict_error',
  'rate_limit_error',
  'upstream_error',
  'api_error',
] as const satisfies readonly ErrorType[];

const codes = Object.keys(ERROR_CODES) as [ErrorCode, ...ErrorCode[]];

export const errorBodySchema = z
  .object({
    error: z.object({
      type: z.enum(ERROR_TYPES),
      code: z.enum(codes).describe('One status per code: see x-error-codes at the root of this document.'),
      message: z.string(),
      param: z.string().nullable().describe('The request field at fault, when there is one.'),
      request_id: z.string().describe('Also in the X-Request-Id header.'),
    }),
  })
  .describe('The error body of the native and OpenAI-compatible routes.');

export const anthropicErrorBodySchema = z
  .object({ type: z.literal('error'), error: z.object({ type: z.enum(ERROR_TYPES), message: z.string() }) })
  .describe('The error body of the Anthropic-compatible route.');

export const googleErrorBodySchema = z
  .object({ error: z.object({ code: z.number().int(), message: z.string(), status: z.string() }) })
  .describe('The error body of the Google-compatible routes.');

/** A page of a list route (DESIGN.md §4). */
export const listOf = <T extends z.ZodType>(item: T) =>
  z.object({
    object: z.literal('list'),
    data: z.array(item),
    first_id: z.string().nullable(),
    last_id: z.string().nullable(),
    has_more: z.boolean(),
  });

export const money = z.object({ amount: z.number().describe('In the workspace currency.'), currency: z.string() });

export const timestamp = z.string().describe('ISO 8601, UTC');
