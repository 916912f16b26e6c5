// input_image items that name a workspace file by file_id (spec §4.4): the file must be a visible file of the
// caller's workspace (another workspace's is answered exactly as a missing one, DESIGN.md §4), an image by its
// stored type and within spec §8's image limits. Its bytes are read from S3 and sent to the provider inline, as a
// data URL in image_url, since the provider cannot reach our S3. Every check that needs no bytes (existence, type,
// size, the upstream body bound) is made before any byte is read; the files are then read in parallel.
import type { Readable } from 'node:stream';
import { fileRepository, type FileRow } from '@gensvc/db';
import { errors } from '@gensvc/errors';
import { getObjectStream } from '@gensvc/storage';
import type { EdgeDeps } from '../../deps';
import { formatBytes } from '../../http/errors';
import { FILE_ID } from '../files/schema';
import { checkImage } from '../images/image-inputs';
import { IMAGE_FORMATS, IMAGE_TYPES, MAX_IMAGE_BYTES } from '../images/schema';
import { MAX_UPSTREAM_BYTES, type FileImageRef } from './schema';

export type FileImageDeps = Pick<EdgeDeps, 'config' | 'db' | 's3'>;

const notFound = (ref: FileImageRef) => errors.fileNotFound(`${ref.param}: no file "${ref.fileId}" exists in this workspace.`, ref.param);
const unreadable = (cause: unknown) => errors.storageUnavailable('A file named by file_id could not be read; try again.', cause);

/** Length of `data:<type>;base64,<bytes>` for a file of `bytes` bytes. */
const dataUrlLength = (contentType: string, bytes: number) => `data:${contentType};base64,`.length + 4 * Math.ceil(bytes / 3);
/** `"image_url":""` replaces `"file_id":"<id>"`: the item grows by at most the URL and these quotes and colon. */
const FIELD_OVERHEAD = '"image_url":""'.length;

/**
 * The body with every referenced input_image's file_id replaced by image_url (a data URL of the file's bytes); the
 * body itself is left as it was. Each file is read once however often it is named.
 */
export async function inlineFileImages(deps: FileImageDeps, workspaceId: string, body: Record<string, unknown>, refs: FileImageRef[]): Promise<Record<string, unknown>> {
  if (refs.length === 0) return body;
  const named = new Map<string, FileImageRef>();
  for (const ref of refs) if (!named.has(ref.fileId)) named.set(ref.fileId, ref);
  const firsts = [...named.values()];

  const rows = firstFailure(await Promise.allSettled(firsts.map((ref) => checkedRow(deps, workspaceId, ref))));
  const rowOf = new Map(rows.map((row) => [row.id, row]));
  let total = Buffer.byteLength(JSON.stringify(body));
  for (const ref of refs) {
    const row = rowOf.get(ref.fileId)!;
    total += dataUrlLength(row.contentType, Number(row.bytes)) + FIELD_OVERHEAD;
  }
  if (total > MAX_UPSTREAM_BYTES) {
    throw errors.imagesTooLarge(
      `With the files named by file_id inlined (base64), the request would be ${formatBytes(total)} on its way to the provider; at most ${formatBytes(MAX_UPSTREAM_BYTES)} is allowed.`,
      'input',
    );
  }

  const urls = firstFailure(await Promise.allSettled(firsts.map((ref, i) => dataUrlOf(deps, rows[i]!, ref))));
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

async function checkedRow(deps: FileImageDeps, workspaceId: string, ref: FileImageRef): Promise<FileRow> {
  const row = FILE_ID.test(ref.fileId) ? await fileRepository.get(deps.db, workspaceId, ref.fileId) : null;
  if (!row) throw notFound(ref);
  if (!(IMAGE_TYPES as readonly string[]).includes(row.contentType)) {
    throw errors.invalidImage(`${ref.param}: file ${ref.fileId} is ${row.contentType}, not an image (${IMAGE_FORMATS}).`, ref.param);
  }
  if (row.bytes > BigInt(MAX_IMAGE_BYTES)) {
    throw errors.mediaLimitExceeded(`${ref.param}: file ${ref.fileId} is ${row.bytes} bytes; an image input may have at most ${MAX_IMAGE_BYTES} bytes (30 MB).`, ref.param);
  }
  return row;
}

async function dataUrlOf(deps: FileImageDeps, row: FileRow, ref: FileImageRef): Promise<string> {
  const object = await getObjectStream(deps.s3, deps.config.s3.bucket, row.storageKey).catch((e) => {
    throw unreadable(e);
  });
  // The row is visible but its bytes are gone: a delete in progress.
  if (!object) throw notFound(ref);
  const bytes = await readAll(object.body, Number(row.bytes));
  // The bytes are typed again (the stored type was decided from them at upload) and held to the pixel limit.
  const media = checkImage(bytes, ref.param, `${ref.param} (file ${ref.fileId})`);
  return `data:${media.contentType};base64,${bytes.toString('base64')}`;
}

/** The object's bytes, which must be the `expected` count the row records (no more is ever held). */
async function readAll(body: Readable, expected: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      size += (chunk as Buffer).length;
      if (size > expected) break;
      parts.push(chunk as Buffer);
    }
  } catch (e) {
    throw unreadable(e);
  }
  if (size !== expected) {
    body.destroy();
    throw unreadable(new Error(`stored object holds ${size > expected ? 'more' : 'fewer'} bytes than its row records (${expected})`));
  }
  return Buffer.concat(parts, size);
}

/** The values, or the first failure in input order (so which one is answered does not depend on timing). */
function firstFailure<T>(results: PromiseSettledResult<T>[]): T[] {
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  return results.map((r) => (r as PromiseFulfilledResult<T>).value);
}

/** `node` with the value at `path` (from `depth`) replaced by fn(value); only the containers on the path are copied. */
function replaceAt(node: unknown, path: readonly (string | number)[], depth: number, fn: (value: unknown) => unknown): unknown {
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
