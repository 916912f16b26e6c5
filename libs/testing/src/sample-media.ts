// Test support: small, structurally valid files of every accepted type, built in code (no binary fixtures), with
// the header values the limits look at chosen by the caller.
import { encodePng } from '@gensvc/media';

const u16be = (n: number) => Buffer.from([(n >> 8) & 0xff, n & 0xff]);
const u16le = (n: number) => Buffer.from([n & 0xff, (n >> 8) & 0xff]);
const u32be = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
};
const u32le = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n >>> 0);
  return b;
};

/** Writes bits least-significant first, as GIF's LZW and WebP's VP8L streams are packed. */
class LsbBits {
  private bytes: number[] = [];
  private acc = 0;
  private n = 0;
  write(value: number, bits: number) {
    for (let i = 0; i < bits; i++) {
      this.acc |= ((value >> i) & 1) << this.n;
      if (++this.n === 8) this.flush();
    }
  }
  private flush() {
    this.bytes.push(this.acc);
    this.acc = 0;
    this.n = 0;
  }
  done(): Buffer {
    if (this.n > 0) this.flush();
    return Buffer.from(this.bytes);
  }
}

/** A black 8-bit greyscale PNG. */
export function png(width: number, height: number): Buffer {
  return encodePng({ width, height, pixels: Buffer.alloc(width * height), colour: 'grey' });
}

const segment = (marker: number, body: Buffer) =>
  Buffer.concat([Buffer.from([0xff, marker]), u16be(body.length + 2), body]);

/**
 * A grey baseline JPEG: one component, Huffman tables with a single one-bit code each, so every 8×8 block is the
 * two bits "DC difference 0, end of block". `exifBytes` adds an APP1 segment before the frame header, as cameras do.
 */
export function jpeg(width: number, height: number, exifBytes = 0): Buffer {
  const blocks = Math.ceil(width / 8) * Math.ceil(height / 8);
  const scan = Buffer.alloc(Math.ceil((blocks * 2) / 8));
  const padBits = scan.length * 8 - blocks * 2;
  if (padBits > 0) scan[scan.length - 1] = (1 << padBits) - 1; // padded with one bits
  const oneCodeTable = (tableClass: number) =>
    Buffer.concat([Buffer.from([tableClass << 4]), Buffer.from([1, ...Array(15).fill(0)]), Buffer.from([0])]);
  const parts = [
    Buffer.from([0xff, 0xd8]),
    segment(0xe0, Buffer.concat([Buffer.from('JFIF\0', 'latin1'), Buffer.from([1, 1, 0, 0, 1, 0, 1, 0, 0])])),
  ];
  for (let left = exifBytes; left > 0; left -= 65_000) {
    parts.push(segment(0xe1, Buffer.concat([Buffer.from('Exif\0\0', 'latin1'), Buffer.alloc(Math.min(left, 65_000))])));
  }
  parts.push(
    segment(0xdb, Buffer.concat([Buffer.from([0]), Buffer.alloc(64, 1)])),
    segment(0xc0, Buffer.concat([Buffer.from([8]), u16be(height), u16be(width), Buffer.from([1, 1, 0x11, 0])])),
    segment(0xc4, oneCodeTable(0)),
    segment(0xc4, oneCodeTable(1)),
    segment(0xda, Buffer.from([1, 1, 0x00, 0, 63, 0])),
    scan,
    Buffer.from([0xff, 0xd9]),
  );
  return Buffer.concat(parts);
}

/** A black two-colour GIF; the LZW stream restarts (clear code) every two pixels so its code size stays 3 bits. */
export function gif(width: number, height: number): Buffer {
  const bits = new LsbBits();
  const pixels = width * height;
  for (let p = 0; p < pixels; p += 2) {
    bits.write(4, 3); // clear
    bits.write(0, 3);
    if (p + 1 < pixels) bits.write(0, 3);
  }
  bits.write(5, 3); // end of information
  const data = bits.done();
  const blocks: Buffer[] = [];
  for (let i = 0; i < data.length; i += 255) {
    const part = data.subarray(i, i + 255);
    blocks.push(Buffer.from([part.length]), part);
  }
  return Buffer.concat([
    Buffer.from('GIF89a', 'latin1'),
    u16le(width),
    u16le(height),
    Buffer.from([0x80, 0, 0]), // global colour table of two entries
    Buffer.from([0, 0, 0, 255, 255, 255]),
    Buffer.from([0x2c]),
    u16le(0),
    u16le(0),
    u16le(width),
    u16le(height),
    Buffer.from([0, 2]), // no local table; LZW minimum code size 2
    ...blocks,
    Buffer.from([0, 0x3b]),
  ]);
}

function riff(form: string, chunks: Buffer[]): Buffer {
  const body = Buffer.concat([Buffer.from(form, 'latin1'), ...chunks]);
  return Buffer.concat([Buffer.from('RIFF', 'latin1'), u32le(body.length), body]);
}

function riffChunk(id: string, data: Buffer): Buffer {
  const pad = data.length % 2 ? Buffer.alloc(1) : Buffer.alloc(0);
  return Buffer.concat([Buffer.from(id, 'latin1'), u32le(data.length), data, pad]);
}

/** A lossless (VP8L) transparent image: five single-symbol prefix codes, so the pixels take no bits at all. */
function vp8l(width: number, height: number): Buffer {
  const bits = new LsbBits();
  bits.write(width - 1, 14);
  bits.write(height - 1, 14);
  bits.write(0, 1); // alpha hint
  bits.write(0, 3); // version
  bits.write(0, 1); // no transform
  bits.write(0, 1); // no colour cache
  bits.write(0, 1); // no meta prefix codes
  for (let i = 0; i < 5; i++) bits.write(0b0001, 4); // simple code, one symbol, 1-bit symbol 0
  return Buffer.concat([Buffer.from([0x2f]), bits.done()]);
}

/** WebP: a plain VP8L file, or the extended form (VP8X canvas header) around it. */
export function webp(width: number, height: number, form: 'VP8L' | 'VP8X' = 'VP8L'): Buffer {
  const image = riffChunk('VP8L', vp8l(width, height));
  if (form === 'VP8L') return riff('WEBP', [image]);
  const canvas = Buffer.alloc(10);
  canvas.writeUIntLE(width - 1, 4, 3);
  canvas.writeUIntLE(height - 1, 7, 3);
  return riff('WEBP', [riffChunk('VP8X', canvas), image]);
}

/** A lossy (VP8) WebP header: frame tag, start code and size. The frame data after it is not a real picture. */
export function webpLossyHeader(width: number, height: number): Buffer {
  const frame = Buffer.concat([
    Buffer.from([0x10, 0x02, 0x00, 0x9d, 0x01, 0x2a]),
    u16le(width),
    u16le(height),
    Buffer.alloc(20),
  ]);
  return riff('WEBP', [riffChunk('VP8 ', frame)]);
}

/** PCM WAV of silence: `seconds` of 8-bit mono at `sampleRate`. */
export function wav(seconds: number, sampleRate = 8000): Buffer {
  const fmt = Buffer.concat([u16le(1), u16le(1), u32le(sampleRate), u32le(sampleRate), u16le(1), u16le(8)]);
  return riff('WAVE', [
    riffChunk('fmt ', fmt),
    riffChunk('data', Buffer.alloc(Math.round(seconds * sampleRate), 0x80)),
  ]);
}

/** MPEG-1 Layer III frames (128 kbit/s, 44.1 kHz, 417 bytes each) of silence, optionally after an ID3v2.3 tag. */
export function mp3(frames: number, withId3 = false): Buffer {
  const frame = Buffer.concat([Buffer.from([0xff, 0xfb, 0x90, 0x00]), Buffer.alloc(413)]);
  const parts: Buffer[] = [];
  if (withId3) {
    const title = Buffer.concat([
      Buffer.from('TIT2', 'latin1'),
      u32be(6),
      Buffer.from([0, 0, 0]),
      Buffer.from('Test\0', 'latin1'),
    ]);
    const size = title.length;
    const synchsafe = Buffer.from([(size >> 21) & 0x7f, (size >> 14) & 0x7f, (size >> 7) & 0x7f, size & 0x7f]);
    parts.push(Buffer.from('ID3', 'latin1'), Buffer.from([3, 0, 0]), synchsafe, title);
  }
  for (let i = 0; i < frames; i++) parts.push(frame);
  return Buffer.concat(parts);
}

const box = (type: string, ...payload: Buffer[]) => {
  const body = Buffer.concat(payload);
  return Buffer.concat([u32be(body.length + 8), Buffer.from(type, 'latin1'), body]);
};

export interface Mp4Options {
  majorBrand?: string;
  compatibleBrands?: string[];
  /** Handler type of each track: 'vide', 'soun'. */
  tracks?: string[];
  durationSeconds?: number;
  /** Put moov after mdat, as recorders that do not "fast start" do. */
  moovAtEnd?: boolean;
  mdatBytes?: number;
}

/** An MP4: ftyp, moov (mvhd with the duration, one trak per handler) and an mdat of zero bytes. */
export function mp4(o: Mp4Options = {}): Buffer {
  const timescale = 1000;
  const mvhd = box(
    'mvhd',
    Buffer.alloc(4), // version 0, flags
    u32be(0),
    u32be(0),
    u32be(timescale),
    u32be(Math.round((o.durationSeconds ?? 5) * timescale)),
    u32be(0x00010000),
    u16be(0x0100),
    Buffer.alloc(10),
    Buffer.concat([
      u32be(0x00010000),
      u32be(0),
      u32be(0),
      u32be(0),
      u32be(0x00010000),
      u32be(0),
      u32be(0),
      u32be(0),
      u32be(0x40000000),
    ]),
    Buffer.alloc(24),
    u32be((o.tracks ?? ['vide']).length + 1),
  );
  const traks = (o.tracks ?? ['vide']).map((handler) =>
    box(
      'trak',
      box(
        'mdia',
        box('hdlr', Buffer.alloc(4), u32be(0), Buffer.from(handler, 'latin1'), Buffer.alloc(12), Buffer.from('\0')),
      ),
    ),
  );
  const ftyp = box(
    'ftyp',
    Buffer.from(o.majorBrand ?? 'isom', 'latin1'),
    u32be(0x200),
    Buffer.from((o.compatibleBrands ?? ['isom', 'iso2', 'avc1', 'mp41']).join(''), 'latin1'),
  );
  const moov = box('moov', mvhd, ...traks);
  const mdat = box('mdat', Buffer.alloc(o.mdatBytes ?? 64));
  return Buffer.concat(o.moovAtEnd ? [ftyp, mdat, moov] : [ftyp, moov, mdat]);
}

function ebmlSize(n: number): Buffer {
  if (n < 127) return Buffer.from([0x80 | n]);
  const b = Buffer.alloc(8);
  b[0] = 0x01;
  b.writeUIntBE(n, 2, 6);
  return b;
}
const el = (id: number[], ...payload: Buffer[]) => {
  const body = Buffer.concat(payload);
  return Buffer.concat([Buffer.from(id), ebmlSize(body.length), body]);
};
const ebmlUint = (n: number) => Buffer.from([n]);

export interface WebmOptions {
  docType?: string;
  durationSeconds?: number;
  /** Track types: 1 video, 2 audio. */
  tracks?: number[];
}

/** A WebM: EBML header, Segment with Info (1 ms ticks and the duration), Tracks, and one empty Cluster. */
export function webm(o: WebmOptions = {}): Buffer {
  const duration = Buffer.alloc(8);
  duration.writeDoubleBE((o.durationSeconds ?? 5) * 1000);
  const header = el(
    [0x1a, 0x45, 0xdf, 0xa3],
    el([0x42, 0x86], ebmlUint(1)),
    el([0x42, 0xf7], ebmlUint(1)),
    el([0x42, 0xf2], ebmlUint(4)),
    el([0x42, 0xf3], ebmlUint(8)),
    el([0x42, 0x82], Buffer.from(o.docType ?? 'webm', 'latin1')),
    el([0x42, 0x87], ebmlUint(2)),
    el([0x42, 0x85], ebmlUint(2)),
  );
  const info = el(
    [0x15, 0x49, 0xa9, 0x66],
    el([0x2a, 0xd7, 0xb1], Buffer.from([0x0f, 0x42, 0x40])),
    el([0x44, 0x89], duration),
    el([0x4d, 0x80], Buffer.from('gensvc-test')),
  );
  const tracks = el(
    [0x16, 0x54, 0xae, 0x6b],
    ...(o.tracks ?? [1]).map((type, i) =>
      el(
        [0xae],
        el([0xd7], ebmlUint(i + 1)),
        el([0x73, 0xc5], ebmlUint(i + 1)),
        el([0x83], ebmlUint(type)),
        el([0x86], Buffer.from(type === 1 ? 'V_VP8' : 'A_OPUS')),
      ),
    ),
  );
  const cluster = el([0x1f, 0x43, 0xb6, 0x75], el([0xe7], ebmlUint(0)));
  return Buffer.concat([header, el([0x18, 0x53, 0x80, 0x67], info, tracks, cluster)]);
}

/** A one-page PDF with a correct cross-reference table. */
export function pdf(text = 'gensvc test'): Buffer {
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents 4 0 R >>',
  ];
  const stream = `BT /F1 12 Tf 20 100 Td (${text}) Tj ET`;
  objects.push(`<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`);
  let out = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((body, i) => {
    offsets.push(Buffer.byteLength(out));
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = Buffer.byteLength(out);
  const entries = offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('');
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${entries}`;
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}
