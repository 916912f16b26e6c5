// Streams one multipart/form-data upload into S3 without holding it in memory: the first bytes are looked at to
// decide the type (and the header limits) while the rest waits in the socket, then everything flows on into
// putObjectStream (one PutObject under a part size, an S3 multipart upload above). Whatever goes wrong, the promise
// settles only after every byte stored for this request is gone again.
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import type { S3Client } from '@aws-sdk/client-s3';
import { type AppError, errors, isAppError } from '@gensvc/errors';
import { deleteObject, putObjectStream } from '@gensvc/storage';
import busboy from 'busboy';
import { watchBody, type BodyDeadline } from '../../http/body-deadline';
import { formatBytes } from '../../http/errors';
import {
  checkMediaLimits,
  ACCEPTED_FORMATS,
  HeadPeek,
  SNIFF_BYTES,
  sniffMedia,
  type SniffedMedia,
} from '@gensvc/media';

export interface ReceiveUploadOptions {
  s3: S3Client;
  bucket: string;
  /** Where the bytes go; the caller names it before the row exists. */
  key: string;
  maxBytes: number;
  purposes: readonly string[];
  /** How long the client may pause, and take in all (uploadDeadline): past either, 408 and nothing is kept. */
  deadline: BodyDeadline;
}

export interface ReceivedUpload {
  purpose: string;
  /** As the client sent it; sanitised by the caller once the type is known. */
  filename: string | undefined;
  media: SniffedMedia;
  bytes: number;
  sha256: string;
}

/** Room for the form's other parts (purpose, part headers) beyond the file itself. */
export const FORM_OVERHEAD_BYTES = 1024 * 1024;

/** How long, and for how many more bytes, a cut-short upload is still read and dropped after its answer. */
const LINGER_MS = 5_000;

function linger(req: IncomingMessage, maxBytes: number) {
  let extra = 0;
  const cut = () => req.socket.destroy();
  const timer = setTimeout(cut, LINGER_MS);
  req.on('data', (chunk: Buffer) => {
    extra += chunk.length;
    if (extra > maxBytes) {
      clearTimeout(timer);
      cut();
    }
  });
  req.on('end', () => clearTimeout(timer));
  req.on('close', () => clearTimeout(timer));
  req.resume();
}

type Stored = { ok: true; media: SniffedMedia; bytes: number; sha256: string } | { ok: false; error: AppError };

const storageError = (cause: unknown) => errors.storageUnavailable('The file could not be stored; try again.', cause);

export function receiveUpload(req: IncomingMessage, o: ReceiveUploadOptions): Promise<ReceivedUpload> {
  return new Promise<ReceivedUpload>((resolve, reject) => {
    let bb: busboy.Busboy;
    try {
      bb = busboy({
        headers: req.headers,
        defParamCharset: 'utf8',
        // busboy reports the limit once a file reaches fileSize bytes, so one more than allowed: a file of exactly
        // maxBytes is accepted and a truncated one is always one that had more.
        limits: { fileSize: o.maxBytes + 1, files: 1, fields: 8, fieldSize: 1024, parts: 10, headerPairs: 16 },
      });
    } catch {
      reject(
        errors.unsupportedMediaType(
          'Send the upload as multipart/form-data (with a boundary), fields "file" and "purpose".',
        ),
      );
      return;
    }

    let failure: AppError | null = null;
    const fail = (e: AppError) => {
      failure ??= e;
    };
    let purpose: string | undefined;
    let filename: string | undefined;
    let stored: Promise<Stored> | null = null;
    let finished = false;
    let seen = 0;

    const finish = async (parseError: AppError | null) => {
      if (finished) return;
      finished = true;
      stopWatching();
      req.unpipe(bb);
      if (parseError) fail(parseError);
      const outcome = stored ? await stored : null;
      if (outcome && !outcome.ok) fail(outcome.error);
      if (!stored) fail(errors.invalidRequest('The form has no file: send it in the field "file".', 'file'));
      if (purpose === undefined)
        fail(
          errors.invalidRequest(
            `The form has no purpose: send the field "purpose" (${o.purposes.join(' or ')}).`,
            'purpose',
          ),
        );
      if (failure) {
        // A file that arrived whole but whose form was refused (a purpose after it, say) is removed again.
        if (outcome?.ok) await deleteObject(o.s3, o.bucket, o.key).catch(() => {});
        reject(failure);
        return;
      }
      const ok = outcome as Extract<Stored, { ok: true }>;
      resolve({ purpose: purpose!, filename, media: ok.media, bytes: ok.bytes, sha256: ok.sha256 });
    };

    const store = (file: Readable): Promise<Stored> =>
      new Promise<Stored>((settle) => {
        let upload: Promise<void> | null = null;
        const drain = () => {
          file.unpipe(peek);
          file.resume();
        };
        const give = (error: unknown) => {
          drain();
          settle({ ok: false, error: failure ?? (isAppError(error) ? error : storageError(error)) });
        };
        const peek = new HeadPeek(SNIFF_BYTES, (head, complete) => {
          const m = sniffMedia(head, complete);
          if (!m) {
            throw errors.unsupportedMediaType(
              `The file is not of a supported type (${ACCEPTED_FORMATS}). The ` +
                `type is read from the file's bytes, not its name or Content-Type.`,
              { param: 'file' },
            );
          }
          checkMediaLimits(m);
          upload = putObjectStream(o.s3, { bucket: o.bucket, key: o.key, body: peek, contentType: m.contentType });
          upload.then(() => settle({ ok: true, media: m, bytes: peek.bytes, sha256: peek.digest() }), give);
        });
        // Before a decision the refusal comes from here; after it, the Upload fails on the destroyed stream and
        // settles (once its multipart upload is aborted) through `give`.
        peek.on('error', (e) => (upload ? drain() : give(e)));
        file.on('limit', () => {
          fail(errors.payloadTooLarge(formatBytes(o.maxBytes)));
          peek.destroy(failure!);
        });
        file.on('error', (e) => peek.destroy(e));
        file.pipe(peek);
      });

    bb.on('field', (name, value, info) => {
      if (name !== 'purpose') return;
      purpose = value;
      if (info.valueTruncated || !o.purposes.includes(value)) {
        fail(errors.invalidRequest(`purpose must be one of: ${o.purposes.join(', ')}.`, 'purpose'));
      }
    });
    bb.on('file', (name, file, info) => {
      if (name !== 'file')
        fail(errors.invalidRequest(`Unexpected file field "${name}": send the file in the field "file".`, name));
      // Refused before its first byte (a bad purpose came first, or the wrong field): nothing is stored.
      if (failure) {
        file.on('error', () => {}); // destroyed with the form when a refused body is cut short
        return void file.resume();
      }
      filename = info.filename;
      stored = store(file);
    });
    bb.on('filesLimit', () => fail(errors.invalidRequest('Send exactly one file, in the field "file".', 'file')));
    bb.on('fieldsLimit', () => fail(errors.invalidRequest('The form has too many fields.')));
    bb.on('partsLimit', () => fail(errors.invalidRequest('The form has too many parts.')));
    bb.on(
      'error',
      (e) => void finish(errors.invalidRequest(`The multipart body is malformed: ${(e as Error).message}.`)),
    );
    bb.on('close', () => void finish(null));

    // A refused upload is read to its end so the client gets the answer, but only up to a bound. Past it the
    // answer goes out at once; the connection lingers (reading and dropping) a little longer so the client, still
    // sending, reads the answer rather than a reset, and is then cut.
    const count = (chunk: Buffer) => {
      seen += chunk.length;
      if (failure && seen > o.maxBytes + FORM_OVERHEAD_BYTES) {
        req.off('data', count);
        req.unpipe(bb);
        bb.destroy(failure);
        linger(req, o.maxBytes);
      }
    };
    req.on('data', count);
    req.on('error', (e) => bb.destroy(e));
    req.on('close', () => {
      if (!req.complete) bb.destroy(new Error('the client closed the connection'));
    });
    // A stalled or endless upload: its bytes already stored are removed (finish), and the answer is 408.
    const stopWatching = watchBody(req, o.deadline, (timeout) => {
      fail(timeout);
      req.unpipe(bb);
      bb.destroy(timeout);
    });
    req.pipe(bb);
  });
}
