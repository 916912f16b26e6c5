import { OutboundAgents } from '@gensvc/outbound';
import { defineWorker, type QueueLogger } from '@gensvc/queue';
import type { Worker } from 'bullmq';
import type { RedisConnection } from '@gensvc/queue';
import type { DispatcherDeps } from './deps';
import { callbackDeliver } from './handlers/callback-deliver';

export interface WorkerConnection {
  connection: RedisConnection;
  prefix: string;
  logger?: QueueLogger;
}

/** The `callbacks` queue's worker: one handler, `callback.deliver`, with the kept-alive connections it owns. */
export function startDispatcherWorker(
  deps: DispatcherDeps,
  conn: WorkerConnection,
  concurrency = deps.config.concurrency.callbackDispatcher,
): Worker {
  // Connections to receivers reused across attempts, closed with the worker.
  const agents = new OutboundAgents();
  const worker = defineWorker({
    queue: 'callbacks',
    connection: conn.connection,
    prefix: conn.prefix,
    concurrency,
    logger: conn.logger ?? deps.logger,
    handlers: { 'callback.deliver': callbackDeliver({ ...deps, outbound: { ...deps.outbound, agents } }) },
  });
  worker.once('closed', () => void agents.close());
  return worker;
}
