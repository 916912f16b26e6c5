// GET/HEAD /outputs/<id>.png|.mp4: the files Replicate predictions and fal requests output, as their CDNs serve
// them (replicate.delivery, fal.media): public, with Content-Type and Content-Length, no credentials needed.
import type { OutputFile, OutputStore } from '../jobs';
import type { Protocol } from '../protocol';
import { json } from '../reply';

const PATH = /^\/outputs\/([A-Za-z0-9-]+)\.(png|mp4)$/;
const EXTENSION: Record<string, string> = { 'image/png': 'png', 'video/mp4': 'mp4' };

const notFound = () => json(404, { detail: 'Not found' });

export function createOutputsProtocol(outputs: OutputStore): Protocol<OutputFile> {
  return {
    name: 'outputs',
    matches: (method, path) => (method === 'GET' || method === 'HEAD') && PATH.test(path),
    parse(r) {
      const [, id, ext] = PATH.exec(r.path)!;
      const model = outputs.modelOf(id!);
      const file = outputs.get(id!);
      if (!file || EXTENSION[file.contentType] !== ext) return { model, operation: 'output', error: notFound() };
      return { model, operation: 'output', value: file };
    },
    answer: (file) => ({
      kind: 'bytes',
      status: 200,
      body: file.bytes,
      contentType: file.contentType,
      headers: { 'cache-control': 'public, max-age=3600' },
    }),
    errorReply: (status, message) =>
      json(status, { detail: message ?? (status === 404 ? 'Not found' : `simulated status ${status}`) }),
    malformShape: (body) => body,
  };
}
