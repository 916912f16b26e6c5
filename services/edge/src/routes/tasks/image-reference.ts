// The input image of an image-to-* task, checked at creation and stored as a reference (GenerationInput.image): a
// file of the caller's workspace, or a public HTTPS URL on the default port (spec §4.4, the rule images/edits
// applies). A file is checked by its row; a URL is probed (image-url-probe.ts: its header only, so its type, 30 MB
// and 8192 px per side are known before any money is held). The task runner turns a file id into a fresh signed
// link when it submits, and the provider fetches the URL itself.
import type { GenerationInput } from '@gensvc/contracts';
import { errors } from '@gensvc/errors';
import type { EdgeDeps } from '../../deps';
import { FILE_ID } from '../files/schema';
import { workspaceImageRow } from '../images/image-inputs';
import { probeImageUrl } from '../images/image-url-probe';
import type { ImageField } from './schema';

export async function checkImageReference(
  deps: Pick<EdgeDeps, 'config' | 'db' | 's3' | 'outbound'>,
  workspaceId: string,
  field: ImageField,
): Promise<NonNullable<GenerationInput['image']>> {
  const { param, value } = field;
  if (value.startsWith('file_')) {
    const shown = value.slice(0, 64);
    const notFound = () => errors.fileNotFound(`${param}: no file "${shown}" exists in this workspace.`, param);
    // A malformed id names no file, exactly as an unknown one (or another workspace's) does.
    if (!FILE_ID.test(value)) throw notFound();
    // A visible file of the workspace whose type (decided from its bytes at upload) is an image, within spec §8.
    await workspaceImageRow(deps, workspaceId, { fileId: value, param, what: param, notFound });
    return { file_id: value };
  }
  const probed = await probeImageUrl(deps, value, param);
  return { url: probed.url };
}
