// Signing in and out, changing or resetting the password, and accepting an invitation (DESIGN.md §4 Sessions).
import {
  deviceNonce,
  hashToken,
  linkToken,
  newDeviceToken,
  newOpaqueToken,
  OPAQUE_TOKEN,
  type PasswordHashing,
} from '@gensvc/auth';
import {
  invitationRepository,
  isUniqueViolation,
  membershipRepository,
  passwordResetRepository,
  SESSION_LIMITS,
  sessionRepository,
  userRepository,
  withTx,
  type Db,
} from '@gensvc/db';
import { errors } from '@gensvc/errors';
import { scheduleMail } from '@gensvc/queue';
import type { Request, Response } from 'express';
import type { LoginThrottle } from '../../auth/login-throttle';
import {
  checkDoubleSubmit,
  checkOrigin,
  csrfForSession,
  issueCsrf,
  readSession,
  secureCookies,
  sessionOf,
} from '../../auth/session';
import { cookieOf, CSRF_COOKIE, DEVICE_COOKIE, SESSION_COOKIE, setCookie } from '../../auth/session-cookie';
import type { EdgeDeps } from '../../deps';
import { locals } from '../../http/request-context';
import { parseBody } from '../../http/parse-body';
import { ACCEPT_INVITATION, CHANGE_PASSWORD, FORGOT_PASSWORD, RESET_PASSWORD, SIGN_IN } from './schema';

type Deps = Pick<EdgeDeps, 'db' | 'config'>;

/** How long a browser keeps its device cookie (login-throttle.ts): it is renewed at each sign-in. */
const DEVICE_COOKIE_MAX_AGE_S = 180 * 24 * 3600;
const SIGN_IN_PATH = '/api/v1/dashboard/session';

/** What every session route answers: who is signed in, their workspaces and roles, and the CSRF token. */
async function sessionBody(db: Db, user: { id: string; email: string; name: string | null }, csrfToken: string) {
  const memberships = await membershipRepository.forUser(db, user.id);
  return {
    user: { id: user.id, email: user.email, name: user.name },
    workspaces: memberships.map((m) => ({
      id: m.workspace.id,
      name: m.workspace.name,
      tier: m.workspace.tier,
      role: m.role,
    })),
    csrf_token: csrfToken,
  };
}

/** A new session for the user in this browser: its cookies set, its body answered. */
async function startSession(
  deps: Deps,
  req: Request,
  res: Response,
  user: { id: string; email: string; name: string | null },
  status = 200,
) {
  const { token, hash } = newOpaqueToken();
  await sessionRepository.create(deps.db, {
    userId: user.id,
    tokenHash: hash,
    userAgent: req.get('user-agent') ?? null,
    ip: req.ip ?? null,
  });
  setCookie(res, SESSION_COOKIE, token, {
    secure: secureCookies(deps.config),
    httpOnly: true,
    maxAge: SESSION_LIMITS.absoluteMs / 1000,
  });
  const csrf = issueCsrf(res, deps.config, csrfForSession(deps.config, hash));
  res.status(status).json(await sessionBody(deps.db, user, csrf));
}

/** GET /api/v1/dashboard/session — who is signed in; signed out, 401 and a fresh CSRF cookie for the sign-in form. */
export function getSession(deps: Deps) {
  return async (req: Request, res: Response) => {
    const session = await readSession(deps.db, req);
    if (!session) {
      const existing = cookieOf(req, CSRF_COOKIE);
      issueCsrf(res, deps.config, existing && OPAQUE_TOKEN.test(existing) ? existing : newOpaqueToken().token);
      throw errors.notSignedIn();
    }
    const csrf = issueCsrf(res, deps.config, csrfForSession(deps.config, session.tokenHash));
    res.json(await sessionBody(deps.db, session.user, csrf));
  };
}

/**
 * POST /api/v1/dashboard/session — sign in with email and password. A browser that signs in gets a new device cookie
 * for the account, which gives it an allowance of its own against that account's throttling (login-throttle.ts).
 */
export function signIn(deps: Deps, throttle: LoginThrottle, passwords: PasswordHashing) {
  return async (req: Request, res: Response) => {
    checkOrigin(req, deps.config);
    checkDoubleSubmit(req);
    const body = parseBody(SIGN_IN, req.body);
    const device = deviceNonce(deps.config.signingSecret, body.email, cookieOf(req, DEVICE_COOKIE));
    // req.ip: the socket's address, or the client's as a trusted proxy forwarded it (TRUST_PROXY).
    const attempt = { email: body.email, ip: req.ip ?? 'unknown', device };
    await throttle.admit(attempt);
    const user = await userRepository.findByEmail(deps.db, body.email);
    const ok = await passwords.verify(body.password, user?.passwordHash ?? null);
    if (!user || !ok) throw errors.invalidCredentials();
    await throttle.succeeded(attempt);
    const secure = secureCookies(deps.config);
    const deviceToken = newDeviceToken(deps.config.signingSecret, user.email);
    setCookie(res, DEVICE_COOKIE, deviceToken, {
      secure,
      httpOnly: true,
      maxAge: DEVICE_COOKIE_MAX_AGE_S,
      path: SIGN_IN_PATH,
    });
    await startSession(deps, req, res, user);
  };
}

/** DELETE /api/v1/dashboard/session — sign out: the session is revoked server-side, the cookies cleared. */
export function signOut(deps: Deps) {
  return async (_req: Request, res: Response) => {
    await sessionRepository.revoke(deps.db, sessionOf(res).session.id);
    const secure = secureCookies(deps.config);
    setCookie(res, SESSION_COOKIE, '', { secure, httpOnly: true, maxAge: 0 });
    setCookie(res, CSRF_COOKIE, '', { secure, httpOnly: false, maxAge: 0 });
    res.status(204).end();
  };
}

/**
 * POST /api/v1/dashboard/password — every session of the person ends (in one transaction with the change); this browser
 * gets a new one.
 */
export function changePassword(deps: Deps, passwords: PasswordHashing) {
  return async (req: Request, res: Response) => {
    const body = parseBody(CHANGE_PASSWORD, req.body);
    const { user } = sessionOf(res);
    const stored = await userRepository.findByEmail(deps.db, user.email);
    if (!stored || !(await passwords.verify(body.current_password, stored.passwordHash)))
      throw errors.wrongPassword('current_password');
    const changed = await userRepository.setPasswordHash(deps.db, user.id, await passwords.hash(body.new_password));
    if (!changed) throw errors.notSignedIn();
    await startSession(deps, req, res, user);
  };
}

async function liveInvitation(db: Db, token: string) {
  const inv = OPAQUE_TOKEN.test(token) ? await invitationRepository.findLive(db, hashToken(token)) : null;
  if (!inv) throw errors.invitationNotFound();
  return inv;
}

/** GET /api/v1/dashboard/invitations/:token — what the invitation is for, before accepting it. */
export function getInvitation(deps: Deps) {
  return async (req: Request<{ token: string }>, res: Response) => {
    const inv = await liveInvitation(deps.db, req.params.token);
    const user = await userRepository.findByEmail(deps.db, inv.email);
    res.json({
      email: inv.email,
      role: inv.role,
      workspace: inv.workspace,
      expires_at: inv.expiresAt.toISOString(),
      user_exists: user !== null,
    });
  };
}

/**
 * POST /api/v1/dashboard/invitations/:token/accept — a new person sets a password and is signed in; a person who
 * has a user already accepts while signed in as that user. The invitation is used once: the acceptance, the user
 * and the membership are one transaction.
 */
export function acceptInvitation(deps: Deps, passwords: PasswordHashing) {
  return async (req: Request<{ token: string }>, res: Response) => {
    checkOrigin(req, deps.config);
    checkDoubleSubmit(req);
    const body = parseBody(ACCEPT_INVITATION, req.body);
    const inv = await liveInvitation(deps.db, req.params.token);
    const existing = await userRepository.findByEmail(deps.db, inv.email);
    if (existing) {
      const session = await readSession(deps.db, req);
      if (!session || session.user.id !== existing.id) throw errors.notSignedIn();
      await withTx(deps.db, async (tx) => {
        if (!(await invitationRepository.markAccepted(tx, inv.id))) throw errors.invitationNotFound();
        await membershipRepository.add(tx, inv.workspaceId, existing.id, inv.role);
      });
      res.json(await sessionBody(deps.db, session.user, csrfForSession(deps.config, session.tokenHash)));
      return;
    }
    if (!body.password) throw errors.invalidRequest('password: is required to create your account', 'password');
    const passwordHash = await passwords.hash(body.password);
    const user = await withTx(deps.db, async (tx) => {
      if (!(await invitationRepository.markAccepted(tx, inv.id))) throw errors.invitationNotFound();
      const made = await userRepository.create(tx, { email: inv.email, passwordHash, name: body.name ?? null });
      await membershipRepository.add(tx, inv.workspaceId, made.id, inv.role);
      return made;
    }).catch((e: unknown) => {
      throw isUniqueViolation(e) ? errors.invitationNotFound() : e;
    });
    await startSession(deps, req, res, user, 201);
  };
}

/** The one answer to a reset request, whether or not an account has the address. */
const RESET_REQUESTED = {
  status: 'sent',
  message: 'If an account has this address, a link to set a new password is on its way to it. It works for an hour.',
} as const;

/**
 * POST /api/v1/dashboard/password-reset — mails a one-hour, single-use link to set a new password. An address without
 * an account gets the same answer after the same work (a row, never mailed, and a job that finds nothing to send):
 * the status, body and round trips say nothing about whether the account exists. Requests are throttled per address
 * and per client as sign-ins are (429 either way), and the mails to one account per hour are bounded by the sender.
 */
export function requestPasswordReset(deps: Deps & Pick<EdgeDeps, 'queues'>, throttle: LoginThrottle) {
  return async (req: Request, res: Response) => {
    checkOrigin(req, deps.config);
    checkDoubleSubmit(req);
    const body = parseBody(FORGOT_PASSWORD, req.body);
    await throttle.admit({ email: body.email, ip: req.ip ?? 'unknown', device: null });
    const user = await userRepository.findByEmail(deps.db, body.email);
    const reset = await passwordResetRepository.create(
      deps.db,
      user?.id ?? null,
      (id) => linkToken(deps.config.signingSecret, 'password-reset', id).hash,
    );
    await scheduleMail(deps.queues, {
      kind: 'password-reset',
      id: reset.id,
      send: 1,
      requestId: locals(res).requestId,
    });
    res.status(202).json(RESET_REQUESTED);
  };
}

async function liveReset(db: Db, token: string) {
  const reset = OPAQUE_TOKEN.test(token) ? await passwordResetRepository.findLive(db, hashToken(token)) : null;
  if (!reset) throw errors.resetLinkNotFound();
  return reset;
}

/** GET /api/v1/dashboard/password-reset/:token — whether the link still works, before a new password is typed. */
export function getPasswordReset(deps: Deps) {
  return async (req: Request<{ token: string }>, res: Response) => {
    await liveReset(deps.db, req.params.token);
    res.json({ valid: true });
  };
}

/**
 * POST /api/v1/dashboard/password-reset/:token — sets the password: the link is used up (with every other reset link
 * of the account), the password replaced and every session of the person revoked, in one transaction. The person
 * then signs in with the new password.
 */
export function resetPassword(deps: Deps, passwords: PasswordHashing) {
  return async (req: Request<{ token: string }>, res: Response) => {
    checkOrigin(req, deps.config);
    checkDoubleSubmit(req);
    const body = parseBody(RESET_PASSWORD, req.body);
    const reset = await liveReset(deps.db, req.params.token);
    const passwordHash = await passwords.hash(body.password);
    if (!(await passwordResetRepository.use(deps.db, reset.id, reset.userId, passwordHash))) {
      throw errors.resetLinkNotFound();
    }
    // This browser's session (if any) ended with the others.
    const secure = secureCookies(deps.config);
    setCookie(res, SESSION_COOKIE, '', { secure, httpOnly: true, maxAge: 0 });
    res.status(204).end();
  };
}
