import { type AppError, errors, isAppError } from '@gensvc/errors';
import type { NextFunction, Request, Response } from 'express';
import { errorBody } from './error-body';
import { locals, routeOf } from './request-context';

/** body-parser's errors, which carry a `type`, become ours. */
function fromBodyParser(err: unknown): AppError | null {
  const e = err as { type?: string; status?: number; limit?: number };
  switch (e?.type) {
    case 'entity.parse.failed':
      return errors.invalidJson('The request body is not valid JSON.');
    case 'entity.too.large':
      return errors.payloadTooLarge(e.limit ? formatBytes(e.limit) : 'this route allows');
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return errors.unsupportedMediaType('The request body uses an unsupported encoding or charset.');
    case 'request.aborted':
      return errors.invalidRequest('The request was aborted by the client.');
    default:
      // The router's own refusal of a path parameter it cannot decode (pathGuard refuses those first).
      if (err instanceof URIError) return errors.invalidEncoding('The path holds a broken percent-encoding.', 'path');
      return null;
  }
}

export function formatBytes(n: number): string {
  return n % 1_048_576 === 0 ? `${n / 1_048_576} MiB` : n % 1024 === 0 ? `${n / 1024} KiB` : `${n} bytes`;
}

export function notFound(req: Request, _res: Response, next: NextFunction) {
  next(errors.routeNotFound(req.method, req.path));
}

/** The one place an error becomes an HTTP answer (STYLE.md convention 6). */
export function errorHandler(err: unknown, req: Request, res: Response, next: NextFunction) {
  if (res.headersSent) return next(err);
  const ctx = locals(res);
  const error = isAppError(err) ? err : (fromBodyParser(err) ?? errors.internal(err));
  if (!error.expose)
    ctx.log?.error({ err: error.cause ?? err, method: req.method, route: routeOf(req) }, 'request failed');
  for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
  res.status(error.status).json(errorBody(ctx.errorStyle ?? 'native', error, ctx.requestId ?? ''));
}
