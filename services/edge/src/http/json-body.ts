import express from 'express';

/**
 * JSON bodies for one route, with that route's size limit. Malformed JSON → 400 invalid_json and an oversized
 * body → 413 (errorHandler maps body-parser's errors). Mounted per route, after authentication, so the bodies of
 * unauthenticated callers are never parsed.
 */
export const jsonBody = (limitBytes: number) => express.json({ limit: limitBytes, strict: true, type: ['application/json', 'application/*+json'] });
