// MP4 (ISO base media file format). Video or audio is decided by the ftyp brand (M4A/M4B/M4P are audio) or, when
// the moov box comes early and whole, by its tracks' handlers: an mp4 with only sound tracks is audio. The duration
// comes from mvhd when moov is within the bytes looked at; a moov at the end of the file leaves it unknown.
import type { SniffedMedia } from './media-type';

const MP4_BRANDS = new Set([
  'isom',
  'iso2',
  'iso3',
  'iso4',
  'iso5',
  'iso6',
  'iso7',
  'iso8',
  'iso9',
  'mp41',
  'mp42',
  'mp71',
  'avc1',
  'dash',
  'M4V ',
  'M4VH',
  'M4VP',
  'M4A ',
  'M4B ',
  'M4P ',
  'f4v ',
  'f4p ',
  'f4a ',
  'f4b ',
  'mmp4',
  'MSNV',
  'NDAS',
]);
const AUDIO_BRANDS = new Set(['M4A ', 'M4B ', 'M4P ', 'f4a ', 'f4b ']);
/** ISO-BMFF containers that are not MP4 video or audio: HEIF/AVIF images, QuickTime, camera raw. */
const OTHER_MAJOR_BRANDS = new Set([
  'heic',
  'heix',
  'hevc',
  'hevx',
  'heim',
  'heis',
  'mif1',
  'msf1',
  'avif',
  'avis',
  'avio',
  'qt  ',
  'crx ',
]);

interface Box {
  type: string;
  /** First byte of the payload. */
  body: number;
  /** One past the last byte, as declared (may lie beyond the bytes at hand). */
  end: number;
}

function* boxes(b: Buffer, from: number, to: number): Generator<Box> {
  let i = from;
  while (i + 8 <= Math.min(to, b.length)) {
    let size = b.readUInt32BE(i);
    const type = b.toString('latin1', i + 4, i + 8);
    let header = 8;
    if (size === 1) {
      if (i + 16 > b.length) return;
      const large = b.readBigUInt64BE(i + 8);
      size = large > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(large);
      header = 16;
    } else if (size === 0) {
      size = Number.MAX_SAFE_INTEGER - i; // to the end of the file
    }
    if (size < header) return;
    yield { type, body: i + header, end: i + size };
    i += size;
  }
}

const child = (b: Buffer, parent: Box, type: string) => {
  for (const box of boxes(b, parent.body, parent.end)) if (box.type === type) return box;
  return undefined;
};

function mvhdSeconds(b: Buffer, mvhd: Box): number | undefined {
  const v1 = b[mvhd.body] === 1;
  if (mvhd.body + (v1 ? 32 : 20) > b.length) return undefined;
  const timescale = b.readUInt32BE(mvhd.body + (v1 ? 20 : 12));
  const duration = v1 ? b.readBigUInt64BE(mvhd.body + 24) : BigInt(b.readUInt32BE(mvhd.body + 16));
  // All ones: the duration is not known.
  if (timescale === 0 || duration === (v1 ? 0xffffffffffffffffn : 0xffffffffn)) return undefined;
  return Number(duration) / timescale;
}

/** Handler types of the tracks ('vide', 'soun', ...), or null when moov is not wholly within the bytes. */
function trackHandlers(b: Buffer, moov: Box): string[] | null {
  if (moov.end > b.length) return null;
  const handlers: string[] = [];
  for (const trak of boxes(b, moov.body, moov.end)) {
    if (trak.type !== 'trak') continue;
    const mdia = child(b, trak, 'mdia');
    const hdlr = mdia && child(b, mdia, 'hdlr');
    if (hdlr && hdlr.body + 12 <= b.length) handlers.push(b.toString('latin1', hdlr.body + 8, hdlr.body + 12));
  }
  return handlers;
}

export function readMp4(b: Buffer): SniffedMedia | null {
  if (b.length < 16 || b.toString('latin1', 4, 8) !== 'ftyp') return null;
  const ftypEnd = Math.min(b.readUInt32BE(0), b.length);
  const major = b.toString('latin1', 8, 12);
  const brands = [major];
  for (let i = 16; i + 4 <= ftypEnd; i += 4) brands.push(b.toString('latin1', i, i + 4));
  if (OTHER_MAJOR_BRANDS.has(major) || !brands.some((brand) => MP4_BRANDS.has(brand))) return null;

  let durationSeconds: number | undefined;
  let handlers: string[] | null = null;
  for (const box of boxes(b, 0, b.length)) {
    if (box.type !== 'moov') continue;
    const mvhd = child(b, box, 'mvhd');
    if (mvhd) durationSeconds = mvhdSeconds(b, mvhd);
    handlers = trackHandlers(b, box);
    break;
  }
  const audio =
    AUDIO_BRANDS.has(major) || (handlers !== null && handlers.length > 0 && handlers.every((h) => h === 'soun'));
  const info: SniffedMedia = audio
    ? { kind: 'audio', contentType: 'audio/mp4', extensions: ['m4a', 'm4b', 'mp4'] }
    : { kind: 'video', contentType: 'video/mp4', extensions: ['mp4', 'm4v'] };
  return durationSeconds === undefined ? info : { ...info, durationSeconds };
}
