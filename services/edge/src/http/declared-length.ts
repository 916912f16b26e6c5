import type { IncomingMessage } from 'node:http';

/** The request's own Content-Length is over `maxBytes`, which already rules it out: answer without reading it. */
export function declaredTooLarge(req: IncomingMessage, maxBytes: number): boolean {
  const declared = Number(req.headers['content-length']);
  return Number.isFinite(declared) && declared > maxBytes;
}
