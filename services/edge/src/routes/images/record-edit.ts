// What a successful image call (an edit, or a Responses image generation) leaves behind, all or nothing: its outputs
// archived as workspace files, one Task row (completed) that owns them, and one charge. b64_json results are stored in
// S3 at once (the bytes are here); url results are copied later by the archiver (archive.output), their file id known
// now because it derives from (task, output index) exactly as the archiver derives it.
import { archivedOutputEntry, pendingOutputEntry, type TaskOutputEntry } from '@gensvc/contracts';
import { generatedFile, taskRepository, withTx, workspaceRepository, type JsonInput } from '@gensvc/db';
import { errors } from '@gensvc/errors';
import { sha256Hex } from '@gensvc/media';
import { recordSpend, type Logger } from '@gensvc/observability';
import { scheduleArchive } from '@gensvc/queue';
import { deleteObject, generatedOutputLocation, putObjectBuffer, type GeneratedOutputLocation } from '@gensvc/storage';
import type { KeptHold } from '../../billing/holds';
import type { EdgeDeps } from '../../deps';
import type { EditImage } from './image-inputs';
import { PASS_THROUGH_FIELDS, type EditFields } from './schema';
import type { EditAnswer, EditOutput } from './upstream-edit';

const EDIT_OPERATION = 'images.edits';

export interface RecordEditInput {
  taskId: string;
  requestId: string;
  workspaceId: string;
  apiKeyId: string;
  modelId: string;
  fields: EditFields;
  images: EditImage[];
  mask: EditImage | null;
  answer: EditAnswer;
  hold: KeptHold;
  /** unitPrice × the results charged for. */
  cost: bigint;
  startedAt: Date;
}

/** Any call whose answer holds generated images: what recordImageOutputs writes. */
export interface RecordImagesInput {
  taskId: string;
  requestId: string;
  workspaceId: string;
  apiKeyId: string;
  modelId: string;
  /** The Task row's operation, e.g. images.edits. */
  operation: string;
  /** What the task remembers of its input (never image bytes). */
  input: Record<string, unknown>;
  channelId: string;
  outputs: EditOutput[];
  usage: { inputTokens?: number; outputTokens?: number };
  hold: KeptHold;
  cost: bigint;
  startedAt: Date;
}

/** The fields each output gets in the caller's answer. */
export interface ArchivedFields {
  svc_file_id: string;
  svc_url: string;
  archive_status: 'archived' | 'pending';
}

type RecordDeps = Pick<EdgeDeps, 'config' | 'db' | 's3' | 'queues' | 'metrics'>;

/** recordImageOutputs for an edit; returns the caller's answer (the provider's, each result with its svc_* fields). */
export async function recordEdit(
  deps: RecordDeps,
  input: RecordEditInput,
  log: Logger,
): Promise<Record<string, unknown>> {
  const { answer } = input;
  const archived = await recordImageOutputs(
    deps,
    {
      ...input,
      operation: EDIT_OPERATION,
      input: taskInput(input),
      channelId: answer.route.channel.id,
      outputs: answer.outputs,
      usage: usageOf(answer.json),
    },
    log,
  );
  return {
    ...answer.json,
    data: answer.outputs.map((o, i) => ({ ...o.item, ...archived[i] })),
    svc_task_id: input.taskId,
  };
}

/**
 * Archives, records and charges; returns each output's svc_* fields, in order. On failure nothing it wrote is left
 * (objects removed, the transaction rolled back) and the hold is still held, for the caller to release.
 */
export async function recordImageOutputs(
  deps: RecordDeps,
  input: RecordImagesInput,
  log: Logger,
): Promise<ArchivedFields[]> {
  const { config } = deps;
  const { outputs, taskId } = input;
  const locations = outputs.map((o) =>
    generatedOutputLocation({
      secret: config.signingSecret,
      fileBaseUrl: config.fileBaseUrl,
      bucket: config.s3.bucket,
      workspaceId: input.workspaceId,
      taskId,
      outputIndex: o.index,
    }),
  );
  const stored = outputs.filter((o): o is Extract<EditOutput, { kind: 'b64' }> => o.kind === 'b64');
  const removeStored = () =>
    Promise.all(
      stored.map((o) =>
        deleteObject(deps.s3, config.s3.bucket, locations[o.index]!.storageKey).catch((err) =>
          log.error({ err }, 'could not remove an archived image output'),
        ),
      ),
    );

  const puts = await Promise.allSettled(
    stored.map((o) =>
      putObjectBuffer(deps.s3, {
        bucket: config.s3.bucket,
        key: locations[o.index]!.storageKey,
        body: o.bytes,
        contentType: o.media.contentType,
      }),
    ),
  );
  const failed = puts.find((p): p is PromiseRejectedResult => p.status === 'rejected');
  if (failed) {
    await removeStored();
    throw errors.storageUnavailable('The generated images could not be stored; try again.', failed.reason);
  }

  const completedAt = new Date();
  let charged: { charged: bigint; inputTokens?: number; outputTokens?: number } | undefined;
  try {
    await withTx(deps.db, async (tx) => {
      const workspace = await workspaceRepository.get(tx, input.workspaceId);
      if (!workspace) throw errors.internal(new Error(`workspace ${input.workspaceId} is gone`));
      await taskRepository.createCompleted(tx, {
        id: taskId,
        workspaceId: input.workspaceId,
        apiKeyId: input.apiKeyId,
        model: input.modelId,
        operation: input.operation,
        input: input.input as JsonInput,
        channelId: input.channelId,
        output: { outputs: outputs.map((o) => taskOutputEntry(o, locations[o.index]!)) },
        requestId: input.requestId,
        reserved: input.hold.amount,
        cost: input.cost,
        startedAt: input.startedAt,
        completedAt,
        files: stored.map((o) =>
          generatedFile({
            location: locations[o.index]!,
            workspace,
            taskId,
            outputIndex: o.index,
            media: { contentType: o.media.contentType, extension: o.media.extensions[0]! },
            bytes: o.bytes.length,
            sha256: sha256Hex(o.bytes),
            createdAt: completedAt,
          }),
        ),
      });
      const { usage } = input;
      const settled = await input.hold.settle({ cost: input.cost, model: input.modelId, taskId, ...usage }, tx);
      // Held for longer than its TTL (released as abandoned): the call cannot be charged, so it is not recorded.
      if (settled === null) {
        throw errors.internal(new Error(`reservation ${input.hold.id} was no longer held at settlement`));
      }
      charged = { ...usage, charged: settled };
    });
    recordSpend(deps.metrics, {
      model: input.modelId,
      cost: charged!.charged,
      inputTokens: charged!.inputTokens,
      outputTokens: charged!.outputTokens,
    });
  } catch (e) {
    await removeStored();
    throw e;
  }

  // After the commit (STYLE.md convention 8): the job re-reads the task, which now exists.
  for (const o of outputs) {
    if (o.kind !== 'url') continue;
    await scheduleArchive(
      deps.queues,
      { taskId, workspaceId: input.workspaceId, requestId: input.requestId },
      o.index,
    ).catch((err) =>
      log.error(
        { err, taskId, outputIndex: o.index },
        'could not enqueue the archive of an image output; it stays pending',
      ),
    );
  }

  return outputs.map((o) => ({
    svc_file_id: locations[o.index]!.fileId,
    svc_url: locations[o.index]!.url,
    archive_status: o.kind === 'b64' ? 'archived' : 'pending',
  }));
}

/** What the task remembers of its input: the fields and where each image came from, never the bytes. */
function taskInput(input: RecordEditInput): Record<string, unknown> {
  const image = (img: EditImage) => ({
    ...img.origin,
    sha256: img.sha256,
    bytes: img.bytes.length,
    content_type: img.media.contentType,
  });
  const passed = Object.fromEntries(
    PASS_THROUGH_FIELDS.flatMap((f) => (input.fields[f] !== undefined ? [[f, input.fields[f]]] : [])),
  );
  return {
    prompt: input.fields.prompt,
    n: Number(input.fields.n ?? 1),
    ...passed,
    images: input.images.map(image),
    ...(input.mask ? { mask: image(input.mask) } : {}),
  };
}

/**
 * The output entry of task-output.ts. A stored b64 result has no provider URL: its url is the archived public copy.
 * A url result keeps the provider's URL and is pending until the archiver records its svc_* fields.
 */
function taskOutputEntry(o: EditOutput, location: GeneratedOutputLocation): TaskOutputEntry {
  const { b64_json: _bytes, url: _url, ...rest } = o.item;
  return o.kind === 'b64' ? archivedOutputEntry('image', location, rest) : pendingOutputEntry('image', o.url, rest);
}

/** Token usage as gpt-image models report it; recorded on the ledger entry when present. */
function usageOf(json: Record<string, unknown>): { inputTokens?: number; outputTokens?: number } {
  const usage = json.usage as { input_tokens?: unknown; output_tokens?: unknown } | undefined;
  const count = (v: unknown) =>
    typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 2_147_483_647 ? v : undefined;
  return { inputTokens: count(usage?.input_tokens), outputTokens: count(usage?.output_tokens) };
}
