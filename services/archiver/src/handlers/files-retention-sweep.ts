// files.retention-sweep (hourly): removes files whose retention is over, row and bytes (spec §3, DESIGN.md §4).
//
// Safe to kill at any instant and run again. An expired row is already hidden from every list and look-up, so the
// order is: bytes first, then the row. A kill after some objects are gone leaves hidden rows whose objects are
// missing, which the next run deletes again (deleting a missing object succeeds) and then removes; no kill can
// leave an object that no row points to, nor a listed row without its object. The rows of a batch stay locked
// while their objects go (fileRepository.purge), so a file attached to a saved project after the batch was read is
// kept, row and bytes, and an attach racing the removal waits and then finds no file. A kill in the middle of moving
// a kept output off the public prefix leaves its row at the public key and perhaps a private copy already made; the
// next run repeats the move (moveObject) and points the row at the copy.
import type { S3Client } from '@aws-sdk/client-s3';
import type { Config } from '@gensvc/config';
import { fileRepository, type Db } from '@gensvc/db';
import type { Logger } from '@gensvc/observability';
import { deleteObject, fileObjectKey, moveObject, PUBLIC_OUTPUTS_PREFIX } from '@gensvc/storage';

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
  /** How long one batch may hold its rows' locks while its objects are deleted; past it, the batch rolls back. */
  batchTimeoutMs?: number;
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
    const round = await fileRepository.purge(
      db,
      batch.map((f) => f.id),
      now,
      async (files) => {
        const gone: string[] = [];
        let next = 0;
        await Promise.all(
          Array.from({ length: Math.min(concurrency, files.length) }, async () => {
            while (next < files.length) {
              const file = files[next++]!;
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
        return gone;
      },
      options.batchTimeoutMs,
    );
    removed += round.removed;
    // A batch with failures, or with rows kept or locked since the read, would come back: stop, and let the next run
    // (or the job's retry) go on.
    if (round.removed < batch.length || batch.length < batchSize) break;
  }

  // A generated output a saved project keeps past its tier's public retention keeps its bytes, but not on {file_url}:
  // they move out of the public prefix to the private key an upload would have.
  let moved = 0;
  for (;;) {
    const batch = await fileRepository.publicCopiesOver(db, now, PUBLIC_OUTPUTS_PREFIX, batchSize);
    let done = 0;
    for (const file of batch) {
      const to = fileObjectKey(file.workspaceId, file.id);
      try {
        if (await fileRepository.relocate(db, file, to, () => moveObject(s3, config.s3.bucket, file.storageKey, to)))
          done++;
      } catch (err) {
        failed++;
        logger.warn({ err, file_id: file.id }, 'retention sweep: could not take a kept output off its public address');
      }
    }
    moved += done;
    if (done < batch.length || batch.length < batchSize) break;
  }

  logger.info({ removed, moved, failed }, 'retention sweep done');
  if (failed > 0)
    throw new Error(`retention sweep: ${failed} object(s) could not be deleted (${removed} file(s) removed)`);
  return { removed };
}
