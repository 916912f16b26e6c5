import { defineWorker, type QueueLogger } from '@gensvc/queue';
import type { Redis } from 'ioredis';
import type { Worker } from 'bullmq';
import type { ArchiverDeps } from './deps';
import { archiveOutput } from './handlers/archive-output';

export interface WorkerConnection {
  connection: Redis;
  prefix: string;
  logger?: QueueLogger;
}

/** The `archive` queue's worker: one handler, `archive.output`. */
export function startArchiveWorker(deps: ArchiverDeps, conn: WorkerConnection, concurrency = deps.config.concurrency.archiver): Worker {
  return defineWorker({
    queue: 'archive',
    connection: conn.connection,
    prefix: conn.prefix,
    concurrency,
    logger: conn.logger ?? deps.logger,
    handlers: { 'archive.output': archiveOutput(deps) },
  });
}
