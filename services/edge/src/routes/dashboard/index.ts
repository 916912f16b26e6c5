import { PasswordHashing } from '@gensvc/auth';
import { errors } from '@gensvc/errors';
import express from 'express';
import { LoginThrottle } from '../../auth/login-throttle';
import { requireMembership, requireNoApiKey, requireRole, requireSession } from '../../auth/session';
import type { EdgeDeps } from '../../deps';
import { jsonBody } from '../../http/json-body';
import { createKey, listKeys, revokeKey, rotateKey } from './keys';
import { attachFile } from '../projects/attach-file';
import { memberActor } from '../projects/actor';
import { createProject } from '../projects/create-project';
import { deleteProject } from '../projects/delete-project';
import { detachFile } from '../projects/detach-file';
import { getProject } from '../projects/get-project';
import { listProjects } from '../projects/list-projects';
import { updateProject } from '../projects/update-project';
import { deleteOutput, listOutputs, listProjectFiles, takeDownPublicCopy } from './library';
import { addMember, changeRole, listMembers, removeMember, resendInvitation, withdrawInvitation } from './members';
import {
  acceptInvitation,
  changePassword,
  getInvitation,
  getPasswordReset,
  getSession,
  requestPasswordReset,
  resetPassword,
  signIn,
  signOut,
} from './session-routes';
import {
  getCallbackSecret,
  getTask,
  listTasks,
  recoverParked,
  redeliverTask,
  retirePreviousCallbackSecret,
  rotateCallbackSecret,
  testCallback,
} from './tasks';
import { getUsage } from './usage';
import { getWorkspace } from './workspace';

/** The dashboard's JSON routes (API.md beside this file): session cookies only, CSRF on every state change. */
export function dashboardRoutes(deps: EdgeDeps): express.Router {
  const router = express.Router({ caseSensitive: true });
  const base = '/api/v1/dashboard';
  const json = jsonBody({ limitBytes: 64 * 1024, timeouts: deps.config.http });
  const session = requireSession(deps);
  const throttle = new LoginThrottle(deps.redis, deps.config.queuePrefix);
  // Reset requests have allowances of their own, counted as sign-ins are (per address asked for, per client).
  const resetThrottle = new LoginThrottle(deps.redis, `${deps.config.queuePrefix}:reset`);
  // One per process (buildApp runs once). A waiting hash holds no memory; the bound keeps a sign-in's wait under
  // sixteen hashes' time (seconds) instead of letting a storm queue without end, and is above one account's
  // allowance (LOGIN_LIMIT), so that a burst against one account is answered by its throttle, not by this budget.
  const concurrency = deps.config.passwordHashConcurrency;
  const passwords = new PasswordHashing({
    concurrency,
    queueLimit: 16 * concurrency,
    busy: () => errors.signInBusy(5),
  });

  router.get(`${base}/session`, getSession(deps));
  router.post(`${base}/session`, json, signIn(deps, throttle, passwords));
  router.delete(`${base}/session`, session, signOut(deps));
  router.post(`${base}/password`, session, json, changePassword(deps, passwords));
  const noKey = requireNoApiKey;
  router.get(`${base}/invitations/:token`, noKey, getInvitation(deps));
  router.post(`${base}/invitations/:token/accept`, noKey, json, acceptInvitation(deps, passwords));
  router.post(`${base}/password-reset`, noKey, json, requestPasswordReset(deps, resetThrottle));
  router.get(`${base}/password-reset/:token`, noKey, getPasswordReset(deps));
  router.post(`${base}/password-reset/:token`, noKey, json, resetPassword(deps, passwords));

  // Every path under a workspace needs a session and a membership first. Its routes are written whole (not in a
  // router mounted here) so that each request's route template names every parameter (logs, metrics, traces).
  const ws = `${base}/workspaces/:ws`;
  router.use(ws, session, requireMembership(deps));
  router.get(ws, getWorkspace(deps));
  router.get(`${ws}/keys`, listKeys(deps));
  router.post(`${ws}/keys`, json, createKey(deps));
  router.post(`${ws}/keys/:id/rotate`, json, rotateKey(deps));
  router.post(`${ws}/keys/:id/revoke`, revokeKey(deps));
  router.get(`${ws}/members`, listMembers(deps));
  router.post(`${ws}/members`, json, addMember(deps));
  router.patch(`${ws}/members/:userId`, json, changeRole(deps));
  router.delete(`${ws}/members/:userId`, removeMember(deps));
  router.delete(`${ws}/invitations/:id`, withdrawInvitation(deps));
  router.post(`${ws}/invitations/:id/resend`, resendInvitation(deps));
  router.get(`${ws}/outputs`, listOutputs(deps));
  router.delete(`${ws}/outputs/:fileId`, requireRole('deleteFiles'), deleteOutput(deps));
  router.delete(`${ws}/outputs/:fileId/public-copy`, requireRole('deleteFiles'), takeDownPublicCopy(deps));
  const project = `${ws}/projects/:projectId`;
  router.get(`${ws}/projects`, listProjects(deps, memberActor));
  router.post(`${ws}/projects`, json, createProject(deps, memberActor));
  router.get(project, getProject(deps, memberActor));
  router.patch(project, json, updateProject(deps, memberActor));
  router.delete(project, requireRole('deleteProjects'), deleteProject(deps, memberActor));
  router.get(`${project}/files`, listProjectFiles(deps));
  router.post(`${project}/files`, json, attachFile(deps, memberActor));
  router.delete(`${project}/files/:fileId`, detachFile(deps, memberActor));
  router.get(`${ws}/tasks`, listTasks(deps));
  router.get(`${ws}/tasks/:taskId`, getTask(deps));
  router.post(`${ws}/tasks/:taskId/redeliver`, requireRole('redeliver'), redeliverTask(deps));
  router.post(`${ws}/callbacks/recover`, requireRole('redeliver'), json, recoverParked(deps));
  router.post(`${ws}/callbacks/test`, requireRole('redeliver'), json, testCallback(deps));
  router.get(`${ws}/callback-secret`, requireRole('callbackSecret'), getCallbackSecret(deps));
  router.post(`${ws}/callback-secret/rotate`, requireRole('callbackSecret'), rotateCallbackSecret(deps));
  router.post(
    `${ws}/callback-secret/retire-previous`,
    requireRole('callbackSecret'),
    retirePreviousCallbackSecret(deps),
  );
  router.get(`${ws}/usage`, getUsage(deps));
  return router;
}
