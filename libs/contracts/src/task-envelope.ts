// The task result envelope (spec §2.5): what GET /api/v1/tasks/{id} answers and what a callback carries, built by
// one function so the two cannot differ ("one handler can serve both", spec §4.3).
//
//   { object: "task", task_id, status, model, operation,
//     output: { url, duration?, file_id?, download_url?, download_expires_at?, archive_status, provider_url?,
//               content_type?, width?, height? } | null,
//     cost: { amount, currency }, error: { code, message } | null,
//     created_at, started_at, completed_at, callback: { url, state } | null, delivered_at?,
//     attempts: [{ channel, upstream_id, status, error_code, started_at, ended_at }] }
//
// attempts lists the task's provider jobs, oldest first: those that failed retryably and were resubmitted
// (Task.providerJobs), then the current one, read from the row (its channel and job id, the task's outcome).
//
// output.url is the archived public copy on {file_url} once archived, else the provider's URL (spec §7: an output
// that cannot be archived does not fail the task). download_url is a fresh signed content link (one hour), made by
// the caller of this function at every read.
import { z } from 'zod';
import { DEADLINE_EXCEEDED, TASK_FAILURE_CODES, TASK_STATUSES } from './task-operations';
import { ARCHIVE_STATUSES, taskOutputSchema } from './task-output';

export interface TaskEnvelopeSource {
  id: string;
  status: string;
  model: string;
  operation: string;
  output: unknown;
  /** Micro-units charged; null until settled. */
  cost: bigint | null;
  /** Micro-units held at creation. */
  reserved: bigint;
  errorCode: string | null;
  errorMessage: string | null;
  /** The current provider job's channel and id (null before a submission). */
  channelId: string | null;
  upstreamId: string | null;
  /** The provider jobs that ended retryably before the current one (ProviderJob[] as stored). */
  providerJobs: unknown;
  callbackUrl: string | null;
  callbackState: string;
  createdAt: Date;
  startedAt: Date | null;
  completedAt: Date | null;
}

export interface DownloadLink {
  url: string;
  expiresAt: Date;
}

export interface TaskEnvelopeOptions {
  currency: string;
  /** The signed content link of the archived output, when there is one. */
  download?: DownloadLink | null;
  /** Set in callbacks only (spec §2.5). */
  deliveredAt?: Date;
}

const MICROS = 1_000_000;

/** The output entry the envelope shows: the first output (a generation task makes one). */
export function primaryOutput(output: unknown) {
  const parsed = taskOutputSchema.safeParse(output);
  return parsed.success ? (parsed.data.outputs[0] ?? null) : null;
}

export const ATTEMPT_STATUSES = ['running', 'succeeded', 'failed', 'lost', 'canceled'] as const;

/** A provider job that ended without ending its task (Task.providerJobs); `lost`: the provider no longer knew it. */
export const providerJobSchema = z.object({
  channel: z.string(),
  upstream_id: z.string(),
  status: z.enum(['failed', 'lost']),
  error_code: z.string(),
  error_message: z.string(),
  started_at: z.string().nullable(),
  ended_at: z.string(),
});
export type ProviderJob = z.infer<typeof providerJobSchema>;

/** Task.providerJobs as stored, read back ([] for anything else). */
export function providerJobsOf(json: unknown): ProviderJob[] {
  const parsed = z.array(providerJobSchema).safeParse(json);
  return parsed.success ? parsed.data : [];
}

const attemptSchema = z.object({
  channel: z.string(),
  upstream_id: z.string(),
  status: z.enum(ATTEMPT_STATUSES),
  error_code: z.string().nullable(),
  started_at: z.string().nullable(),
  ended_at: z.string().nullable(),
});

/** The envelope's attempts: the ended jobs as stored, then the current job as the row says it stands. */
function attemptsOf(task: TaskEnvelopeSource): z.infer<typeof attemptSchema>[] {
  const attempts: z.infer<typeof attemptSchema>[] = providerJobsOf(task.providerJobs).map(
    ({ error_message: _message, ...job }) => job,
  );
  if (task.channelId === null || task.upstreamId === null) return attempts;
  const status =
    task.status === 'failed' || task.status === 'canceled'
      ? task.status
      : task.status === 'completed' || task.output !== null
        ? 'succeeded'
        : 'running';
  attempts.push({
    channel: task.channelId,
    upstream_id: task.upstreamId,
    status,
    error_code: status === 'failed' ? task.errorCode : null,
    started_at: task.startedAt?.toISOString() ?? null,
    ended_at: status === 'running' || status === 'succeeded' ? null : (task.completedAt?.toISOString() ?? null),
  });
  return attempts;
}

export function taskEnvelope(task: TaskEnvelopeSource, opts: TaskEnvelopeOptions) {
  const entry = primaryOutput(task.output);
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
  const output = entry && {
    url: entry.archive_status === 'archived' && entry.svc_url ? entry.svc_url : entry.url,
    ...(entry.kind === 'video' && num(entry.duration) !== undefined ? { duration: num(entry.duration) } : {}),
    ...(num(entry.width) !== undefined ? { width: num(entry.width), height: num(entry.height) } : {}),
    ...(typeof entry.content_type === 'string' ? { content_type: entry.content_type } : {}),
    archive_status: entry.archive_status ?? 'pending',
    ...(entry.svc_file_id && entry.archive_status === 'archived' ? { file_id: entry.svc_file_id } : {}),
    ...(opts.download
      ? { download_url: opts.download.url, download_expires_at: opts.download.expiresAt.toISOString() }
      : {}),
    ...(entry.archive_status === 'archived' && entry.url !== entry.svc_url ? { provider_url: entry.url } : {}),
  };
  // What the task costs the caller: the charge once settled, the hold while it runs, nothing when it did not finish.
  const micros = task.cost ?? (task.status === 'queued' || task.status === 'running' ? task.reserved : 0n);
  return {
    object: 'task' as const,
    task_id: task.id,
    status: task.status,
    model: task.model,
    operation: task.operation,
    output: output ?? null,
    cost: { amount: Number(micros) / MICROS, currency: opts.currency },
    error: task.errorCode ? { code: task.errorCode, message: task.errorMessage ?? '' } : null,
    created_at: task.createdAt.toISOString(),
    // The first provider job's start: Task.startedAt is the current job's.
    started_at: firstStart(task),
    completed_at: task.completedAt?.toISOString() ?? null,
    callback: task.callbackUrl ? { url: task.callbackUrl, state: task.callbackState } : null,
    ...(opts.deliveredAt ? { delivered_at: opts.deliveredAt.toISOString() } : {}),
    attempts: attemptsOf(task),
  };
}

function firstStart(task: TaskEnvelopeSource): string | null {
  const [first] = providerJobsOf(task.providerJobs);
  return first ? first.started_at : (task.startedAt?.toISOString() ?? null);
}

export type TaskEnvelope = ReturnType<typeof taskEnvelope>;

/**
 * The envelope's shape as a schema, for the OpenAPI document (GET /api/v1/tasks/{id}, the creation's 202 and the
 * callback body). task-envelope.test.ts checks taskEnvelope's answers against it.
 */
export const taskEnvelopeSchema = z.object({
  object: z.literal('task'),
  task_id: z.string(),
  status: z.enum(TASK_STATUSES),
  model: z.string(),
  operation: z.string(),
  output: z
    .object({
      url: z.string().describe("The archived public copy once archived, else the provider's URL."),
      duration: z.number().optional(),
      width: z.number().optional(),
      height: z.number().optional(),
      content_type: z.string().optional(),
      archive_status: z.enum(ARCHIVE_STATUSES),
      file_id: z.string().optional(),
      download_url: z.string().optional().describe('A signed content link, fresh at every read (one hour).'),
      download_expires_at: z.string().optional(),
      provider_url: z.string().optional(),
    })
    .nullable(),
  cost: z.object({ amount: z.number(), currency: z.string() }),
  error: z
    .object({
      code: z
        .string()
        .describe(
          `A failed task's: one of ${TASK_FAILURE_CODES.join(', ')}. A canceled task's: ${DEADLINE_EXCEEDED} when ` +
            'its deadline (deadline_seconds, Cancel-After) passed; none when it was canceled by request.',
        ),
      message: z.string(),
    })
    .nullable(),
  created_at: z.string(),
  started_at: z.string().nullable(),
  completed_at: z.string().nullable(),
  callback: z.object({ url: z.string(), state: z.string() }).nullable(),
  delivered_at: z.string().optional().describe('In callbacks only.'),
  attempts: z
    .array(attemptSchema)
    .describe(
      'The provider jobs run for the task, oldest first: a job that failed retryably (a 5xx, a lost job) is ' +
        'resubmitted, to another channel when there is one, and the task is charged once.',
    ),
});
