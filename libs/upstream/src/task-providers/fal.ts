// fal's queue API (https://docs.fal.ai/model-apis/model-endpoints/queue), base https://queue.fal.run:
//   POST {base}/{model id}                      the input is the body; answers request_id, status_url,
//                                               response_url, cancel_url
//   GET  {base}/{app}/requests/{id}/status      IN_QUEUE | IN_PROGRESS | COMPLETED
//   GET  {base}/{app}/requests/{id}             the result once COMPLETED: 2xx with the outputs, or the model's error
//   PUT  {base}/{app}/requests/{id}/cancel      202 CANCELLATION_REQUESTED, 400 ALREADY_COMPLETED, 404 NOT_FOUND
// with `Authorization: Key <channel secret>`; {app} is owner/app, the model id without its endpoint path (so the
// URLs the submit answered are kept and preferred). The queue takes any JSON: the model validates the input when the
// request leaves the queue, so a bad input or a content-checker refusal shows on the result (422 with `detail`
// items typed e.g. content_policy_violation), and a request canceled while queued answers 499. With `?fal_webhook=`
// fal POSTs {request_id, gateway_request_id, status: OK | ERROR, payload, error, payload_error} when the request
// ends (https://docs.fal.ai/model-endpoints/webhooks): an OK payload is the result, read as the response URL's.
import { UpstreamFailure } from '../failover';
import type { UpstreamClient } from '../upstream-http';
import {
  callFailure,
  channelUrl,
  isObject,
  looksContentRejected,
  oneLine,
  providerCaller,
  ratioOf,
  sameOrigin,
  submitFailure,
} from './provider';
import type {
  JobCall,
  JobState,
  Obj,
  ProviderAnswer,
  ProviderInput,
  ProviderOutput,
  SubmitCall,
  Submitted,
  TaskProvider,
} from './provider';

/** fal's video models take only these aspect ratios; other sizes leave the model's default. */
const VIDEO_ASPECTS = new Set(['16:9', '9:16', '1:1']);
/** fal apps under a namespace have three-part app ids (workflows/owner/app). */
const NAMESPACES = new Set(['workflows', 'comfy']);

/**
 * Our request as a fal input: images take `image_size: {width, height}`; video models take `duration` as a string of
 * seconds ("5", as Kling and most fal video models declare it) and a named aspect ratio; the reference image is
 * `image_url`. fal models ignore fields they do not declare.
 */
export function falInput(input: ProviderInput): Obj {
  const body: Obj = { prompt: input.prompt };
  if (input.kind === 'video') {
    if (input.durationSeconds !== undefined) body.duration = String(input.durationSeconds);
    const ratio = ratioOf(input.width, input.height);
    if (VIDEO_ASPECTS.has(ratio)) body.aspect_ratio = ratio;
  } else {
    body.image_size = { width: input.width, height: input.height };
  }
  if (input.imageUrl !== undefined) body.image_url = input.imageUrl;
  return body;
}

/** owner/app of a model id (fal-ai/flux/dev → fal-ai/flux). */
export function appIdOf(model: string): string {
  const segments = model.split('/');
  return segments.slice(0, NAMESPACES.has(segments[0]!) ? 3 : 2).join('/');
}

const encodePath = (model: string) => model.split('/').map(encodeURIComponent).join('/');

interface ErrorItem {
  msg?: unknown;
  type?: unknown;
  loc?: unknown;
}

/** fal's `detail`: a string, or pydantic-style items; joined into one line ("prompt: Field required"). */
function messageOf(answer: ProviderAnswer): string {
  const body = answer.body;
  if (isObject(body)) {
    if (typeof body.detail === 'string') return oneLine(body.detail);
    if (Array.isArray(body.detail)) {
      const parts = (body.detail as ErrorItem[]).map((d) => {
        const loc = Array.isArray(d?.loc) ? d.loc.filter((l) => l !== 'body').join('.') : '';
        const msg = typeof d?.msg === 'string' ? d.msg : JSON.stringify(d);
        return loc ? `${loc}: ${msg}` : msg;
      });
      if (parts.length) return oneLine(parts.join('; '));
    }
    if (typeof body.error === 'string') return oneLine(body.error);
  }
  return oneLine(answer.text) || 'no message';
}

/** The error types of a `detail` array (content_policy_violation, missing, ...). */
function errorTypes(answer: ProviderAnswer): string[] {
  const detail = isObject(answer.body) ? answer.body.detail : undefined;
  return Array.isArray(detail)
    ? (detail as ErrorItem[]).flatMap((d) => (typeof d?.type === 'string' ? [d.type] : []))
    : [];
}

const isContentPolicy = (answer: ProviderAnswer) =>
  errorTypes(answer).includes('content_policy_violation') || looksContentRejected(messageOf(answer));

const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const str = (v: unknown) => (typeof v === 'string' ? v : undefined);

function fileOf(f: unknown, flagged = false): ProviderOutput | null {
  if (!isObject(f) || typeof f.url !== 'string' || !/^https?:\/\//i.test(f.url) || flagged) return null;
  const out: ProviderOutput = { url: f.url };
  const width = num(f.width);
  const height = num(f.height);
  const duration = num(f.duration);
  const contentType = str(f.content_type);
  if (width !== undefined) out.width = width;
  if (height !== undefined) out.height = height;
  if (duration !== undefined) out.duration = duration;
  if (contentType !== undefined) out.content_type = contentType;
  return out;
}

/**
 * The files of a result: `images` [{url, width, height, content_type}] (an image flagged in `has_nsfw_concepts` is
 * a black placeholder, not an output), `image`, `video` or `videos`.
 */
function resultOutputs(result: Obj): { outputs: ProviderOutput[]; flagged: number } {
  const flags = Array.isArray(result.has_nsfw_concepts) ? result.has_nsfw_concepts : [];
  const outputs: ProviderOutput[] = [];
  let flagged = 0;
  const add = (f: unknown, isFlagged = false) => {
    if (isFlagged) flagged++;
    const file = fileOf(f, isFlagged);
    if (file) outputs.push(file);
  };
  if (Array.isArray(result.images)) for (const [i, f] of result.images.entries()) add(f, flags[i] === true);
  if (result.image !== undefined) add(result.image);
  if (result.video !== undefined) add(result.video);
  if (Array.isArray(result.videos)) for (const f of result.videos) add(f);
  return { outputs, flagged };
}

/** A request's result (the 2xx answer of its response URL, or a webhook's payload): its files, or why it has none. */
function resultState(result: Obj): JobState {
  const { outputs, flagged } = resultOutputs(result);
  if (outputs.length) return { state: 'succeeded', outputs };
  if (flagged)
    return { state: 'failed', code: 'content_rejected', message: 'The output was flagged by the content checker.' };
  return { state: 'failed', code: 'upstream_error', message: 'The provider reported success without an output file.' };
}

/**
 * What a verified fal webhook says of request `requestId` (the signed x-fal-webhook-request-id): for `status` OK with
 * the result in `payload`, that result read as the response URL's answer is (resultState). Null for anything else — an
 * ERROR (its payload is the error's body without the status code and error type that tell a refusal from a failure),
 * a payload fal could not send (null, with `payload_error`), a body of another request — which the poll reads from
 * fal instead.
 */
export function falWebhookState(body: unknown, requestId: string): JobState | null {
  if (!isObject(body) || body.request_id !== requestId || body.status !== 'OK' || !isObject(body.payload)) return null;
  return resultState(body.payload);
}

export function createFalProvider(http: UpstreamClient): TaskProvider {
  const call = providerCaller(http, (secret) => `Key ${secret}`);

  /** The request's URL of this kind: the one submit answered, else built from the app id. */
  const requestUrl = (job: JobCall, kind: 'status_url' | 'response_url' | 'cancel_url') => {
    const stored = job.urls?.[kind];
    if (stored) return stored;
    const base = channelUrl(
      job.channel,
      `/${encodePath(appIdOf(job.urls?.model ?? ''))}/requests/${encodeURIComponent(job.upstreamId)}`,
    );
    return kind === 'status_url' ? `${base}/status` : kind === 'cancel_url' ? `${base}/cancel` : base;
  };

  async function result(job: JobCall): Promise<JobState> {
    const answer = await call({
      channel: job.channel,
      method: 'GET',
      url: requestUrl(job, 'response_url'),
      signal: job.signal,
    });
    if (answer.ok) {
      if (!isObject(answer.body))
        throw new UpstreamFailure('the result is not a JSON object', 'invalid_response', false);
      return resultState(answer.body);
    }
    const message = messageOf(answer);
    const errorType =
      str(isObject(answer.body) ? answer.body.error_type : undefined) ?? str(answer.headers['x-fal-error-type']);
    if (answer.status === 499 || errorType === 'client_cancelled') return { state: 'canceled' };
    if (answer.status === 422)
      return { state: 'failed', code: isContentPolicy(answer) ? 'content_rejected' : 'invalid_input', message };
    // A model error carries fal's `detail`; a bare 5xx (a proxy in the way) says nothing about the request.
    const hasDetail = isObject(answer.body) && answer.body.detail !== undefined;
    if (answer.status >= 500 && hasDetail)
      return { state: 'failed', code: isContentPolicy(answer) ? 'content_rejected' : 'upstream_error', message };
    if (answer.status === 400 && /in progress/i.test(message)) return { state: 'running' };
    const failure = callFailure(answer.status, message);
    if (failure.failover) throw failure;
    return { state: 'failed', code: 'upstream_error', message };
  }

  return {
    async submit({ channel, upstreamModel, input, signal, webhookUrl }: SubmitCall): Promise<Submitted> {
      if (upstreamModel.split('/').filter(Boolean).length < 2) {
        // A route that names no owner/app cannot be called here; another channel's route may name one.
        throw new UpstreamFailure(`"${upstreamModel}" is not a fal model id (owner/app[/path])`, 'status', true, 404);
      }
      const query = webhookUrl !== undefined ? `?fal_webhook=${encodeURIComponent(webhookUrl)}` : '';
      const path = `/${encodePath(upstreamModel)}${query}`;
      const answer = await call({
        channel,
        method: 'POST',
        url: channelUrl(channel, path),
        body: falInput(input),
        signal,
      });
      if (!answer.ok) throw submitFailure(answer.status, messageOf(answer), isContentPolicy(answer));
      const body = answer.body;
      if (!isObject(body) || typeof body.request_id !== 'string' || !body.request_id) {
        throw new UpstreamFailure('the queue answer has no request_id', 'invalid_response', false);
      }
      const urls: Record<string, string> = { model: upstreamModel };
      for (const kind of ['status_url', 'response_url', 'cancel_url'] as const) {
        const url = sameOrigin(channel, body[kind]);
        if (url) urls[kind] = url;
      }
      return { upstreamId: body.request_id, urls };
    },

    async status(job: JobCall): Promise<JobState> {
      // fal calls a webhook only when the request has ended: its result is there to read (one GET per webhook
      // instead of the status and then the result). A result read of a request still running answers 400
      // "in progress", read as running, so a stray hint costs nothing.
      if (job.ended) return result(job);
      const answer = await call({
        channel: job.channel,
        method: 'GET',
        url: requestUrl(job, 'status_url'),
        signal: job.signal,
      });
      if (!answer.ok) throw callFailure(answer.status, messageOf(answer));
      const body = answer.body;
      if (!isObject(body)) throw new UpstreamFailure('the status is not a JSON object', 'invalid_response', false);
      switch (body.status) {
        case 'IN_QUEUE':
        case 'IN_PROGRESS':
          return { state: 'running' };
        case 'COMPLETED':
          // Whether it worked shows on the result.
          return result(job);
        case 'CANCELED':
        case 'CANCELLED':
          return { state: 'canceled' };
        case 'FAILED': {
          const message = oneLine(str(body.error) ?? 'The request failed.');
          return {
            state: 'failed',
            code: looksContentRejected(message) ? 'content_rejected' : 'upstream_error',
            message,
          };
        }
        default:
          throw new UpstreamFailure(`unknown queue status ${JSON.stringify(body.status)}`, 'invalid_response', false);
      }
    },

    async cancel(job: JobCall): Promise<void> {
      const answer = await call({
        channel: job.channel,
        method: 'PUT',
        url: requestUrl(job, 'cancel_url'),
        signal: job.signal,
      });
      if (answer.ok) return;
      const failure = callFailure(answer.status, messageOf(answer));
      // 400 ALREADY_COMPLETED, 404 NOT_FOUND: there is nothing left to stop.
      if (failure.failover) throw failure;
    },
  };
}
