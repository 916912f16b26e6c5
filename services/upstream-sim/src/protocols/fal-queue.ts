// fal's queue API (queue.fal.run): POST /{model id} with the input as the body submits; the request's URLs use the
// app id (owner/app, the first two segments of the model id): GET {app}/requests/{id}/status[?logs=1],
// GET {app}/requests/{id} (the result), PUT {app}/requests/{id}/cancel. `Authorization: Key <key>`.
// As on fal, the queue takes any JSON object: the model (the "runner") validates the input when the request leaves
// the queue, so an invalid input ends COMPLETED and its result answers 422 with pydantic-style `detail` items. Every
// ended request reads COMPLETED; whether it worked shows on the result (200, or the model's error status + detail).
import { randomUUID } from 'node:crypto';
import { seedFor, type GenerationSpec } from '../deterministic';
import {
  cancelJob,
  isUri,
  isVideoModel,
  JobStore,
  MAX_IMAGES,
  MAX_SIDE,
  MAX_VIDEO_SECONDS,
  MIN_SIDE,
  phaseOf,
  planJob,
  scheduleJob,
  sizeForAspect,
  type Job,
  type Media,
  type OutputStore,
  type TaskContext,
} from '../jobs';
import { jsonObject, type Parsed, type Protocol } from '../protocol';
import { json, type Reply } from '../reply';

/** One item of a 422 `detail`: where (loc), what (type), for whom (msg). */
interface FalErrorItem {
  loc: (string | number)[];
  msg: string;
  type: string;
  input?: unknown;
  ctx?: Record<string, unknown>;
  url?: string;
}

interface FalJob extends Job {
  /** owner/app (or namespace/owner/app): what the request URLs are under. */
  appId: string;
  /** `${origin}${prefix}/${appId}/requests/${id}`. */
  base: string;
  /** Input errors the runner reports when it picks the request up. */
  invalid?: FalErrorItem[];
}

type Operation =
  | {
      kind: 'submit';
      model: string;
      appId: string;
      spec?: GenerationSpec;
      media?: Media;
      invalid?: FalErrorItem[];
      webhook?: string;
    }
  | { kind: 'status'; job: FalJob; logs: boolean }
  | { kind: 'result'; job: FalJob }
  | { kind: 'cancel'; job: FalJob };

// First segments that are never fal owners: API versions (so unknown /v1/... paths stay 404) and the sim's own routes.
const RESERVED = /^(?:v\d+\w*|__sim|outputs|files|p|healthz)$/;
const NAMESPACES = new Set(['workflows', 'comfy']);
const REQUEST_PATH = /^\/(.+)\/requests\/([^/]+)(\/status|\/cancel)?$/;
const IMAGE_SIZES: Record<string, [number, number]> = {
  square_hd: [1024, 1024],
  square: [512, 512],
  portrait_4_3: [768, 1024],
  portrait_16_9: [576, 1024],
  landscape_4_3: [1024, 768],
  landscape_16_9: [1024, 576],
};
const VIDEO_ASPECTS = ['16:9', '9:16', '1:1'];

export const CONTENT_POLICY_MSG =
  'The content could not be processed because it contained material flagged by a content checker.';

function appIdOf(segments: string[]): string | undefined {
  const length = NAMESPACES.has(segments[0]!) ? 3 : 2;
  return segments.length >= length ? segments.slice(0, length).join('/') : undefined;
}

/** The key of `Authorization: Key <key>`, or ''. */
function falKey(header: string | undefined): string {
  return /^key\s+(\S+)\s*$/i.exec(header ?? '')?.[1] ?? '';
}

const detail = (status: number, text: string, headers?: Record<string, string>): Reply =>
  json(status, { detail: text }, headers);

const item = (
  field: string | null,
  msg: string,
  type: string,
  input: unknown,
  ctx?: Record<string, unknown>,
): FalErrorItem => ({
  loc: field === null ? ['body'] : ['body', field],
  msg,
  type,
  input,
  ...(ctx && { ctx }),
});

function intField(
  input: Record<string, unknown>,
  name: string,
  min: number,
  max: number,
  errors: FalErrorItem[],
  digits = false,
): number | undefined {
  let value = input[name];
  if (value === undefined || value === null) return undefined;
  // Fields like `duration` are strings ("5") on many fal models; pydantic also parses integer strings for int fields.
  if (digits && typeof value === 'string' && /^\d+$/.test(value)) value = Number(value);
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    errors.push(
      item(name, 'Input should be a valid integer, unable to parse string as an integer', 'int_parsing', input[name]),
    );
    return undefined;
  }
  if (value < min)
    errors.push(
      item(name, `Input should be greater than or equal to ${min}`, 'greater_than_equal', value, { ge: min }),
    );
  else if (value > max)
    errors.push(item(name, `Input should be less than or equal to ${max}`, 'less_than_equal', value, { le: max }));
  else return value;
  return undefined;
}

/** What the request makes, or the errors the model will report for its input. */
function readInput(
  model: string,
  input: Record<string, unknown>,
): { spec: GenerationSpec; media: Media } | { invalid: FalErrorItem[] } {
  const errors: FalErrorItem[] = [];
  const prompt = input.prompt;
  if (prompt === undefined) errors.push(item('prompt', 'Field required', 'missing', input));
  else if (typeof prompt !== 'string')
    errors.push(item('prompt', 'Input should be a valid string', 'string_type', prompt));
  const count = intField(input, 'num_images', 1, MAX_IMAGES, errors);
  const duration = intField(input, 'duration', 1, MAX_VIDEO_SECONDS, errors, true);
  const seed = intField(input, 'seed', 0, 2 ** 31 - 1, errors);
  const video = isVideoModel(model) || input.duration !== undefined;

  let size: [number, number] | undefined;
  const imageSize = input.image_size;
  if (typeof imageSize === 'string') {
    size = IMAGE_SIZES[imageSize];
    if (!size) {
      const names = Object.keys(IMAGE_SIZES).map((n) => `'${n}'`);
      errors.push(
        item(
          'image_size',
          `Input should be ${names.slice(0, -1).join(', ')} or ${names.at(-1)}`,
          'literal_error',
          imageSize,
          { expected: names.join(', ') },
        ),
      );
    }
  } else if (imageSize !== undefined && imageSize !== null) {
    const fields =
      typeof imageSize === 'object' && !Array.isArray(imageSize) ? (imageSize as Record<string, unknown>) : null;
    if (!fields)
      errors.push(
        item('image_size', 'Input should be a valid dictionary or instance of ImageSize', 'model_type', imageSize),
      );
    else {
      const nested: FalErrorItem[] = [];
      const width = intField(fields, 'width', MIN_SIDE, MAX_SIDE, nested) ?? 512;
      const height = intField(fields, 'height', MIN_SIDE, MAX_SIDE, nested) ?? 512;
      errors.push(...nested.map((e) => ({ ...e, loc: ['body', 'image_size', ...e.loc.slice(1)] })));
      size = [width, height];
    }
  }
  const aspect = input.aspect_ratio;
  if (video && aspect !== undefined && (typeof aspect !== 'string' || !VIDEO_ASPECTS.includes(aspect))) {
    errors.push(
      item('aspect_ratio', "Input should be '16:9', '9:16' or '1:1'", 'literal_error', aspect, {
        expected: "'16:9', '9:16' or '1:1'",
      }),
    );
  }
  const imageUrl = input.image_url;
  if (imageUrl !== undefined && imageUrl !== null && (typeof imageUrl !== 'string' || !isUri(imageUrl))) {
    errors.push(item('image_url', 'Input should be a valid URL', 'url_parsing', imageUrl));
  }
  if (errors.length) return { invalid: errors };

  const [width, height] = video
    ? sizeForAspect(typeof aspect === 'string' ? aspect : '16:9', 1280)
    : (size ?? IMAGE_SIZES.landscape_4_3!);
  const media: Media = {
    kind: video ? 'video' : 'image',
    width,
    height,
    count: video ? 1 : (count ?? 1),
    durationSeconds: video ? (duration ?? 5) : 0,
  };
  const spec: GenerationSpec = {
    prompt: prompt as string,
    seed: seed ?? seedFor(prompt as string),
    imageUrl: imageUrl as string | undefined,
  };
  return { spec, media };
}

const iso = (ms: number) => new Date(ms).toISOString();

function logsOf(job: FalJob, now: number): { message: string; level: string; source: string; timestamp: string }[] {
  const phase = phaseOf(job, now);
  if (phase === 'queued' || (phase === 'canceled' && job.canceledAt! < job.startsAt)) return [];
  const log = (message: string, at: number) => ({ message, level: 'INFO', source: 'USER', timestamp: iso(at) });
  const logs = [log(`Using seed: ${job.spec.seed}`, job.startsAt)];
  if (phase === 'succeeded') logs.push(log('Generation complete', job.endsAt));
  return logs;
}

function statusBody(job: FalJob, now: number, withLogs: boolean): { status: number; body: Record<string, unknown> } {
  const phase = phaseOf(job, now);
  const urls = {
    request_id: job.id,
    response_url: job.base,
    status_url: `${job.base}/status`,
    cancel_url: `${job.base}/cancel`,
  };
  // 202 while queued or in progress, 200 once completed, as fal answers.
  if (phase === 'queued') return { status: 202, body: { status: 'IN_QUEUE', queue_position: 0, ...urls } };
  const logs = withLogs ? logsOf(job, now) : null;
  if (phase === 'running') return { status: 202, body: { status: 'IN_PROGRESS', logs, ...urls } };
  const inference = phase === 'succeeded' ? (job.endsAt - job.startsAt) / 1000 : null;
  return { status: 200, body: { status: 'COMPLETED', logs, metrics: { inference_time: inference }, ...urls } };
}

function result(job: FalJob, now: number, outputs: OutputStore): Reply {
  const phase = phaseOf(job, now);
  const headers = { 'x-fal-request-id': job.id };
  if (phase === 'queued' || phase === 'running') return detail(400, 'Request is still in progress', headers);
  if (phase === 'canceled') {
    return json(
      499,
      { detail: 'Request was cancelled by the client', error_type: 'client_cancelled' },
      { ...headers, 'x-fal-error-type': 'client_cancelled' },
    );
  }
  const noRetry = { ...headers, 'x-fal-retryable': 'false' };
  if (job.invalid) return json(422, { detail: job.invalid }, noRetry);
  if (job.outcome === 'nsfw') {
    const error = {
      ...item('prompt', CONTENT_POLICY_MSG, 'content_policy_violation', job.spec.prompt),
      url: 'https://docs.fal.ai/errors/#content_policy_violation',
    };
    return json(422, { detail: [error] }, noRetry);
  }
  if (phase === 'failed') {
    const error = {
      ...item(null, job.error ?? 'Internal server error', 'internal_server_error', { prompt: job.spec.prompt }),
      url: 'https://docs.fal.ai/errors/#internal_server_error',
    };
    return json(500, { detail: [error] }, noRetry);
  }
  const { media, spec } = job;
  const inference = (job.endsAt - job.startsAt) / 1000;
  if (media.kind === 'video') {
    return json(
      200,
      {
        video: {
          url: job.outputUrls[0],
          content_type: 'video/mp4',
          file_name: 'output.mp4',
          file_size: outputs.get(`${job.id}-0`, now)?.bytes.length,
        },
        seed: spec.seed,
      },
      headers,
    );
  }
  const images = job.outputUrls.map((url) => ({
    url,
    width: media.width,
    height: media.height,
    content_type: 'image/png',
  }));
  return json(
    200,
    {
      images,
      timings: { inference },
      seed: spec.seed,
      has_nsfw_concepts: images.map(() => false),
      prompt: spec.prompt,
    },
    headers,
  );
}

export function createFalQueueProtocol(ctx: TaskContext): Protocol<Operation> {
  const jobs = new JobStore<FalJob>(ctx.jobs);

  function parseRequest(path: string, query: URLSearchParams, authorized: boolean): Parsed<Operation> {
    const [, app, id, suffix] = REQUEST_PATH.exec(path)!;
    const operation = suffix === '/cancel' ? 'cancel' : suffix === '/status' ? 'status' : 'result';
    const job = jobs.get(decodeURIComponent(id!));
    if (!authorized) return { model: job?.model, operation, error: detail(401, 'Unauthorized') };
    // A request id is only found under the app it was submitted to.
    if (!job || job.appId !== decodeURIComponent(app!))
      return {
        operation,
        error: operation === 'cancel' ? json(404, { status: 'NOT_FOUND' }) : detail(404, 'Request not found'),
      };
    if (operation === 'status')
      return {
        model: job.model,
        operation,
        value: { kind: 'status', job, logs: query.get('logs') === '1' || query.get('logs') === 'true' },
      };
    return {
      model: job.model,
      operation,
      value: operation === 'cancel' ? { kind: 'cancel', job } : { kind: 'result', job },
    };
  }

  return {
    name: 'fal',
    matches(method, path) {
      if (method === 'GET') return REQUEST_PATH.test(path) && !path.endsWith('/cancel');
      if (method === 'PUT') return REQUEST_PATH.test(path) && path.endsWith('/cancel');
      if (method !== 'POST') return false;
      const second = path.indexOf('/', 1);
      return (
        second > 1 && second < path.length - 1 && !RESERVED.test(path.slice(1, second)) && !path.includes('/requests/')
      );
    },
    parse(r) {
      const authorized = falKey(r.req.headers.authorization) !== '';
      if (r.method !== 'POST') return parseRequest(r.path, r.query, authorized);
      const segments = r.path
        .slice(1)
        .split('/')
        .map((s) => decodeURIComponent(s));
      const model = segments.join('/');
      const appId = appIdOf(segments);
      if (!authorized) return { model, operation: 'create', error: detail(401, 'Unauthorized') };
      if (!appId) return { model, operation: 'create', error: detail(404, `Application '${model}' not found`) };
      const body = jsonObject(r.body);
      if (!body)
        return {
          model,
          operation: 'create',
          error: json(422, {
            detail: [
              item(null, 'Input should be a valid dictionary', 'dict_type', r.body.toString('utf8').slice(0, 200)),
            ],
          }),
        };
      const read = readInput(model, body);
      const webhook = r.query.get('fal_webhook') ?? undefined;
      if (webhook !== undefined && !URL.canParse(webhook))
        return { model, operation: 'create', error: detail(422, 'fal_webhook must be a URL') };
      if ('invalid' in read)
        return { model, operation: 'create', value: { kind: 'submit', model, appId, invalid: read.invalid, webhook } };
      return { model, operation: 'create', value: { kind: 'submit', model, appId, ...read, webhook } };
    },
    answer(op, r) {
      const now = Date.now();
      if (op.kind === 'status') {
        const { status, body } = statusBody(op.job, now, op.logs);
        return json(status, body, { 'x-fal-request-id': op.job.id });
      }
      if (op.kind === 'result') return result(op.job, now, ctx.outputs);
      if (op.kind === 'cancel') {
        if (!cancelJob(op.job, now)) return json(400, { status: 'ALREADY_COMPLETED' });
        return json(202, { status: 'CANCELLATION_REQUESTED' });
      }
      const id = randomUUID();
      // An input the runner rejects ends as soon as it leaves the queue, whatever a job rule would have said.
      const plan = op.invalid
        ? { outcome: 'fail' as const, durationMs: ctx.taskDurationMs }
        : planJob(ctx.faults, r.channel, op.model, ctx.taskDurationMs);
      const job: FalJob = {
        id,
        channel: r.channel,
        model: op.model,
        appId: op.appId,
        spec: op.spec ?? { prompt: '', seed: 0 },
        media: op.media ?? { kind: 'image', width: 0, height: 0, count: 0, durationSeconds: 0 },
        ...scheduleJob(plan, now),
        outputUrls: [],
        base: `${r.origin}${r.prefix}/${op.appId}/requests/${id}`,
      };
      if (op.invalid) {
        job.invalid = op.invalid;
        job.endsAt = job.startsAt;
      } else {
        const ext = job.media.kind === 'video' ? 'mp4' : 'png';
        job.outputUrls = ctx.outputs.register(job).map((oid) => `${r.outputsOrigin}${r.prefix}/outputs/${oid}.${ext}`);
      }
      jobs.add(job);
      if (op.webhook && Number.isFinite(job.endsAt) && job.outcome !== 'lost') {
        // fal's webhook body: the request ids, OK or ERROR, and the result's payload.
        ctx.webhooks.schedule('fal', op.webhook, job.endsAt, id, () => {
          const done = result(job, Math.max(Date.now(), job.endsAt), ctx.outputs);
          const ok = done.status === 200;
          const payload = done.kind === 'json' ? done.body : null;
          return {
            request_id: id,
            gateway_request_id: id,
            status: ok ? 'OK' : 'ERROR',
            payload,
            ...(ok ? {} : { error: `Invalid status code: ${done.status}` }),
          };
        });
      }
      const urls = {
        request_id: id,
        response_url: job.base,
        status_url: `${job.base}/status`,
        cancel_url: `${job.base}/cancel`,
      };
      return json(200, { status: 'IN_QUEUE', ...urls, queue_position: 0 }, { 'x-fal-request-id': id });
    },
    errorReply: (status, message) =>
      detail(status, message ?? (status >= 500 ? 'Internal Server Error' : 'Bad Request')),
    malformShape: (body) => {
      if (body === null || typeof body !== 'object') return { unexpected: body };
      const {
        status: _status,
        images: _images,
        video: _video,
        request_id: _id,
        ...rest
      } = body as Record<string, unknown>;
      return rest;
    },
  };
}
