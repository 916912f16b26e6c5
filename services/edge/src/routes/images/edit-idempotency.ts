// Idempotency-Key for edits, with the rules of billing/idempotency.ts (same key and request within 24 h: the first
// answer again, charged once; another request: 409), built on beginIdempotent rather than the middleware because that
// middleware hashes a parsed JSON body and an edit is usually multipart. The request is hashed from its fields and
// its images' sha256, whichever encoding carried them. The stored answer leaves out the b64_json images (megabytes
// each): they are archived files, read back from S3 for a replay.
import { createHash } from 'node:crypto';
import type { Db } from '@gensvc/db';
import { errors } from '@gensvc/errors';
import { beginIdempotent } from '../../billing/idempotency';
import { getObjectStream, outputObjectKey } from '@gensvc/storage';
import type { S3Client } from '@aws-sdk/client-s3';
import { readAll } from './image-inputs';
import type { ImageSource, RawEditRequest } from './read-edit-request';

export type EditIdempotency =
  | { state: 'off' }
  | { state: 'new'; id: string }
  | { state: 'replay'; status: number; body: unknown };

/** The request as the key binds it: path, fields, and each image by its bytes' hash or by its reference. */
export function editRequestHash(path: string, request: RawEditRequest): string {
  const source = (s: ImageSource) =>
    s.kind === 'upload' ? { upload: s.sha256 } : s.kind === 'url' ? { url: s.url } : { file: s.fileId };
  const fields = Object.fromEntries(Object.entries(request.fields).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  const canonical = JSON.stringify({
    path,
    fields,
    images: request.images.map(source),
    mask: request.mask ? source(request.mask) : null,
  });
  return createHash('sha256').update(`POST ${path}\n`).update(canonical).digest('hex');
}

export async function startIdempotency(
  db: Db,
  workspaceId: string,
  key: string | undefined,
  hash: string,
): Promise<EditIdempotency> {
  if (key === undefined) return { state: 'off' };
  return beginIdempotent(db, workspaceId, key, hash);
}

type Answer = Record<string, unknown> & { data?: Record<string, unknown>[] };

/** The answer as stored for replays: each archived b64_json becomes null. */
export function storedAnswer(answer: Answer): Answer {
  return {
    ...answer,
    data: (answer.data ?? []).map((d) => (typeof d.b64_json === 'string' ? { ...d, b64_json: null } : d)),
  };
}

/** A stored answer with its images read back from their archived files; 409 when one was deleted since. */
export async function replayedAnswer(
  deps: { s3: S3Client; bucket: string },
  workspaceId: string,
  stored: unknown,
): Promise<unknown> {
  const answer = stored as Answer;
  if (!Array.isArray(answer?.data)) return stored;
  const data = await Promise.all(
    answer.data.map(async (d) => {
      if (d.b64_json !== null || typeof d.svc_file_id !== 'string') return d;
      const object = await getObjectStream(deps.s3, deps.bucket, outputObjectKey(workspaceId, d.svc_file_id));
      if (!object) {
        throw errors.idempotencyKeyReused(
          'The request with this Idempotency-Key has completed, but an image ' +
            'of its answer has since been deleted, so it cannot be replayed.',
        );
      }
      return { ...d, b64_json: (await readAll(object.body)).toString('base64') };
    }),
  );
  return { ...answer, data };
}
