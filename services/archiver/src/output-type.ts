// What a generated output is, decided from its first bytes (DESIGN.md §5), never from the provider's Content-Type
// or URL. Only the formats a generation output can be archived as: the image and video formats of spec §4.4.
// The upload path's sniffer (services/edge/src/media) covers every accepted format with header limits; it lives
// in the edge service, which a worker cannot import — when it moves to a lib, this file gives way to it.
import type { OutputKind } from '@gensvc/contracts';

export interface OutputType {
  kind: OutputKind;
  contentType: string;
  extension: string;
}

/** Bytes enough for every signature below (the WebM DocType sits within the EBML header's first few dozen). */
export const OUTPUT_HEAD_BYTES = 64;

const ascii = (b: Buffer, from: number, to: number) => b.toString('latin1', from, to);

const VIDEO_MP4_BRANDS = new Set(['isom', 'iso2', 'iso4', 'iso5', 'iso6', 'mp41', 'mp42', 'avc1', 'dash', 'M4V ', 'M4VH', 'M4VP', 'mmp4']);

export function detectOutputType(head: Buffer): OutputType | null {
  if (head.length >= 8 && head.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) {
    return { kind: 'image', contentType: 'image/png', extension: 'png' };
  }
  if (head.length >= 3 && head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) {
    return { kind: 'image', contentType: 'image/jpeg', extension: 'jpg' };
  }
  if (head.length >= 6 && (ascii(head, 0, 6) === 'GIF87a' || ascii(head, 0, 6) === 'GIF89a')) {
    return { kind: 'image', contentType: 'image/gif', extension: 'gif' };
  }
  if (head.length >= 12 && ascii(head, 0, 4) === 'RIFF' && ascii(head, 8, 12) === 'WEBP') {
    return { kind: 'image', contentType: 'image/webp', extension: 'webp' };
  }
  if (head.length >= 12 && ascii(head, 4, 8) === 'ftyp' && VIDEO_MP4_BRANDS.has(ascii(head, 8, 12))) {
    return { kind: 'video', contentType: 'video/mp4', extension: 'mp4' };
  }
  // EBML magic, then a DocType element (id 0x4282, a one-byte size) saying "webm"; Matroska proper is not accepted.
  if (head.length >= 4 && head.readUInt32BE(0) === 0x1a45dfa3) {
    const at = head.indexOf(Buffer.from([0x42, 0x82]));
    if (at > 0 && at + 3 <= head.length) {
      const size = head[at + 2]! & 0x7f;
      if (ascii(head, at + 3, at + 3 + size) === 'webm') return { kind: 'video', contentType: 'video/webm', extension: 'webm' };
    }
  }
  return null;
}
