import { TASK_OPERATIONS, type TaskOperationName } from '@gensvc/contracts';
import express from 'express';
import { authenticate, requireKeyRole, requireScope } from '../../auth/authenticate';
import { paidCall } from '../../billing/paid-call';
import type { EdgeDeps } from '../../deps';
import { cancelTask } from './cancel-task';
import { createTask, taskLocation } from './create-task';
import { getTask } from './get-task';
import { listDeliveries } from './list-deliveries';
import { listTasks } from './list-tasks';
import { redeliver } from './redeliver';
import { CREATE_TASK_BODY_LIMIT } from './schema';

/**
 * Generation tasks (spec §4.2, §4.3, §6), mounted after the others. A creation is POST /api/v1/<provider>/<operation>:
 * each operation is its own literal last segment under any provider, so no other /api/v1/<a>/<b> route
 * (chat/completions, files/...) takes a creation's path, nor a creation another route's.
 */
export function taskRoutes(deps: EdgeDeps): express.Router {
  const router = express.Router({ caseSensitive: true });
  const bearer = authenticate(deps, 'bearer');
  const read = requireScope('tasks.read');
  const write = requireScope('tasks.write');

  const paid = paidCall(deps, { style: 'bearer', scope: 'tasks.write', bodyLimit: CREATE_TASK_BODY_LIMIT });
  for (const [name, op] of Object.entries(TASK_OPERATIONS)) {
    router.post(`/api/v1/:provider/${name}`, taskLocation, ...paid, createTask(deps, name as TaskOperationName, op));
  }
  router.get('/api/v1/tasks', bearer, read, listTasks(deps));
  router.get('/api/v1/tasks/:taskId', bearer, read, getTask(deps));
  router.post('/api/v1/tasks/:taskId/cancel', bearer, write, cancelTask(deps));
  router.get('/api/v1/tasks/:taskId/deliveries', bearer, read, listDeliveries(deps));
  router.post('/api/v1/tasks/:taskId/redeliver', bearer, write, requireKeyRole('redeliver'), redeliver(deps));
  return router;
}
