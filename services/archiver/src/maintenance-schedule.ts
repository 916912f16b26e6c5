import { BillingReleaseExpired, FilesRetentionSweep, type JobsOnQueue } from '@gensvc/contracts';
import type { Queues } from '@gensvc/queue';
import type { JobsOptions } from 'bullmq';

interface MaintenanceSchedule {
  /** One scheduler id for every replica: upserting it again replaces it, so the job runs once per period in all. */
  id: string;
  job: JobsOnQueue<'maintenance'>;
  everyMs: number;
  opts: JobsOptions;
}

export const RETENTION_SWEEP_SCHEDULER_ID = 'files.retention-sweep/hourly';
export const RETENTION_SWEEP_EVERY_MS = 3_600_000;
export const RELEASE_EXPIRED_SCHEDULER_ID = 'billing.release-expired/every-minute';
export const RELEASE_EXPIRED_EVERY_MS = 60_000;

export const MAINTENANCE_SCHEDULES: readonly MaintenanceSchedule[] = [
  // Spec §3: cleanup runs hourly.
  {
    id: RETENTION_SWEEP_SCHEDULER_ID,
    job: FilesRetentionSweep,
    everyMs: RETENTION_SWEEP_EVERY_MS,
    opts: { attempts: 3, backoff: { type: 'exponential', delay: 60_000 } },
  },
  // A failed run is not retried: the next one comes within the minute.
  {
    id: RELEASE_EXPIRED_SCHEDULER_ID,
    job: BillingReleaseExpired,
    everyMs: RELEASE_EXPIRED_EVERY_MS,
    opts: { attempts: 1 },
  },
];

/** Registers (or re-registers, unchanged) every maintenance job's schedule; every archiver replica does, at start. */
export async function scheduleMaintenance(queues: Queues): Promise<void> {
  for (const s of MAINTENANCE_SCHEDULES) {
    const data = s.job.schema.parse({ v: s.job.version });
    await queues
      .get(s.job.queue)
      .upsertJobScheduler(s.id, { every: s.everyMs }, { name: s.job.name, data, opts: s.opts });
  }
}
