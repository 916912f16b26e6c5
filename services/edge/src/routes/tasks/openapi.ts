import { TASK_OPERATIONS, taskEnvelopeSchema, type TaskOperation } from '@gensvc/contracts';
import { z } from 'zod';
import { KEY_AUTH, PAID_CALL, idempotencyHeader, listOf, operation, timestamp } from '../../openapi/operation';
import { createTaskSchema, listTasksQuery } from './schema';
import { MAX_WAIT_SECONDS } from './task-waits';

const taskId = z.object({ taskId: z.string().describe('A task id, tsk_…') });
const provider = z.object({ provider: z.string().describe("The model id's provider part (`sim` for `sim/image-1`).") });

const deliveries = z.object({
  object: z.literal('list'),
  task_id: z.string(),
  callback_url: z.string().nullable(),
  state: z.string(),
  data: z.array(
    z.object({
      delivery_id: z.string(),
      attempt: z.number().int(),
      url: z.string(),
      status_code: z.number().int().nullable(),
      duration_ms: z.number().int().nullable(),
      error: z.string().nullable(),
      response_head: z.string().nullable(),
      created_at: timestamp,
    }),
  ),
});

const createHeaders = idempotencyHeader.extend({
  Prefer: z
    .string()
    .optional()
    .describe(
      `\`wait\` or \`wait=N\` (seconds; a bare \`wait\` is ${MAX_WAIT_SECONDS}, N outside 1..${MAX_WAIT_SECONDS} is ` +
        'clamped into it): answer 200 with the finished task (completed, failed or canceled: the envelope GET of ' +
        'the task answers) when it ends within N seconds, else 202 with the queued task as without it. ' +
        '`Preference-Applied: wait=N` says the wait was made. A preference that cannot be read is ignored ' +
        '(RFC 7240), as is the wait when this server holds its most waiting callers. Leaving early changes ' +
        'nothing: the task runs on, and a retry under the same Idempotency-Key finds it.',
    ),
  'Cancel-After': z
    .string()
    .optional()
    .describe(
      "The task's deadline as Replicate names it: whole seconds (`300`) or `1h30m`, `5m`, `90s`, from 1 s to 24 h; " +
        'the same as deadline_seconds (give one or the other). Anything else is a 400.',
    ),
});

const create = (name: string, op: TaskOperation) =>
  operation({
    method: 'post',
    route: `/api/v1/:provider/${name}`,
    operationId: `create_${name.replace(/-/g, '_')}`,
    summary:
      `Create ${name.startsWith('image') ? 'an' : 'a'} ${name} task ` +
      `(answered 202, or 200 once finished with Prefer: wait; the result comes by callback or GET /api/v1/tasks/{id})`,
    tag: 'Tasks',
    auth: 'bearer',
    scope: 'tasks.write',
    params: provider,
    headers: createHeaders,
    body: { json: createTaskSchema(op) },
    responses: {
      200: {
        description: 'With `Prefer: wait`: the task ended within the wait; the finished task envelope.',
        schema: taskEnvelopeSchema,
        headers: { 'Preference-Applied': 'wait=N: the wait that was made' },
      },
      202: {
        description: 'Queued: the task envelope.',
        schema: taskEnvelopeSchema,
        headers: {
          Location: '/api/v1/tasks/{task_id}',
          'Preference-Applied': 'wait=N, when the caller asked to wait and the task did not end within it',
        },
      },
    },
    errors: [
      ...PAID_CALL,
      'model_not_found',
      'model_not_supported',
      'invalid_callback_url',
      ...(op.takesImage
        ? (['invalid_image_url', 'invalid_image', 'file_not_found', 'media_limit_exceeded'] as const)
        : []),
    ],
  });

export const taskApi = [
  ...Object.entries(TASK_OPERATIONS).map(([name, op]) => create(name, op)),
  operation({
    method: 'get',
    route: '/api/v1/tasks',
    operationId: 'listTasks',
    summary: "List the workspace's tasks",
    tag: 'Tasks',
    auth: 'bearer',
    scope: 'tasks.read',
    query: listTasksQuery,
    responses: { 200: { description: 'A page of tasks.', schema: listOf(taskEnvelopeSchema) } },
    errors: [...KEY_AUTH, 'invalid_request'],
  }),
  operation({
    method: 'get',
    route: '/api/v1/tasks/:taskId',
    operationId: 'getTask',
    summary: 'A task: its status, output and cost',
    tag: 'Tasks',
    auth: 'bearer',
    scope: 'tasks.read',
    params: taskId,
    responses: { 200: { description: 'The task envelope.', schema: taskEnvelopeSchema } },
    errors: [...KEY_AUTH, 'task_not_found'],
  }),
  operation({
    method: 'post',
    route: '/api/v1/tasks/:taskId/cancel',
    operationId: 'cancelTask',
    summary: 'Cancel a queued or running task (its hold is released)',
    tag: 'Tasks',
    auth: 'bearer',
    scope: 'tasks.write',
    params: taskId,
    responses: { 200: { description: 'The canceled task.', schema: taskEnvelopeSchema } },
    errors: [...KEY_AUTH, 'task_not_found', 'task_not_cancelable'],
  }),
  operation({
    method: 'get',
    route: '/api/v1/tasks/:taskId/deliveries',
    operationId: 'listDeliveries',
    summary: 'Every callback attempt of a task',
    tag: 'Callbacks',
    auth: 'bearer',
    scope: 'tasks.read',
    params: taskId,
    responses: { 200: { description: 'The attempts.', schema: deliveries } },
    errors: [...KEY_AUTH, 'task_not_found'],
  }),
  operation({
    method: 'post',
    route: '/api/v1/tasks/:taskId/redeliver',
    operationId: 'redeliverTask',
    summary: "Send a finished task's callback again (a new round of attempts)",
    tag: 'Callbacks',
    auth: 'bearer',
    scope: 'tasks.write',
    params: taskId,
    responses: {
      202: {
        description: 'Queued.',
        schema: z.object({
          object: z.literal('delivery'),
          task_id: z.string(),
          attempt: z.number().int(),
          delivery_id: z.string(),
        }),
      },
    },
    errors: [...KEY_AUTH, 'task_not_found', 'callback_not_redeliverable', 'insufficient_role'],
  }),
];
