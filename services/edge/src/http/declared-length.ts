import type { IncomingMessage } from 'node:http';

/** The request's own Content-Length is over `maxBytes`, which already rules it out: answer without reading it. */
export function declaredTooLarge(req: IncomingMessage, maxBytes: number): boolean {
  const declared = Number(req.headers['content-length']);
  return Number.isFinite(declared) && declared > maxBytes;
}

/**
 * Every byte the request's Content-Length declares is already buffered: nothing more is awaited from the client (a
 * JSON call's body usually comes with its headers). Node sets req.complete only as the body is read, so it cannot
 * tell this before reading.
 */
export function bufferedWhole(req: IncomingMessage): boolean {
  const declared = Number(req.headers['content-length']);
  return Number.isFinite(declared) && req.readableLength >= declared;
}
