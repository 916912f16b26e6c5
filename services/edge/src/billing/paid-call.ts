// The chain every paid route runs before its handler, in this order: who is calling, may the key do this, is
// the workspace within its rate, the body, and Idempotency-Key. The cost is held by the handler, which knows the
// model (deps.holds.reserve, with ownerOf below).
import type { Scope } from '@gensvc/auth';
import type { RequestHandler, Response } from 'express';
import { authenticate, authOf, requireScope, type CredentialStyle } from '../auth/authenticate';
import type { EdgeDeps } from '../deps';
import { jsonBody } from '../http/json-body';
import { locals } from '../http/request-context';
import { rateLimit } from '../limits/rate-limit';
import type { HoldOwner } from './holds';
import { idempotency } from './idempotency';

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

/** Whose money a paid call holds: the caller's key and workspace, under the request id the caller saw. */
export function ownerOf(res: Response): HoldOwner {
  const { key, workspace } = authOf(res);
  return { workspaceId: workspace.id, apiKeyId: key.id, requestId: locals(res).requestId };
}
