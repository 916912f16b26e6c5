// POST /api/v1/<provider>/<operation> (spec §4.2): validate, price, hold the price and write the queued task in one
// statement (deps.holds: the task row names its hold, which the task's end settles or releases), then queue
// task.submit (and task.deadline, due at the caller's deadline). With `Prefer: wait` the caller is answered with the
// finished task when it ends within the wait (task-waits.ts), else with the queued task as without it.
// Everything that can refuse the request (the body, the model, the input image, the callback_url's address and
// certificate) is checked before the hold, so a refusal leaves nothing.
import {
  isTaskChannelKind,
  taskEnvelope,
  type GenerationInput,
  type TaskOperation,
  type TaskOperationName,
} from '@gensvc/contracts';
import { newId, taskRepository, type TaskRow } from '@gensvc/db';
import { errors } from '@gensvc/errors';
import { scheduleDeadline, scheduleSubmit, taskJobRef } from '@gensvc/queue';
import type { CatalogModel } from '@gensvc/upstream';
import type { NextFunction, Request, Response } from 'express';
import { authOf, type AuthContext } from '../../auth/authenticate';
import { keepIfGone } from '../../billing/idempotency';
import { ownerOf } from '../../billing/paid-call';
import type { EdgeDeps } from '../../deps';
import { locals } from '../../http/request-context';
import { modelForKey } from '../../models/key-models';
import { checkCallbackUrl } from './callback-url';
import { checkImageReference } from './image-reference';
import { renderTask } from './render-task';
import { deadlineSecondsOf, parseCreateTask, type CreateTaskBody } from './schema';
import { preferredWait } from './task-waits';

export function createTask(deps: EdgeDeps, name: TaskOperationName, op: TaskOperation) {
  return async (req: Request, res: Response) => {
    const body = parseCreateTask(name, op, req.body);
    const deadlineSeconds = deadlineSecondsOf(body, req.get('cancel-after'));
    const waitSeconds = preferredWait(req.get('prefer'));
    const { key, workspace } = authOf(res);
    const model = await taskModel(deps, key, (req.params as { provider: string }).provider, name, op, body.model);
    // Not `log`: the request's child logger is made on first use, and a creation logs only when the add fails.
    const { requestId } = locals(res);
    const image = body.image ? await checkImageReference(deps, workspace.id, body.image) : undefined;
    const callbackUrl = body.callback_url !== undefined ? await checkCallbackUrl(deps, body.callback_url) : null;

    const id = newId('tsk');
    const now = Date.now();
    // Before the task is written: no notice of its end can precede the wait. Null past this edge's waits: no wait.
    const waiter = waitSeconds === undefined ? null : deps.taskWaits.register(id);
    // A caller who leaves ends the wait at once and changes nothing else: the task runs on.
    const leave = () => waiter?.cancel();
    if (waiter) res.on('close', leave);
    try {
      const { task } = await deps.holds.reserve(ownerOf(res), priceOf(model, body), {
        task: {
          id,
          model: model.id,
          operation: name,
          input: generationInput(body, image),
          callbackUrl,
          deadlineAt: new Date(now + deps.config.tasks.deadlineMs),
          cancelAfter: deadlineSeconds === undefined ? null : new Date(now + deadlineSeconds * 1_000),
        },
      });
      const queued = taskEnvelope(task, { currency: workspace.currency });
      // The task is made and held: a retry under its Idempotency-Key must find it even if its caller leaves mid-wait.
      if (waiter) keepIfGone(res, 202, queued);
      await queueTask(deps, res, task, requestId);
      if (waiter && waitSeconds !== undefined) {
        res.setHeader('Preference-Applied', `wait=${waitSeconds}`);
        const end = await waiter.until(waitSeconds * 1_000);
        if (end === 'finished' || (end === 'timeout' && waiter.mayHaveMissed())) {
          // The one read of the wait, once the task has ended (or its notice may have been lost): what GET answers.
          const finished = await taskRepository.find(deps.db, id);
          if (finished && isFinal(finished.status)) {
            return void res.status(200).json(await renderTask(deps, finished, workspace.currency));
          }
        }
      }
      res.status(202).json(queued);
    } finally {
      res.off('close', leave);
      waiter?.cancel();
    }
  };
}

/**
 * Queues task.submit and, when the caller gave a deadline, task.deadline due then. The task is held and queued in
 * Postgres, the truth: a job that cannot be added is logged, and the task runner's reconciler submits queued tasks
 * whose job is missing and cancels overdue ones, so the caller is answered as usual.
 */
async function queueTask(deps: EdgeDeps, res: Response, task: TaskRow, requestId: string) {
  const ref = taskJobRef(task, requestId);
  const jobs = [scheduleSubmit(deps.queues, ref)];
  if (task.cancelAfter) jobs.push(scheduleDeadline(deps.queues, ref, task.cancelAfter.getTime() - Date.now()));
  for (const outcome of await Promise.allSettled(jobs)) {
    if (outcome.status === 'rejected') {
      locals(res).log.error(
        { err: outcome.reason, task_id: task.id },
        "a task's job could not be queued; the reconciler will catch up with the task",
      );
    }
  }
}

const isFinal = (status: TaskRow['status']) => status === 'completed' || status === 'failed' || status === 'canceled';

/**
 * Location: /api/v1/tasks/<id> on every 202 of a creation, the first answer and its Idempotency-Key replays alike
 * (a replay answers the stored body only, so the header is made again from it).
 */
export function taskLocation(_req: Request, res: Response, next: NextFunction) {
  const json = res.json.bind(res);
  res.json = (body: unknown) => {
    const id = (body as { task_id?: unknown } | null)?.task_id;
    if (res.statusCode === 202 && typeof id === 'string') res.setHeader('Location', `/api/v1/tasks/${id}`);
    return json(body);
  };
  next();
}

/** Images are priced per image, videos per second (Model.unitPrice). */
function priceOf(model: CatalogModel, body: CreateTaskBody): bigint {
  return body.duration_seconds !== undefined ? model.unitPrice * BigInt(body.duration_seconds) : model.unitPrice;
}

function generationInput(body: CreateTaskBody, image: GenerationInput['image']) {
  return {
    prompt: body.prompt,
    width: body.width,
    height: body.height,
    ...(body.duration_seconds !== undefined ? { duration_seconds: body.duration_seconds } : {}),
    ...(image ? { image } : {}),
  } satisfies GenerationInput;
}

/**
 * The model named in the body, able to run this operation under this path: it exists (else 400 model_not_found, as
 * POST /api/v1/evaluate answers), is enabled, is of the operation's kind, belongs to the path's provider, and has an
 * enabled channel of a task protocol (else 400 model_not_supported saying which).
 */
async function taskModel(
  deps: Pick<EdgeDeps, 'catalog'>,
  key: AuthContext['key'],
  provider: string,
  name: TaskOperationName,
  op: TaskOperation,
  id: string,
): Promise<CatalogModel> {
  const model = await modelForKey(deps.catalog, key, id);
  if (!model) throw errors.modelNotFound(id);
  if (!model.enabled) throw errors.modelNotSupported(`The model "${id}" is disabled.`);
  if (model.kind !== op.kind)
    throw errors.modelNotSupported(`The model "${id}" is a ${model.kind} model; ${name} takes a ${op.kind} model.`);
  const owner = id.slice(0, id.indexOf('/'));
  if (owner !== provider) {
    throw errors.modelNotSupported(
      `The model "${id}" is a model of "${owner}": create its tasks with ` +
        `POST /api/v1/${owner}/${name}, not under /api/v1/${provider}/.`,
    );
  }
  if (!model.routes.some((r) => r.channel.enabled && isTaskChannelKind(r.channel.kind))) {
    throw errors.modelNotSupported(
      `The model "${id}" has no channel that runs generation tasks (a Replicate or fal channel) at the moment.`,
    );
  }
  return model;
}
