// The archiver's series, read from what its jobs return (ArchiveOutcome, the sweep's { removed }): the handlers
// stay free of metrics, and a job re-run after a crash counts what it did in that run.
import type { Metrics } from '@gensvc/observability';
import type { Worker } from 'bullmq';
import type { ArchiveOutcome } from './handlers/archive-output';

export function countArchiveResults(archive: Worker, maintenance: Worker, metrics: Metrics) {
  archive.on('completed', (_job, result: ArchiveOutcome) => {
    if (!result || result.outcome === 'skipped') return;
    metrics.archives.inc({ outcome: result.outcome });
    if (result.outcome === 'archived' && !result.already) metrics.archiveBytes.inc(result.bytes);
  });
  archive.on('failed', (job) => {
    // Only a job with no attempt left is an outcome; the others are retried.
    if (job && job.attemptsMade >= (job.opts.attempts ?? 1)) metrics.archives.inc({ outcome: 'failed' });
  });
  maintenance.on('completed', (job, result: { removed?: number } | undefined) => {
    if (job.name === 'files.retention-sweep' && result?.removed)
      metrics.retentionRemoved.inc({ kind: 'file' }, result.removed);
  });
}
