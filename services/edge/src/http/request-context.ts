import { newRequestId } from '@gensvc/db';
import type { Logger } from '@gensvc/observability';
import type { NextFunction, Request, Response } from 'express';
import type { ErrorStyle } from './error-body';

const INCOMING_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export interface RequestLocals {
  requestId: string;
  log: Logger;
  errorStyle: ErrorStyle;
}

export const locals = (res: Response) => res.locals as RequestLocals & Record<string, unknown>;

/** Which vendor's conventions a path follows: its errors are answered in that vendor's shape (DESIGN.md §4). */
export function errorStyleFor(path: string): ErrorStyle {
  if (path === '/v1/messages' || path.startsWith('/v1/messages/')) return 'anthropic';
  if (path.startsWith('/v1beta/')) return 'google';
  return 'native';
}

/**
 * Every answer carries X-Request-Id: the caller's own when it is a sane token (so one id can follow a request
 * through the caller's systems), a new one otherwise. Every request ends with one access-log line (the logger adds
 * the trace id).
 */
export function requestContext(logger: Logger) {
  return (req: Request, res: Response, next: NextFunction) => {
    const started = process.hrtime.bigint();
    const incoming = req.get('x-request-id');
    const requestId = incoming && INCOMING_ID.test(incoming) ? incoming : newRequestId();
    res.setHeader('X-Request-Id', requestId);
    // API answers are per caller and never for a browser to sniff; routes serving cacheable content override these.
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    const log = logger.child({ request_id: requestId });
    Object.assign(res.locals, { requestId, log, errorStyle: errorStyleFor(req.path) });
    res.on('finish', () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      const workspace = (res.locals.auth as { workspace?: { id: string } } | undefined)?.workspace?.id;
      log.info({ method: req.method, path: req.path, status: res.statusCode, ms: Math.round(ms * 100) / 100, workspace_id: workspace }, 'request');
    });
    next();
  };
}
