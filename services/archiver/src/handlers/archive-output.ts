// archive.output: copies one generated output from the provider's URL into S3 as a workspace file, and records the
// outcome in the task's output entry (the JSON shape is in @gensvc/contracts task-output.ts).
//
// Idempotent per (task, output): the file id, and so the storage key, are derived from (task, output index), and
// (taskId, outputIndex) is unique, so a re-run is a no-op when the row exists, or else an overwrite of the same
// object and one row. The bytes stream from the provider through the outbound client into a multipart upload and
// are never held whole; a failure mid-way aborts the upload and leaves no object.
import { ARCHIVE_LIMIT_BYTES, CallbackDeliver, taskOutputSchema, type ArchiveStatusValue, type JobPayload, type ArchiveOutput, type TaskOutputEntry } from '@gensvc/contracts';
import { fileRepository, generatedExpiry, isUniqueViolation, taskRepository, withTx, type DbClient } from '@gensvc/db';
import { OutboundError, fetchChecked, isTransientOutboundError } from '@gensvc/outbound';
import { ensureJob, isLastAttempt, type HandlerContext } from '@gensvc/queue';
import { deleteObject, generatedOutputLocation, putObjectStream, type GeneratedOutputLocation } from '@gensvc/storage';
import { HeadPeek, SNIFF_BYTES, sniffMedia, type SniffedMedia } from '@gensvc/media';
import type { ArchiverDeps } from '../deps';

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
  const archive = archiveOne(deps);
  return async (payload: JobPayload<typeof ArchiveOutput>, ctx: HandlerContext): Promise<ArchiveOutcome> => {
    const outcome = await archive(payload, ctx);
    if (outcome.outcome !== 'skipped') await completeTask(deps, payload.taskId);
    return outcome;
  };
}

/**
 * A generation task is completed once every output is archived or given up on (spec §7: an output that cannot be
 * archived does not fail the task), so its envelope and callback point at {file_url}. Of archives finishing side
 * by side exactly one completes it (a conditional update); that one schedules the callback. A task completed
 * already (an image edit, or a re-run) is left as it is.
 */
async function completeTask(deps: ArchiverDeps, taskId: string): Promise<void> {
  const done = await taskRepository.completeIfArchived(deps.db, taskId);
  if (!done) return;
  deps.logger.info({ taskId, callback: done.callback }, 'task completed');
  if (!done.callback) return;
  const attempt = done.callbackRoundStart;
  await ensureJob(deps.queues, CallbackDeliver, { taskId, workspaceId: done.workspaceId, attempt }, { jobId: [taskId, attempt] });
}

function archiveOne(deps: ArchiverDeps) {
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

    const location = generatedOutputLocation({
      secret: config.signingSecret,
      fileBaseUrl: config.fileBaseUrl,
      bucket: config.s3.bucket,
      workspaceId: task.workspaceId,
      taskId,
      outputIndex,
    });
    const { fileId, storageKey } = location;
    const result = archivedEntry(location);

    const existing = await db.file.findUnique({ where: { taskId_outputIndex: { taskId, outputIndex } } });
    if (existing) {
      // Archived before (this job re-run, or a run that died before writing the entry): make the entry say so. The
      // row is at the location derived above: every writer of an output derives it the same way.
      await writeEntry(db, taskId, outputIndex, result);
      return { outcome: 'archived', fileId: existing.id, bytes: Number(existing.bytes), already: true };
    }

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
      if (isTransientOutboundError(error) && !isLastAttempt(ctx.job)) throw error;
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
    // The download's own failure (too large, stalled, cut off), as opposed to the upload's.
    let streamError: unknown;
    let peek!: HeadPeek;
    const sniffed = new Promise<SniffedMedia | null>((resolve, reject) => {
      peek = new HeadPeek(SNIFF_BYTES, (head, complete) => resolve(sniffMedia(head, complete)));
      peek.on('error', reject);
    });
    source.on('error', (e) => {
      streamError = e;
      // Before the type is known this rejects `sniffed`; after, it makes the upload abort and fail.
      peek.destroy(e);
    });
    source.pipe(peek);

    let type: SniffedMedia | null;
    try {
      type = await sniffed;
    } catch (e) {
      return giveUp(e);
    }
    if (!type || type.kind !== entry.kind) {
      source.destroy();
      peek.destroy();
      const what = type ? `a ${type.kind} (${type.contentType})` : 'not a supported image or video format';
      return notArchived('failed', `unsupported_type: the ${entry.kind} output's bytes are ${what}`);
    }

    try {
      await putObjectStream(s3, { bucket: config.s3.bucket, key: storageKey, body: peek, contentType: type.contentType });
    } catch (e) {
      // Stopped early (the upload failed): stop the download as well.
      source.destroy();
      if (streamError !== undefined) return giveUp(streamError);
      throw e;
    }

    const now = new Date();
    const expiry = generatedExpiry(now, task.workspace.tier, task.workspace.retentionDays);
    const bytes = peek.bytes;
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
          sha256: peek.digest(),
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

function archivedEntry(location: GeneratedOutputLocation): Partial<TaskOutputEntry> {
  return { archive_status: 'archived', svc_file_id: location.fileId, svc_url: location.url };
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
