import { defineWorker, type QueueLogger } from '@gensvc/queue';
import type { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import type { DispatcherDeps } from './deps';
import { callbackDeliver } from './handlers/callback-deliver';

export interface WorkerConnection {
  connection: Redis;
  prefix: string;
  logger?: QueueLogger;
}

/** The `callbacks` queue's worker: one handler, `callback.deliver`. */
export function startDispatcherWorker(
  deps: DispatcherDeps,
  conn: WorkerConnection,
  concurrency = deps.config.concurrency.callbackDispatcher,
): Worker {
  return defineWorker({
    queue: 'callbacks',
    connection: conn.connection,
    prefix: conn.prefix,
    concurrency,
    logger: conn.logger ?? deps.logger,
    handlers: { 'callback.deliver': callbackDeliver(deps) },
  });
}
