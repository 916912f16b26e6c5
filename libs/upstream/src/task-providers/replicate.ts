// Replicate's predictions API (https://replicate.com/docs/reference/http):
//   POST {base}/v1/models/{owner}/{name}/predictions {input}   (an official model, its latest version)
//   POST {base}/v1/predictions {version: "owner/name:hash", input}   (a pinned version, when the route names one)
//   GET  {base}/v1/predictions/{id}          status starting | processing | succeeded | failed | canceled (| aborted)
//   POST {base}/v1/predictions/{id}/cancel
// with `Authorization: Bearer <channel secret>`. The prediction's `urls.get` and `urls.cancel` are used when they are
// on the channel's origin. `output` is one URL or an array of them; `error` says why a prediction failed. Errors
// are problem details: {title, detail, status} (422 adds invalid_fields). The webhook Replicate POSTs when a
// prediction ends carries the prediction itself (the GET's object), read by the same predictionState.
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

/**
 * The aspect ratios Replicate's image models take by name; any other size is sent as "custom" with width and height.
 */
const ASPECT_RATIOS = new Set(['1:1', '16:9', '21:9', '3:2', '2:3', '4:5', '5:4', '3:4', '4:3', '9:16', '9:21']);

/** "16:9" for 1280×720; "custom" when the size has no named ratio. */
export function aspectRatio(width: number, height: number): string {
  const ratio = ratioOf(width, height);
  return ASPECT_RATIOS.has(ratio) ? ratio : 'custom';
}

/**
 * Our request as a prediction input. Models differ in what they read: the size goes both as width/height and as
 * the aspect ratio (models with a fixed list of ratios read that; "custom" tells the others to use width/height),
 * and the reference image as `image`. Replicate drops inputs a model does not declare.
 */
export function replicateInput(input: ProviderInput): Obj {
  return {
    prompt: input.prompt,
    width: input.width,
    height: input.height,
    aspect_ratio: aspectRatio(input.width, input.height),
    ...(input.kind === 'video' && input.durationSeconds !== undefined && { duration: input.durationSeconds }),
    ...(input.imageUrl !== undefined && { image: input.imageUrl }),
  };
}

/** The problem detail's text (detail, else title), or the raw body. */
function messageOf({ body, text }: ProviderAnswer): string {
  if (isObject(body)) {
    const detail = typeof body.detail === 'string' ? body.detail : typeof body.title === 'string' ? body.title : null;
    if (detail) return oneLine(detail);
  }
  return oneLine(text) || 'no message';
}

/** The URLs of a prediction's output: a string, or an array of strings (other shapes carry no file we can archive). */
function outputUrls(output: unknown): string[] {
  if (typeof output === 'string') return [output];
  if (Array.isArray(output)) return output.filter((u): u is string => typeof u === 'string');
  return [];
}

const isUrl = (u: string) => /^https?:\/\//i.test(u);

/**
 * What a prediction says of its job: the answer to GET /v1/predictions/{id}, and the body of Replicate's webhook (the
 * same object, sent when the prediction ends). Throws an UpstreamFailure when it is not a prediction we can read.
 */
export function predictionState(prediction: unknown): JobState {
  if (!isObject(prediction))
    throw new UpstreamFailure('the prediction is not a JSON object', 'invalid_response', false);
  switch (prediction.status) {
    case 'starting':
    case 'processing':
      return { state: 'running' };
    case 'succeeded': {
      const outputs: ProviderOutput[] = outputUrls(prediction.output)
        .filter(isUrl)
        .map((url) => ({ url }));
      if (outputs.length === 0)
        return {
          state: 'failed',
          code: 'upstream_error',
          message: 'The provider reported success without an output file.',
        };
      return { state: 'succeeded', outputs };
    }
    case 'failed': {
      const error =
        typeof prediction.error === 'string' && prediction.error.trim()
          ? oneLine(prediction.error)
          : 'The prediction failed.';
      return {
        state: 'failed',
        code: looksContentRejected(error) ? 'content_rejected' : 'upstream_error',
        message: error,
      };
    }
    case 'canceled':
      return { state: 'canceled' };
    case 'aborted':
      // Replicate ended it before it ran (its own deadline, or capacity).
      return { state: 'failed', code: 'upstream_error', message: 'The provider aborted the prediction before it ran.' };
    default:
      throw new UpstreamFailure(
        `unknown prediction status ${JSON.stringify(prediction.status)}`,
        'invalid_response',
        false,
      );
  }
}

/** A verified webhook's prediction as a job state (predictionState), or null when it is not one we can read. */
export function replicateWebhookState(body: unknown): JobState | null {
  try {
    return predictionState(body);
  } catch (e) {
    if (e instanceof UpstreamFailure) return null;
    throw e;
  }
}

export function createReplicateProvider(http: UpstreamClient): TaskProvider {
  const call = providerCaller(http, (secret) => `Bearer ${secret}`);

  return {
    async submit({ channel, upstreamModel, input, signal, webhookUrl }: SubmitCall): Promise<Submitted> {
      const [ref, version] = upstreamModel.split(':', 2) as [string, string | undefined];
      const [owner, name, ...rest] = ref.split('/');
      if (!owner || !name || rest.length) {
        // A route that names no owner/name cannot be called here; another channel's route may name one.
        throw new UpstreamFailure(`"${upstreamModel}" is not a Replicate model (owner/name)`, 'status', true, 404);
      }
      // A webhook when the prediction ends (its one "completed" event), signed with the account's secret.
      const body = {
        input: replicateInput(input),
        ...(webhookUrl !== undefined && { webhook: webhookUrl, webhook_events_filter: ['completed'] }),
      };
      const url = version
        ? channelUrl(channel, '/v1/predictions')
        : channelUrl(channel, `/v1/models/${encodeURIComponent(owner)}/${encodeURIComponent(name)}/predictions`);
      const answer = await call({
        channel,
        method: 'POST',
        url,
        body: version ? { version: upstreamModel, ...body } : body,
        signal,
      });
      if (!answer.ok) {
        const message = messageOf(answer);
        throw submitFailure(answer.status, message, looksContentRejected(message));
      }
      const prediction = answer.body;
      if (!isObject(prediction) || typeof prediction.id !== 'string' || !prediction.id) {
        throw new UpstreamFailure('the prediction has no id', 'invalid_response', false);
      }
      const links = isObject(prediction.urls) ? prediction.urls : {};
      const urls: Record<string, string> = {};
      const get = sameOrigin(channel, links.get);
      const cancel = sameOrigin(channel, links.cancel);
      if (get) urls.get = get;
      if (cancel) urls.cancel = cancel;
      return { upstreamId: prediction.id, urls: Object.keys(urls).length ? urls : null };
    },

    async status({ channel, upstreamId, urls, signal }: JobCall): Promise<JobState> {
      const url = urls?.get ?? channelUrl(channel, `/v1/predictions/${encodeURIComponent(upstreamId)}`);
      const answer = await call({ channel, method: 'GET', url, signal });
      if (!answer.ok) throw callFailure(answer.status, messageOf(answer));
      return predictionState(answer.body);
    },

    async cancel({ channel, upstreamId, urls, signal }: JobCall): Promise<void> {
      const url = urls?.cancel ?? channelUrl(channel, `/v1/predictions/${encodeURIComponent(upstreamId)}/cancel`);
      const answer = await call({ channel, method: 'POST', url, signal });
      if (answer.ok) return;
      const failure = callFailure(answer.status, messageOf(answer));
      // Unknown, or otherwise refused for good: there is nothing left to stop.
      if (failure.failover) throw failure;
    },
  };
}
