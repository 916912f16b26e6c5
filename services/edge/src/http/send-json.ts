import type { Response } from 'express';

/**
 * A JSON answer written the way Express's res.json writes it (same headers, same bytes, one socket write), without
 * its per-call work that a proxied answer does not need (settings look-ups, charset parsing, freshness check: no
 * ETag is ever set on this API). For the paid hot path; other routes use res.json. Both end in res.end, where the
 * Idempotency-Key step keeps the answer (billing/idempotency.ts).
 */
export function sendJson(res: Response, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}
