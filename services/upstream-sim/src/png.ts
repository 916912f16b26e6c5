// Real PNG bytes (signature, IHDR, one IDAT, IEND, every chunk CRC-checked), written with node:zlib only, and
// a strict reader so tests can prove that what travelled through gensvc is still a decodable image.
import { crc32, deflateSync, inflateSync } from 'node:zlib';
import { sniffMedia } from '@gensvc/media';

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const RGB = 2;
const BYTES_PER_PIXEL: Record<number, number> = { 0: 1, 2: 3, 4: 2, 6: 4 };

function chunk(type: string, data: Buffer): Buffer {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'latin1');
  data.copy(out, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

/** An 8-bit RGB PNG of width × height whose one IDAT chunk holds `zlib` (the scanlines' zlib stream). */
function rgbPng(width: number, height: number, zlib: Buffer): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8;
  ihdr[9] = RGB;
  return Buffer.concat([SIGNATURE, chunk('IHDR', ihdr), chunk('IDAT', zlib), chunk('IEND', Buffer.alloc(0))]);
}

/**
 * Encodes 8-bit RGB pixels (`width * height * 3` bytes, rows top to bottom) as a PNG, through zlib: any image, where
 * encodeGridPng writes only the sim's boards (and the tests' reference for them).
 */
export function encodePngRgb(width: number, height: number, rgb: Buffer): Buffer {
  if (rgb.length !== width * height * 3) throw new RangeError(`expected ${width * height * 3} pixel bytes, got ${rgb.length}`);
  const stride = width * 3;
  const raw = Buffer.alloc((stride + 1) * height);
  for (let y = 0; y < height; y++) {
    // Filter type 0 (None) leads every scanline.
    rgb.copy(raw, y * (stride + 1) + 1, y * stride, (y + 1) * stride);
  }
  return rgbPng(width, height, deflateSync(raw));
}

/**
 * A `grid` × `grid` board of colours (`palette`: grid² RGB triples, row by row) scaled to width × height, as an
 * 8-bit RGB PNG, written straight as one deflate block of fixed Huffman codes: each band's first scanline as its
 * filter byte and, per cell, one pixel's bytes and a copy of them (distance 3), and the band's other scanlines as one
 * copy of that first one (distance: a scanline). No pixel buffer is made and nothing is searched: zlib at level 1
 * took 0.36 ms for a 256×256 board (3.3 ms for 1024×1024) and two buffers of the image's size, the sim's largest
 * cost per generated task. The scanlines are those encodePngRgb writes for the same pixels (filter 0).
 */
export function encodeGridPng(width: number, height: number, palette: Buffer, grid: number): Buffer {
  const stride = width * 3 + 1;
  if (palette.length !== grid * grid * 3) throw new RangeError(`expected ${grid * grid * 3} palette bytes, got ${palette.length}`);
  if (stride > MAX_DISTANCE) throw new RangeError(`a scanline of ${stride} bytes is beyond deflate's reach (${MAX_DISTANCE})`);
  const bits = new BitWriter();
  bits.write(1, 1); // BFINAL
  bits.write(1, 2); // BTYPE 01: fixed Huffman codes
  const adler = new Adler32();
  const row = Buffer.alloc(stride);
  for (let cy = 0; cy < grid; cy++) {
    const y0 = Math.ceil((cy * height) / grid);
    const rows = Math.ceil(((cy + 1) * height) / grid) - y0;
    if (rows <= 0) continue;
    // The band's first scanline: filter 0, then per cell its colour and a copy of it across the cell's width.
    bits.literal(0);
    for (let cx = 0; cx < grid; cx++) {
      const x0 = Math.ceil((cx * width) / grid);
      const n = Math.ceil(((cx + 1) * width) / grid) - x0;
      if (n <= 0) continue;
      const at = (cy * grid + cx) * 3;
      for (let i = 0; i < 3; i++) bits.literal(palette[at + i]!);
      if (n > 1) bits.copy(3 * (n - 1), 3);
      const [r, g, b] = [palette[at]!, palette[at + 1]!, palette[at + 2]!];
      for (let o = 1 + x0 * 3; o < 1 + (x0 + n) * 3; o += 3) {
        row[o] = r;
        row[o + 1] = g;
        row[o + 2] = b;
      }
    }
    adler.add(row, rows);
    // The band's other scanlines: copies of the first.
    if (rows > 1) bits.copy((rows - 1) * stride, stride);
  }
  bits.literal(256); // end of block
  // zlib's wrapper: CMF 0x78 (deflate, 32 KiB window), FLG 0x01 (check bits; fastest), then the Adler-32 of the data.
  return rgbPng(width, height, Buffer.concat([Buffer.from([0x78, 0x01]), bits.bytes(), adler.bytes()]));
}

const MAX_DISTANCE = 32_768;
// RFC 1951 §3.2.5: the base of each length code 257–285 and of each distance code 0–29, and their extra bits.
const LENGTH_BASE = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258];
const LENGTH_EXTRA = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0];
const DIST_BASE = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577];
const DIST_EXTRA = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13];

/** The last code whose base is at most `value`. */
const codeFor = (bases: number[], value: number) => {
  let i = bases.length - 1;
  while (bases[i]! > value) i--;
  return i;
};

/** A Huffman code of `n` bits as the stream holds it: most significant bit first. */
function reversed(value: number, n: number): number {
  let out = 0;
  for (let i = 0; i < n; i++) out |= ((value >> i) & 1) << (n - 1 - i);
  return out;
}

/** Literal/length symbol 0–287 in the fixed code, as [bits, count]. */
function literalCode(symbol: number): [number, number] {
  if (symbol < 144) return [reversed(0x30 + symbol, 8), 8];
  if (symbol < 256) return [reversed(0x190 + symbol - 144, 9), 9];
  if (symbol < 280) return [reversed(symbol - 256, 7), 7];
  return [reversed(0xc0 + symbol - 280, 8), 8];
}

/** A match of `length` (3–258) at `distance` (1–32768): length code, its extra bits, distance code, its extra bits. */
function matchCode(length: number, distance: number): [number, number] {
  const l = codeFor(LENGTH_BASE, length);
  const d = codeFor(DIST_BASE, distance);
  const [lengthCode, lengthBits] = literalCode(257 + l);
  let value = lengthCode;
  let n = lengthBits;
  value |= (length - LENGTH_BASE[l]!) << n;
  n += LENGTH_EXTRA[l]!;
  value |= reversed(d, 5) << n;
  n += 5;
  value |= (distance - DIST_BASE[d]!) << n;
  n += DIST_EXTRA[d]!;
  return [value, n];
}

/** Bits of a deflate stream, least significant first; Huffman codes most significant bit first (RFC 1951 §3.1.1). */
class BitWriter {
  private out = Buffer.alloc(256);
  private length = 0;
  private acc = 0;
  private count = 0;

  /** The low `n` bits of `value` (n ≤ 31), in at most 16 at a time: the accumulator never holds more than 23. */
  write(value: number, n: number) {
    for (; n > 16; n -= 16, value >>>= 16) this.put(value & 0xffff, 16);
    this.put(value, n);
  }

  private put(value: number, n: number) {
    this.acc |= value << this.count;
    this.count += n;
    while (this.count >= 8) {
      if (this.length === this.out.length) this.out = Buffer.concat([this.out, Buffer.alloc(this.out.length)]);
      this.out[this.length++] = this.acc & 0xff;
      this.acc >>>= 8;
      this.count -= 8;
    }
  }

  literal(symbol: number) {
    const [value, n] = literalCode(symbol);
    this.write(value, n);
  }

  /** Repeats the `length` bytes that start `distance` back (overlapping: a short pattern repeated), in pieces of 3–258. */
  copy(length: number, distance: number) {
    // A piece of 258 (the most one match holds) is the same bits each time: made once.
    const [full, fullBits] = matchCode(258, distance);
    for (let left = length; left > 0; ) {
      // A last piece shorter than 3 is not a match: the one before it leaves 3.
      const piece = left > 258 ? (left - 258 < 3 ? left - 3 : 258) : left;
      if (piece < 3) throw new RangeError(`a copy of ${length} bytes leaves a piece of ${piece}`);
      if (piece === 258) this.write(full, fullBits);
      else this.write(...matchCode(piece, distance));
      left -= piece;
    }
  }

  bytes(): Buffer {
    if (this.count > 0) this.write(0, 8 - this.count);
    return this.out.subarray(0, this.length);
  }
}

/** Adler-32 of scanlines added whole, each repeated `times`, without walking the repeats byte by byte (RFC 1950). */
class Adler32 {
  private a = 1;
  private b = 0;

  add(bytes: Buffer, times: number) {
    const MOD = 65_521;
    const n = bytes.length;
    // Over one copy: the bytes' sum, and Σ (n − i) · byte_i (0-based i): what the copy adds to b beyond n · a.
    let sum = 0;
    let weighted = 0;
    // Exact in a double for a scanline of up to 32,768 bytes (< 2^38), reduced once.
    for (let i = 0; i < n; i++) {
      sum += bytes[i]!;
      weighted += (n - i) * bytes[i]!;
    }
    sum %= MOD;
    weighted %= MOD;
    for (let t = 0; t < times; t++) {
      this.b = (this.b + ((n % MOD) * this.a) % MOD + weighted) % MOD;
      this.a = (this.a + sum) % MOD;
    }
  }

  bytes(): Buffer {
    const out = Buffer.alloc(4);
    out.writeUInt32BE(((this.b << 16) | this.a) >>> 0, 0);
    return out;
  }
}

export interface PngInfo {
  width: number;
  height: number;
  bitDepth: number;
  colorType: number;
  /** Decompressed scanlines, each led by its filter byte. */
  scanlines: Buffer;
  /** The RGB triple at (x, y) for 8-bit RGB images whose scanlines use filter 0, as encodePngRgb writes them. */
  rgbAt(x: number, y: number): [number, number, number];
}

/** Parses and checks a PNG: signature, chunk CRCs, IHDR first, IEND last, and the inflated size of the IDAT data. */
export function pngInfo(buffer: Buffer): PngInfo {
  if (buffer.length < 8 || !buffer.subarray(0, 8).equals(SIGNATURE)) throw new Error('not a PNG: bad signature');
  let offset = 8;
  let header: Buffer | undefined;
  const idat: Buffer[] = [];
  let ended = false;
  while (offset < buffer.length) {
    if (offset + 12 > buffer.length) throw new Error('truncated chunk header');
    const length = buffer.readUInt32BE(offset);
    const type = buffer.toString('latin1', offset + 4, offset + 8);
    const end = offset + 8 + length;
    if (end + 4 > buffer.length) throw new Error(`truncated ${type} chunk`);
    if (crc32(buffer.subarray(offset + 4, end)) !== buffer.readUInt32BE(end)) throw new Error(`bad CRC in ${type} chunk`);
    const data = buffer.subarray(offset + 8, end);
    if (!header && type !== 'IHDR') throw new Error('first chunk is not IHDR');
    if (type === 'IHDR') header = data;
    else if (type === 'IDAT') idat.push(data);
    else if (type === 'IEND') {
      ended = true;
      offset = end + 4;
      break;
    }
    offset = end + 4;
  }
  if (!header || header.length !== 13) throw new Error('missing or bad IHDR');
  if (!ended || offset !== buffer.length) throw new Error('IEND missing or not last');
  const width = header.readUInt32BE(0);
  const height = header.readUInt32BE(4);
  const bitDepth = header[8]!;
  const colorType = header[9]!;
  const channels = BYTES_PER_PIXEL[colorType];
  if (bitDepth !== 8 || channels === undefined) throw new Error(`unsupported PNG format: depth ${bitDepth}, color type ${colorType}`);
  const scanlines = inflateSync(Buffer.concat(idat));
  const stride = width * channels + 1;
  if (scanlines.length !== stride * height) throw new Error(`IDAT holds ${scanlines.length} bytes, expected ${stride * height}`);
  return {
    width,
    height,
    bitDepth,
    colorType,
    scanlines,
    rgbAt(x, y) {
      if (colorType !== RGB) throw new Error('rgbAt reads 8-bit RGB images only');
      if (scanlines[y * stride] !== 0) throw new Error(`scanline ${y} is filtered; rgbAt reads unfiltered rows only`);
      const at = y * stride + 1 + x * 3;
      return [scanlines[at]!, scanlines[at + 1]!, scanlines[at + 2]!];
    },
  };
}

/** The image type decided from the first bytes, never from a declared content type; null for anything else. */
export function sniffImageType(bytes: Buffer): string | null {
  const media = sniffMedia(bytes, true);
  return media?.kind === 'image' ? media.contentType : null;
}
