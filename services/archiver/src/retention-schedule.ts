import { FilesRetentionSweep } from '@gensvc/contracts';
import type { Queues } from '@gensvc/queue';

/** One scheduler id for every replica: upserting it again replaces it, so the sweep runs once an hour in all. */
export const RETENTION_SWEEP_SCHEDULER_ID = 'files.retention-sweep/hourly';
export const RETENTION_SWEEP_EVERY_MS = 3_600_000;

/** Registers (or re-registers, unchanged) the hourly retention sweep (spec §3: cleanup runs hourly). */
export async function scheduleRetentionSweep(queues: Queues): Promise<void> {
  const data = FilesRetentionSweep.schema.parse({ v: FilesRetentionSweep.version });
  await queues.get(FilesRetentionSweep.queue).upsertJobScheduler(
    RETENTION_SWEEP_SCHEDULER_ID,
    { every: RETENTION_SWEEP_EVERY_MS },
    { name: FilesRetentionSweep.name, data, opts: { attempts: 3, backoff: { type: 'exponential', delay: 60_000 } } },
  );
}
