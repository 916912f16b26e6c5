// Dashboard authentication: the session cookie → the signed-in user; CSRF on every state change; the workspace in
// the URL → the person's membership and role. API keys are refused here (credential classes do not cross).
import {
  csrfTokenFor,
  hashToken,
  OPAQUE_TOKEN,
  ROLE_RULES,
  roleAtLeast,
  sameToken,
  type RoleRule,
  type WorkspaceRole,
} from '@gensvc/auth';
import type { Config } from '@gensvc/config';
import { membershipRepository, sessionRepository, type Db, type LiveSession } from '@gensvc/db';
import { errors } from '@gensvc/errors';
import type { NextFunction, Request, Response } from 'express';
import { locals } from '../http/request-context';
import { cookieOf, CSRF_COOKIE, SESSION_COOKIE, setCookie } from './session-cookie';

export interface SessionContext {
  session: LiveSession;
  user: LiveSession['user'];
}

export interface MemberContext {
  workspace: NonNullable<Awaited<ReturnType<typeof membershipRepository.withWorkspace>>>['workspace'];
  role: WorkspaceRole;
}

export const sessionOf = (res: Response): SessionContext => {
  const s = locals(res).session as SessionContext | undefined;
  if (!s) throw errors.internal(new Error('route reached without a session'));
  return s;
};

export const memberOf = (res: Response): MemberContext => {
  const m = locals(res).member as MemberContext | undefined;
  if (!m) throw errors.internal(new Error('route reached without a workspace membership'));
  return m;
};

const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export const secureCookies = (config: Pick<Config, 'publicBaseUrl'>) => config.publicBaseUrl.startsWith('https:');

/**
 * The Origin check: a browser sends Origin on every state-changing request; it must be this edge (its public base
 * URL, or the host the request was sent to). A request without Origin (not a browser, or an old one) still needs the
 * double-submitted token, which a page of another origin cannot read.
 */
export function checkOrigin(req: Request, config: Pick<Config, 'publicBaseUrl'>) {
  const origin = req.get('origin');
  if (origin === undefined) return;
  const own = [new URL(config.publicBaseUrl).origin, `${req.protocol}://${req.get('host') ?? ''}`];
  if (!own.includes(origin))
    throw errors.csrfFailed('The request comes from another site (its Origin is not this dashboard).');
}

/** The double-submit check without a session (sign-in, invitations): the header equals the cookie. */
export function checkDoubleSubmit(req: Request) {
  const header = req.get('x-csrf-token');
  const cookie = cookieOf(req, CSRF_COOKIE);
  if (!header || !cookie || !sameToken(header, cookie)) {
    throw errors.csrfFailed('The CSRF token is missing or wrong: reload the page and try again.');
  }
}

/** The session-bound CSRF token in its readable cookie (and returned for the page to keep). */
export function issueCsrf(res: Response, config: Pick<Config, 'publicBaseUrl' | 'signingSecret'>, token: string) {
  setCookie(res, CSRF_COOKIE, token, { secure: secureCookies(config), httpOnly: false });
  return token;
}

export const csrfForSession = (config: Pick<Config, 'signingSecret'>, tokenHash: string) =>
  csrfTokenFor(config.signingSecret, tokenHash);

/** The live session named by the request's cookie, or null. */
export async function readSession(db: Db, req: Request): Promise<LiveSession | null> {
  const token = cookieOf(req, SESSION_COOKIE);
  if (!token || !OPAQUE_TOKEN.test(token)) return null;
  return sessionRepository.findLive(db, hashToken(token));
}

/** Credential classes do not cross (DESIGN.md §4): a request that carries an API key is not the dashboard's. */
function refuseApiKey(req: Request) {
  if (req.get('authorization') !== undefined || req.get('x-api-key') !== undefined) {
    throw errors.wrongCredentialClass(
      "An API key cannot call the dashboard's routes: sign in to the dashboard instead.",
    );
  }
}

/** For the dashboard's signed-out routes (invitation and password-reset links): 403 for a request with an API key. */
export function requireNoApiKey(req: Request, _res: Response, next: NextFunction) {
  try {
    refuseApiKey(req);
    next();
  } catch (e) {
    next(e);
  }
}

/** 401 not_signed_in without a live session; 403 csrf_failed for a state change without the session's token. */
export function requireSession(deps: { db: Db; config: Config }) {
  return async (req: Request, res: Response, next: NextFunction) => {
    try {
      refuseApiKey(req);
      const session = await readSession(deps.db, req);
      if (!session) throw errors.notSignedIn();
      if (UNSAFE.has(req.method)) {
        checkOrigin(req, deps.config);
        const header = req.get('x-csrf-token');
        if (!header || !sameToken(header, csrfForSession(deps.config, session.tokenHash))) {
          throw errors.csrfFailed('The CSRF token is missing or wrong: reload the page and try again.');
        }
      }
      locals(res).session = { session, user: session.user } satisfies SessionContext;
      next();
    } catch (e) {
      next(e);
    }
  };
}

/** The workspace of the route's :ws, which the signed-in person must belong to (another is 404, as for keys). */
export function requireMembership(deps: { db: Db }) {
  return async (req: Request<{ ws: string }>, res: Response, next: NextFunction) => {
    try {
      const { user } = sessionOf(res);
      const ws = req.params.ws;
      const membership = /^ws_[A-Za-z0-9]{1,64}$/.test(ws)
        ? await membershipRepository.withWorkspace(deps.db, ws, user.id)
        : null;
      if (!membership) throw errors.notFound('No such workspace.');
      locals(res).member = { workspace: membership.workspace, role: membership.role } satisfies MemberContext;
      next();
    } catch (e) {
      next(e);
    }
  };
}

/** Throws 403 insufficient_role when the person's role is below the rule's. */
export function assertRole(role: WorkspaceRole, rule: RoleRule) {
  const { needed, what } = ROLE_RULES[rule];
  if (!roleAtLeast(role, needed)) throw errors.insufficientRole(needed, what);
}

export function requireRole(rule: RoleRule) {
  return (_req: Request, res: Response, next: NextFunction) => {
    try {
      assertRole(memberOf(res).role, rule);
      next();
    } catch (e) {
      next(e);
    }
  };
}
