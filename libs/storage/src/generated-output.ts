// Where a generated output lives once archived. Everything is derived from (task, output index) and the server
// secret, so every writer of an output — the archiver copying a provider's URL, the edge storing bytes it already
// holds — names the same file id, storage key and public URL, and a re-run overwrites rather than duplicates.
import { createHmac } from 'node:crypto';
import { outputObjectKey } from './objects';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/**
 * The file id of a task's output: `file_` and 22 base62 characters of an HMAC under the server secret, so the same
 * output always gets the same id (and storage key) while nobody without the secret can derive it from a task id.
 */
export function outputFileId(secret: string, taskId: string, outputIndex: number): string {
  const mac = createHmac('sha256', secret).update(`archive/${taskId}/${outputIndex}`).digest();
  let out = '';
  for (let i = 0; i < 22; i++) out += BASE62[mac[i]! % 62];
  return `file_${out}`;
}

/**
 * The public copy of an archived output: its object on FILE_BASE_URL, the public (path-style) address of the
 * S3-compatible store, the same host and path shape as the presigned delivery links.
 */
function publicFileUrl(fileBaseUrl: string, bucket: string, storageKey: string): string {
  return `${fileBaseUrl}/${bucket}/${storageKey}`;
}

export interface GeneratedOutputLocation {
  fileId: string;
  storageKey: string;
  /** The public URL the output has once archived (svc_url). */
  url: string;
}

export function generatedOutputLocation(o: {
  secret: string;
  fileBaseUrl: string;
  bucket: string;
  workspaceId: string;
  taskId: string;
  outputIndex: number;
}): GeneratedOutputLocation {
  const fileId = outputFileId(o.secret, o.taskId, o.outputIndex);
  const storageKey = outputObjectKey(o.workspaceId, fileId);
  return { fileId, storageKey, url: publicFileUrl(o.fileBaseUrl, o.bucket, storageKey) };
}
