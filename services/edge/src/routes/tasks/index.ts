import { TASK_OPERATIONS, type TaskOperationName } from '@gensvc/contracts';
import express from 'express';
import { authenticate, requireKeyRole, requireScope } from '../../auth/authenticate';
import { paidCall } from '../../billing/paid-call';
import type { EdgeDeps } from '../../deps';
import { mountRoutes, type RouteSpec } from '../../http/hot-routes';
import { cancelTask } from './cancel-task';
import { createTask, taskLocation } from './create-task';
import { getTask } from './get-task';
import { listDeliveries } from './list-deliveries';
import { listTasks } from './list-tasks';
import { redeliver } from './redeliver';
import { CREATE_TASK_BODY_LIMIT } from './schema';

/**
 * The creations, POST /api/v1/<provider>/<operation>. Each operation is its own literal last segment under any
 * provider, so no other /api/v1/<a>/<b> route (chat/completions, files/...) is ever taken for a task creation, and no
 * route of the app takes a creation's path: the app also runs them as hot routes (http/hot-routes.ts), before the
 * routers they are mounted after.
 */
export function taskCreationRoutes(deps: EdgeDeps): RouteSpec[] {
  return Object.entries(TASK_OPERATIONS).map(([name, op]) => ({
    path: `/api/v1/:provider/${name}`,
    handlers: [
      taskLocation,
      ...paidCall(deps, { style: 'bearer', scope: 'tasks.write', bodyLimit: CREATE_TASK_BODY_LIMIT }),
      createTask(deps, name as TaskOperationName, op),
    ],
  }));
}

/** Generation tasks (spec §4.2, §4.3, §6): `creations` (taskCreationRoutes) and the task's own routes; mounted after the others. */
export function taskRoutes(deps: EdgeDeps, creations: readonly RouteSpec[]): express.Router {
  const router = express.Router({ caseSensitive: true });
  const bearer = authenticate(deps, 'bearer');
  const read = requireScope('tasks.read');
  const write = requireScope('tasks.write');

  mountRoutes(router, creations);
  router.get('/api/v1/tasks', bearer, read, listTasks(deps));
  router.get('/api/v1/tasks/:taskId', bearer, read, getTask(deps));
  router.post('/api/v1/tasks/:taskId/cancel', bearer, write, cancelTask(deps));
  router.get('/api/v1/tasks/:taskId/deliveries', bearer, read, listDeliveries(deps));
  router.post('/api/v1/tasks/:taskId/redeliver', bearer, write, requireKeyRole('redeliver'), redeliver(deps));
  return router;
}
