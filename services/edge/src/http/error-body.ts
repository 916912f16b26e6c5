import type { AppError } from '@gensvc/errors';
import { MAX_MESSAGE_CHARS, MAX_PARAM_CHARS, shown } from './shown-text';

export type ErrorStyle = 'native' | 'anthropic' | 'google';

const GOOGLE_STATUS: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  401: 'UNAUTHENTICATED',
  402: 'FAILED_PRECONDITION',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  408: 'DEADLINE_EXCEEDED',
  409: 'ABORTED',
  413: 'INVALID_ARGUMENT',
  415: 'INVALID_ARGUMENT',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  502: 'UNAVAILABLE',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};

/**
 * The body of DESIGN.md §4 for each route family. Unexposed (5xx) errors carry no detail. Messages and params are
 * escaped and capped here, for every error at once, since many echo what the caller sent.
 */
export function errorBody(style: ErrorStyle, error: AppError, requestId: string): object {
  const message = error.expose ? shown(error.message, MAX_MESSAGE_CHARS) : 'Internal server error.';
  const param = error.param === null ? null : shown(error.param, MAX_PARAM_CHARS);
  switch (style) {
    case 'anthropic':
      return { type: 'error', error: { type: error.type, message } };
    case 'google':
      return {
        error: {
          code: error.status,
          message,
          status: GOOGLE_STATUS[error.status] ?? (error.status >= 500 ? 'INTERNAL' : 'INVALID_ARGUMENT'),
        },
      };
    default:
      return { error: { type: error.type, code: error.code, message, param, request_id: requestId } };
  }
}
