// The body of one callback delivery: the task envelope (spec §2.5), rendered by the same function as
// GET /api/v1/tasks/{id} (taskEnvelope), with delivered_at and, for an archived output whose file is still visible,
// a fresh signed download link (one hour from this attempt, so a late retry does not carry a dead link).
import { fileContentLink } from '@gensvc/auth';
import type { Config } from '@gensvc/config';
import { primaryOutput, taskEnvelope, type DownloadLink } from '@gensvc/contracts';
import { fileRepository, workspaceRepository, type DbClient, type TaskRow } from '@gensvc/db';

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
  const [workspace, download] = await Promise.all([workspaceRepository.get(db, task.workspaceId), downloadLink(db, config, task, deliveredAt)]);
  if (!workspace) return null;
  return JSON.stringify(taskEnvelope(task, { currency: workspace.currency, download, deliveredAt }));
}

async function downloadLink(
  db: DbClient,
  config: Pick<Config, 'publicBaseUrl' | 'signingSecret'>,
  task: TaskRow,
  now: Date,
): Promise<DownloadLink | null> {
  const entry = primaryOutput(task.output);
  if (entry?.archive_status !== 'archived' || !entry.svc_file_id) return null;
  // Expired or deleted: no link to a file that would answer 404.
  const file = await fileRepository.get(db, task.workspaceId, entry.svc_file_id, now);
  if (!file) return null;
  return fileContentLink(config.publicBaseUrl, config.signingSecret, { fileId: file.id, workspaceId: file.workspaceId });
}
