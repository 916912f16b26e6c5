import { defineWorker } from '@gensvc/queue';
import type { Worker } from 'bullmq';
import type { WorkerConnection } from './archive-worker';
import type { ArchiverDeps } from './deps';
import { billingReleaseExpired } from './handlers/billing-release-expired';
import { filesRetentionSweep } from './handlers/files-retention-sweep';

/**
 * The `maintenance` queue's worker. Two jobs at a time, so that a long retention sweep does not hold back the
 * minutely release of expired holds; every maintenance job is safe beside any other, itself included.
 */
export function startMaintenanceWorker(deps: ArchiverDeps, conn: WorkerConnection): Worker {
  return defineWorker({
    queue: 'maintenance',
    connection: conn.connection,
    prefix: conn.prefix,
    concurrency: 2,
    logger: conn.logger ?? deps.logger,
    handlers: {
      'files.retention-sweep': () => filesRetentionSweep(deps),
      'billing.release-expired': () => billingReleaseExpired(deps),
    },
  });
}
