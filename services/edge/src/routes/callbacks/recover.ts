// POST /api/v1/callbacks/recover — a new delivery round for each of the workspace's parked deliveries since a time,
// as POST /api/v1/tasks/{id}/redeliver starts one for a single task; the dashboard's Tasks page has the same.
import { taskRepository } from '@gensvc/db';
import type { Logger } from '@gensvc/observability';
import { scheduleCallback } from '@gensvc/queue';
import type { Request, Response } from 'express';
import { authOf } from '../../auth/authenticate';
import type { EdgeDeps } from '../../deps';
import { locals } from '../../http/request-context';
import { parseBody } from '../../http/parse-body';
import { RECOVER_BODY, RECOVER_LIMIT } from './schema';

/** First attempts queued at once: a recovery of a thousand is a burst for Redis, not a thousand at a time. */
const SCHEDULE_CONCURRENCY = 32;

export interface Recovery {
  object: 'callback_recovery';
  since: string;
  /** Deliveries given a new round by this call. */
  recovered: number;
  /** More parked deliveries since then remain: call again. */
  has_more: boolean;
}

export function recoverParked(deps: Pick<EdgeDeps, 'db' | 'queues'>) {
  return async (req: Request, res: Response) => {
    const { since } = parseBody(RECOVER_BODY, req.body);
    const { requestId, log } = locals(res);
    res.json(await recoverParkedDeliveries(deps, authOf(res).workspace.id, since, requestId, log));
  };
}

/**
 * Starts the rounds (one statement, taskRepository.recoverParked) and queues each round's first attempt. A task
 * pending already is not restarted, so a second call finds nothing new. A job that cannot be queued leaves its
 * delivery pending, which the reconciler re-ensures, as after a single redelivery.
 */
export async function recoverParkedDeliveries(
  deps: Pick<EdgeDeps, 'db' | 'queues'>,
  workspaceId: string,
  since: Date,
  requestId: string,
  log: Logger,
): Promise<Recovery> {
  const { rounds, hasMore } = await taskRepository.recoverParked(deps.db, workspaceId, since, RECOVER_LIMIT);
  let failed = 0;
  for (let i = 0; i < rounds.length; i += SCHEDULE_CONCURRENCY) {
    const batch = rounds.slice(i, i + SCHEDULE_CONCURRENCY).map(({ taskId, attempt }) =>
      scheduleCallback(deps.queues, { taskId, workspaceId, requestId }, attempt, { promote: true }).catch((err) => {
        failed += 1;
        if (failed === 1)
          log.error({ err, task_id: taskId }, 'recover: callback.deliver not queued; the reconciler will');
      }),
    );
    await Promise.all(batch);
  }
  return { object: 'callback_recovery', since: since.toISOString(), recovered: rounds.length, has_more: hasMore };
}
