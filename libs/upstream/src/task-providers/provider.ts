// The two asynchronous generation protocols a channel can speak, chosen by its kind: Replicate's predictions API
// and fal's queue API. Each turns our request into the provider's input, submits it, reads its state and cancels
// it; what the provider's answers mean (running, done with these outputs, failed for this reason) is decided here,
// what to do about it is the task-runner's handlers' business, and a result's recording task-result.ts's. Here, in
// libs/upstream, because the edge reads the providers' webhooks with the same parsers (replicate.ts
// predictionState, fal.ts falWebhookState).
//
// Errors are UpstreamFailures (libs/upstream), so submit can run under withFailover: `failover` says whether the
// next channel may be tried. A provider that judged the request itself throws JobRejected (no failover; the task
// fails with its code).
import type { OutputKind } from '@gensvc/contracts';
import { errors } from '@gensvc/errors';
import type { CatalogChannel } from '../catalog';
import { UpstreamFailure, failsOverOnStatus } from '../failover';
import type { UpstreamClient } from '../upstream-http';

export type ProviderChannel = Pick<CatalogChannel, 'id' | 'kind' | 'baseUrl' | 'secret' | 'timeoutMs'>;

/** Our request as the providers need it: sizes in pixels, the input image as a URL the provider can fetch. */
export interface ProviderInput {
  kind: OutputKind;
  prompt: string;
  width: number;
  height: number;
  /** Video only. */
  durationSeconds?: number;
  imageUrl?: string;
}

interface ProviderCall {
  channel: ProviderChannel;
  signal?: AbortSignal;
}

export interface SubmitCall extends ProviderCall {
  /** The model's name at the provider (owner/name[...]). */
  upstreamModel: string;
  input: ProviderInput;
  /** Where the provider should POST when the job ends (Replicate `webhook`, fal `fal_webhook`); none: poll only. */
  webhookUrl?: string;
}

export interface JobCall extends ProviderCall {
  upstreamId: string;
  /** What submit returned besides the id. */
  urls: Record<string, string> | null;
  /**
   * The provider's webhook said the job has ended (its poll was brought forward): a protocol that reads the outcome
   * apart from the status (fal) reads the outcome at once. A hint only: that read answers running for a job that
   * has not ended.
   */
  ended?: boolean;
}

export interface Submitted {
  upstreamId: string;
  /** Whatever later calls need besides the id (the job's status, result and cancel URLs). */
  urls: Record<string, string> | null;
}

/** One generated file as the provider describes it; the task's operation decides its kind. */
export type ProviderOutput = {
  url: string;
  duration?: number;
  width?: number;
  height?: number;
  content_type?: string;
};

export type FailureCode = 'upstream_error' | 'content_rejected' | 'invalid_input';

export type JobState =
  | { state: 'running' }
  | { state: 'succeeded'; outputs: ProviderOutput[] }
  | { state: 'failed'; code: FailureCode; message: string }
  | { state: 'canceled' };

export interface TaskProvider {
  submit(call: SubmitCall): Promise<Submitted>;
  /** The job's state; throws an UpstreamFailure when the provider could not tell (see isTransient). */
  status(call: JobCall): Promise<JobState>;
  /** Asks the provider to stop the job; a job gone or already over counts as canceled. Throws when worth retrying. */
  cancel(call: JobCall): Promise<void>;
}

/** The provider refused the request itself (its input, or its content): no other channel would take it either. */
export class JobRejected extends UpstreamFailure {
  constructor(
    readonly code: 'invalid_input' | 'content_rejected',
    message: string,
    status?: number,
  ) {
    // `answer` is what withFailover throws (toAppError), so the handler sees the code and the provider's message.
    super(message, 'status', false, status, errors.taskRejected(code, message));
    this.name = 'JobRejected';
  }
}

/**
 * The failure of a non-2xx answer to a submit: the next channel is tried unless the provider judged the request
 * (libs/upstream's one rule, failsOverOnStatus).
 */
export function submitFailure(status: number, message: string, contentRejected: boolean): UpstreamFailure {
  if (failsOverOnStatus(status)) {
    return new UpstreamFailure(`the provider answered ${status}: ${message}`, 'status', true, status);
  }
  return new JobRejected(contentRejected ? 'content_rejected' : 'invalid_input', message, status);
}

/** Statuses of a status or cancel call worth asking again later; any other 4xx is the provider's final word. */
const TRANSIENT_STATUSES = new Set([401, 403, 408, 425, 429]);

/** The failure of a non-2xx answer to a status or cancel call; `failover` is set when asking again may help. */
export function callFailure(status: number, message: string): UpstreamFailure {
  return new UpstreamFailure(
    `the provider answered ${status}: ${message}`,
    'status',
    status >= 500 || TRANSIENT_STATUSES.has(status),
    status,
  );
}

/**
 * Whether asking again later may get an answer: the provider could not be reached, timed out, answered garbage, was
 * overloaded or refused our credential (an admin may fix it). The task's deadline bounds how long that goes on.
 */
export function isTransient(e: unknown): boolean {
  if (!(e instanceof UpstreamFailure)) return false;
  return e.kind !== 'status' || e.failover;
}

/** Text that marks a provider's failure as its content checker's (Replicate E005, "NSFW content detected", ...). */
const CONTENT_REJECTION =
  /nsfw|sensitive|\bE005\b|content[ _-]?(?:policy|checker|moderation)|safety (?:checker|filter|system)/i;
export const looksContentRejected = (message: string) => CONTENT_REJECTION.test(message);

/**
 * A URL the provider handed out for later calls, when it is on the channel's own origin; null otherwise. Later calls
 * carry the channel's credential, so they never go anywhere the channel's admin did not point it.
 */
export function sameOrigin(channel: ProviderChannel, url: unknown): string | null {
  if (typeof url !== 'string') return null;
  try {
    return new URL(url).origin === new URL(channel.baseUrl).origin ? url : null;
  } catch {
    return null;
  }
}

/** Larger answers are refused: a submit, status or result answer is a few kilobytes. */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

export interface ProviderAnswer {
  status: number;
  ok: boolean;
  /** The body parsed as JSON; null when it is empty or not JSON. */
  body: unknown;
  /** The body as text (for messages when it is not JSON). */
  text: string;
  headers: Record<string, string | string[] | undefined>;
}

export interface ProviderRequest {
  channel: ProviderChannel;
  method: 'GET' | 'POST' | 'PUT';
  url: string;
  /** Sent as JSON. */
  body?: unknown;
  signal?: AbortSignal;
}

/**
 * How a protocol calls its provider: JSON both ways with the channel's credential in `authorization` (its scheme is
 * the protocol's), and every answer handed back whatever its status, since the providers say what went wrong in
 * their bodies (Replicate's problem details, fal's `detail` items) and only the protocol can read them.
 */
export function providerCaller(http: UpstreamClient, authorization: (secret: string) => string) {
  return async ({ channel, method, url, body, signal }: ProviderRequest): Promise<ProviderAnswer> => {
    const headers: Record<string, string> = {
      accept: 'application/json',
      authorization: authorization(channel.secret),
    };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const answer = await http.exchange(
      {
        baseUrl: url,
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        timeoutMs: channel.timeoutMs,
        signal,
      },
      MAX_ANSWER_BYTES,
    );
    const text = answer.body.toString('utf8');
    return {
      status: answer.status,
      ok: answer.status >= 200 && answer.status < 300,
      body: parseJson(text),
      text,
      headers: answer.headers,
    };
  };
}

function parseJson(text: string): unknown {
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

export type Obj = Record<string, unknown>;
export const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

/** A size's aspect ratio in lowest terms: "16:9" for 1280×720. */
export function ratioOf(width: number, height: number): string {
  const d = gcd(width, height);
  return `${width / d}:${height / d}`;
}

/** `${channel.baseUrl}${path}`, the base URL's own path kept and its trailing slashes dropped. */
export const channelUrl = (channel: ProviderChannel, path: string) => `${channel.baseUrl.replace(/\/+$/, '')}${path}`;

/** One line of text from whatever the provider sent, at most 500 characters. */
export const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim().slice(0, 500);
