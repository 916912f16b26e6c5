// files.retention-sweep (hourly): removes files whose retention is over, row and bytes (spec §3, DESIGN.md §4).
//
// Safe to kill at any instant and run again. An expired row is already hidden from every list and look-up, so the
// order is: bytes first, then the row. A kill after some objects are gone leaves hidden rows whose objects are
// missing, which the next run deletes again (deleting a missing object succeeds) and then removes; no kill can
// leave an object that no row points to, nor a listed row without its object.
import type { S3Client } from '@aws-sdk/client-s3';
import type { Config } from '@gensvc/config';
import { fileRepository, type Db } from '@gensvc/db';
import type { Logger } from '@gensvc/observability';
import { deleteObject } from '@gensvc/storage';

export interface FilesRetentionSweepDeps {
  db: Db;
  s3: S3Client;
  config: Pick<Config, 's3'>;
  logger: Logger;
}

export interface FilesRetentionSweepOptions {
  /** Rows read and removed per round. */
  batchSize?: number;
  /** Object deletions in flight at once. */
  concurrency?: number;
  /** The instant retention is judged against (tests); one instant for the whole run, so the run ends. */
  now?: Date;
}

export async function filesRetentionSweep(
  deps: FilesRetentionSweepDeps,
  options: FilesRetentionSweepOptions = {},
): Promise<{ removed: number }> {
  const { db, s3, config, logger } = deps;
  const batchSize = options.batchSize ?? 100;
  const concurrency = options.concurrency ?? 8;
  const now = options.now ?? new Date();
  let removed = 0;
  let failed = 0;

  for (;;) {
    const batch = await fileRepository.purgeable(db, now, batchSize);
    if (batch.length === 0) break;
    const gone: string[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(concurrency, batch.length) }, async () => {
        while (next < batch.length) {
          const file = batch[next++]!;
          try {
            await deleteObject(s3, config.s3.bucket, file.storageKey);
            gone.push(file.id);
          } catch (err) {
            failed++;
            logger.warn(
              { err, file_id: file.id, workspace_id: file.workspaceId },
              'retention sweep: could not delete the object; the row stays for the next run',
            );
          }
        }
      }),
    );
    removed += await fileRepository.removePurged(db, gone);
    // A batch with failures would come back unchanged: stop, and let the next run (or the job's retry) go on.
    if (gone.length < batch.length || batch.length < batchSize) break;
  }

  logger.info({ removed, failed }, 'retention sweep done');
  if (failed > 0)
    throw new Error(`retention sweep: ${failed} object(s) could not be deleted (${removed} file(s) removed)`);
  return { removed };
}
