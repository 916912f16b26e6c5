// Large request bodies made on the fly and streamed with back-pressure, so the load generator never holds a file.
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

export const MiB = 1024 * 1024;
const BLOCK = randomBytes(MiB);
const CHUNK = 64 * 1024;

/** `size` bytes of a PDF (its header, then incompressible filler), as a stream of 64 KiB chunks. */
export function pdfStream(size) {
  const header = Buffer.from('%PDF-1.7\n');
  return Readable.from(
    (function* () {
      yield header;
      for (let sent = header.length; sent < size; ) {
        const at = sent % MiB;
        const n = Math.min(CHUNK, size - sent, MiB - at);
        yield BLOCK.subarray(at, at + n);
        sent += n;
      }
    })(),
    { objectMode: false },
  );
}

/**
 * POSTs a multipart/form-data body (the text `fields` first, then `file` of `size` bytes from `pdfStream`) to `url`,
 * streaming it; answers { status, text }.
 */
export async function postMultipart(url, { headers = {}, fields = {}, size, filename = 'bench.pdf' }) {
  const boundary = `----gensvc-bench-${randomBytes(8).toString('hex')}`;
  let head = '';
  for (const [name, value] of Object.entries(fields))
    head += `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  head +=
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: ` +
    `application/pdf\r\n\r\n`;
  const tail = `\r\n--${boundary}--\r\n`;
  const length = Buffer.byteLength(head) + size + Buffer.byteLength(tail);
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        hostname: u.hostname,
        port: u.port,
        path: u.pathname,
        method: 'POST',
        headers: {
          ...headers,
          'content-type': `multipart/form-data; boundary=${boundary}`,
          'content-length': String(length),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode, text }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    const body = Readable.from(
      (async function* () {
        yield Buffer.from(head);
        yield* pdfStream(size);
        yield Buffer.from(tail);
      })(),
    );
    // A server that answers early (413, 401) may close before the body is sent: its answer is what counts.
    pipeline(body, req).catch(() => {});
  });
}
