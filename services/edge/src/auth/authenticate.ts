import { hashApiKey, parseBareKey, parseBearer, sameHash, type CredentialProblem, type Scope } from '@gensvc/auth';
import { apiKeyRepository, type ApiKeyLookup, type Db } from '@gensvc/db';
import { AppError, errors } from '@gensvc/errors';
import type { NextFunction, Request, Response } from 'express';
import { locals } from '../http/request-context';
import type { KeyCache } from './key-cache';

/** How a route family carries the key (spec section 5). */
export type CredentialStyle = 'bearer' | 'anthropic' | 'google';

export interface AuthContext {
  key: ApiKeyLookup['key'];
  workspace: ApiKeyLookup['key']['workspace'];
}

export const authOf = (res: Response): AuthContext => {
  const auth = locals(res).auth as AuthContext | undefined;
  if (!auth) throw errors.internal(new Error('route reached without authentication'));
  return auth;
};

function credential(req: Request, style: CredentialStyle): { key: string } | { problem: CredentialProblem } {
  switch (style) {
    case 'anthropic': {
      // Anthropic accepts "Authorization: Bearer" beside x-api-key, and its official SDK (1.x) sends that.
      const key = req.get('x-api-key');
      return key === undefined && req.get('authorization') !== undefined ? parseBearer(req.get('authorization')) : parseBareKey(key);
    }
    case 'google': {
      const goog = req.get('x-goog-api-key');
      return goog !== undefined ? parseBareKey(goog) : parseBearer(req.get('authorization'));
    }
    default:
      return parseBearer(req.get('authorization'));
  }
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
        if (cred.problem === 'missing') throw missing(style);
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
        throw new AppError({ status: 401, code: 'expired_api_key', message: 'This key was rotated and the grace period of its old secret has ended.' });
      }
      if (key.spendCap !== null && key.spent >= key.spendCap) throw errors.spendingCapExhausted();
      locals(res).auth = { key, workspace: key.workspace } satisfies AuthContext;
      if (deps.keyCache.touchDue(key.id)) {
        apiKeyRepository.touch(deps.db, key.id).catch((err) => locals(res).log.warn({ err }, 'could not record key use'));
      }
      next();
    } catch (e) {
      next(e);
    }
  };
}

function missing(style: CredentialStyle) {
  if (style === 'anthropic') return new AppError({ status: 401, code: 'missing_api_key', message: 'No API key was sent. Send it in the x-api-key header.' });
  if (style === 'google') return new AppError({ status: 401, code: 'missing_api_key', message: 'No API key was sent. Send it in the x-goog-api-key header or as "Authorization: Bearer <API_KEY>".' });
  return errors.missingApiKey();
}

function malformedMessage(style: CredentialStyle) {
  if (style === 'anthropic') return 'The x-api-key header does not hold a well-formed API key.';
  if (style === 'google') return 'The API key is malformed: send the complete key in x-goog-api-key, or as "Authorization: Bearer <API_KEY>".';
  return undefined;
}

/** 403 insufficient_scope naming the scope the key lacks. */
export function requireScope(scope: Scope) {
  return (_req: Request, res: Response, next: NextFunction) => {
    next(authOf(res).key.scopes.includes(scope) ? undefined : errors.insufficientScope(scope));
  };
}
