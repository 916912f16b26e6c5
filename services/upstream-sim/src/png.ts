// A strict PNG reader, so tests can prove that what travelled through gensvc is still a decodable image (the sim's
// images are written by @gensvc/media's encodePng).
import { crc32, inflateSync } from 'node:zlib';
import { sniffMedia } from '@gensvc/media';

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const RGB = 2;
const BYTES_PER_PIXEL: Record<number, number> = { 0: 1, 2: 3, 4: 2, 6: 4 };

export interface PngInfo {
  width: number;
  height: number;
  bitDepth: number;
  colorType: number;
  /** Decompressed scanlines, each led by its filter byte. */
  scanlines: Buffer;
  /** The RGB triple at (x, y) for 8-bit RGB images whose scanlines use filter 0, as encodePng writes them. */
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
    if (crc32(buffer.subarray(offset + 4, end)) !== buffer.readUInt32BE(end))
      throw new Error(`bad CRC in ${type} chunk`);
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
  if (header?.length !== 13) throw new Error('missing or bad IHDR');
  if (!ended || offset !== buffer.length) throw new Error('IEND missing or not last');
  const width = header.readUInt32BE(0);
  const height = header.readUInt32BE(4);
  const bitDepth = header[8]!;
  const colorType = header[9]!;
  const channels = BYTES_PER_PIXEL[colorType];
  if (bitDepth !== 8 || channels === undefined)
    throw new Error(`unsupported PNG format: depth ${bitDepth}, color type ${colorType}`);
  const scanlines = inflateSync(Buffer.concat(idat));
  const stride = width * channels + 1;
  if (scanlines.length !== stride * height)
    throw new Error(`IDAT holds ${scanlines.length} bytes, expected ${stride * height}`);
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
