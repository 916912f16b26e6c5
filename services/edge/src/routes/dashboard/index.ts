import express from 'express';
import { LoginThrottle } from '../../auth/login-throttle';
import { requireMembership, requireRole, requireSession } from '../../auth/session';
import type { EdgeDeps } from '../../deps';
import { jsonBody } from '../../http/json-body';
import { createKey, listKeys, revokeKey, rotateKey } from './keys';
import { deleteOutput, listOutputs } from './library';
import { addMember, changeRole, listMembers, removeMember, withdrawInvitation } from './members';
import { acceptInvitation, changePassword, getInvitation, getSession, signIn, signOut } from './session-routes';
import { getCallbackSecret, getTask, listTasks, redeliverTask, rotateCallbackSecret } from './tasks';
import { getUsage } from './usage';
import { getWorkspace } from './workspace';

/** The dashboard's JSON routes (API.md beside this file): session cookies only, CSRF on every state change. */
export function dashboardRoutes(deps: EdgeDeps): express.Router {
  const router = express.Router({ caseSensitive: true });
  const base = '/api/v1/dashboard';
  const json = jsonBody({ limitBytes: 64 * 1024, timeouts: deps.config.http });
  const session = requireSession(deps);
  const throttle = new LoginThrottle(deps.redis, deps.config.queuePrefix);

  router.get(`${base}/session`, getSession(deps));
  router.post(`${base}/session`, json, signIn(deps, throttle));
  router.delete(`${base}/session`, session, signOut(deps));
  router.post(`${base}/password`, session, json, changePassword(deps));
  router.get(`${base}/invitations/:token`, getInvitation(deps));
  router.post(`${base}/invitations/:token/accept`, json, acceptInvitation(deps));

  const ws = express.Router({ caseSensitive: true, mergeParams: true });
  router.use(`${base}/workspaces/:ws`, session, requireMembership(deps), ws);
  ws.get('/', getWorkspace(deps));
  ws.get('/keys', listKeys(deps));
  ws.post('/keys', json, createKey(deps));
  ws.post('/keys/:id/rotate', json, rotateKey(deps));
  ws.post('/keys/:id/revoke', revokeKey(deps));
  ws.get('/members', listMembers(deps));
  ws.post('/members', json, addMember(deps));
  ws.patch('/members/:userId', json, changeRole(deps));
  ws.delete('/members/:userId', removeMember(deps));
  ws.delete('/invitations/:id', withdrawInvitation(deps));
  ws.get('/outputs', listOutputs(deps));
  ws.delete('/outputs/:fileId', requireRole('deleteFiles'), deleteOutput(deps));
  ws.get('/tasks', listTasks(deps));
  ws.get('/tasks/:taskId', getTask(deps));
  ws.post('/tasks/:taskId/redeliver', requireRole('redeliver'), redeliverTask(deps));
  ws.get('/callback-secret', requireRole('callbackSecret'), getCallbackSecret(deps));
  ws.post('/callback-secret/rotate', requireRole('callbackSecret'), rotateCallbackSecret(deps));
  ws.get('/usage', getUsage(deps));
  return router;
}

