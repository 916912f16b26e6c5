// One error type for the whole system (STYLE.md convention 6). Domain code creates AppErrors through the named
// factories below and never speaks HTTP; the edge's error middleware turns them into the body of DESIGN.md §4.
//
// One status per code: ERROR_CODES is the only place a status is written. An AppError takes its status from its
// code, so no factory (and no caller) can answer a code with another status. docs/errors.md's table of codes and the
// OpenAPI document's x-error-codes are made from this table.

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

/** Every error code the system answers, with its one HTTP status and what it means. */
export const ERROR_CODES = {
  invalid_request: {
    status: 400,
    description: 'A field, query parameter or header is missing or invalid; `param` names it.',
  },
  invalid_json: { status: 400, description: 'The body is not valid JSON.' },
  json_too_deep: { status: 400, description: 'The JSON body nests deeper than the shared limit.' },
  invalid_encoding: {
    status: 400,
    description: 'Bytes that do not decode as they claim (Content-Encoding, percent-encoding, UTF-8).',
  },
  invalid_character: {
    status: 400,
    description: 'A character no field may hold (NUL, an unpaired surrogate, a control character in a path).',
  },
  media_limit_exceeded: {
    status: 400,
    description: 'A media file beyond a limit of spec §8 (pixels per side, minutes).',
  },
  model_not_supported: {
    status: 400,
    description: 'The model exists but cannot serve this route (an evaluation model on chat, say).',
  },
  invalid_callback_url: {
    status: 400,
    description: 'callback_url breaks an outbound URL rule; the message names the rule.',
  },
  invalid_image_url: {
    status: 400,
    description: 'An image URL breaks an outbound URL rule; the message names the rule.',
  },
  invalid_image: { status: 400, description: 'An image input whose bytes are not a supported image.' },
  upstream_rejected_request: {
    status: 400,
    description: "The model provider rejected the request; the message carries the provider's.",
  },
  upstream_rejected: {
    status: 400,
    description: 'The model provider refused the request (a 4xx with no readable message).',
  },
  wrong_password: { status: 400, description: 'The current password given to change the password is not correct.' },
  conflicting_api_keys: { status: 401, description: 'Two credentials naming different keys were sent.' },
  missing_api_key: { status: 401, description: 'No API key was sent.' },
  malformed_api_key: { status: 401, description: 'The API key is malformed.' },
  invalid_api_key: { status: 401, description: 'The API key is not valid.' },
  revoked_api_key: { status: 401, description: 'The API key has been revoked.' },
  expired_api_key: {
    status: 401,
    description: "The API key has expired (or its old secret's grace period after a rotation ended).",
  },
  invalid_file_token: { status: 401, description: 'The signed file link is invalid or has expired.' },
  not_signed_in: { status: 401, description: 'Dashboard: the session is missing, has expired or was signed out.' },
  invalid_credentials: {
    status: 401,
    description: 'Dashboard sign-in: the email or password is not correct (one answer for both).',
  },
  invalid_webhook_signature: {
    status: 401,
    description:
      'A provider webhook (Replicate, fal) whose signature does not verify, ' +
      'or a fal webhook signed for another fal account than `FAL_WEBHOOK_USER_ID`.',
  },
  key_creator_left: {
    status: 401,
    description: 'The person who created the key is no longer a member of its workspace, or was deleted.',
  },
  spending_cap_exhausted: { status: 402, description: "The key's spending cap is exhausted." },
  insufficient_balance: { status: 402, description: "The workspace's balance is insufficient." },
  insufficient_scope: { status: 403, description: 'The API key lacks the scope the route needs; `param` names it.' },
  forbidden: { status: 403, description: 'The operation is not allowed.' },
  tier_not_allowed: { status: 403, description: "The operation is not available on the workspace's tier." },
  csrf_failed: { status: 403, description: 'Dashboard: the CSRF token or origin check failed.' },
  model_not_allowed: {
    status: 403,
    description:
      'The API key is limited to other models (its allow-list); the same answer whether the model exists or not.',
  },
  wrong_credential_class: {
    status: 403,
    description: 'A credential of another class (session, key, signed link) was used.',
  },
  insufficient_role: {
    status: 403,
    description: "The account's role (or a key creator's role) is below what the operation needs.",
  },
  not_key_creator: {
    status: 403,
    description: "Only a key's creator receives its rotated secret; others (admins too) may revoke it.",
  },
  not_found: { status: 404, description: 'No such object in this workspace.' },
  route_not_found: { status: 404, description: 'No route for this method and path.' },
  model_not_found: { status: 404, description: 'The model does not exist or is not enabled.' },
  file_not_found: {
    status: 404,
    description: "A file id names no visible file of the caller's workspace; `param` names the field.",
  },
  task_not_found: { status: 404, description: 'No such task in this workspace.' },
  invitation_not_found: { status: 404, description: 'The invitation link is unknown, used or expired.' },
  reset_link_not_found: { status: 404, description: 'The password-reset link is unknown, used or expired.' },
  workspace_not_found: { status: 404, description: 'Admin CLI: no such workspace.' },
  user_not_found: { status: 404, description: 'Admin CLI: no such user.' },
  key_not_found: { status: 404, description: 'Admin CLI: no such key.' },
  channel_not_found: { status: 404, description: 'Admin CLI: no such channel.' },
  not_a_member: { status: 404, description: 'Admin CLI: the user is not a member of the workspace.' },
  request_timeout: { status: 408, description: 'The client stopped sending before its request was whole.' },
  conflict: { status: 409, description: 'The request conflicts with the current state.' },
  task_not_cancelable: { status: 409, description: 'The task is already finished.' },
  callback_not_redeliverable: {
    status: 409,
    description: 'The task has no callback to redeliver, or one is under way.',
  },
  idempotency_key_reused: {
    status: 409,
    description: 'The Idempotency-Key was used with a different request in the last 24 hours.',
  },
  idempotency_in_progress: {
    status: 409,
    description: 'A request with this Idempotency-Key is still being processed.',
  },
  last_owner: { status: 409, description: 'A workspace keeps at least one owner.' },
  already_member: { status: 409, description: 'The person is already a member of the workspace.' },
  duplicate_channel: { status: 409, description: 'Admin CLI: a channel with this name exists.' },
  duplicate_model: { status: 409, description: 'Admin CLI: a model with this id exists.' },
  duplicate_email: { status: 409, description: 'Admin CLI: a user with this e-mail exists.' },
  channel_in_use: { status: 409, description: 'Admin CLI: tasks submitted to the channel are still running.' },
  model_in_use: { status: 409, description: 'Admin CLI: tasks of the model are still running.' },
  key_revoked: { status: 409, description: 'Admin CLI: a revoked key cannot be rotated.' },
  retention_not_enterprise: {
    status: 409,
    description: 'Admin CLI: a retention override applies to enterprise workspaces only.',
  },
  payload_too_large: { status: 413, description: 'The body (or the images it gathers) exceeds the limit.' },
  upstream_request_too_large: { status: 413, description: 'The model provider refused the request as too large.' },
  unsupported_media_type: {
    status: 415,
    description: 'The content type (decided from the bytes) is not accepted here.',
  },
  range_not_satisfiable: { status: 416, description: 'The requested byte range is outside the content.' },
  invalid_input: { status: 422, description: 'The provider refused the task input (also a task failure code).' },
  content_rejected: {
    status: 422,
    description: "The provider's content policy refused the task (also a task failure code).",
  },
  upstream_unprocessable_request: {
    status: 422,
    description: 'The model provider could not process the request (its 422).',
  },
  rate_limit_exceeded: {
    status: 429,
    description: 'Paid call rate limit exceeded; see Retry-After and X-RateLimit-*.',
  },
  too_many_attempts: { status: 429, description: 'Dashboard: too many failed sign-ins.' },
  internal_error: { status: 500, description: 'Internal server error (no detail is shown).' },
  invalid_job_payload: { status: 500, description: 'Internal: a job payload failed its contract (never shown).' },
  upstream_error: { status: 502, description: 'The model provider failed to answer.' },
  upstream_invalid_response: { status: 502, description: 'The model provider gave an invalid answer.' },
  storage_unavailable: { status: 503, description: 'Object storage failed; retry.' },
  webhook_keys_unavailable: {
    status: 503,
    description: "The keys a provider's webhooks are verified with could not be fetched now; the provider retries.",
  },
  service_unavailable: { status: 503, description: 'The service cannot take the request now; retry.' },
  no_channel_available: { status: 503, description: 'No enabled channel serves this model.' },
  upstream_timeout: { status: 504, description: 'The model provider (or the evaluation) did not answer in time.' },
} as const satisfies Record<string, { status: number; description: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export const isErrorCode = (code: unknown): code is ErrorCode =>
  typeof code === 'string' && Object.hasOwn(ERROR_CODES, code);

/** The one status of `code`. */
export const statusOf = (code: ErrorCode): number => ERROR_CODES[code].status;

export interface AppErrorInit {
  code: ErrorCode;
  message: string;
  /** The request field at fault, when there is one. */
  param?: string | null;
  /** Extra headers the answer must carry (Retry-After, ...). */
  headers?: Record<string, string>;
  /** Whether the message may be shown to the caller. Unexposed errors answer a bare 500. */
  expose?: boolean;
  cause?: unknown;
}

/** Made by the factories in `errors` below only (a test fails on `new AppError` outside libs/errors). */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly param: string | null;
  readonly headers: Record<string, string>;
  readonly expose: boolean;

  constructor(init: AppErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'AppError';
    this.code = init.code;
    this.status = statusOf(init.code);
    this.param = init.param ?? null;
    this.headers = init.headers ?? {};
    this.expose = init.expose ?? this.status < 500;
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
  (code: ErrorCode) =>
  (message: string, extra: Omit<AppErrorInit, 'code' | 'message'> = {}) =>
    new AppError({ code, message, ...extra });

export const errors = {
  invalidRequest: (message: string, param?: string | null) =>
    new AppError({ code: 'invalid_request', message, param: param ?? null }),
  invalidJson: make('invalid_json'),
  /** JSON nested beyond the limit every JSON route shares: refused before anything walks or re-serialises it. */
  jsonTooDeep: (maxDepth: number) =>
    new AppError({
      code: 'json_too_deep',
      message: `The JSON body nests deeper than the limit of ${maxDepth} levels of objects and arrays.`,
    }),
  /**
   * Bytes that do not decode as they claim: a Content-Encoding that is not, percent-encoding or UTF-8 that is broken.
   */
  invalidEncoding: (message: string, param: string | null = null) =>
    new AppError({ code: 'invalid_encoding', message, param }),
  /** A character no field may hold (NUL, an unpaired surrogate, a control character in a path). */
  invalidCharacter: (message: string, param: string | null = null) =>
    new AppError({ code: 'invalid_character', message, param }),
  /** The client stopped sending (or sent too slowly) before its request was whole; the connection is closed after. */
  requestTimeout: (message: string) =>
    new AppError({ code: 'request_timeout', message, headers: { Connection: 'close' } }),
  /** Two credentials that name different keys were sent (x-goog-api-key and a bearer, say): neither is chosen. */
  conflictingApiKeys: (message: string) => new AppError({ code: 'conflicting_api_keys', message }),
  missingApiKey: (message = 'No API key was sent. Send it as "Authorization: Bearer <API_KEY>".') =>
    new AppError({ code: 'missing_api_key', message }),
  malformedApiKey: (
    message = 'The API key is malformed. Send it as "Authorization: Bearer <API_KEY>": ' +
      'the word Bearer, one space, the complete key.',
  ) => new AppError({ code: 'malformed_api_key', message }),
  invalidApiKey: () => new AppError({ code: 'invalid_api_key', message: 'The API key is not valid.' }),
  revokedApiKey: () => new AppError({ code: 'revoked_api_key', message: 'The API key has been revoked.' }),
  expiredApiKey: (message = 'The API key has expired.') => new AppError({ code: 'expired_api_key', message }),
  spendingCapExhausted: () =>
    new AppError({ code: 'spending_cap_exhausted', message: "The key's spending cap is exhausted." }),
  insufficientBalance: () =>
    new AppError({ code: 'insufficient_balance', message: "The workspace's balance is insufficient." }),
  insufficientScope: (scope: string) =>
    new AppError({ code: 'insufficient_scope', message: `The API key lacks the scope "${scope}".`, param: scope }),
  forbidden: make('forbidden'),
  notFound: make('not_found'),
  routeNotFound: (method: string, path: string) =>
    new AppError({ code: 'route_not_found', message: `No route for ${method} ${path}.` }),
  conflict: make('conflict'),
  payloadTooLarge: (limit: string) =>
    new AppError({ code: 'payload_too_large', message: `The request body exceeds the limit of ${limit}.` }),
  unsupportedMediaType: make('unsupported_media_type'),
  /** A file's header shows it beyond a limit of spec §8 (pixels per side, minutes). */
  mediaLimitExceeded: (message: string, param = 'file') =>
    new AppError({ code: 'media_limit_exceeded', message, param }),
  invalidFileToken: () =>
    new AppError({
      code: 'invalid_file_token',
      message: 'The file link is invalid or has expired. Get a fresh one with GET /v1/files/{file_id}.',
    }),
  tierNotAllowed: (what: string, tiers: string[]) =>
    new AppError({
      code: 'tier_not_allowed',
      message: `${what} is available to ${tiers.join(' and ')} workspaces only.`,
    }),
  rangeNotSatisfiable: (size: number) =>
    new AppError({
      code: 'range_not_satisfiable',
      message: `The requested range is not satisfiable: the content is ${size} bytes.`,
      headers: { 'Content-Range': `bytes */${size}` },
    }),
  /** S3 failed: not the caller's fault, and worth a retry. */
  storageUnavailable: (message: string, cause?: unknown) =>
    new AppError({ code: 'storage_unavailable', message, cause, expose: true }),
  modelNotFound: (model: string) =>
    new AppError({
      code: 'model_not_found',
      message: `The model "${model}" does not exist or is not enabled.`,
      param: 'model',
    }),
  /** The caller's key is limited to other models (its allow-list); the same answer whether the model exists or not. */
  modelNotAllowed: (model: string, param = 'model') =>
    new AppError({
      code: 'model_not_allowed',
      message: `This API key may not use the model "${model}": it is limited to the models listed by GET /v1/models.`,
      param,
    }),
  /** The model exists but cannot serve this route (an evaluation model on chat, a protocol it has no channel for). */
  modelNotSupported: (message: string) => new AppError({ code: 'model_not_supported', message, param: 'model' }),
  /** A provider webhook (Replicate, fal) whose signature does not verify. */
  invalidWebhookSignature: (message: string) => new AppError({ code: 'invalid_webhook_signature', message }),
  /** The keys a provider's webhooks are verified with could not be fetched now; the provider retries. */
  webhookKeysUnavailable: (message: string, cause?: unknown) =>
    new AppError({ code: 'webhook_keys_unavailable', message, cause, expose: true }),
  /**
   * A caller's URL broke a rule of DESIGN.md §5; `message` carries the OutboundError's rule (never its network detail).
   */
  invalidCallbackUrl: (message: string) =>
    new AppError({ code: 'invalid_callback_url', message, param: 'callback_url' }),
  invalidImageUrl: (message: string, param = 'image_url') =>
    new AppError({ code: 'invalid_image_url', message, param }),
  /** An image input whose bytes are not a supported image (or not an image at all); `param` names the field. */
  invalidImage: (message: string, param: string) => new AppError({ code: 'invalid_image', message, param }),
  /** A file id given as a model input that names no visible file of the caller's workspace (another's included). */
  fileNotFound: (message: string, param: string) => new AppError({ code: 'file_not_found', message, param }),
  taskNotFound: (id: string) =>
    new AppError({ code: 'task_not_found', message: `No task ${id} in this workspace.`, param: 'task_id' }),
  taskNotCancelable: (status: string) =>
    new AppError({
      code: 'task_not_cancelable',
      message: `The task is ${status}: only a queued or running task whose result is not in yet can be canceled.`,
    }),
  notRedeliverable: (message: string) => new AppError({ code: 'callback_not_redeliverable', message }),
  /** Images gathered from several sources (uploads, URLs, files) together exceed a request's limit. */
  imagesTooLarge: (message: string, param: string) => new AppError({ code: 'payload_too_large', message, param }),
  idempotencyKeyReused: (message = 'This Idempotency-Key was used with a different request in the last 24 hours.') =>
    new AppError({ code: 'idempotency_key_reused', param: 'Idempotency-Key', message }),
  idempotencyInProgress: () =>
    new AppError({
      code: 'idempotency_in_progress',
      param: 'Idempotency-Key',
      message: 'A request with this Idempotency-Key is still being processed; retry shortly.',
      headers: { 'Retry-After': '1' },
    }),
  rateLimited: (message: string, headers: Record<string, string>) =>
    new AppError({ code: 'rate_limit_exceeded', message, headers }),
  // Signing in and roles (DESIGN.md §4 People and roles): who may act in the dashboard.
  notSignedIn: () =>
    new AppError({
      code: 'not_signed_in',
      message: 'Sign in to continue: the session is missing, has expired or was signed out.',
    }),
  /** The same answer for an unknown email and a wrong password. */
  invalidCredentials: () =>
    new AppError({ code: 'invalid_credentials', message: 'The email or password is not correct.' }),
  /** A signed-in person's current password, asked again to change it, is wrong (the session stays valid: not a 401). */
  wrongPassword: (param: string) =>
    new AppError({ code: 'wrong_password', message: 'The current password is not correct.', param }),
  tooManyAttempts: (retryAfterSeconds: number) =>
    new AppError({
      code: 'too_many_attempts',
      message: `Too many failed sign-ins. Try again in ${Math.ceil(retryAfterSeconds / 60)} minute(s).`,
      headers: { 'Retry-After': String(retryAfterSeconds) },
    }),
  /** More passwords are being checked at once than the process's memory budget allows: retry shortly. */
  signInBusy: (retryAfterSeconds: number) =>
    new AppError({
      code: 'service_unavailable',
      message: `Too many sign-ins are being checked right now. Try again in ${retryAfterSeconds} seconds.`,
      headers: { 'Retry-After': String(retryAfterSeconds) },
      expose: true,
    }),
  csrfFailed: (message: string) => new AppError({ code: 'csrf_failed', message }),
  wrongCredentialClass: (message: string) => new AppError({ code: 'wrong_credential_class', message }),
  /** The account role (or, for a key, its creator's role) is below what the operation needs. */
  insufficientRole: (needed: string, what: string) =>
    new AppError({
      code: 'insufficient_role',
      message: `Only a workspace ${needed === 'owner' ? 'owner' : `${needed} or owner`} can ${what}.`,
      param: needed,
    }),
  lastOwner: (message = 'A workspace keeps at least one owner: make another member an owner first.') =>
    new AppError({ code: 'last_owner', message }),
  alreadyMember: (email: string) =>
    new AppError({
      code: 'already_member',
      message: `${email} is already a member of this workspace.`,
      param: 'email',
    }),
  invitationNotFound: () =>
    new AppError({
      code: 'invitation_not_found',
      message: 'This invitation link is unknown, has been used or has expired.',
    }),
  resetLinkNotFound: () =>
    new AppError({
      code: 'reset_link_not_found',
      message: 'This password-reset link is unknown, has been used or has expired: ask for a new one.',
    }),
  keyCreatorLeft: () =>
    new AppError({
      code: 'key_creator_left',
      message:
        'The API key stopped working: the person who created it is no longer a member of its workspace, ' +
        'or was deleted.',
    }),
  /** A rotation would hand someone else's key's new secret to the caller: only its creator may rotate it. */
  notKeyCreator: () =>
    new AppError({
      code: 'not_key_creator',
      message:
        'Only the person who created this key can rotate it (its new secret goes to them); you can revoke it ' +
        'and create a key of your own.',
    }),
  // Upstream providers (libs/upstream): what a provider's refusal or failure is answered as.
  /**
   * The provider judged the request itself; `status` is its answer (413 and 422 keep their meaning, the rest are 400).
   */
  upstreamRejectedRequest: (providerStatus: number, message: string) =>
    new AppError({
      code:
        providerStatus === 413
          ? 'upstream_request_too_large'
          : providerStatus === 422
            ? 'upstream_unprocessable_request'
            : 'upstream_rejected_request',
      message,
    }),
  upstreamRejected: (message: string, cause?: unknown) => new AppError({ code: 'upstream_rejected', message, cause }),
  /** Its message is always ours (never a provider's), so it is shown though the status is 5xx. */
  upstreamTimeout: (message = 'The model provider did not answer in time.', cause?: unknown) =>
    new AppError({ code: 'upstream_timeout', message, cause, expose: true }),
  upstreamInvalidResponse: (message: string, cause?: unknown) =>
    new AppError({ code: 'upstream_invalid_response', message, cause }),
  upstreamError: (cause?: unknown) =>
    new AppError({ code: 'upstream_error', message: 'The model provider failed to answer.', cause }),
  noChannelAvailable: () =>
    new AppError({ code: 'no_channel_available', message: 'No enabled channel serves this model.' }),
  /** A task's provider refused its input or its content: the task fails with this code (TASK_FAILURE_CODES). */
  taskRejected: (code: 'invalid_input' | 'content_rejected', message: string) => new AppError({ code, message }),
  /** A job payload that breaks its contract: a bug of the producer, never shown. */
  invalidJobPayload: (message: string, cause?: unknown) =>
    new AppError({ code: 'invalid_job_payload', message, expose: false, cause }),
  /**
   * An error that crossed a process boundary as data (a worker's job result): made again with its code's one status.
   * A code this table does not know is an internal error.
   */
  fromWire: (wire: { code: string; message: string; param?: string | null }) =>
    isErrorCode(wire.code)
      ? new AppError({
          code: wire.code,
          message: wire.message,
          param: wire.param ?? null,
          expose: statusOf(wire.code) !== 500,
        })
      : new AppError({
          code: 'internal_error',
          message: 'Internal server error.',
          expose: false,
          cause: new Error(`unknown error code ${wire.code}: ${wire.message}`),
        }),
  // Admin CLI failures (exit code 1).
  adminNotFound: (what: 'workspace' | 'user' | 'key' | 'channel' | 'model', ref: string) =>
    new AppError({ code: `${what}_not_found`, message: `No ${what} "${ref}".` }),
  notAMember: (email: string, workspace: string) =>
    new AppError({ code: 'not_a_member', message: `${email} is not a member of ${workspace}.` }),
  adminConflict: (
    code:
      | 'duplicate_channel'
      | 'duplicate_model'
      | 'duplicate_email'
      | 'channel_in_use'
      | 'model_in_use'
      | 'key_revoked'
      | 'retention_not_enterprise',
    message: string,
  ) => new AppError({ code, message }),
  internal: (cause?: unknown) =>
    new AppError({ code: 'internal_error', message: 'Internal server error.', expose: false, cause }),
  unavailable: (message: string, cause?: unknown) =>
    new AppError({ code: 'service_unavailable', message, expose: true, cause }),
};
