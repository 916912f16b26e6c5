import type { Response } from 'express';

/**
 * A JSON answer already encoded (the chat proxy passes the provider's answer bytes on; evaluate encodes its own),
 * written with the headers Express's res.json writes, in one socket write, without its per-call work that a proxied
 * answer does not need (settings look-ups, charset parsing, freshness check: no ETag is ever set on this API). For the
 * paid hot path; other routes use res.json. Both end in res.end, where the Idempotency-Key step keeps the answer
 * (billing/idempotency.ts).
 */
export function sendJson(res: Response, status: number, bytes: Buffer): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', bytes.length);
  res.end(bytes);
}
