// The task routes' bodies and queries. A creation body is checked per operation: fields another operation takes
// (duration_seconds on an image operation, an image on a text-to-* one) are refused by name, as are unknown ones.
import { TASK_STATUSES, type TaskOperation, type TaskOperationName } from '@gensvc/contracts';
import { errors } from '@gensvc/errors';
import { z } from 'zod';
import { parseBody } from '../../http/parse-body';
import { listQuery, readListQuery } from '../files/schema';

/** A creation body carries text and references only (images are referenced by file id or URL, never inlined). */
export const CREATE_TASK_BODY_LIMIT = 64 * 1024;

export const MAX_PROMPT_CHARS = 4_000;
/**
 * Each side of `size`, in pixels. Below 64 px no image or video provider generates; 4096 px is the largest side
 * any of them renders (and stays within spec §8's 8192 px per side, so an output can be fed back as an input).
 */
const MIN_SIDE = 64;
const MAX_SIDE = 4_096;
const DEFAULT_SIZE: Record<TaskOperation['kind'], string> = { image: '1024x1024', video: '1280x720' };
/** Seconds of video; what providers render per generation. */
const MIN_DURATION_SECONDS = 1;
const MAX_DURATION_SECONDS = 60;
const DEFAULT_DURATION_SECONDS = 5;
/**
 * The caller's deadline of a task (deadline_seconds, Cancel-After), in seconds: a day at most, longer than any task
 * the service runs (TASK_DEADLINE ends it first).
 */
const MIN_DEADLINE_SECONDS = 1;
const MAX_DEADLINE_SECONDS = 86_400;
const DEADLINE_MESSAGE = `must be an integer from ${MIN_DEADLINE_SECONDS} to ${MAX_DEADLINE_SECONDS} (seconds)`;
/** An https URL longer than this is no one's callback or image (browsers and CDNs draw the line near here too). */
const MAX_URL_CHARS = 2_048;

/** Ids made by newId('tsk'); anything else names no task. */
export const TASK_ID = /^tsk_[0-9A-Za-z]{22}$/;

const SIZE = /^(\d{1,5})x(\d{1,5})$/;
const SIZE_MESSAGE = `must be <width>x<height>, each an integer from ${MIN_SIDE} to ${MAX_SIDE} (e.g. "1024x1024")`;

const size = z
  .string({ error: SIZE_MESSAGE })
  .regex(SIZE, SIZE_MESSAGE)
  .refine((s) => s.split('x').every((side) => Number(side) >= MIN_SIDE && Number(side) <= MAX_SIDE), SIZE_MESSAGE);

const url = (what: string) =>
  z
    .string({ error: `must be a string (${what})` })
    .min(1, 'must not be empty')
    .max(MAX_URL_CHARS, `is at most ${MAX_URL_CHARS} characters`);

const common = {
  model: z
    .string({ error: 'must be a string (a model id, <provider>/<model>)' })
    .min(1, 'must not be empty')
    .max(200, 'is at most 200 characters'),
  prompt: z
    .string({ error: 'must be a string' })
    .max(MAX_PROMPT_CHARS, `is at most ${MAX_PROMPT_CHARS} characters`)
    .transform((p) => p.trim())
    .refine((p) => p.length > 0, 'must not be empty'),
  size: size.optional(),
  callback_url: url('an https URL').optional(),
  deadline_seconds: z
    .number({ error: DEADLINE_MESSAGE })
    .int(DEADLINE_MESSAGE)
    .min(MIN_DEADLINE_SECONDS, `must be at least ${MIN_DEADLINE_SECONDS}`)
    .max(MAX_DEADLINE_SECONDS, `must be at most ${MAX_DEADLINE_SECONDS}`)
    .optional()
    .describe(
      'Seconds after creation by which the task must have finished; a task still queued or running then is ' +
        'canceled (at the provider too), its hold released, and its callback sent with status canceled and ' +
        'error.code deadline_exceeded. The Cancel-After header says the same; give one or the other. The ' +
        "service's own limit (TASK_DEADLINE) still applies: a task past it fails with upstream_timeout.",
    ),
};

const video = {
  duration_seconds: z
    .number({ error: `must be an integer from ${MIN_DURATION_SECONDS} to ${MAX_DURATION_SECONDS} (seconds)` })
    .int(`must be an integer from ${MIN_DURATION_SECONDS} to ${MAX_DURATION_SECONDS} (seconds)`)
    .min(MIN_DURATION_SECONDS, `must be at least ${MIN_DURATION_SECONDS}`)
    .max(MAX_DURATION_SECONDS, `must be at most ${MAX_DURATION_SECONDS}`)
    .optional(),
};

/** `image` is the field; `image_url` the name images/edits uses for the same thing, accepted as an alias. */
const imageRefs = {
  image: url('a file id, file_..., or an https URL').optional(),
  image_url: url('a file id, file_..., or an https URL').optional(),
};

/** The image reference as the caller gave it, and the field it came in (errors name that field). */
export interface ImageField {
  param: 'image' | 'image_url';
  value: string;
}

export interface CreateTaskBody {
  model: string;
  prompt: string;
  width: number;
  height: number;
  duration_seconds?: number;
  image?: ImageField;
  callback_url?: string;
  deadline_seconds?: number;
}

const schemas = new Map<string, z.ZodType>();

/** The creation body of `op` (one schema per kind of operation, made once). */
export function createTaskSchema(op: TaskOperation): z.ZodType {
  const key = `${op.kind}:${op.takesImage}`;
  let schema = schemas.get(key);
  if (!schema) {
    schema = z.strictObject({ ...common, ...(op.kind === 'video' ? video : {}), ...(op.takesImage ? imageRefs : {}) });
    schemas.set(key, schema);
  }
  return schema;
}

/** The body for `operation`, or 400 invalid_request naming the first field at fault. */
export function parseCreateTask(name: TaskOperationName, op: TaskOperation, body: unknown): CreateTaskBody {
  // Fields of other operations are named for what they are, before the generic "not a field" of strict parsing.
  if (body !== null && typeof body === 'object' && !Array.isArray(body)) {
    if (op.kind !== 'video' && 'duration_seconds' in body) {
      throw errors.invalidRequest(
        `duration_seconds: ${name} makes an image; only video operations take a duration.`,
        'duration_seconds',
      );
    }
    for (const field of ['image', 'image_url'] as const) {
      if (!op.takesImage && field in body) {
        throw errors.invalidRequest(
          `${field}: ${name} takes no input image; use ` +
            `${op.kind === 'video' ? 'image-to-video' : 'image-to-image'} to start from one.`,
          field,
        );
      }
    }
  }
  const raw = parseBody(createTaskSchema(op), body) as {
    model: string;
    prompt: string;
    size?: string;
    callback_url?: string;
    deadline_seconds?: number;
    duration_seconds?: number;
    image?: string;
    image_url?: string;
  };
  const [width, height] = (raw.size ?? DEFAULT_SIZE[op.kind]).split('x').map(Number) as [number, number];
  let image: ImageField | undefined;
  if (op.takesImage) {
    if (raw.image !== undefined && raw.image_url !== undefined) {
      throw errors.invalidRequest(
        'image_url: give the input image once, as image (image_url is an alias of it).',
        'image_url',
      );
    }
    if (raw.image !== undefined) image = { param: 'image', value: raw.image.trim() };
    else if (raw.image_url !== undefined) image = { param: 'image_url', value: raw.image_url.trim() };
    else
      throw errors.invalidRequest(
        `image: is required: ${name} starts from an image (a file id, file_..., or an https URL).`,
        'image',
      );
  }
  return {
    model: raw.model,
    prompt: raw.prompt,
    width,
    height,
    ...(op.kind === 'video' ? { duration_seconds: raw.duration_seconds ?? DEFAULT_DURATION_SECONDS } : {}),
    ...(image ? { image } : {}),
    ...(raw.callback_url !== undefined ? { callback_url: raw.callback_url } : {}),
    ...(raw.deadline_seconds !== undefined ? { deadline_seconds: raw.deadline_seconds } : {}),
  };
}

/** Replicate's form of a duration: `1h30m`, `5m`, `90s`, or whole seconds (`300`). */
const CANCEL_AFTER = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/;

/**
 * The task's deadline in seconds from the body's deadline_seconds or the Cancel-After header (Replicate's name), or
 * undefined for none. A header that is not a duration of 1 s to a day, or both forms at once, is a 400.
 */
export function deadlineSecondsOf(body: CreateTaskBody, cancelAfter: string | undefined): number | undefined {
  if (cancelAfter === undefined) return body.deadline_seconds;
  const param = 'Cancel-After';
  if (body.deadline_seconds !== undefined) {
    throw errors.invalidRequest('Cancel-After: give the deadline once, as this header or as deadline_seconds.', param);
  }
  const text = cancelAfter.trim();
  const m = CANCEL_AFTER.exec(text);
  let seconds = Number.NaN;
  if (/^\d+$/.test(text)) seconds = Number(text);
  else if (m && text !== '') seconds = Number(m[1] ?? 0) * 3_600 + Number(m[2] ?? 0) * 60 + Number(m[3] ?? 0);
  if (!(seconds >= MIN_DEADLINE_SECONDS && seconds <= MAX_DEADLINE_SECONDS)) {
    throw errors.invalidRequest(
      `Cancel-After: must be a duration from ${MIN_DEADLINE_SECONDS} s to 24h, as whole seconds (300) or hours, ` +
        'minutes and seconds (1h30m, 5m, 90s).',
      param,
    );
  }
  return seconds;
}

export const listTasksQuery = listQuery(
  { id: TASK_ID, message: 'must be a task id (tsk_...)' },
  {
    status: z
      .enum(TASK_STATUSES, { message: `must be one of ${TASK_STATUSES.map((s) => `"${s}"`).join(', ')}` })
      .optional(),
  },
);

export type ListTasksQuery = z.output<typeof listTasksQuery>;

/** GET /api/v1/tasks's query, or a 400 naming the first bad parameter. */
export const parseListQuery = (query: unknown): ListTasksQuery => readListQuery(listTasksQuery, query);
