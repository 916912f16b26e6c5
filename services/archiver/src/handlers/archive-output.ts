// archive.output: copies one generated output from the provider's URL into S3 as a workspace file, and records the
// outcome in the task's output entry (the JSON shape is in @gensvc/contracts task-output.ts).
//
// Idempotent per (task, output): the file id, and so the storage key, are derived from (task, output index), and
// (taskId, outputIndex) is unique, so a re-run is a no-op when the row exists, or else an overwrite of the same
// object and one row. The bytes stream from the provider through the outbound client into S3 (putObjectStream: one
// PutObject within a part, a multipart upload above) and are never held whole; a failure mid-way aborts the upload
// and leaves no object. The one exception is a body declared no longer than the sniff window (SNIFF_BYTES), which
// the stream's HeadPeek would hold whole anyway before any byte flowed on: it is read as one buffer, sniffed, hashed
// and put in one write (WHOLE_UP_TO).
import {
  ARCHIVE_LIMIT_BYTES,
  archivedOutputPatch,
  notArchivedOutputPatch,
  outputEntriesOf,
  type JobPayload,
  type ArchiveOutput,
  type TaskOutputEntry,
} from '@gensvc/contracts';
import { generatedFile, taskRepository, type CreateFileInput } from '@gensvc/db';
import {
  OutboundError,
  type OutboundResponse,
  type OutboundWholeResponse,
  fetchChecked,
  isTransientOutboundError,
} from '@gensvc/outbound';
import { isLastAttempt, publishTaskFinished, scheduleCallback, taskJobRef, type HandlerContext } from '@gensvc/queue';
import { deleteObject, generatedOutputLocation, putObjectBuffer, putObjectStream } from '@gensvc/storage';
import { HeadPeek, sha256Hex, SNIFF_BYTES, sniffMedia, type SniffedMedia } from '@gensvc/media';
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

/**
 * A body declared at most this long comes whole from the outbound client and goes to S3 as one buffer (no stream
 * layers: the outbound client's length guard, the HeadPeek, the put's counter). Not a new bound on memory: the
 * HeadPeek holds the first SNIFF_BYTES of every download before it lets any through, so a body this short was held
 * whole by the stream path as well; and the sniff sees exactly what it saw there (the whole body, `complete` when
 * shorter than the window).
 */
const WHOLE_UP_TO = SNIFF_BYTES;

/**
 * Each outcome is recorded in one statement (taskRepository.recordArchive): the library row, the output's entry and,
 * once no output is pending, the task's completion (spec §7: an output that cannot be archived does not fail the
 * task), so its envelope and callback point at {file_url}. Of archives finishing side by side exactly one completes
 * it; that one schedules the callback. A task completed already (an image edit, or a re-run) is left as it is.
 */
export function archiveOutput(deps: ArchiverDeps) {
  const { config, db, s3, logger } = deps;

  /**
   * Records the outcome, and when this completed the task schedules its callback and tells a caller waiting on it. A
   * failed add is logged, not thrown: a re-run of this job would find the task completed and add nothing, and the
   * dispatcher's reconciler adds the callback of a completed task whose job is missing.
   */
  const record = async (
    taskId: string,
    outputIndex: number,
    patch: Partial<TaskOutputEntry>,
    file?: CreateFileInput,
  ): Promise<boolean> => {
    const { completed: done, fileCreated } = await taskRepository.recordArchive(db, {
      taskId,
      outputIndex,
      patch,
      file,
    });
    if (done) {
      logger.info({ taskId, callback: done.callback }, 'task completed');
      if (done.callback) {
        const ref = taskJobRef({ id: taskId, workspaceId: done.workspaceId });
        await scheduleCallback(deps.queues, ref, done.callbackRoundStart, { first: true }).catch((err: unknown) =>
          logger.error({ taskId, err }, "the callback job could not be added; the dispatcher's reconciler will add it"),
        );
      }
      // One Redis round trip per completed task: the only way a caller waiting on it (Prefer: wait) hears of it.
      await publishTaskFinished(deps.queues.connection, deps.queues.prefix, taskId, logger);
    }
    return fileCreated;
  };

  /** What archiving the output needs, from the row (one read): null when the task is gone. */
  const readSource = async (taskId: string, outputIndex: number): Promise<Source | null> => {
    const task = await taskRepository.archiveSource(db, taskId, outputIndex);
    return (
      task && { workspace: task.workspace, entry: outputEntriesOf(task.output)[outputIndex], archived: task.archived }
    );
  };

  return async (payload: JobPayload<typeof ArchiveOutput>, ctx: HandlerContext): Promise<ArchiveOutcome> => {
    const { taskId, outputIndex } = payload;
    const log = logger.child({ taskId, outputIndex, jobId: ctx.job.id });
    const task = await readSource(taskId, outputIndex);
    if (!task) return { outcome: 'skipped', reason: 'task_gone' };
    const { entry } = task;
    if (!entry) {
      log.warn({}, 'archive: the task has no such output');
      return { outcome: 'skipped', reason: 'no_such_output' };
    }

    const location = generatedOutputLocation({
      secret: config.signingSecret,
      fileBaseUrl: config.fileBaseUrl,
      bucket: config.s3.bucket,
      workspaceId: task.workspace.id,
      taskId,
      outputIndex,
    });
    const { fileId, storageKey } = location;
    const result = archivedOutputPatch(location);

    const existing = task.archived;
    if (existing) {
      // Archived before (this job re-run, or a run that died before writing the entry): make the entry say so. The
      // row is at the location derived above: every writer of an output derives it the same way.
      await record(taskId, outputIndex, result);
      return { outcome: 'archived', fileId: existing.id, bytes: Number(existing.bytes), already: true };
    }

    const notArchived = async (status: 'failed' | 'too_large', reason: string): Promise<ArchiveOutcome> => {
      // An earlier run that died after its upload left an object no row points to: remove it too.
      await deleteObject(s3, config.s3.bucket, storageKey);
      await record(taskId, outputIndex, notArchivedOutputPatch(status));
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

    let response: OutboundResponse | OutboundWholeResponse;
    try {
      response = await fetchChecked(entry.url, {
        allowCidrs: config.outbound.allowCidrs,
        ...deps.outbound,
        ...TIMEOUTS[entry.kind],
        maxBytes: ARCHIVE_LIMIT_BYTES[entry.kind],
        signal: ctx.signal,
        wholeUpTo: WHOLE_UP_TO,
      });
    } catch (e) {
      return giveUp(e);
    }

    const recordStored = async (type: SniffedMedia, bytes: number, sha256: string): Promise<ArchiveOutcome> => {
      // A concurrent run of the same job that recorded it first, for the same object: its row stands (the insert is
      // a no-op on the output's unique key) and the entry says archived either way.
      const file = generatedFile({
        location,
        workspace: task.workspace,
        taskId,
        outputIndex,
        media: { contentType: type.contentType, extension: type.extensions[0]! },
        bytes,
        sha256,
        createdAt: new Date(),
      });
      if (!(await record(taskId, outputIndex, result, file)))
        return { outcome: 'archived', fileId, bytes, already: true };
      log.info({ fileId, bytes, contentType: type.contentType }, 'archive: output archived');
      return { outcome: 'archived', fileId, bytes, already: false };
    };
    const unsupported = (type: SniffedMedia | null) => {
      const what = type ? `a ${type.kind} (${type.contentType})` : 'not a supported image or video format';
      return notArchived('failed', `unsupported_type: the ${entry.kind} output's bytes are ${what}`);
    };

    if (response.whole) {
      const whole = response.whole;
      const type = sniffMedia(whole, whole.length < SNIFF_BYTES);
      if (!type || type.kind !== entry.kind) return unsupported(type);
      await putObjectBuffer(s3, {
        bucket: config.s3.bucket,
        key: storageKey,
        body: whole,
        contentType: type.contentType,
      });
      return recordStored(type, whole.length, sha256Hex(whole));
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
      return unsupported(type);
    }

    try {
      await putObjectStream(s3, {
        bucket: config.s3.bucket,
        key: storageKey,
        body: peek,
        contentType: type.contentType,
      });
    } catch (e) {
      // Stopped early (the upload failed): stop the download as well.
      source.destroy();
      if (streamError !== undefined) return giveUp(streamError);
      throw e;
    }

    return recordStored(type, peek.bytes, peek.digest());
  };
}

/** What archiving one output needs: the workspace (the library row's lives), the entry, and an earlier run's row. */
interface Source {
  workspace: NonNullable<Awaited<ReturnType<typeof taskRepository.archiveSource>>>['workspace'];
  entry: Pick<TaskOutputEntry, 'url' | 'kind'> | undefined;
  /** The output's library row when an earlier run made it. */
  archived: { id: string; bytes: bigint } | null;
}
