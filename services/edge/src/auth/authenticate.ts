import {
  hashApiKey,
  parseBareKey,
  parseBearer,
  ROLE_RULES,
  roleAtLeast,
  sameHash,
  type CredentialProblem,
  type RoleRule,
  type Scope,
  type WorkspaceRole,
} from '@gensvc/auth';
import { apiKeyRepository, creatorRoleOf, type ApiKeyLookup, type Db } from '@gensvc/db';
import { errors } from '@gensvc/errors';
import type { NextFunction, Request, Response } from 'express';
import { locals } from '../http/request-context';
import type { KeyCache } from './key-cache';
import { hasSessionCookie } from './session-cookie';

/** How a route family carries the key (spec section 5). */
export type CredentialStyle = 'bearer' | 'anthropic' | 'google';

export interface AuthContext {
  key: ApiKeyLookup['key'];
  workspace: ApiKeyLookup['key']['workspace'];
  /** The role bounding the key: its creator's in the workspace, or `unbounded` for a key made by the platform CLI. */
  role: WorkspaceRole | 'unbounded';
}

export const authOf = (res: Response): AuthContext => {
  const auth = locals(res).auth as AuthContext | undefined;
  if (!auth) throw errors.internal(new Error('route reached without authentication'));
  return auth;
};

function credential(req: Request, style: CredentialStyle): { key: string } | { problem: CredentialProblem } {
  if (style === 'bearer') return parseBearer(req.get('authorization'));
  // Anthropic accepts "Authorization: Bearer" beside x-api-key (its official SDK 1.x sends that), Google a bearer
  // beside x-goog-api-key. Both sent must name the same key: serving the call with either one would bill a key the
  // caller may not have meant, so a conflict is refused rather than settled by precedence.
  const header = style === 'anthropic' ? 'x-api-key' : 'x-goog-api-key';
  // Google also takes the key as `?key=` (its REST convention), when no header carries one.
  const bare =
    req.get(header) ??
    (style === 'google' && req.get('authorization') === undefined && typeof req.query.key === 'string'
      ? req.query.key
      : undefined);
  const authorization = req.get('authorization');
  if (bare === undefined) return parseBearer(authorization);
  const vendor = parseBareKey(bare);
  if (authorization !== undefined) {
    const bearer = parseBearer(authorization);
    if (!('key' in vendor && 'key' in bearer && vendor.key === bearer.key)) {
      throw errors.conflictingApiKeys(
        `Both ${header} and Authorization were sent and they do not hold the same key: send one of them.`,
      );
    }
  }
  return vendor;
}

export interface AuthenticateDeps {
  db: Db;
  keyCache: KeyCache;
}

/**
 * Resolves the caller's key to its workspace, or answers 401 (missing, malformed, unknown, revoked, expired) or
 * 402 (the key's spending cap is used up). Hashes are compared in constant time after the indexed look-up.
 */
export function authenticate(deps: AuthenticateDeps, style: CredentialStyle = 'bearer') {
  return async (req: Request, res: Response, next: NextFunction) => {
    try {
      const cred = credential(req, style);
      if ('problem' in cred) {
        if (cred.problem === 'missing') throw otherCredential(req) ?? missing(style);
        throw errors.malformedApiKey(malformedMessage(style));
      }
      const hash = hashApiKey(cred.key);
      let found = deps.keyCache.get(hash);
      if (found === undefined) {
        const epoch = deps.keyCache.begin();
        found = await apiKeyRepository.findBySecretHash(deps.db, hash);
        deps.keyCache.set(hash, found, epoch);
      }
      if (!found) throw errors.invalidApiKey();
      const { key, matched } = found;
      if (!sameHash(matched === 'current' ? key.hash : key.previousHash!, hash)) throw errors.invalidApiKey();
      const now = Date.now();
      if (key.revokedAt) throw errors.revokedApiKey();
      if (key.expiresAt && key.expiresAt.getTime() <= now) throw errors.expiredApiKey();
      if (matched === 'previous' && (!key.previousExpiresAt || key.previousExpiresAt.getTime() <= now)) {
        throw errors.expiredApiKey('This key was rotated and the grace period of its old secret has ended.');
      }
      const role = creatorRoleOf(key);
      if (role === 'left') throw errors.keyCreatorLeft();
      if (key.spendCap !== null && key.spent >= key.spendCap) throw errors.spendingCapExhausted();
      locals(res).auth = { key, workspace: key.workspace, role } satisfies AuthContext;
      if (deps.keyCache.touchDue(key.id)) {
        apiKeyRepository
          .touch(deps.db, key.id)
          .catch((err) => locals(res).log.warn({ err }, 'could not record key use'));
      }
      next();
    } catch (e) {
      next(e);
    }
  };
}

function missing(style: CredentialStyle) {
  if (style === 'anthropic') return errors.missingApiKey('No API key was sent. Send it in the x-api-key header.');
  if (style === 'google')
    return errors.missingApiKey(
      'No API key was sent. Send it in the x-goog-api-key header or as "Authorization: Bearer <API_KEY>".',
    );
  return errors.missingApiKey();
}

function malformedMessage(style: CredentialStyle) {
  if (style === 'anthropic') return 'The x-api-key header does not hold a well-formed API key.';
  if (style === 'google')
    return (
      'The API key is malformed: send the complete key in ' + 'x-goog-api-key, or as "Authorization: Bearer <API_KEY>".'
    );
  return undefined;
}

/**
 * Credential classes do not cross (DESIGN.md §4): a request to an API-key route that carries no key but a dashboard
 * session cookie or a signed file link is told so (403), rather than that a key is missing.
 */
function otherCredential(req: Request) {
  if (hasSessionCookie(req))
    return errors.wrongCredentialClass(
      'A dashboard session cannot call the API: send a workspace API key as "Authorization: Bearer <API_KEY>".',
    );
  if (typeof req.query.token === 'string')
    return errors.wrongCredentialClass(
      "A signed file link only fetches that file's bytes: send a workspace API key to call the API.",
    );
  return undefined;
}

/** 403 insufficient_role when the key's creator's role is below what `rule` needs; CLI-made keys: scopes only. */
export function requireKeyRole(rule: RoleRule) {
  return (_req: Request, res: Response, next: NextFunction) => {
    const { role } = authOf(res);
    const { needed, what } = ROLE_RULES[rule];
    next(role === 'unbounded' || roleAtLeast(role, needed) ? undefined : errors.insufficientRole(needed, what));
  };
}

/** 403 insufficient_scope naming the scope the key lacks. */
export function requireScope(scope: Scope) {
  return (_req: Request, res: Response, next: NextFunction) => {
    next(authOf(res).key.scopes.includes(scope) ? undefined : errors.insufficientScope(scope));
  };
}
