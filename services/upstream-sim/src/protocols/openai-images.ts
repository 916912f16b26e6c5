// OpenAI POST /v1/images/edits (multipart: model, prompt, image or image[] files, mask, n, size,
// response_format) answering real PNG bytes, and GET /files/<id>.png serving the results asked for as urls.
import { randomBytes } from 'node:crypto';
import busboy from 'busboy';
import { editedImagePng, IMAGE_SIZES, tokensOf, type ImageSize } from '../deterministic';
import { sniffImageType } from '../png';
import { bearer, type Protocol, type SimRequest } from '../protocol';
import { json, type Reply } from '../reply';
import { missingParam, NO_KEY, openAiError, requestId } from './openai-errors';

/** Results handed out as urls; the oldest go first once `limit` is reached, so a long benchmark stays bounded. */
export class FileStore {
  private files = new Map<string, Buffer>();
  constructor(private readonly limit = 256) {}

  put(bytes: Buffer): string {
    const id = `img_${randomBytes(12).toString('hex')}`;
    this.files.set(id, bytes);
    if (this.files.size > this.limit) this.files.delete(this.files.keys().next().value!);
    return id;
  }

  get(id: string): Buffer | undefined {
    return this.files.get(id);
  }
}

interface UploadedFile {
  field: string;
  mimeType: string;
  data: Buffer;
}

interface EditRequest {
  model: string;
  prompt: string;
  images: Buffer[];
  n: number;
  size: ImageSize;
  responseFormat: 'b64_json' | 'url';
}

const MAX_FILE_BYTES = 50 * 1024 * 1024;
const SUPPORTED = "Supported file formats are 'image/jpeg', 'image/png', and 'image/webp'.";

function readMultipart(
  r: SimRequest,
): Promise<{ fields: Map<string, string>; files: UploadedFile[] } | { problem: Reply }> {
  return new Promise((resolve) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: r.req.headers,
        limits: { fileSize: MAX_FILE_BYTES, files: 17, fields: 32, fieldSize: 64 * 1024 },
      });
    } catch {
      return resolve({
        problem: openAiError(
          400,
          `Invalid Content-Type header (${r.req.headers['content-type'] ?? 'none'}), expected multipart/form-data.`,
        ),
      });
    }
    const fields = new Map<string, string>();
    const files: UploadedFile[] = [];
    let problem: Reply | undefined;
    // Done only when the parser has closed and every file stream has ended, whichever comes last.
    let open = 1;
    const settle = () => {
      if (--open === 0) resolve(problem ? { problem } : { fields, files });
    };
    parser.on('field', (name, value) => fields.set(name, value));
    parser.on('file', (field, stream, info) => {
      open++;
      const parts: Buffer[] = [];
      stream.on('data', (d: Buffer) => parts.push(d));
      stream.on(
        'limit',
        () =>
          (problem ??= openAiError(
            400,
            `Invalid file '${field}': the file is larger than 50 MB.`,
            field,
            'file_too_large',
          )),
      );
      stream.on('end', () => {
        files.push({ field, mimeType: info.mimeType, data: Buffer.concat(parts) });
        settle();
      });
    });
    parser.on('filesLimit', () => (problem ??= openAiError(400, 'Too many files: at most 16 images and a mask.')));
    parser.on('error', (e: Error) => {
      open = -1;
      resolve({ problem: openAiError(400, `Malformed multipart body: ${e.message}`) });
    });
    parser.on('close', settle);
    parser.end(r.body);
  });
}

export function createImagesProtocol(files: FileStore): Protocol<EditRequest> {
  return {
    name: 'openai-images',
    matches: (method, path) => method === 'POST' && path === '/v1/images/edits',
    async parse(r) {
      if (!bearer(r.req)) return { error: openAiError(401, NO_KEY, null, null) };
      const form = await readMultipart(r);
      if ('problem' in form) return { error: form.problem };
      const model = form.fields.get('model') || 'dall-e-2';
      const prompt = form.fields.get('prompt');
      if (!prompt) return { model, error: missingParam('prompt') };
      const images = form.files.filter((f) => f.field === 'image' || f.field === 'image[]');
      if (images.length === 0) return { model, error: missingParam('image') };
      for (const file of [...images, ...form.files.filter((f) => f.field === 'mask')]) {
        const type = sniffImageType(file.data);
        const accepted =
          file.field === 'mask'
            ? type === 'image/png'
            : type === 'image/png' || type === 'image/jpeg' || type === 'image/webp';
        if (!accepted) {
          const declared = file.mimeType || 'application/octet-stream';
          const field = file.field === 'mask' ? 'mask' : 'image';
          const formats = file.field === 'mask' ? "The mask must be a 'image/png' file." : SUPPORTED;
          return {
            model,
            error: openAiError(
              400,
              `Invalid file '${field}': unsupported mimetype ('${declared}'). ${formats}`,
              field,
              'unsupported_file_mimetype',
            ),
          };
        }
      }
      const nText = form.fields.get('n') ?? '1';
      const n = Number(nText);
      if (!/^\d+$/.test(nText) || n < 1 || n > 10) {
        return {
          model,
          error: openAiError(
            400,
            `Invalid 'n': expected an integer between 1 and 10, but got ${JSON.stringify(nText)} instead.`,
            'n',
            'invalid_value',
          ),
        };
      }
      const sizeText = form.fields.get('size') ?? 'auto';
      const size = (sizeText === 'auto' ? '256x256' : sizeText) as ImageSize;
      if (!IMAGE_SIZES.includes(size)) {
        return {
          model,
          error: openAiError(
            400,
            `Invalid value: '${sizeText}'. ` +
              `Supported values are: ${IMAGE_SIZES.map((s) => `'${s}'`).join(', ')} and 'auto'.`,
            'size',
            'invalid_value',
          ),
        };
      }
      const responseFormat = form.fields.get('response_format') ?? 'b64_json';
      if (responseFormat !== 'b64_json' && responseFormat !== 'url') {
        return {
          model,
          error: openAiError(
            400,
            `Invalid value: '${responseFormat}'. Supported values are: 'url' and 'b64_json'.`,
            'response_format',
            'invalid_value',
          ),
        };
      }
      return { model, value: { model, prompt, images: images.map((f) => f.data), n, size, responseFormat } };
    },
    answer(request, r) {
      const data = Array.from({ length: request.n }, (_, index) => {
        const png = editedImagePng({ prompt: request.prompt, images: request.images, index, size: request.size });
        if (request.responseFormat === 'b64_json') return { b64_json: png.toString('base64') };
        return { url: `${r.origin}${r.prefix}/files/${files.put(png)}.png` };
      });
      const body: Record<string, unknown> = { created: Math.floor(Date.now() / 1000), data };
      if (request.model.startsWith('gpt-image')) {
        const [w, h] = request.size.split('x').map(Number) as [number, number];
        const textTokens = tokensOf(request.prompt);
        const imageTokens = 65 * request.images.length;
        const outputTokens = request.n * Math.ceil((w * h) / (256 * 256)) * 68;
        Object.assign(body, {
          background: 'opaque',
          output_format: 'png',
          quality: 'medium',
          size: request.size,
          usage: {
            input_tokens: textTokens + imageTokens,
            input_tokens_details: { text_tokens: textTokens, image_tokens: imageTokens },
            output_tokens: outputTokens,
            total_tokens: textTokens + imageTokens + outputTokens,
          },
        });
      }
      return json(200, body, { 'x-request-id': requestId() });
    },
    errorReply: (status, message) => openAiError(status, message),
    malformShape: (body) => ({ ...(body as object), data: 'not-a-list' }),
  };
}

const FILE_PATH = /^\/files\/(img_[0-9a-f]+)\.png$/;

export function createFilesProtocol(files: FileStore): Protocol<Buffer> {
  return {
    name: 'files',
    matches: (method, path) => (method === 'GET' || method === 'HEAD') && FILE_PATH.test(path),
    parse(r) {
      const bytes = files.get(FILE_PATH.exec(r.path)![1]!);
      return bytes
        ? { value: bytes }
        : {
            error: json(404, {
              error: { message: 'No such file.', type: 'invalid_request_error', param: null, code: 'not_found' },
            }),
          };
    },
    answer: (bytes) => ({ kind: 'bytes', status: 200, body: bytes, contentType: 'image/png' }),
    errorReply: (status, message) => openAiError(status, message),
    malformShape: (body) => body,
  };
}
