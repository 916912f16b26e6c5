// The body of one callback delivery: the task envelope (spec §2.5), rendered by the same function as
// GET /api/v1/tasks/{id} (taskEnvelope), with delivered_at and, for an archived output whose file is still visible,
// a fresh signed download link (one hour from this attempt, so a late retry does not carry a dead link).
import { fileContentLink } from '@gensvc/auth';
import type { Config } from '@gensvc/config';
import { taskEnvelope } from '@gensvc/contracts';
import { taskRepository, workspaceRepository, type DbClient, type TaskRow } from '@gensvc/db';

/**
 * The exact bytes to sign and send, or null when the workspace is gone (its tasks go with it: a delete racing this
 * attempt). `deliveredAt` is the attempt's start, which becomes the task's deliveredAt if this attempt succeeds.
 */
export async function deliveryBody(
  db: DbClient,
  config: Pick<Config, 'publicBaseUrl' | 'signingSecret'>,
  task: TaskRow,
  deliveredAt: Date,
): Promise<string | null> {
  const [workspace, file] = await Promise.all([workspaceRepository.get(db, task.workspaceId), taskRepository.archivedOutputFile(db, task, deliveredAt)]);
  if (!workspace) return null;
  const download = file && (await fileContentLink(config.publicBaseUrl, config.signingSecret, { fileId: file.id, workspaceId: file.workspaceId }));
  return JSON.stringify(taskEnvelope(task, { currency: workspace.currency, download, deliveredAt }));
}
