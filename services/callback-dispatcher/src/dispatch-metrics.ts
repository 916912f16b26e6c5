// The dispatcher's series: attempts by outcome, read from what each callback.deliver job returns (an attempt is
// an outcome, never a thrown error), and the parked deliveries, counted in Postgres at scrape time.
import { callbackRepository, type Db } from '@gensvc/db';
import { scrapedGauge, type Metrics } from '@gensvc/observability';
import type { Worker } from 'bullmq';
import { isDeliveredStatus } from './delivery-decision';
import type { DeliverOutcome } from './handlers/callback-deliver';

export function countDeliveries(worker: Worker, metrics: Metrics, db: Db) {
  worker.on('completed', (_job, result: DeliverOutcome | undefined) => {
    if (result?.outcome !== 'attempted') return;
    metrics.callbackAttempts.inc({ outcome: isDeliveredStatus(result.statusCode) ? 'delivered' : 'failed' });
  });
  scrapedGauge(
    metrics,
    {
      name: 'gensvc_callbacks_parked',
      help: 'Tasks whose callback delivery is parked after five failed attempts (redeliver starts a new round).',
      labelNames: [] as const,
    },
    async () => [{ labels: {}, value: await callbackRepository.countParked(db) }],
  );
}
