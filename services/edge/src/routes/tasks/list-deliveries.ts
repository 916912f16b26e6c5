import { callbackRepository } from '@gensvc/db';
import type { Request, Response } from 'express';
import { authOf } from '../../auth/authenticate';
import type { EdgeDeps } from '../../deps';
import { findTask } from './render-task';

/**
 * GET /api/v1/tasks/{task_id}/deliveries — every callback attempt in order, with what the receiver answered: the
 * log a caller reads to see why its endpoint did not get a result.
 */
export function listDeliveries(deps: Pick<EdgeDeps, 'db'>) {
  return async (req: Request<{ taskId: string }>, res: Response) => {
    const task = await findTask(deps, authOf(res).workspace.id, req.params.taskId);
    const attempts = await callbackRepository.attempts(deps.db, task.id);
    res.json({
      object: 'list',
      task_id: task.id,
      callback_url: task.callbackUrl,
      state: task.callbackState,
      data: attempts.map((a) => ({
        delivery_id: a.deliveryId,
        attempt: a.attempt,
        url: a.url,
        status_code: a.statusCode,
        duration_ms: a.durationMs,
        error: a.error,
        response_head: a.responseHead,
        created_at: a.createdAt.toISOString(),
      })),
    });
  };
}
