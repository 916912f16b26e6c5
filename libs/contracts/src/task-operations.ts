// The generation operations a task can be created for: POST /api/v1/<provider>/<operation>. The provider part of
// the path is the model id's prefix (`sim` for `sim/image-1`); the operation decides the model kind, whether an
// input image is taken, and whether the output is a video with a duration.
import type { OutputKind } from './task-output';

export interface TaskOperation {
  /** The model kind the operation needs (Model.kind). */
  kind: OutputKind;
  /** An input image reference is required. */
  takesImage: boolean;
}

export const TASK_OPERATIONS = {
  'text-to-image': { kind: 'image', takesImage: false },
  'image-to-image': { kind: 'image', takesImage: true },
  'text-to-video': { kind: 'video', takesImage: false },
  'image-to-video': { kind: 'video', takesImage: true },
} as const satisfies Record<string, TaskOperation>;

export type TaskOperationName = keyof typeof TASK_OPERATIONS;

/**
 * The channel kinds whose asynchronous protocols the task runner speaks (Replicate's predictions, fal's queue): a
 * model runs as a task only through a route to one of them.
 */
export const TASK_CHANNEL_KINDS = ['replicate', 'fal'] as const;
export type TaskChannelKind = (typeof TASK_CHANNEL_KINDS)[number];
export const isTaskChannelKind = (kind: string): kind is TaskChannelKind =>
  (TASK_CHANNEL_KINDS as readonly string[]).includes(kind);

export const isTaskOperation = (name: string): name is TaskOperationName => Object.hasOwn(TASK_OPERATIONS, name);

/**
 * Task.input of a generation task: the request as validated, with the image reference as given (a workspace file
 * id, resolved to a fresh link when the task is submitted, or a public HTTPS URL).
 */
export interface GenerationInput {
  prompt: string;
  width: number;
  height: number;
  /** Video operations only. */
  duration_seconds?: number;
  image?: { file_id: string } | { url: string };
}

/** Task statuses (DESIGN.md §4): queued → running → completed | failed; queued | running → canceled. */
export const TASK_STATUSES = ['queued', 'running', 'completed', 'failed', 'canceled'] as const;
export type TaskStatusValue = (typeof TASK_STATUSES)[number];
export const isTerminalStatus = (s: string): boolean => s === 'completed' || s === 'failed' || s === 'canceled';

/** A task's callback delivery (the Task's callbackState): none → pending → delivered | parked. */
export const CALLBACK_STATES = ['none', 'pending', 'delivered', 'parked'] as const;

/** Failure codes (DESIGN.md §4). */
export const TASK_FAILURE_CODES = [
  'upstream_error',
  'upstream_timeout',
  'content_rejected',
  'invalid_input',
  'insufficient_balance',
  'internal_error',
] as const;
export type TaskFailureCode = (typeof TASK_FAILURE_CODES)[number];

/** The error code of a task canceled because its caller's deadline (deadline_seconds, Cancel-After) passed. */
export const DEADLINE_EXCEEDED = 'deadline_exceeded';
