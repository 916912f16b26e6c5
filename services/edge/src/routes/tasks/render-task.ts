import { fileContentLink } from '@gensvc/auth';
import { taskEnvelope } from '@gensvc/contracts';
import { taskRepository, type TaskRow } from '@gensvc/db';
import { errors } from '@gensvc/errors';
import type { EdgeDeps } from '../../deps';
import { TASK_ID } from './schema';

export type RenderDeps = Pick<EdgeDeps, 'config' | 'db'>;

/**
 * The task's envelope as every route here answers it. An archived output whose file is still in the library gets a
 * download link signed now, so each read returns a fresh one (spec §2.4: completed video tasks return a fresh signed
 * download url and a file_id on each status request); once the file has expired or been deleted there is none.
 */
export async function renderTask(deps: RenderDeps, task: TaskRow, currency: string) {
  const [envelope] = await renderTasks(deps, [task], currency);
  return envelope!;
}

/** renderTask for a page of tasks: their files are looked up in one query. */
export async function renderTasks(deps: RenderDeps, tasks: readonly TaskRow[], currency: string) {
  const files = await taskRepository.archivedOutputFiles(deps.db, tasks);
  return Promise.all(
    tasks.map(async (task) => {
      const file = files.get(task.id);
      const download =
        file &&
        (await fileContentLink(deps.config.publicBaseUrl, deps.config.signingSecret, {
          fileId: file.id,
          workspaceId: file.workspaceId,
        }));
      return taskEnvelope(task, { currency, download });
    }),
  );
}

/** The workspace's task by the route's :taskId, or 404 (another workspace's task is 404 too, DESIGN.md §4). */
export async function findTask(deps: Pick<EdgeDeps, 'db'>, workspaceId: string, id: string): Promise<TaskRow> {
  const task = TASK_ID.test(id) ? await taskRepository.get(deps.db, workspaceId, id) : null;
  if (!task) throw errors.taskNotFound(id.slice(0, 64));
  return task;
}
