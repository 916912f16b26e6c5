// Turns an edit's image sources into checked bytes: uploads as they came, image_url entries fetched through the
// outbound client (public HTTPS on the default port only, DESIGN.md §5) or read from the workspace's files. Every
// image is typed from its bytes and held to spec §8; together they stay within the request's 25 MiB.
import { pipeline, type Readable } from 'node:stream';
import { fileRepository, type FileRow } from '@gensvc/db';
import { errors, isAppError, type AppError } from '@gensvc/errors';
import { fetchChecked, isOutboundError } from '@gensvc/outbound';
import { getObjectStream } from '@gensvc/storage';
import type { EdgeDeps } from '../../deps';
import { formatBytes } from '../../http/errors';
import { checkMediaLimits, HeadPeek, sha256Hex, sniffMedia, SNIFF_BYTES, type SniffedMedia } from '@gensvc/media';
import { imageUrlRefused, shownUrl } from './image-url-probe';
import { FILE_ID } from '../files/schema';
import type { ImageSource, UploadedImage } from './read-edit-request';
import { IMAGE_FORMATS, IMAGE_TYPES, MAX_EDIT_REQUEST_BYTES, MAX_IMAGE_BYTES } from './schema';

type ImageOrigin = { source: 'upload' } | { source: 'url'; url: string } | { source: 'file'; file_id: string };

export interface EditImage {
  bytes: Buffer;
  media: SniffedMedia;
  sha256: string;
  origin: ImageOrigin;
}

/** A caller's image_url is given this long to answer in full. */
const FETCH_TIMEOUT_MS = 30_000;

/** The bytes' image type, or a 400 naming `param`; beyond spec §8's limits, 400 media_limit_exceeded. */
function checkImage(bytes: Buffer, param: string, what: string, complete = true): SniffedMedia {
  const media = sniffMedia(bytes, complete);
  if (media?.kind !== 'image' || !(IMAGE_TYPES as readonly string[]).includes(media.contentType)) {
    throw errors.invalidImage(
      `${what} is not a supported image (${IMAGE_FORMATS}); the ` +
        `type is read from its bytes, not its name or Content-Type.`,
      param,
    );
  }
  if (bytes.length > MAX_IMAGE_BYTES) {
    throw errors.mediaLimitExceeded(
      `${what} is ${bytes.length} bytes; an image may have at most ${MAX_IMAGE_BYTES} bytes (30 MB).`,
      param,
    );
  }
  try {
    checkMediaLimits(media);
  } catch (e) {
    if (isAppError(e) && e.code === 'media_limit_exceeded')
      throw errors.mediaLimitExceeded(`${what}: ${e.message}`, param);
    throw e;
  }
  return media;
}

function uploadedImage(upload: UploadedImage, what: string): EditImage {
  return {
    bytes: upload.bytes,
    media: checkImage(upload.bytes, upload.field, what),
    sha256: upload.sha256,
    origin: { source: 'upload' },
  };
}

const combinedTooLarge = () =>
  errors.imagesTooLarge(
    `The images of an edit request (uploaded, fetched from image_url and read ` +
      `from files) may total at most ${formatBytes(MAX_EDIT_REQUEST_BYTES)}.`,
    'image_url',
  );

export interface ResolveDeps extends Pick<EdgeDeps, 'config' | 'db' | 's3' | 'outbound'> {}

/**
 * Every source in order, checked. Uploads were bounded with the request body; references are read one after the
 * other, each bounded by what is left of the 25 MiB, so memory stays within it whatever the references point at.
 */
export async function resolveImages(
  deps: ResolveDeps,
  workspaceId: string,
  sources: ImageSource[],
  mask: UploadedImage | null,
): Promise<{ images: EditImage[]; mask: EditImage | null }> {
  const many = sources.length > 1;
  const label = (i: number) => (many ? `image ${i + 1}` : 'The image');
  const images: (EditImage | null)[] = sources.map((s, i) => (s.kind === 'upload' ? uploadedImage(s, label(i)) : null));
  const checkedMask = mask ? uploadedImage(mask, 'The mask') : null;
  let budget =
    MAX_EDIT_REQUEST_BYTES -
    images.reduce((sum, img) => sum + (img?.bytes.length ?? 0), 0) -
    (checkedMask?.bytes.length ?? 0);
  let refIndex = 0;
  for (const [i, source] of sources.entries()) {
    if (source.kind === 'upload') continue;
    const what = `image_url${many ? `[${refIndex}]` : ''}`;
    refIndex++;
    const image =
      source.kind === 'url'
        ? await fetchImage(deps, source.url, what, budget)
        : await readFileImage(deps, workspaceId, source.fileId, what, budget);
    budget -= image.bytes.length;
    images[i] = image;
  }
  return { images: images as EditImage[], mask: checkedMask };
}

async function fetchImage(deps: ResolveDeps, url: string, what: string, budget: number): Promise<EditImage> {
  if (budget <= 0) throw combinedTooLarge();
  let bytes: Buffer;
  let media: SniffedMedia | undefined;
  // The type and pixel size are checked on the head as it arrives (a refused image is not downloaded whole); the
  // peek counts and hashes every byte on the way.
  const peek = new HeadPeek(SNIFF_BYTES, (head, complete) => {
    media = checkImageOr(head, complete, url, what);
  });
  try {
    const answer = await fetchChecked(url, {
      allowCidrs: deps.config.outbound.allowCidrs,
      ...deps.outbound,
      defaultPortOnly: true,
      maxBytes: Math.min(budget, MAX_IMAGE_BYTES),
      timeoutMs: FETCH_TIMEOUT_MS,
      headers: { accept: 'image/png, image/jpeg, image/webp, image/gif' },
    });
    // pipeline: a refused head stops the download, and the download's failure reaches the reader.
    bytes = await readAll(pipeline(answer.body, peek, () => {}));
  } catch (e) {
    if (isAppError(e)) throw e;
    if (isOutboundError(e) && e.reason === 'too_large') throw combinedTooLarge();
    throw imageUrlRefused(e, what, url, 'image_url');
  }
  return { bytes, media: media!, sha256: peek.digest(), origin: { source: 'url', url } };
}

async function readFileImage(
  deps: ResolveDeps,
  workspaceId: string,
  fileId: string,
  what: string,
  budget: number,
): Promise<EditImage> {
  const ref: WorkspaceImageRef = {
    fileId,
    param: 'image_url',
    what,
    notFound: () => errors.fileNotFound(`No file "${fileId}" exists in this workspace.`, 'image_url'),
  };
  const row = await workspaceImageRow(deps, workspaceId, ref);
  if (Number(row.bytes) > budget) throw combinedTooLarge();
  const { bytes, media } = await readWorkspaceImage(deps, row, ref);
  return { bytes, media, sha256: sha256Hex(bytes), origin: { source: 'file', file_id: fileId } };
}

export type WorkspaceImageDeps = Pick<EdgeDeps, 'config' | 'db' | 's3'>;

/** A workspace file named as an image input (spec §4.4), and how the request names it. */
export interface WorkspaceImageRef {
  fileId: string;
  /** The field errors name. */
  param: string;
  /** How messages name the image, e.g. "image_url[1]". */
  what: string;
  /** The answer for a missing file, and so for another workspace's (DESIGN.md §4): each route keeps its own code. */
  notFound: () => AppError;
}

/**
 * The file's row, checked before any byte is read: a visible file of the workspace, an image by its stored type
 * and within spec §8's 30 MB.
 */
export async function workspaceImageRow(
  deps: WorkspaceImageDeps,
  workspaceId: string,
  ref: WorkspaceImageRef,
): Promise<FileRow> {
  const row = FILE_ID.test(ref.fileId) ? await fileRepository.get(deps.db, workspaceId, ref.fileId) : null;
  if (!row) throw ref.notFound();
  if (!(IMAGE_TYPES as readonly string[]).includes(row.contentType)) {
    throw errors.invalidImage(
      `${ref.what}: file ${ref.fileId} is ${row.contentType}, not an image (${IMAGE_FORMATS}).`,
      ref.param,
    );
  }
  if (row.bytes > BigInt(MAX_IMAGE_BYTES)) {
    throw errors.mediaLimitExceeded(
      `${ref.what}: file ${ref.fileId} is ${row.bytes} bytes; an ` +
        `image may have at most ${MAX_IMAGE_BYTES} bytes (30 MB).`,
      ref.param,
    );
  }
  return row;
}

/**
 * The row's bytes from S3, exactly as many as it records (no more is ever held), typed again from them (the stored
 * type was decided from them at upload) and held to spec §8's pixel limit.
 */
export async function readWorkspaceImage(
  deps: WorkspaceImageDeps,
  row: FileRow,
  ref: WorkspaceImageRef,
): Promise<{ bytes: Buffer; media: SniffedMedia }> {
  const unreadable = (cause: unknown) =>
    errors.storageUnavailable(`${ref.what}: file ${ref.fileId} could not be read; try again.`, cause);
  const object = await getObjectStream(deps.s3, deps.config.s3.bucket, row.storageKey).catch((e) => {
    throw unreadable(e);
  });
  // The row is visible but its bytes are gone: a delete in progress.
  if (!object) throw ref.notFound();
  const expected = Number(row.bytes);
  const bytes = await readAll(object.body, expected).catch((e) => {
    throw unreadable(e);
  });
  if (bytes.length !== expected)
    throw unreadable(new Error(`stored object holds ${bytes.length} bytes; its row records ${expected}`));
  return { bytes, media: checkImage(bytes, ref.param, `${ref.what} (file ${ref.fileId})`) };
}

/** checkImage for fetched bytes (or their head, checked as it arrives), a wrong type answered as the URL's fault. */
function checkImageOr(head: Buffer, complete: boolean, url: string, what: string): SniffedMedia {
  try {
    return checkImage(head, 'image_url', what, complete);
  } catch (e) {
    if (isAppError(e) && e.code === 'invalid_image') {
      throw errors.invalidImageUrl(
        `${what} (${shownUrl(url)}) does not return a supported image ` +
          `(${IMAGE_FORMATS}) [type]; the type is read from the bytes.`,
      );
    }
    throw e;
  }
}

/** The stream's bytes; past `limit` bytes it is destroyed and this throws. */
export async function readAll(body: Readable, limit = Number.POSITIVE_INFINITY): Promise<Buffer> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += (chunk as Buffer).length;
    if (size > limit) {
      body.destroy();
      throw new Error(`the stream holds more than ${limit} bytes`);
    }
    parts.push(chunk as Buffer);
  }
  return Buffer.concat(parts, size);
}
