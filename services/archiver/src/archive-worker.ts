import { OutboundAgents } from '@gensvc/outbound';
import { defineWorker, type QueueLogger } from '@gensvc/queue';
import type { RedisConnection } from '@gensvc/queue';
import type { Worker } from 'bullmq';
import type { ArchiverDeps } from './deps';
import { archiveOutput } from './handlers/archive-output';

export interface WorkerConnection {
  connection: RedisConnection;
  prefix: string;
  logger?: QueueLogger;
}

/** The `archive` queue's worker: one handler, `archive.output`, with the kept-alive connections it owns. */
export function startArchiveWorker(
  deps: ArchiverDeps,
  conn: WorkerConnection,
  concurrency = deps.config.concurrency.archiver,
): Worker {
  // Connections to the providers' output hosts reused across archives, closed with the worker.
  const agents = new OutboundAgents();
  const worker = defineWorker({
    queue: 'archive',
    connection: conn.connection,
    prefix: conn.prefix,
    concurrency,
    logger: conn.logger ?? deps.logger,
    handlers: { 'archive.output': archiveOutput({ ...deps, outbound: { ...deps.outbound, agents } }) },
  });
  worker.once('closed', () => void agents.close());
  return worker;
}
