// Replicate's predictions API: POST /v1/models/{owner}/{name}/predictions {input, webhook?}, POST /v1/predictions
// {version, input}, GET /v1/predictions/{id}, POST /v1/predictions/{id}/cancel; `Prefer: wait[=n]` blocks a create
// until the prediction ends (at most n seconds, 60 by default). Errors are problem details: {title?, detail, status},
// with invalid_fields on a 422. Images come back as an array of URLs, except for the models that answer one URL
// (flux-pro, flux-1.1-pro(-ultra), flux-kontext-*, imagen, ideogram, recraft); a video is one URL.
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { seedFor, type GenerationSpec } from '../deterministic';
import {
  cancelJob,
  isTerminal,
  isUri,
  isVideoModel,
  JobStore,
  jsonType,
  MAX_IMAGES,
  MAX_SIDE,
  MAX_VIDEO_SECONDS,
  MIN_SIDE,
  pause,
  phaseOf,
  planJob,
  predictionId,
  scheduleJob,
  sizeForAspect,
  type Job,
  type JobPhase,
  type Media,
  type TaskContext,
} from '../jobs';
import { jsonObject, type Parsed, type Protocol, type SimRequest } from '../protocol';
import { json, type Reply } from '../reply';

interface ReplicateJob extends Job {
  version: string;
  input: Record<string, unknown>;
  /** `${origin}${prefix}` at creation: the prediction's urls keep the channel. */
  base: string;
}

type Operation =
  | {
      kind: 'create';
      model: string;
      version: string;
      input: Record<string, unknown>;
      spec: GenerationSpec;
      media: Media;
      waitSeconds?: number;
      webhook?: string;
    }
  | { kind: 'get'; job: ReplicateJob }
  | { kind: 'cancel'; job: ReplicateJob };

interface InvalidField {
  type: string;
  field: string;
  description: string;
}

const MODEL_PATH = /^\/v1\/models\/([^/]+)\/([^/]+)\/predictions$/;
const PREDICTION_PATH = /^\/v1\/predictions\/([^/]+)$/;
const CANCEL_PATH = /^\/v1\/predictions\/([^/]+)\/cancel$/;
const VERSION_REF = /^([^/:\s]+)\/([^/:\s]+)(?::([0-9a-f]{64}))?$/;
const VERSION_HASH = /^[0-9a-f]{64}$/;
const ASPECT_RATIOS = ['1:1', '16:9', '21:9', '3:2', '2:3', '4:5', '5:4', '3:4', '4:3', '9:16', '9:21', 'custom'];
const IMAGE_INPUTS = ['image', 'start_image', 'input_image', 'first_frame_image'];
// Models whose output schema is one URI rather than an array of them.
const SINGLE_OUTPUT = /-pro\b|-ultra|-max\b|kontext|imagen|ideogram|recraft/i;

const TITLES: Record<number, string> = {
  400: 'Bad request',
  401: 'Unauthenticated',
  402: 'Insufficient credit',
  403: 'Forbidden',
  404: 'Not found',
  422: 'Unprocessable entity',
  429: 'Request was throttled.',
  500: 'Internal server error',
  502: 'Bad gateway',
  503: 'Service unavailable',
};

const DETAILS: Record<number, string> = {
  401: 'You did not pass an authentication token',
  402:
    'You have insufficient credit to run this model. Go to https://replicate.com/account/billing#billing to ' +
    'purchase credit. Once you purchase credit, please wait a few minutes before trying again.',
  404: 'The requested resource could not be found.',
  429: 'Request was throttled. Expected available in 1 second.',
};

const problem = (status: number, detail?: string, extra?: Record<string, unknown>): Reply =>
  json(status, {
    title: TITLES[status] ?? (status >= 500 ? TITLES[500] : TITLES[400]),
    detail: detail ?? DETAILS[status] ?? 'Something went wrong.',
    status,
    ...extra,
  });

// Replicate answers an unknown prediction without a title.
const notFound = (): Reply => json(404, { detail: DETAILS[404], status: 404 });

function invalid(fields: InvalidField[]): Reply {
  const detail = fields.map((f) => (f.field ? `- ${f.field}: ${f.description}\n` : `- ${f.description}\n`)).join('');
  return json(422, { detail, status: 422, title: 'Input validation failed', invalid_fields: fields });
}

/** The token of `Authorization: Bearer <token>` or `Token <token>` (Replicate takes both), or ''. */
function token(req: IncomingMessage): string {
  const match = /^(?:bearer|token)\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
  return match?.[1] ?? '';
}

/** Seconds a `Prefer: wait` or `Prefer: wait=n` header asks to block for (1..60), or undefined. */
function preferWait(req: IncomingMessage): number | undefined {
  const header = req.headers.prefer;
  for (const token of (Array.isArray(header) ? header.join(',') : (header ?? '')).split(',')) {
    const match = /^\s*wait(?:=(\d+))?\s*$/i.exec(token);
    if (match) return match[1] === undefined ? 60 : Math.min(60, Math.max(1, Number(match[1])));
  }
  return undefined;
}

const versionOf = (model: string) => createHash('sha256').update(`replicate-version\u0000${model}`).digest('hex');

function intInput(
  input: Record<string, unknown>,
  name: string,
  min: number,
  max: number,
  problems: InvalidField[],
): number | undefined {
  const value = input[name];
  if (value === undefined || value === null) return undefined;
  const field = `input.${name}`;
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    problems.push({
      type: 'invalid_type',
      field,
      description: `Invalid type. Expected: integer, given: ${jsonType(value)}`,
    });
    return undefined;
  }
  if (value < min) problems.push({ type: 'number_gte', field, description: `Must be greater than or equal to ${min}` });
  else if (value > max)
    problems.push({ type: 'number_lte', field, description: `Must be less than or equal to ${max}` });
  else return value;
  return undefined;
}

/** What the prediction makes, or every problem with the input (Replicate lists them all). */
function readInput(
  model: string,
  input: Record<string, unknown>,
): { spec: GenerationSpec; media: Media } | { problems: InvalidField[] } {
  const problems: InvalidField[] = [];
  const prompt = input.prompt;
  if (prompt === undefined || prompt === null)
    problems.push({ type: 'required', field: 'input', description: 'prompt is required' });
  else if (typeof prompt !== 'string')
    problems.push({
      type: 'invalid_type',
      field: 'input.prompt',
      description: `Invalid type. Expected: string, given: ${jsonType(prompt)}`,
    });
  const width = intInput(input, 'width', MIN_SIDE, MAX_SIDE, problems);
  const height = intInput(input, 'height', MIN_SIDE, MAX_SIDE, problems);
  const count = intInput(input, 'num_outputs', 1, MAX_IMAGES, problems);
  const duration = intInput(input, 'duration', 1, MAX_VIDEO_SECONDS, problems);
  const seed = intInput(input, 'seed', 0, 2 ** 31 - 1, problems);
  const aspect = input.aspect_ratio;
  if (aspect !== undefined && aspect !== null && (typeof aspect !== 'string' || !ASPECT_RATIOS.includes(aspect))) {
    const allowed = ASPECT_RATIOS.map((a) => `"${a}"`).join(', ');
    problems.push({
      type: 'enum',
      field: 'input.aspect_ratio',
      description: `aspect_ratio must be one of the following: ${allowed}`,
    });
  }
  let imageUrl: string | undefined;
  for (const name of IMAGE_INPUTS) {
    const value = input[name];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'string')
      problems.push({
        type: 'invalid_type',
        field: `input.${name}`,
        description: `Invalid type. Expected: string, given: ${jsonType(value)}`,
      });
    else if (!isUri(value))
      problems.push({ type: 'format', field: `input.${name}`, description: "Does not match format 'uri'" });
    else imageUrl ??= value;
  }
  if (problems.length) return { problems };

  const video = isVideoModel(model) || duration !== undefined;
  const ratio = typeof aspect === 'string' && aspect !== 'custom' ? aspect : video ? '16:9' : '1:1';
  const [w, h] = sizeForAspect(ratio, video ? 1280 : 1024);
  const media: Media = {
    kind: video ? 'video' : 'image',
    width: width ?? w,
    height: height ?? h,
    count: video || SINGLE_OUTPUT.test(model) ? 1 : (count ?? 1),
    durationSeconds: video ? (duration ?? 5) : 0,
  };
  return { spec: { prompt: prompt as string, seed: seed ?? seedFor(prompt as string), imageUrl }, media };
}

const STATUS: Record<JobPhase, string> = {
  queued: 'starting',
  running: 'processing',
  succeeded: 'succeeded',
  failed: 'failed',
  canceled: 'canceled',
};

export const SENSITIVE_ERROR =
  'The input or output was flagged as sensitive. Please try again with different inputs. (E005)';
const DEFAULT_FAILURE = 'Prediction failed: the model raised an error (simulated)';

const iso = (ms: number) => new Date(ms).toISOString();

/** The prediction as Replicate shows it at `now`. */
function prediction(job: ReplicateJob, now: number): Record<string, unknown> {
  const phase = phaseOf(job, now);
  const started = phase !== 'queued' && !(phase === 'canceled' && job.canceledAt! < job.startsAt);
  const ended = isTerminal(phase);
  const endedAt = job.canceledAt ?? job.endsAt;
  const seedLine = `Using seed: ${job.spec.seed}\n`;
  let logs = started ? seedLine : '';
  if (phase === 'succeeded') {
    const made = job.media.kind === 'video' ? 'video' : `${job.media.count} image(s)`;
    logs += `100%|██████████| 28/28\nGenerated ${made} in ${((job.endsAt - job.startsAt) / 1000).toFixed(2)}s\n`;
  }
  let output: unknown = null;
  if (phase === 'succeeded')
    output = job.media.kind === 'video' || SINGLE_OUTPUT.test(job.model) ? job.outputUrls[0] : job.outputUrls;
  let error: string | null = null;
  if (phase === 'failed') error = job.outcome === 'nsfw' ? SENSITIVE_ERROR : (job.error ?? DEFAULT_FAILURE);
  const metrics =
    phase === 'succeeded' || phase === 'failed'
      ? { predict_time: (job.endsAt - job.startsAt) / 1000, total_time: (job.endsAt - job.createdAt) / 1000 }
      : {};
  return {
    id: job.id,
    model: job.model,
    version: job.version,
    input: job.input,
    logs,
    output,
    data_removed: false,
    error,
    source: 'api',
    status: STATUS[phase],
    created_at: iso(job.createdAt),
    ...(started && { started_at: iso(job.startsAt) }),
    ...(ended && { completed_at: iso(endedAt) }),
    urls: {
      cancel: `${job.base}/v1/predictions/${job.id}/cancel`,
      get: `${job.base}/v1/predictions/${job.id}`,
      web: `${job.base}/p/${job.id}`,
    },
    metrics,
  };
}

/** Blocks until the job ends or `ms` pass, checking at least every 250 ms (a cancel can end it early). */
async function waitFor(job: ReplicateJob, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  for (let now = Date.now(); !isTerminal(phaseOf(job, now)) && now < deadline; now = Date.now()) {
    await pause(Math.max(1, Math.min(250, deadline - now, job.endsAt - now)));
  }
}

export function createReplicateProtocol(ctx: TaskContext): Protocol<Operation> {
  const jobs = new JobStore<ReplicateJob>(ctx.jobs);
  // Version hashes the sim has handed out or been told, so a bare hash finds its model.
  const versions = new Map<string, string>();

  function parseCreate(r: SimRequest, pathModel: string | undefined): Parsed<Operation> {
    const body = jsonObject(r.body);
    let model = pathModel;
    let version = model && versionOf(model);
    if (!model && body && typeof body.version === 'string') {
      const ref = VERSION_REF.exec(body.version);
      if (ref) {
        model = `${ref[1]}/${ref[2]}`;
        version = ref[3] ?? versionOf(model);
      } else if (VERSION_HASH.test(body.version)) {
        model = versions.get(body.version) ?? `sim/version-${body.version.slice(0, 12)}`;
        version = body.version;
      }
    }
    if (!token(r.req)) return { model, operation: 'create', error: problem(401) };
    if (!body) return { model, operation: 'create', error: problem(400, 'The request body must be a JSON object.') };
    const root: InvalidField[] = [];
    if (!pathModel) {
      if (body.version === undefined) root.push({ type: 'required', field: '', description: 'version is required' });
      else if (!model) {
        return {
          operation: 'create',
          error: problem(
            422,
            "The specified version does not exist (or perhaps you don't have permission to use it?)",
            { title: 'Invalid version or not permitted' },
          ),
        };
      }
    }
    if (body.input === undefined) root.push({ type: 'required', field: '', description: 'input is required' });
    else if (body.input === null || typeof body.input !== 'object' || Array.isArray(body.input)) {
      root.push({
        type: 'invalid_type',
        field: 'input',
        description: `Invalid type. Expected: object, given: ${jsonType(body.input)}`,
      });
    }
    if (body.webhook !== undefined && (typeof body.webhook !== 'string' || !URL.canParse(body.webhook))) {
      root.push({ type: 'format', field: 'webhook', description: "Does not match format 'uri'" });
    }
    if (root.length) return { model, operation: 'create', error: invalid(root) };
    const input = body.input as Record<string, unknown>;
    const read = readInput(model!, input);
    if ('problems' in read) return { model, operation: 'create', error: invalid(read.problems) };
    return {
      model,
      operation: 'create',
      value: {
        kind: 'create',
        model: model!,
        version: version!,
        input,
        ...read,
        waitSeconds: preferWait(r.req),
        webhook: body.webhook as string | undefined,
      },
    };
  }

  return {
    name: 'replicate',
    matches(method, path) {
      if (method === 'GET') return PREDICTION_PATH.test(path);
      return method === 'POST' && (path === '/v1/predictions' || MODEL_PATH.test(path) || CANCEL_PATH.test(path));
    },
    parse(r) {
      const modelPath = MODEL_PATH.exec(r.path);
      if (r.method === 'POST' && (modelPath || r.path === '/v1/predictions')) {
        return parseCreate(
          r,
          modelPath ? `${decodeURIComponent(modelPath[1]!)}/${decodeURIComponent(modelPath[2]!)}` : undefined,
        );
      }
      const cancel = CANCEL_PATH.exec(r.path);
      const id = cancel?.[1] ?? PREDICTION_PATH.exec(r.path)![1]!;
      const job = jobs.get(id);
      const operation = cancel ? 'cancel' : 'status';
      if (!token(r.req)) return { model: job?.model, operation, error: problem(401) };
      if (!job) return { operation, error: notFound() };
      return { model: job.model, operation, value: cancel ? { kind: 'cancel', job } : { kind: 'get', job } };
    },
    async answer(op, r) {
      if (op.kind === 'get') return json(200, prediction(op.job, Date.now()));
      if (op.kind === 'cancel') {
        cancelJob(op.job, Date.now());
        return json(200, prediction(op.job, Date.now()));
      }
      const now = Date.now();
      const plan = planJob(ctx.faults, r.channel, op.model, ctx.taskDurationMs);
      const job: ReplicateJob = {
        id: predictionId(),
        channel: r.channel,
        model: op.model,
        version: op.version,
        input: op.input,
        spec: op.spec,
        media: op.media,
        ...scheduleJob(plan, now),
        outputUrls: [],
        base: `${r.origin}${r.prefix}`,
      };
      const ext = job.media.kind === 'video' ? 'mp4' : 'png';
      job.outputUrls = ctx.outputs.register(job).map((id) => `${r.outputsOrigin}${r.prefix}/outputs/${id}.${ext}`);
      jobs.add(job);
      versions.set(job.version, job.model);
      // The prediction as it ends, sent to the webhook (events filter "completed": the one event the sim sends).
      if (op.webhook && Number.isFinite(job.endsAt) && job.outcome !== 'lost')
        ctx.webhooks.schedule('replicate', op.webhook, job.endsAt, job.id, () =>
          prediction(job, Math.max(Date.now(), job.endsAt)),
        );
      if (op.waitSeconds !== undefined) await waitFor(job, op.waitSeconds * 1000);
      return json(201, prediction(job, Date.now()));
    },
    errorReply: (status, message) => problem(status, message),
    malformShape: (body) => {
      if (body === null || typeof body !== 'object') return { unexpected: body };
      const { status: _status, output: _output, ...rest } = body as Record<string, unknown>;
      return rest;
    },
  };
}
