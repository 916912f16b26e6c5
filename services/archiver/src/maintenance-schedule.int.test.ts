import { BillingReleaseExpired, FilesRetentionSweep } from '@gensvc/contracts';
import { createQueues, createRedisConnection } from '@gensvc/queue';
import { useTestContext } from '@gensvc/testing';
import {
  MAINTENANCE_SCHEDULES,
  RELEASE_EXPIRED_EVERY_MS,
  RELEASE_EXPIRED_SCHEDULER_ID,
  RETENTION_SWEEP_EVERY_MS,
  RETENTION_SWEEP_SCHEDULER_ID,
  scheduleMaintenance,
} from './maintenance-schedule';

const ctx = useTestContext();

it('every replica registers each maintenance job under one scheduler id: one pending run per job', async () => {
  // Three replicas starting, each with its own connection, as three archiver processes would.
  const replicas = [1, 2, 3].map((i) => {
    const connection = createRedisConnection(ctx.config.redisUrl, { name: `replica-${i}` });
    return { connection, queues: createQueues({ connection, prefix: ctx.config.queuePrefix }) };
  });
  try {
    await Promise.all(replicas.map((r) => scheduleMaintenance(r.queues)));
    await scheduleMaintenance(replicas[0]!.queues); // a restart

    const queue = replicas[0]!.queues.get('maintenance');
    const schedulers = await queue.getJobSchedulers();
    expect(schedulers).toHaveLength(MAINTENANCE_SCHEDULES.length);
    const byKey = new Map(schedulers.map((s) => [s.key, s]));
    expect(byKey.get(RETENTION_SWEEP_SCHEDULER_ID)).toMatchObject({
      key: RETENTION_SWEEP_SCHEDULER_ID,
      name: FilesRetentionSweep.name,
      every: RETENTION_SWEEP_EVERY_MS,
    });
    expect(byKey.get(RELEASE_EXPIRED_SCHEDULER_ID)).toMatchObject({
      key: RELEASE_EXPIRED_SCHEDULER_ID,
      name: BillingReleaseExpired.name,
      every: RELEASE_EXPIRED_EVERY_MS,
    });
    expect(RETENTION_SWEEP_EVERY_MS).toBe(3_600_000);
    expect(RELEASE_EXPIRED_EVERY_MS).toBe(60_000);

    const pending = await queue.getJobs(['delayed', 'waiting']);
    expect(pending).toHaveLength(MAINTENANCE_SCHEDULES.length);
    const byName = new Map(pending.map((j) => [j.name, j]));
    for (const job of [FilesRetentionSweep, BillingReleaseExpired]) {
      const run = byName.get(job.name);
      expect(run?.name).toBe(job.name);
      // The payload a worker receives passes the contract.
      expect(job.schema.safeParse(run!.data).success).toBe(true);
      expect(run!.data).toEqual({ v: job.version });
    }
    expect([...byName.keys()].sort()).toEqual(['billing.release-expired', 'files.retention-sweep']);
  } finally {
    for (const r of replicas) {
      await r.queues.close();
      r.connection.disconnect();
    }
  }
});
