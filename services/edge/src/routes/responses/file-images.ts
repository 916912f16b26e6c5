// input_image items that name a workspace file by file_id (spec §4.4): the file must be a visible file of the
// caller's workspace (another workspace's is answered exactly as a missing one, DESIGN.md §4), an image by its
// stored type and within spec §8's image limits. Its bytes are read from S3 and sent to the provider inline, as a
// data URL in image_url, since the provider cannot reach our S3. Every check that needs no bytes (existence, type,
// size, the upstream body bound) is made before any byte is read; the files are then read in parallel.
import { errors } from '@gensvc/errors';
import { formatBytes } from '../../http/errors';
import {
  readWorkspaceImage,
  workspaceImageRow,
  type WorkspaceImageDeps,
  type WorkspaceImageRef,
} from '../images/image-inputs';
import { MAX_UPSTREAM_BYTES, type FileImageRef } from './schema';

export type FileImageDeps = WorkspaceImageDeps;

const imageRef = (ref: FileImageRef): WorkspaceImageRef => ({
  fileId: ref.fileId,
  param: ref.param,
  what: ref.param,
  notFound: () => errors.fileNotFound(`${ref.param}: no file "${ref.fileId}" exists in this workspace.`, ref.param),
});

/** Length of `data:<type>;base64,<bytes>` for a file of `bytes` bytes. */
const dataUrlLength = (contentType: string, bytes: number) =>
  `data:${contentType};base64,`.length + 4 * Math.ceil(bytes / 3);
/** `"image_url":""` replaces `"file_id":"<id>"`: the item grows by at most the URL and these quotes and colon. */
const FIELD_OVERHEAD = '"image_url":""'.length;

/**
 * The body with every referenced input_image's file_id replaced by image_url (a data URL of the file's bytes); the
 * body itself is left as it was. Each file is read once however often it is named.
 */
export async function inlineFileImages(
  deps: FileImageDeps,
  workspaceId: string,
  body: Record<string, unknown>,
  refs: FileImageRef[],
): Promise<Record<string, unknown>> {
  if (refs.length === 0) return body;
  const named = new Map<string, FileImageRef>();
  for (const ref of refs) if (!named.has(ref.fileId)) named.set(ref.fileId, ref);
  const firsts = [...named.values()];

  const imageRefs = firsts.map(imageRef);
  const rows = firstFailure(
    await Promise.allSettled(imageRefs.map((ref) => workspaceImageRow(deps, workspaceId, ref))),
  );
  const rowOf = new Map(rows.map((row) => [row.id, row]));
  let total = Buffer.byteLength(JSON.stringify(body));
  for (const ref of refs) {
    const row = rowOf.get(ref.fileId)!;
    total += dataUrlLength(row.contentType, Number(row.bytes)) + FIELD_OVERHEAD;
  }
  if (total > MAX_UPSTREAM_BYTES) {
    throw errors.imagesTooLarge(
      `With the files named by file_id inlined (base64), the request would be ${formatBytes(total)} ` +
        `on its way to the provider; at most ${formatBytes(MAX_UPSTREAM_BYTES)} is allowed.`,
      'input',
    );
  }

  const urls = firstFailure(
    await Promise.allSettled(
      imageRefs.map(async (ref, i) => {
        const { bytes, media } = await readWorkspaceImage(deps, rows[i]!, ref);
        return `data:${media.contentType};base64,${bytes.toString('base64')}`;
      }),
    ),
  );
  const urlOf = new Map(firsts.map((ref, i) => [ref.fileId, urls[i]!]));
  let out: unknown = body;
  for (const ref of refs) {
    out = replaceAt(out, ref.path, 0, (item) => {
      const { file_id: _named, ...rest } = item as Record<string, unknown>;
      return { ...rest, image_url: urlOf.get(ref.fileId) };
    });
  }
  return out as Record<string, unknown>;
}

/** The values, or the first failure in input order (so which one is answered does not depend on timing). */
function firstFailure<T>(results: PromiseSettledResult<T>[]): T[] {
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  return results.map((r) => (r as PromiseFulfilledResult<T>).value);
}

/** `node` with the value at `path` (from `depth`) replaced by fn(value); only the containers on the path are copied. */
function replaceAt(
  node: unknown,
  path: readonly (string | number)[],
  depth: number,
  fn: (value: unknown) => unknown,
): unknown {
  if (depth === path.length) return fn(node);
  const key = path[depth]!;
  if (Array.isArray(node)) {
    const copy = [...node];
    copy[key as number] = replaceAt(node[key as number], path, depth + 1, fn);
    return copy;
  }
  const obj = node as Record<string, unknown>;
  return { ...obj, [key]: replaceAt(obj[key as string], path, depth + 1, fn) };
}
