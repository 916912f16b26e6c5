import type { SniffedMedia } from './media-type';

/** RIFF/WAVE; the duration is the data chunk's declared size over the fmt chunk's byte rate, when both are seen. */
export function readWav(b: Buffer): SniffedMedia | null {
  if (b.length < 12 || b.toString('latin1', 0, 4) !== 'RIFF' || b.toString('latin1', 8, 12) !== 'WAVE') return null;
  const info: SniffedMedia = { kind: 'audio', contentType: 'audio/wav', extensions: ['wav'] };
  let byteRate = 0;
  let i = 12;
  while (i + 8 <= b.length) {
    const id = b.toString('latin1', i, i + 4);
    const size = b.readUInt32LE(i + 4);
    if (id === 'fmt ' && i + 20 <= b.length) byteRate = b.readUInt32LE(i + 16);
    if (id === 'data') {
      // 0 and 0xFFFFFFFF mark a stream whose length was unknown when the header was written.
      if (byteRate > 0 && size > 0 && size !== 0xffffffff) info.durationSeconds = size / byteRate;
      break;
    }
    i += 8 + size + (size % 2); // chunks are padded to an even size
  }
  return info;
}
