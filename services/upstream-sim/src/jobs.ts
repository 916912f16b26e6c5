// Generation jobs of the task protocols (Replicate predictions, fal queue requests) and the files they output. A
// job's state is a pure function of the clock: it is queued for the first fifth of its duration, then runs, then ends
// as its outcome says, so a poll at any moment sees the right state however often or rarely it polls. Both stores
// are bounded, so a long benchmark never grows the sim without limit.
import { randomBytes } from 'node:crypto';
import { generatedImagePng, generatedVideoMp4, type GenerationSpec } from './deterministic';
import type { FaultStore, JobOutcome } from './faults';
import type { WebhookSender } from './webhooks';

export type JobPhase = 'queued' | 'running' | 'succeeded' | 'failed' | 'canceled';

/** What a job makes: `count` PNGs of width × height, or one MP4 of `durationSeconds` at width × height. */
export interface Media {
  kind: 'image' | 'video';
  width: number;
  height: number;
  count: number;
  durationSeconds: number;
}

export interface Job {
  id: string;
  channel: string;
  model: string;
  spec: GenerationSpec;
  media: Media;
  /** Epoch milliseconds. */
  createdAt: number;
  startsAt: number;
  /** Infinity for a stuck job. */
  endsAt: number;
  outcome: JobOutcome;
  /** The error text of a `fail` outcome, when a fault rule gave one. */
  error?: string;
  canceledAt?: number;
  /** Absolute URLs of the outputs, one per image or the video; reserved at creation so they never change. */
  outputUrls: string[];
}

/** How long a job lasts and how it ends: the first job rule that matches, else the sim's default duration. */
export interface JobPlan {
  outcome: JobOutcome;
  durationMs: number;
  error?: string;
}

export function planJob(faults: FaultStore, channel: string, model: string, defaultDurationMs: number): JobPlan {
  const job = faults.takeJob(channel, model)?.job;
  return { outcome: job?.outcome ?? 'succeed', durationMs: job?.durationMs ?? defaultDurationMs, error: job?.error };
}

/** The timing fields of a job created now under this plan. */
export function scheduleJob(
  plan: JobPlan,
  now: number,
): Pick<Job, 'createdAt' | 'startsAt' | 'endsAt' | 'outcome' | 'error'> {
  const startsAt = now + Math.round(plan.durationMs / 5);
  return {
    createdAt: now,
    startsAt,
    endsAt: plan.outcome === 'stuck' ? Infinity : now + plan.durationMs,
    outcome: plan.outcome,
    error: plan.error,
  };
}

export function phaseOf(job: Job, now: number): JobPhase {
  if (job.canceledAt !== undefined) return 'canceled';
  if (now < job.startsAt) return 'queued';
  if (now < job.endsAt) return 'running';
  return job.outcome === 'succeed' ? 'succeeded' : 'failed';
}

export const isTerminal = (phase: JobPhase) => phase === 'succeeded' || phase === 'failed' || phase === 'canceled';

/** When the job reached its end state (Infinity while it has not). */
const finishedAt = (job: Job): number => job.canceledAt ?? job.endsAt;

/** Cancels a queued or running job; a finished one stays as it is. Returns whether it was canceled now. */
export function cancelJob(job: Job, now: number): boolean {
  if (isTerminal(phaseOf(job, now))) return false;
  job.canceledAt = now;
  return true;
}

export interface JobStoreOptions {
  /** Jobs kept at most; beyond it the oldest go whatever their state (default 10 000). */
  maxJobs?: number;
  /** Finished jobs are dropped this long after they finish (default 30 minutes). */
  ttlMs?: number;
}

export class JobStore<J extends Job> {
  private jobs = new Map<string, J>();
  private readonly max: number;
  private readonly ttlMs: number;

  constructor(options: JobStoreOptions = {}) {
    this.max = options.maxJobs ?? 10_000;
    this.ttlMs = options.ttlMs ?? 30 * 60_000;
  }

  add(job: J): void {
    this.jobs.set(job.id, job);
    // Maps iterate in insertion order, so the oldest jobs come first and pruning looks at a few entries only.
    for (const id of this.jobs.keys()) {
      if (this.jobs.size <= this.max) break;
      this.jobs.delete(id);
    }
    for (const [id, old] of this.jobs) {
      if (finishedAt(old) + this.ttlMs >= job.createdAt) break;
      this.jobs.delete(id);
    }
  }

  /** The job, unless it is unknown or a `lost` one past its end (the provider forgot it: the protocols answer 404). */
  get(id: string, now = Date.now()): J | undefined {
    const job = this.jobs.get(id);
    if (job?.outcome === 'lost' && job.canceledAt === undefined && now >= job.endsAt) {
      this.jobs.delete(id);
      return undefined;
    }
    return job;
  }

  get size(): number {
    return this.jobs.size;
  }
}

const ID_ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** A Replicate-style id: 26 characters of [a-z0-9]. */
export function predictionId(): string {
  const bytes = randomBytes(26);
  let id = '';
  for (const b of bytes) id += ID_ALPHABET[b % ID_ALPHABET.length];
  return id;
}

// Model names that make a job a video whatever its input says (a `duration` input does too).
const VIDEO_MODEL = /video|veo|kling|hailuo|seedance|pixverse|sora|mochi|ltx|wan-?2|ray-?2|runway|gen-?4/i;

export const isVideoModel = (model: string) => VIDEO_MODEL.test(model);

/** Sides the sim makes, in pixels: real providers allow more, but every output is generated in memory. */
export const MIN_SIDE = 64;
export const MAX_SIDE = 2048;
export const MAX_VIDEO_SECONDS = 60;
export const MAX_IMAGES = 4;

/** Width × height for an aspect ratio "w:h", the longer side `long`, both sides multiples of 16. */
export function sizeForAspect(ratio: string, long: number): [number, number] {
  const [w, h] = ratio.split(':').map(Number) as [number, number];
  const round16 = (n: number) => Math.max(16, Math.round(n / 16) * 16);
  return w >= h ? [long, round16((long * h) / w)] : [round16((long * w) / h), long];
}

interface OutputEntry {
  job: Job;
  index: number;
}

export interface OutputFile {
  bytes: Buffer;
  contentType: string;
  model: string;
}

/**
 * The files jobs output, under ids `<job id>-<index>`. A file exists once its job has succeeded. Bytes are made on
 * first fetch and cached (bounded by total size), so a job nobody downloads costs nothing and a cache miss only
 * costs regenerating the same bytes.
 */
export class OutputStore {
  private entries = new Map<string, OutputEntry>();
  private cache = new Map<string, Buffer>();
  private cachedBytes = 0;

  constructor(
    private readonly maxEntries = 50_000,
    private readonly maxCachedBytes = 128 * 1024 * 1024,
  ) {}

  /** Reserves the output ids of a job; returns them in order. */
  register(job: Job): string[] {
    const count = job.media.kind === 'video' ? 1 : job.media.count;
    const ids = Array.from({ length: count }, (_, index) => `${job.id}-${index}`);
    for (const [index, id] of ids.entries()) this.entries.set(id, { job, index });
    for (const id of this.entries.keys()) {
      if (this.entries.size <= this.maxEntries) break;
      this.entries.delete(id);
      this.uncache(id);
    }
    return ids;
  }

  /** The file, or undefined when the id is unknown or its job has not succeeded (yet). */
  get(id: string, now = Date.now()): OutputFile | undefined {
    const entry = this.entries.get(id);
    if (!entry || phaseOf(entry.job, now) !== 'succeeded') return undefined;
    const contentType = entry.job.media.kind === 'video' ? 'video/mp4' : 'image/png';
    return { bytes: this.bytes(id, entry), contentType, model: entry.job.model };
  }

  /** The model of an output, whatever its state (for fault matching and the request log). */
  modelOf(id: string): string | undefined {
    return this.entries.get(id)?.job.model;
  }

  private bytes(id: string, { job, index }: OutputEntry): Buffer {
    const cached = this.cache.get(id);
    if (cached) return cached;
    const { media } = job;
    const bytes =
      media.kind === 'video'
        ? generatedVideoMp4(job.spec, media.durationSeconds, media.width, media.height)
        : generatedImagePng(job.spec, index, media.width, media.height);
    this.cache.set(id, bytes);
    this.cachedBytes += bytes.length;
    for (const old of this.cache.keys()) {
      if (this.cachedBytes <= this.maxCachedBytes) break;
      this.uncache(old);
    }
    return bytes;
  }

  private uncache(id: string): void {
    const bytes = this.cache.get(id);
    if (!bytes) return;
    this.cache.delete(id);
    this.cachedBytes -= bytes.length;
  }
}

/** A wait that never keeps the process alive on its own (a sim closing mid-wait must not hold a test runner open). */
export const pause = (ms: number) =>
  new Promise<void>((resolve) => {
    setTimeout(resolve, ms).unref();
  });

/** What the task protocols share with the server: fault rules (for job rules), output files and job defaults. */
export interface TaskContext {
  faults: FaultStore;
  outputs: OutputStore;
  /** A job's duration unless a job rule says otherwise. */
  taskDurationMs: number;
  jobs: JobStoreOptions;
  /** Sends the webhook a job's submitter asked for when the job ends. */
  webhooks: WebhookSender;
}

/** The JSON type name of a value, as validators name it. */
export function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/** http(s) or data: URLs, which both providers accept for image inputs. */
export function isUri(value: string): boolean {
  if (value.startsWith('data:')) return true;
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || url.protocol === 'http:';
  } catch {
    return false;
  }
}
