import express from 'express';
import { authenticate, requireKeyRole, requireScope } from '../../auth/authenticate';
import type { EdgeDeps } from '../../deps';
import { jsonBody } from '../../http/json-body';
import { keyActor } from './actor';
import { attachFile } from './attach-file';
import { createProject } from './create-project';
import { deleteProject } from './delete-project';
import { detachFile } from './detach-file';
import { getProject } from './get-project';
import { listProjects } from './list-projects';
import { updateProject } from './update-project';

/** Saved projects: named sets of the workspace's files, kept past their retention while attached. */
export function projectRoutes(deps: EdgeDeps): express.Router {
  const router = express.Router({ caseSensitive: true });
  const bearer = authenticate(deps, 'bearer');
  const scope = requireScope('files.write');
  const json = jsonBody({ limitBytes: 16 * 1024, timeouts: deps.config.http });
  const base = '/api/v1/projects';
  router.post(base, bearer, scope, json, createProject(deps, keyActor));
  router.get(base, bearer, scope, listProjects(deps, keyActor));
  router.get(`${base}/:projectId`, bearer, scope, getProject(deps, keyActor));
  router.patch(`${base}/:projectId`, bearer, scope, json, updateProject(deps, keyActor));
  router.delete(`${base}/:projectId`, bearer, scope, requireKeyRole('deleteProjects'), deleteProject(deps, keyActor));
  router.post(`${base}/:projectId/files`, bearer, scope, json, attachFile(deps, keyActor));
  router.delete(`${base}/:projectId/files/:fileId`, bearer, scope, detachFile(deps, keyActor));
  return router;
}
