import { newRequestId } from '@gensvc/db';
import { inActiveContext, type Logger } from '@gensvc/observability';
import type { NextFunction, Request, Response } from 'express';
import type { ErrorStyle } from './error-body';

const INCOMING_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export interface RequestLocals {
  requestId: string;
  log: Logger;
  errorStyle: ErrorStyle;
}

export const locals = (res: Response) => res.locals as RequestLocals & Record<string, unknown>;

/**
 * The request's route template (`/api/v1/dashboard/invitations/:token`), or `unmatched`: what logs, metrics and traces
 * name a request by. Never the raw path, which can hold a secret (an invitation token). Routers are mounted without a
 * path, so req.baseUrl holds no parameter.
 */
export const routeOf = (req: Request): string =>
  req.route?.path ? `${req.baseUrl}${String(req.route.path)}` : 'unmatched';

/** Which vendor's conventions a path follows: its errors are answered in that vendor's shape (DESIGN.md §4). */
function errorStyleFor(path: string): ErrorStyle {
  if (path === '/v1/messages' || path.startsWith('/v1/messages/')) return 'anthropic';
  if (path.startsWith('/v1beta/')) return 'google';
  return 'native';
}

/**
 * Every answer carries X-Request-Id: the caller's own when it is a sane token (so one id can follow a request
 * through the caller's systems), a new one otherwise. Every request ends with one access-log line (the logger adds
 * the trace id) naming its route template and the client's address (req.ip, as TRUST_PROXY says). The request's child
 * logger is made on its first use: most requests log nothing but that line, which is skipped whole when the level
 * leaves it out.
 */
export function requestContext(logger: Logger) {
  const accessLog = logger.isLevelEnabled('info');
  return (req: Request, res: Response, next: NextFunction) => {
    const started = process.hrtime.bigint();
    const incoming = req.headers['x-request-id'];
    const requestId = typeof incoming === 'string' && INCOMING_ID.test(incoming) ? incoming : newRequestId();
    res.setHeader('X-Request-Id', requestId);
    // API answers are per caller and never for a browser to sniff; routes serving cacheable content override these.
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    const l = res.locals as Partial<RequestLocals>;
    l.requestId = requestId;
    l.errorStyle = errorStyleFor(req.path);
    Object.defineProperty(l, 'log', {
      configurable: true,
      enumerable: true,
      get() {
        const log = logger.child({ request_id: requestId });
        Object.defineProperty(l, 'log', { value: log, enumerable: true, writable: true });
        return log;
      },
    });
    if (accessLog) {
      // Bound: 'finish' comes from the socket, outside the request's trace context, and the line carries its trace id.
      res.on(
        'finish',
        inActiveContext(() => {
          const ms = Number(process.hrtime.bigint() - started) / 1e6;
          const workspace = (res.locals.auth as { workspace?: { id: string } } | undefined)?.workspace?.id;
          const line = {
            method: req.method,
            route: routeOf(req),
            status: res.statusCode,
            ms: Math.round(ms * 100) / 100,
          };
          locals(res).log.info({ ...line, ip: req.ip, workspace_id: workspace }, 'request');
        }),
      );
    }
    next();
  };
}
