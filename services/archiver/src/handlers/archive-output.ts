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
import { ARCHIVE_LIMIT_BYTES, archivedOutputPatch, notArchivedOutputPatch, outputEntriesOf, type JobPayload, type ArchiveOutput, type TaskOutputEntry } from '@gensvc/contracts';
import { Tier, generatedFile, groupCommit, taskRepository, type CreateFileInput, type RecordArchiveInput } from '@gensvc/db';
import { OutboundError, fetchChecked, isTransientOutboundError } from '@gensvc/outbound';
import { isLastAttempt, scheduleCallback, taskJobRef, type HandlerContext } from '@gensvc/queue';
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
 * Each outcome is recorded in one statement (taskRepository.recordArchiveMany, shared by the archives that end
 * together): the library row, the output's entry and,
 * once no output is pending, the task's completion (spec §7: an output that cannot be archived does not fail the
 * task), so its envelope and callback point at {file_url}. Of archives finishing side by side exactly one completes
 * it; that one schedules the callback at once. A task completed already (an image edit, or a re-run) is left as it is.
 */
export function archiveOutput(deps: ArchiverDeps) {
  const { config, db, s3, logger } = deps;
  // The archives that end while the previous group's statement is in flight are recorded in one (issue 12: one commit
  // for the group); at low load each goes alone, at the end of its turn. Two outputs of one task never share one.
  const recordArchive = groupCommit((items: RecordArchiveInput[]) => taskRepository.recordArchiveMany(db, items), { max: 32, keyOf: (item) => item.taskId });

  /**
   * The store round trip of a job that carries its source (one without a source read the task first): the outcome,
   * and the task's completion when it is the last.
   * The callback job is added without waiting for Redis's answer: it is written at once (scheduleCallback holds no
   * due callback for the turn's other writes, which on a busy archiver cost it 2-4 ms p50), and this job's completion
   * follows on the same connection as soon as the handler returns: the task's archive job is done one Redis round trip
   * sooner (the process's very first add on the callbacks queue follows a moment later: BullMQ readies a queue with
   * one round trip of its own). Waiting would change nothing if the add failed: a re-run of
   * this job finds the task completed and adds nothing either way. The dispatcher's reconciler adds the callback
   * of a completed task whose job is missing, whatever lost it. The job carries what its first attempt would read
   * (the completion statement returned it): the dispatcher need not read it back while the job is fresh.
   */
  const record = async (taskId: string, outputIndex: number, patch: Partial<TaskOutputEntry>, file?: CreateFileInput): Promise<boolean> => {
    const { completed: done, fileCreated } = await recordArchive({ taskId, outputIndex, patch, file });
    if (done) {
      logger.info({ taskId, callback: done.callback }, 'task completed');
      if (done.callback) {
        scheduleCallback(deps.queues, taskJobRef({ id: taskId, workspaceId: done.workspaceId }), done.callbackRoundStart, { first: true, carried: done.carried }).catch((err: unknown) =>
          logger.error({ taskId, err }, "the callback job could not be added; the dispatcher's reconciler will add it"),
        );
      }
    }
    return fileCreated;
  };

  /** What archiving the output needs, from the row (one read): null when the task is gone. */
  const readSource = async (taskId: string, outputIndex: number): Promise<Source | null> => {
    const task = await taskRepository.archiveSource(db, taskId, outputIndex);
    return task && { workspace: task.workspace, entry: outputEntriesOf(task.output)[outputIndex], archived: task.archived };
  };

  return async (payload: JobPayload<typeof ArchiveOutput>, ctx: HandlerContext): Promise<ArchiveOutcome> => {
    const { taskId, outputIndex } = payload;
    const log = logger.child({ taskId, outputIndex, jobId: ctx.job.id });
    // Store round trip 1 of 2, only for a job that does not carry its source (a reconciler's, a v1 job): the job
    // made with the result carries what this would read (ArchiveOutput v2), and the write below is conditional on
    // the row whichever it is.
    const task = carriedSource(payload) ?? (await readSource(taskId, outputIndex));
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

    // Known only when read (undefined: the job carried its source; an earlier run's row is then found by the write,
    // whose insert of the library row does nothing when there is one, or by the failure path).
    const existing = task.archived;
    if (existing) {
      // Archived before (this job re-run, or a run that died before writing the entry): make the entry say so. The
      // row is at the location derived above: every writer of an output derives it the same way.
      await record(taskId, outputIndex, result);
      return { outcome: 'archived', fileId: existing.id, bytes: Number(existing.bytes), already: true };
    }

    const notArchived = async (status: 'failed' | 'too_large', reason: string): Promise<ArchiveOutcome> => {
      if (task.archived === undefined) {
        // Not read at the start (the job carried its source): an earlier run may have archived this output, and its
        // row's object must stay. Read now, on this rare path, as a job without a source read it first.
        const archived = (await readSource(taskId, outputIndex))?.archived;
        if (archived) {
          await record(taskId, outputIndex, result);
          return { outcome: 'archived', fileId: archived.id, bytes: Number(archived.bytes), already: true };
        }
      }
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

    let response;
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
      if (!(await record(taskId, outputIndex, result, file))) return { outcome: 'archived', fileId, bytes, already: true };
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
      await putObjectBuffer(s3, { bucket: config.s3.bucket, key: storageKey, body: whole, contentType: type.contentType });
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
  workspace: { id: string; tier: Tier; retentionDays: number | null };
  entry: Pick<TaskOutputEntry, 'url' | 'kind'> | undefined;
  /** The output's library row when an earlier run made it; undefined when not read (carriedSource). */
  archived: { id: string; bytes: bigint } | null | undefined;
}

const TIERS: readonly string[] = Object.values(Tier);

/** The source the job carries (ArchiveOutput v2: set by the transition that recorded the output); null without one. */
function carriedSource(payload: JobPayload<typeof ArchiveOutput>): Source | null {
  const { source, workspaceId } = payload;
  if (!source || workspaceId === undefined || !TIERS.includes(source.tier)) return null;
  return {
    workspace: { id: workspaceId, tier: source.tier as Tier, retentionDays: source.retentionDays },
    entry: { url: source.url, kind: source.kind },
    archived: undefined,
  };
}
