// The body of one callback delivery: the task envelope (spec §2.5), rendered by the same function as
// GET /api/v1/tasks/{id} (taskEnvelope), with delivered_at and, for an archived output whose file is still visible,
// a fresh signed download link (one hour from this attempt, so a late retry does not carry a dead link).
import { fileContentLink } from '@gensvc/auth';
import type { Config } from '@gensvc/config';
import { taskEnvelope } from '@gensvc/contracts';
import type { AttemptContext } from '@gensvc/db';

/**
 * The exact bytes to sign and send, or null when the workspace is gone (its tasks go with it: a delete racing this
 * attempt). `deliveredAt` is the attempt's start, which becomes the task's deliveredAt if this attempt succeeds;
 * `context` is what the attempt read (callbackRepository.attemptContext, as of `deliveredAt`).
 */
export async function deliveryBody(
  config: Pick<Config, 'publicBaseUrl' | 'signingSecret'>,
  context: Pick<AttemptContext, 'task' | 'currency' | 'archivedFile'>,
  deliveredAt: Date,
): Promise<string | null> {
  const { task, currency, archivedFile: file } = context;
  if (currency === null) return null;
  const download =
    file &&
    (await fileContentLink(config.publicBaseUrl, config.signingSecret, {
      fileId: file.id,
      workspaceId: file.workspaceId,
    }));
  return JSON.stringify(taskEnvelope(task, { currency, download, deliveredAt }));
}
