// One error type for the whole system (STYLE.md convention 6). Domain code creates AppErrors through the named
// factories below and never speaks HTTP; the edge's error middleware turns them into the body of DESIGN.md §4.

export type ErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'billing_error'
  | 'permission_error'
  | 'not_found_error'
  | 'conflict_error'
  | 'rate_limit_error'
  | 'upstream_error'
  | 'api_error';

export interface AppErrorInit {
  code: string;
  status: number;
  message: string;
  /** The request field at fault, when there is one. */
  param?: string | null;
  /** Extra headers the answer must carry (Retry-After, ...). */
  headers?: Record<string, string>;
  /** Whether the message may be shown to the caller. Unexposed errors answer a bare 500. */
  expose?: boolean;
  cause?: unknown;
}

export class AppError extends Error {
  readonly code: string;
  readonly status: number;
  readonly param: string | null;
  readonly headers: Record<string, string>;
  readonly expose: boolean;

  constructor(init: AppErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'AppError';
    this.code = init.code;
    this.status = init.status;
    this.param = init.param ?? null;
    this.headers = init.headers ?? {};
    this.expose = init.expose ?? init.status < 500;
  }

  get type(): ErrorType {
    return typeForStatus(this.status);
  }
}

export function typeForStatus(status: number): ErrorType {
  switch (status) {
    case 401:
      return 'authentication_error';
    case 402:
      return 'billing_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 409:
      return 'conflict_error';
    case 429:
      return 'rate_limit_error';
    case 502:
    case 504:
      return 'upstream_error';
    default:
      return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
}

export const isAppError = (e: unknown): e is AppError => e instanceof AppError;

/** A 4xx-class error is the caller's fault: retrying the same work cannot succeed. */
export function isRetryable(e: unknown): boolean {
  return !(isAppError(e) && e.status < 500);
}

const make =
  (status: number, code: string) =>
  (message: string, extra: Omit<AppErrorInit, 'status' | 'code' | 'message'> = {}) =>
    new AppError({ status, code, message, ...extra });

export const errors = {
  invalidRequest: (message: string, param?: string | null) =>
    new AppError({ status: 400, code: 'invalid_request', message, param: param ?? null }),
  invalidJson: make(400, 'invalid_json'),
  /** JSON nested beyond the limit every JSON route shares: refused before anything walks or re-serialises it. */
  jsonTooDeep: (maxDepth: number) =>
    new AppError({ status: 400, code: 'json_too_deep', message: `The JSON body nests deeper than the limit of ${maxDepth} levels of objects and arrays.` }),
  /** Bytes that do not decode as they claim: a Content-Encoding that is not, percent-encoding or UTF-8 that is broken. */
  invalidEncoding: (message: string, param: string | null = null) => new AppError({ status: 400, code: 'invalid_encoding', message, param }),
  /** A character no field may hold (NUL, an unpaired surrogate, a control character in a path). */
  invalidCharacter: (message: string, param: string | null = null) => new AppError({ status: 400, code: 'invalid_character', message, param }),
  /** The client stopped sending (or sent too slowly) before its request was whole; the connection is closed after. */
  requestTimeout: (message: string) =>
    new AppError({ status: 408, code: 'request_timeout', message, headers: { Connection: 'close' } }),
  /** Two credentials that name different keys were sent (x-goog-api-key and a bearer, say): neither is chosen. */
  conflictingApiKeys: (message: string) => new AppError({ status: 401, code: 'conflicting_api_keys', message }),
  missingApiKey: () =>
    new AppError({ status: 401, code: 'missing_api_key', message: 'No API key was sent. Send it as "Authorization: Bearer <API_KEY>".' }),
  malformedApiKey: (message = 'The API key is malformed. Send it as "Authorization: Bearer <API_KEY>": the word Bearer, one space, the complete key.') =>
    new AppError({ status: 401, code: 'malformed_api_key', message }),
  invalidApiKey: () => new AppError({ status: 401, code: 'invalid_api_key', message: 'The API key is not valid.' }),
  revokedApiKey: () => new AppError({ status: 401, code: 'revoked_api_key', message: 'The API key has been revoked.' }),
  expiredApiKey: () => new AppError({ status: 401, code: 'expired_api_key', message: 'The API key has expired.' }),
  spendingCapExhausted: () =>
    new AppError({ status: 402, code: 'spending_cap_exhausted', message: "The key's spending cap is exhausted." }),
  insufficientBalance: () =>
    new AppError({ status: 402, code: 'insufficient_balance', message: "The workspace's balance is insufficient." }),
  insufficientScope: (scope: string) =>
    new AppError({ status: 403, code: 'insufficient_scope', message: `The API key lacks the scope "${scope}".`, param: scope }),
  forbidden: make(403, 'forbidden'),
  notFound: make(404, 'not_found'),
  routeNotFound: (method: string, path: string) =>
    new AppError({ status: 404, code: 'route_not_found', message: `No route for ${method} ${path}.` }),
  conflict: make(409, 'conflict'),
  payloadTooLarge: (limit: string) =>
    new AppError({ status: 413, code: 'payload_too_large', message: `The request body exceeds the limit of ${limit}.` }),
  unsupportedMediaType: make(415, 'unsupported_media_type'),
  /** A file's header shows it beyond a limit of spec §8 (pixels per side, minutes). */
  mediaLimitExceeded: (message: string, param = 'file') => new AppError({ status: 400, code: 'media_limit_exceeded', message, param }),
  invalidFileToken: () =>
    new AppError({ status: 401, code: 'invalid_file_token', message: 'The file link is invalid or has expired. Get a fresh one with GET /v1/files/{file_id}.' }),
  tierNotAllowed: (what: string, tiers: string[]) =>
    new AppError({ status: 403, code: 'tier_not_allowed', message: `${what} is available to ${tiers.join(' and ')} workspaces only.` }),
  rangeNotSatisfiable: (size: number) =>
    new AppError({ status: 416, code: 'range_not_satisfiable', message: `The requested range is not satisfiable: the content is ${size} bytes.`, headers: { 'Content-Range': `bytes */${size}` } }),
  /** S3 failed: not the caller's fault, and worth a retry. */
  storageUnavailable: (message: string, cause?: unknown) => new AppError({ status: 503, code: 'storage_unavailable', message, cause, expose: true }),
  modelNotFound: (model: string) =>
    new AppError({ status: 404, code: 'model_not_found', message: `The model "${model}" does not exist or is not enabled.`, param: 'model' }),
  /** The model exists but cannot serve this route (an evaluation model on chat, a protocol it has no channel for). */
  modelNotSupported: (message: string) => new AppError({ status: 400, code: 'model_not_supported', message, param: 'model' }),
  /** A caller's URL broke a rule of DESIGN.md §5; `message` carries the OutboundError's rule (never its network detail). */
  /** A provider webhook (Replicate, fal) whose signature does not verify (issue 12). */
  invalidWebhookSignature: (message: string) => new AppError({ status: 401, code: 'invalid_webhook_signature', message }),
  /** The keys a provider's webhooks are verified with could not be fetched now; the provider retries. */
  webhookKeysUnavailable: (message: string, cause?: unknown) => new AppError({ status: 503, code: 'webhook_keys_unavailable', message, cause, expose: true }),
  invalidCallbackUrl: (message: string) => new AppError({ status: 400, code: 'invalid_callback_url', message, param: 'callback_url' }),
  invalidImageUrl: (message: string, param = 'image_url') => new AppError({ status: 400, code: 'invalid_image_url', message, param }),
  /** An image input whose bytes are not a supported image (or not an image at all); `param` names the field. */
  invalidImage: (message: string, param: string) => new AppError({ status: 400, code: 'invalid_image', message, param }),
  /** A file id given as a model input that names no visible file of the caller's workspace (another's included). */
  fileNotFound: (message: string, param: string) => new AppError({ status: 404, code: 'file_not_found', message, param }),
  taskNotFound: (id: string) => new AppError({ status: 404, code: 'task_not_found', message: `No task ${id} in this workspace.`, param: 'task_id' }),
  taskNotCancelable: (status: string) =>
    new AppError({ status: 409, code: 'task_not_cancelable', message: `The task is ${status}: only a queued or running task whose result is not in yet can be canceled.` }),
  notRedeliverable: (message: string) => new AppError({ status: 409, code: 'callback_not_redeliverable', message }),
  /** Images gathered from several sources (uploads, URLs, files) together exceed a request's limit. */
  imagesTooLarge: (message: string, param: string) => new AppError({ status: 413, code: 'payload_too_large', message, param }),
  idempotencyKeyReused: (message = 'This Idempotency-Key was used with a different request in the last 24 hours.') =>
    new AppError({ status: 409, code: 'idempotency_key_reused', param: 'Idempotency-Key', message }),
  idempotencyInProgress: () =>
    new AppError({ status: 409, code: 'idempotency_in_progress', param: 'Idempotency-Key', message: 'A request with this Idempotency-Key is still being processed; retry shortly.', headers: { 'Retry-After': '1' } }),
  rateLimited: (message: string, headers: Record<string, string>) =>
    new AppError({ status: 429, code: 'rate_limit_exceeded', message, headers }),
  // People and sessions (DESIGN.md §4 People and roles, Sessions).
  notSignedIn: () => new AppError({ status: 401, code: 'not_signed_in', message: 'Sign in to continue: the session is missing, has expired or was signed out.' }),
  /** The same answer for an unknown email and a wrong password. */
  invalidCredentials: (status: 400 | 401 = 401, param: string | null = null) =>
    new AppError({ status, code: 'invalid_credentials', message: 'The email or password is not correct.', param }),
  tooManyAttempts: (retryAfterSeconds: number) =>
    new AppError({ status: 429, code: 'too_many_attempts', message: `Too many failed sign-ins. Try again in ${Math.ceil(retryAfterSeconds / 60)} minute(s).`, headers: { 'Retry-After': String(retryAfterSeconds) } }),
  csrfFailed: (message: string) => new AppError({ status: 403, code: 'csrf_failed', message }),
  wrongCredentialClass: (message: string) => new AppError({ status: 403, code: 'wrong_credential_class', message }),
  /** The account role (or, for a key, its creator's role) is below what the operation needs. */
  insufficientRole: (needed: string, what: string) =>
    new AppError({ status: 403, code: 'insufficient_role', message: `Only a workspace ${needed === 'owner' ? 'owner' : `${needed} or owner`} can ${what}.`, param: needed }),
  lastOwner: () => new AppError({ status: 409, code: 'last_owner', message: 'A workspace keeps at least one owner: make another member an owner first.' }),
  alreadyMember: (email: string) => new AppError({ status: 409, code: 'already_member', message: `${email} is already a member of this workspace.`, param: 'email' }),
  invitationNotFound: () => new AppError({ status: 404, code: 'invitation_not_found', message: 'This invitation link is unknown, has been used or has expired.' }),
  keyCreatorLeft: () =>
    new AppError({ status: 401, code: 'key_creator_left', message: 'The API key stopped working: the person who created it is no longer a member of its workspace.' }),
  internal: (cause?: unknown) =>
    new AppError({ status: 500, code: 'internal_error', message: 'Internal server error.', expose: false, cause }),
  unavailable: (message: string) => new AppError({ status: 503, code: 'service_unavailable', message, expose: true }),
};
