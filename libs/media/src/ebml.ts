// WebM (an EBML document of DocType "webm"; other Matroska files are not accepted). The duration comes from the
// Segment's Info element and the kind from its Tracks, when they come before the first Cluster, as muxers write them.
import type { SniffedMedia } from './media-type';

const EBML_HEADER = 0x1a45dfa3;
const DOC_TYPE = 0x4282;
const SEGMENT = 0x18538067;
const INFO = 0x1549a966;
const TIMECODE_SCALE = 0x2ad7b1;
const DURATION = 0x4489;
const TRACKS = 0x1654ae6b;
const TRACK_ENTRY = 0xae;
const TRACK_TYPE = 0x83;
const CLUSTER = 0x1f43b675;
const TRACK_AUDIO = 2;

interface Element {
  id: number;
  body: number;
  /** One past the last byte; Infinity for an element of unknown size. */
  end: number;
}

/** A variable-length integer at i: its length and value (marker bit kept for ids, cleared for sizes). */
function vint(b: Buffer, i: number, keepMarker: boolean): { length: number; value: number; unknown: boolean } | null {
  const first = b[i];
  if (first === undefined || first === 0) return null;
  const length = Math.clz32(first) - 23; // 1 for 0b1xxxxxxx ... 8 for 0b00000001
  if (i + length > b.length) return null;
  let value = keepMarker ? first : first & (0xff >> length);
  let allOnes = value === 0xff >> length;
  for (let k = 1; k < length; k++) {
    value = value * 256 + b[i + k]!;
    allOnes &&= b[i + k] === 0xff;
  }
  return { length, value, unknown: !keepMarker && allOnes };
}

function* elements(b: Buffer, from: number, to: number): Generator<Element> {
  let i = from;
  while (i < Math.min(to, b.length)) {
    const id = vint(b, i, true);
    if (!id || id.length > 4) return;
    const size = vint(b, i + id.length, false);
    if (!size) return;
    const body = i + id.length + size.length;
    const end = size.unknown ? Infinity : body + size.value;
    yield { id: id.value, body, end };
    if (end === Infinity) return; // only a master element may have an unknown size; the caller descends into it
    i = end;
  }
}

const uint = (b: Buffer, e: Element) =>
  e.end <= b.length && e.end - e.body >= 1 && e.end - e.body <= 6 ? b.readUIntBE(e.body, e.end - e.body) : undefined;

function float(b: Buffer, e: Element): number | undefined {
  if (e.end > b.length) return undefined;
  if (e.end - e.body === 4) return b.readFloatBE(e.body);
  if (e.end - e.body === 8) return b.readDoubleBE(e.body);
  return undefined;
}

export function readWebm(b: Buffer): SniffedMedia | null {
  if (b.length < 4 || b.readUInt32BE(0) !== EBML_HEADER) return null;
  const header = elements(b, 0, b.length).next().value;
  if (!header) return null;
  let docType: string | undefined;
  for (const e of elements(b, header.body, header.end)) {
    if (e.id === DOC_TYPE && e.end <= b.length) docType = b.toString('latin1', e.body, e.end).replace(/\0+$/, '');
  }
  if (docType !== 'webm') return null;

  let scale = 1_000_000; // TimecodeScale default: nanoseconds per tick
  let ticks: number | undefined;
  const trackTypes: number[] = [];
  let tracksSeen = false;
  const segment = [...elements(b, header.end, b.length)].find((e) => e.id === SEGMENT);
  if (segment) {
    for (const e of elements(b, segment.body, segment.end)) {
      if (e.id === CLUSTER) break;
      if (e.id === INFO) {
        for (const f of elements(b, e.body, e.end)) {
          if (f.id === TIMECODE_SCALE) scale = uint(b, f) ?? scale;
          if (f.id === DURATION) ticks = float(b, f);
        }
      }
      if (e.id === TRACKS && e.end <= b.length) {
        tracksSeen = true;
        for (const entry of elements(b, e.body, e.end)) {
          if (entry.id !== TRACK_ENTRY) continue;
          for (const f of elements(b, entry.body, entry.end)) if (f.id === TRACK_TYPE) trackTypes.push(uint(b, f) ?? 0);
        }
      }
    }
  }
  const audio = tracksSeen && trackTypes.length > 0 && trackTypes.every((t) => t === TRACK_AUDIO);
  const info: SniffedMedia = audio
    ? { kind: 'audio', contentType: 'audio/webm', extensions: ['webm', 'weba'] }
    : { kind: 'video', contentType: 'video/webm', extensions: ['webm'] };
  return ticks !== undefined && Number.isFinite(ticks) && ticks >= 0
    ? { ...info, durationSeconds: (ticks * scale) / 1e9 }
    : info;
}
