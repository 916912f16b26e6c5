import { defineWorker } from '@gensvc/queue';
import type { Worker } from 'bullmq';
import type { WorkerConnection } from './archive-worker';
import type { ArchiverDeps } from './deps';
import { filesRetentionSweep } from './handlers/files-retention-sweep';

/** The `maintenance` queue's worker. One job at a time: the sweep works in batches and needs no parallel copy. */
export function startMaintenanceWorker(deps: ArchiverDeps, conn: WorkerConnection): Worker {
  return defineWorker({
    queue: 'maintenance',
    connection: conn.connection,
    prefix: conn.prefix,
    concurrency: 1,
    logger: conn.logger ?? deps.logger,
    handlers: { 'files.retention-sweep': () => filesRetentionSweep(deps) },
  });
}
