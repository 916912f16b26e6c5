// archive.output: copies one generated output from the provider's URL into S3 as a workspace file, and records the
// outcome in the task's output entry (the JSON shape is in @gensvc/contracts task-output.ts).
//
// Idempotent per (task, output): the file id, and so the storage key, are derived from (task, output index), and
// (taskId, outputIndex) is unique, so a re-run is a no-op when the row exists, or else an overwrite of the same
// object and one row. The bytes stream from the provider through the outbound client into a multipart upload and
// are never held whole; a failure mid-way aborts the upload and leaves no object.
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { ARCHIVE_LIMIT_BYTES, taskOutputSchema, type ArchiveStatusValue, type JobPayload, type ArchiveOutput, type TaskOutputEntry } from '@gensvc/contracts';
import { fileRepository, generatedExpiry, isUniqueViolation, withTx, type DbClient } from '@gensvc/db';
import { OutboundError, fetchChecked, isTransientOutboundError } from '@gensvc/outbound';
import type { HandlerContext } from '@gensvc/queue';
import { deleteObject, fileObjectKey, outputFileId, publicFileUrl, putObjectStream } from '@gensvc/storage';
import type { Config } from '@gensvc/config';
import type { ArchiverDeps } from '../deps';
import { SNIFF_BYTES, sniffMedia } from '@gensvc/media';

export type ArchiveOutcome =
  | { outcome: 'archived'; fileId: string; bytes: number; already: boolean }
  | { outcome: 'too_large' | 'failed'; reason: string }
  | { outcome: 'skipped'; reason: 'task_gone' | 'no_such_output' };

/** Timeouts per kind: a 512 MiB video takes minutes even on a good link; any stall longer than a minute fails it. */
const TIMEOUTS = {
  image: { timeoutMs: 2 * 60_000, idleTimeoutMs: 60_000, connectTimeoutMs: 10_000 },
  video: { timeoutMs: 20 * 60_000, idleTimeoutMs: 60_000, connectTimeoutMs: 10_000 },
};

export function archiveOutput(deps: ArchiverDeps) {
  const { config, db, s3, logger } = deps;

  return async (payload: JobPayload<typeof ArchiveOutput>, ctx: HandlerContext): Promise<ArchiveOutcome> => {
    const { taskId, outputIndex } = payload;
    const log = logger.child({ taskId, outputIndex, jobId: ctx.job.id });
    const task = await db.task.findUnique({
      where: { id: taskId },
      select: { id: true, workspaceId: true, output: true, workspace: { select: { tier: true, retentionDays: true } } },
    });
    if (!task) return { outcome: 'skipped', reason: 'task_gone' };
    const parsed = taskOutputSchema.safeParse(task.output);
    const entry = parsed.success ? parsed.data.outputs[outputIndex] : undefined;
    if (!entry) {
      log.warn({ issues: parsed.success ? undefined : parsed.error.issues }, 'archive: the task has no such output');
      return { outcome: 'skipped', reason: 'no_such_output' };
    }

    const existing = await db.file.findUnique({ where: { taskId_outputIndex: { taskId, outputIndex } } });
    if (existing) {
      // Archived before (this job re-run, or a run that died before writing the entry): make the entry say so.
      await writeEntry(db, taskId, outputIndex, archivedEntry(config, existing.id, existing.storageKey));
      return { outcome: 'archived', fileId: existing.id, bytes: Number(existing.bytes), already: true };
    }

    const fileId = outputFileId(config.signingSecret, taskId, outputIndex);
    const storageKey = fileObjectKey(task.workspaceId, fileId);
    const notArchived = async (status: ArchiveStatusValue, reason: string): Promise<ArchiveOutcome> => {
      // An earlier run that died after its upload left an object no row points to: remove it too.
      await deleteObject(s3, config.s3.bucket, storageKey);
      await writeEntry(db, taskId, outputIndex, { archive_status: status });
      log.info({ status, reason }, 'archive: output not archived; the provider URL stays');
      return { outcome: status === 'too_large' ? 'too_large' : 'failed', reason };
    };
    const giveUp = (error: unknown): Promise<ArchiveOutcome> => {
      // An aborted job (shutdown) goes back to the queue as it is; errors outside the fetch (S3, Postgres) and
      // transient fetch failures with attempts left are retried by the queue.
      if (ctx.signal?.aborted || !(error instanceof OutboundError)) throw error;
      if (isTransientOutboundError(error) && ctx.job.attemptsMade + 1 < (ctx.job.opts.attempts ?? 1)) throw error;
      return notArchived(error.reason === 'too_large' ? 'too_large' : 'failed', `${error.reason}: ${error.message}`);
    };

    let response;
    try {
      response = await fetchChecked(entry.url, {
        allowCidrs: config.outbound.allowCidrs,
        ...deps.outbound,
        ...TIMEOUTS[entry.kind],
        maxBytes: ARCHIVE_LIMIT_BYTES[entry.kind],
        signal: ctx.signal,
      });
    } catch (e) {
      return giveUp(e);
    }

    const source = response.body;
    const hash = createHash('sha256');
    let bytes = 0;
    let streamError: unknown;
    const chunks = source[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
    const head: Buffer[] = [];
    let headBytes = 0;
    let ended = false;
    try {
      while (headBytes < SNIFF_BYTES) {
        const next = await chunks.next();
        if (next.done) {
          ended = true;
          break;
        }
        head.push(next.value);
        headBytes += next.value.length;
      }
    } catch (e) {
      return giveUp(e);
    }
    const type = sniffMedia(Buffer.concat(head), ended);
    if (!type || type.kind !== entry.kind) {
      source.destroy();
      const what = type ? `a ${type.kind} (${type.contentType})` : 'not a supported image or video format';
      return notArchived('failed', `unsupported_type: the ${entry.kind} output's bytes are ${what}`);
    }

    async function* all(): AsyncGenerator<Buffer> {
      try {
        for (const chunk of head) {
          hash.update(chunk);
          bytes += chunk.length;
          yield chunk;
        }
        while (!ended) {
          const next = await chunks.next();
          if (next.done) break;
          hash.update(next.value);
          bytes += next.value.length;
          yield next.value;
        }
      } catch (e) {
        streamError = e;
        throw e;
      } finally {
        // Stopped early (the upload failed): stop the download as well.
        if (!source.readableEnded) source.destroy();
      }
    }

    try {
      await putObjectStream(s3, {
        bucket: config.s3.bucket,
        key: storageKey,
        body: Readable.from(all(), { objectMode: false }),
        contentType: type.contentType,
      });
    } catch (e) {
      source.destroy();
      if (streamError !== undefined) return giveUp(streamError);
      throw e;
    }

    const now = new Date();
    const expiry = generatedExpiry(now, task.workspace.tier, task.workspace.retentionDays);
    const result = archivedEntry(config, fileId, storageKey);
    try {
      await withTx(db, async (tx) => {
        await fileRepository.create(tx, {
          id: fileId,
          workspaceId: task.workspaceId,
          source: 'generated',
          purpose: 'output',
          filename: `${taskId}-${outputIndex}.${type.extensions[0]}`,
          contentType: type.contentType,
          bytes: BigInt(bytes),
          sha256: hash.digest('hex'),
          storageKey,
          createdAt: now,
          expiresAt: expiry.expiresAt,
          publicExpiresAt: expiry.publicExpiresAt,
          taskId,
          outputIndex,
          archiveStatus: 'archived',
        });
        await writeEntry(tx, taskId, outputIndex, result);
      });
    } catch (e) {
      if (!isUniqueViolation(e)) throw e;
      // A concurrent run of the same job recorded it first, for the same object: its row stands.
      await writeEntry(db, taskId, outputIndex, result);
      return { outcome: 'archived', fileId, bytes, already: true };
    }
    log.info({ fileId, bytes, contentType: type.contentType }, 'archive: output archived');
    return { outcome: 'archived', fileId, bytes, already: false };
  };
}

function archivedEntry(config: Pick<Config, 'fileBaseUrl' | 's3'>, fileId: string, storageKey: string): Partial<TaskOutputEntry> {
  return { archive_status: 'archived', svc_file_id: fileId, svc_url: publicFileUrl(config.fileBaseUrl, config.s3.bucket, storageKey) };
}

/**
 * Merges `patch` into outputs[outputIndex] of the task's output in one statement, so archives of a task's outputs
 * running side by side cannot overwrite each other's entries, and nothing else of the task changes.
 */
async function writeEntry(db: DbClient, taskId: string, outputIndex: number, patch: Partial<TaskOutputEntry>): Promise<void> {
  await db.$executeRaw`
    UPDATE "Task"
    SET output = jsonb_set(output::jsonb, ARRAY['outputs', ${String(outputIndex)}], (output::jsonb -> 'outputs' -> ${outputIndex}::int) || ${JSON.stringify(patch)}::jsonb)
    WHERE id = ${taskId} AND jsonb_typeof(output::jsonb -> 'outputs' -> ${outputIndex}::int) = 'object'`;
}
