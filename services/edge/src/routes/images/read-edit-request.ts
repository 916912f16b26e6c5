// Reads an edit request, multipart or JSON, into its fields and its image sources in the order they came. The
// whole multipart body is bounded while it streams (spec §8: 25 MiB) and kept in memory: the images are sent
// upstream whole, and again to the next channel on failover. A refused body is drained only up to a bound.
import { createHash } from 'node:crypto';
import { AppError, errors } from '@gensvc/errors';
import busboy from 'busboy';
import type { Request } from 'express';
import { watchBody, type BodyDeadline } from '../../http/body-deadline';
import { formatBytes } from '../../http/errors';
import { imageRefsOf, MAX_EDIT_REQUEST_BYTES, MAX_IMAGES, type ImageRef } from './schema';

export interface UploadedImage {
  kind: 'upload';
  /** The form field it came in: image, image[] or mask. */
  field: string;
  bytes: Buffer;
  sha256: string;
}

export type ImageSource = UploadedImage | ImageRef;

export interface RawEditRequest {
  /** Every other field as text (multipart values; JSON scalars turned into text). */
  fields: Record<string, string>;
  /** Uploads and image_url entries, in the order they came. */
  images: ImageSource[];
  mask: UploadedImage | null;
}

const IMAGE_FIELDS = new Set(['image', 'image[]']);
const URL_FIELDS = new Set(['image_url', 'image_url[]']);
/** What a refused multipart body is still read up to, so that its sender gets the answer rather than a reset. */
const DRAIN_BYTES = 8 * 1024 * 1024;

const tooLarge = () => errors.payloadTooLarge(formatBytes(MAX_EDIT_REQUEST_BYTES));

export async function readEditRequest(req: Request, deadline: BodyDeadline): Promise<RawEditRequest> {
  if (req.is('multipart/form-data')) return readMultipart(req, deadline);
  if (req.is(['application/json', 'application/*+json'])) return fromJson(req.body);
  throw errors.unsupportedMediaType(
    'Send the edit as multipart/form-data (fields model, prompt, image files, ' +
      'optional mask, or image_url) or as application/json with image_url.',
  );
}

function fromJson(body: unknown): RawEditRequest {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw errors.invalidRequest('The body must be a JSON object.');
  // No prototype: a field named "__proto__" or "constructor" is a field like any other (refused by name later).
  const fields: Record<string, string> = Object.create(null);
  let images: ImageSource[] = [];
  for (const [name, value] of Object.entries(body as Record<string, unknown>)) {
    if (URL_FIELDS.has(name)) {
      images = imageRefsOf(value);
    } else if (IMAGE_FIELDS.has(name) || name === 'mask') {
      throw errors.invalidRequest(
        `${name} is a file: send it in a multipart/form-data request, or pass images as image_url.`,
        name,
      );
    } else if (
      typeof value === 'string' ||
      typeof value === 'boolean' ||
      (typeof value === 'number' && Number.isFinite(value))
    ) {
      fields[name] = String(value);
    } else if (value !== null) {
      throw errors.invalidRequest(`${name} must be a string or a number.`, name);
    }
  }
  return { fields, images, mask: null };
}

function readMultipart(req: Request, deadline: BodyDeadline): Promise<RawEditRequest> {
  return new Promise<RawEditRequest>((resolve, reject) => {
    let bb: busboy.Busboy;
    try {
      bb = busboy({
        headers: req.headers,
        defParamCharset: 'utf8',
        limits: {
          fileSize: MAX_EDIT_REQUEST_BYTES + 1,
          files: MAX_IMAGES + 1,
          fields: 48,
          fieldSize: 256 * 1024,
          parts: MAX_IMAGES + 49,
          headerPairs: 16,
        },
      });
    } catch {
      reject(errors.unsupportedMediaType('The multipart/form-data request has no boundary.'));
      return;
    }

    const fields: Record<string, string> = Object.create(null);
    const images: ImageSource[] = [];
    let mask: UploadedImage | null = null;
    let failure: AppError | null = null;
    const fail = (e: unknown) => {
      failure ??=
        e instanceof AppError
          ? e
          : errors.invalidRequest(`The multipart body is malformed: ${(e as Error)?.message ?? e}.`);
    };
    // Settles once the parser has closed and every file part has ended, whichever comes last.
    let open = 1;
    let seen = 0;
    const done = () => {
      if (--open !== 0) return;
      stopWatching();
      req.unpipe(bb);
      if (failure) return reject(failure);
      resolve({ fields, images, mask });
    };

    bb.on('field', (name, value, info) => {
      if (failure) return;
      try {
        if (info.valueTruncated) throw errors.invalidRequest(`${name} is too long.`, name);
        // What the JSON reader refuses in a JSON edit: its fields are stored with the task, and Postgres holds no NUL.
        if (value.includes('\u0000'))
          throw errors.invalidCharacter(`${name} holds the NUL character, which no field may hold.`, name);
        if (URL_FIELDS.has(name)) {
          images.push(...imageRefsOf(value));
        } else if (IMAGE_FIELDS.has(name) || name === 'mask') {
          throw errors.invalidRequest(`${name} must be a file part (with a filename).`, name);
        } else if (name in fields) {
          throw errors.invalidRequest(`${name} is given more than once.`, name);
        } else {
          fields[name] = value;
        }
      } catch (e) {
        fail(e);
      }
    });

    bb.on('file', (name, stream, _info) => {
      open++;
      const parts: Buffer[] = [];
      const hash = createHash('sha256');
      let image: UploadedImage | null = null;
      if (!failure) {
        if (IMAGE_FIELDS.has(name)) {
          image = { kind: 'upload', field: name, bytes: Buffer.alloc(0), sha256: '' };
          images.push(image);
        } else if (name === 'mask') {
          if (mask) fail(errors.invalidRequest('Send at most one mask.', 'mask'));
          else mask = image = { kind: 'upload', field: name, bytes: Buffer.alloc(0), sha256: '' };
        } else {
          fail(
            errors.invalidRequest(
              `Unexpected file field "${name}": send images as "image" (or "image[]") and the mask as "mask".`,
              name,
            ),
          );
        }
      }
      stream.on('data', (chunk: Buffer) => {
        // Once refused, nothing more is kept.
        if (failure) return;
        parts.push(chunk);
        hash.update(chunk);
      });
      stream.on('limit', () => fail(tooLarge()));
      stream.on('error', fail);
      stream.on('end', () => {
        if (image && !failure) {
          image.bytes = Buffer.concat(parts);
          image.sha256 = hash.digest('hex');
        }
        done();
      });
    });

    bb.on('filesLimit', () => fail(errors.invalidRequest(`Send at most ${MAX_IMAGES} images and one mask.`, 'image')));
    bb.on('fieldsLimit', () => fail(errors.invalidRequest('The form has too many fields.')));
    bb.on('partsLimit', () => fail(errors.invalidRequest('The form has too many parts.')));
    bb.on('error', (e) => {
      fail(e);
      open = 1;
      done();
    });
    bb.on('close', done);

    req.on('data', (chunk: Buffer) => {
      seen += chunk.length;
      if (seen > MAX_EDIT_REQUEST_BYTES) fail(tooLarge());
      if (failure && seen > MAX_EDIT_REQUEST_BYTES + DRAIN_BYTES) {
        req.unpipe(bb);
        bb.destroy(failure);
      }
    });
    req.on('error', (e) => bb.destroy(e));
    req.on('close', () => {
      if (!req.complete) bb.destroy(new Error('the client closed the connection'));
    });
    // A body that stalls or takes too long: 408, and nothing of it is kept.
    const stopWatching = watchBody(req, deadline, (timeout) => {
      fail(timeout);
      req.unpipe(bb);
      bb.destroy(timeout);
    });
    req.pipe(bb);
  });
}
