import type { SniffedMedia } from './media-type';

// MPEG audio Layer III frame headers (ISO 11172-3 / 13818-3). Only Layer III is MP3; ADTS AAC shares the sync word
// but has layer bits 00 and is not accepted.
const BITRATES_V1 = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320];
const BITRATES_V2 = [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160];
const SAMPLE_RATES: Record<number, number[]> = {
  3: [44100, 48000, 32000],
  2: [22050, 24000, 16000],
  0: [11025, 12000, 8000],
};

/** The frame's length in bytes when a valid Layer III frame header starts at `i`, else null. */
function mp3FrameLength(b: Buffer, i: number): number | null {
  if (i + 4 > b.length || b[i] !== 0xff || (b[i + 1]! & 0xe0) !== 0xe0) return null;
  const version = (b[i + 1]! >> 3) & 3; // 3 = MPEG-1, 2 = MPEG-2, 0 = MPEG-2.5, 1 reserved
  const layer = (b[i + 1]! >> 1) & 3; // 1 = Layer III
  const bitrateIndex = b[i + 2]! >> 4;
  const rateIndex = (b[i + 2]! >> 2) & 3;
  if (version === 1 || layer !== 1 || bitrateIndex === 0 || bitrateIndex === 15 || rateIndex === 3) return null;
  const padding = (b[i + 2]! >> 1) & 1;
  const bitrate = (version === 3 ? BITRATES_V1 : BITRATES_V2)[bitrateIndex]! * 1000;
  const sampleRate = SAMPLE_RATES[version]![rateIndex]!;
  return Math.floor(((version === 3 ? 144 : 72) * bitrate) / sampleRate) + padding;
}

function id3Length(b: Buffer): number | null {
  if (b.length < 10 || b.toString('latin1', 0, 3) !== 'ID3' || b[3]! < 2 || b[3]! > 4 || b[4] === 0xff) return null;
  for (let k = 6; k < 10; k++) if (b[k]! >= 0x80) return null; // synchsafe integer
  const size = (b[6]! << 21) | (b[7]! << 14) | (b[8]! << 7) | b[9]!;
  const footer = b[5]! & 0x10 ? 10 : 0;
  return 10 + size + footer;
}

/**
 * MP3: an ID3v2 tag followed by a frame, or a frame at the start. Two frames in a row are required when the bytes
 * hold two, so random bytes that happen to start with a sync word are not taken for audio.
 */
export function readMp3(b: Buffer, complete: boolean): SniffedMedia | null {
  const info: SniffedMedia = { kind: 'audio', contentType: 'audio/mpeg', extensions: ['mp3'] };
  const tag = id3Length(b);
  const start = tag ?? 0;
  if (tag !== null && start >= b.length) return complete ? null : info; // a tag larger than the bytes looked at
  const first = mp3FrameLength(b, start);
  if (first === null) return null;
  const next = start + first;
  if (next + 4 <= b.length) return mp3FrameLength(b, next) !== null ? info : null;
  // The bytes end within the second frame's header: only a complete file that ends right at a frame is accepted.
  return !complete || next >= b.length ? info : null;
}
