// The chain every paid route runs before its handler, in this order: who is calling, may the key do this, is
// the workspace within its rate, the body, and Idempotency-Key. The cost is reserved by the handler, which knows
// the model.
import type { Scope } from '@gensvc/auth';
import { billingRepository } from '@gensvc/db';
import type { RequestHandler, Response } from 'express';
import { authenticate, authOf, requireScope, type CredentialStyle } from '../auth/authenticate';
import type { EdgeDeps } from '../deps';
import { jsonBody } from '../http/json-body';
import { locals } from '../http/request-context';
import { rateLimit } from '../limits/rate-limit';
import { idempotency } from './idempotency';

/** A hold not settled within this long belongs to a process that died; it is given back (releaseExpired). */
export const RESERVATION_TTL_MS = 15 * 60 * 1000;

export interface PaidCallOptions {
  style: CredentialStyle;
  scope: Scope;
  /** JSON body limit in bytes. */
  bodyLimit: number;
  /**
   * Whether the chain ends with the Idempotency-Key step (default true). That step parses JSON bodies only; a route
   * that also takes multipart handles the key itself.
   */
  idempotency?: boolean;
  /** The body only goes on to a provider, none of its strings is stored (chat): see JsonBodyOptions.passThrough. */
  passThrough?: boolean;
}

export function paidCall(deps: EdgeDeps, options: PaidCallOptions): RequestHandler[] {
  return [
    authenticate(deps, options.style),
    requireScope(options.scope),
    rateLimit(deps, { bucket: 'paid', limitOf: (auth) => auth.workspace.rpm, keyLimitOf: (auth) => auth.key.rpm }),
    jsonBody({ limitBytes: options.bodyLimit, timeouts: deps.config.http, passThrough: options.passThrough }),
    ...(options.idempotency === false ? [] : [idempotency(deps)]),
  ];
}

/** Holds `amount` against the caller's key cap and workspace balance (402 when it cannot). */
export function reserveFor(deps: Pick<EdgeDeps, 'db'>, res: Response, amount: bigint) {
  const { key, workspace } = authOf(res);
  return billingRepository.reserve(deps.db, {
    workspaceId: workspace.id,
    apiKeyId: key.id,
    requestId: locals(res).requestId,
    amount,
    ttlMs: RESERVATION_TTL_MS,
  });
}
