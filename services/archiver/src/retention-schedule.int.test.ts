import { FilesRetentionSweep } from '@gensvc/contracts';
import { createQueues, createRedisConnection } from '@gensvc/queue';
import { useTestContext } from '@gensvc/testing';
import { RETENTION_SWEEP_EVERY_MS, RETENTION_SWEEP_SCHEDULER_ID, scheduleRetentionSweep } from './retention-schedule';

const ctx = useTestContext();

it('every replica registers the hourly sweep under one scheduler id: one schedule, one pending run', async () => {
  // Three replicas starting, each with its own connection, as three archiver processes would.
  const replicas = [1, 2, 3].map((i) => {
    const connection = createRedisConnection(ctx.config.redisUrl, { name: `replica-${i}` });
    return { connection, queues: createQueues({ connection, prefix: ctx.config.queuePrefix }) };
  });
  try {
    await Promise.all(replicas.map((r) => scheduleRetentionSweep(r.queues)));
    await scheduleRetentionSweep(replicas[0]!.queues); // a restart

    const queue = replicas[0]!.queues.get('maintenance');
    const schedulers = await queue.getJobSchedulers();
    expect(schedulers).toHaveLength(1);
    expect(schedulers[0]).toMatchObject({ key: RETENTION_SWEEP_SCHEDULER_ID, name: FilesRetentionSweep.name, every: RETENTION_SWEEP_EVERY_MS });
    expect(RETENTION_SWEEP_EVERY_MS).toBe(3_600_000);

    const pending = await queue.getJobs(['delayed', 'waiting']);
    expect(pending).toHaveLength(1);
    expect(pending[0]!.name).toBe('files.retention-sweep');
    // The payload a worker receives passes the contract.
    expect(FilesRetentionSweep.schema.safeParse(pending[0]!.data).success).toBe(true);
    expect(pending[0]!.data).toEqual({ v: FilesRetentionSweep.version });
  } finally {
    for (const r of replicas) {
      await r.queues.close();
      r.connection.disconnect();
    }
  }
});
