// A small, structurally valid MP4 (ISO BMFF): ftyp, then moov with the movie header (timescale and duration), one
// video track (tkhd with the picture size, mdhd, hdlr 'vide'), then mdat. It carries no decodable frames: what the
// sim's clients check is the container (type, duration, size), which every ISO BMFF reader finds in moov.
const TIMESCALE = 1000;

const u16 = (n: number) => Buffer.from([(n >> 8) & 0xff, n & 0xff]);
const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
};

function box(type: string, ...payload: Buffer[]): Buffer {
  const body = Buffer.concat(payload);
  return Buffer.concat([u32(body.length + 8), Buffer.from(type, 'latin1'), body]);
}

/** The identity transformation matrix of mvhd and tkhd (16.16 and 2.30 fixed point). */
const MATRIX = Buffer.concat([
  u32(0x00010000),
  u32(0),
  u32(0),
  u32(0),
  u32(0x00010000),
  u32(0),
  u32(0),
  u32(0),
  u32(0x40000000),
]);

export interface VideoMp4Options {
  durationSeconds: number;
  width: number;
  height: number;
  /** The mdat contents. */
  payload: Buffer;
}

export function videoMp4(o: VideoMp4Options): Buffer {
  const duration = Math.round(o.durationSeconds * TIMESCALE);
  const mvhd = box(
    'mvhd',
    u32(0),
    u32(0),
    u32(0),
    u32(TIMESCALE),
    u32(duration),
    u32(0x00010000),
    u16(0x0100),
    Buffer.alloc(10),
    MATRIX,
    Buffer.alloc(24),
    u32(2),
  );
  // flags 3: track enabled and in the movie.
  const tkhd = box(
    'tkhd',
    u32(3),
    u32(0),
    u32(0),
    u32(1),
    u32(0),
    u32(duration),
    Buffer.alloc(8),
    u16(0),
    u16(0),
    u16(0),
    u16(0),
    MATRIX,
    u32(o.width << 16),
    u32(o.height << 16),
  );
  // Language "und", packed as three 5-bit letters.
  const mdhd = box('mdhd', u32(0), u32(0), u32(0), u32(TIMESCALE), u32(duration), u16(0x55c4), u16(0));
  const hdlr = box(
    'hdlr',
    u32(0),
    u32(0),
    Buffer.from('vide', 'latin1'),
    Buffer.alloc(12),
    Buffer.from('VideoHandler\0', 'latin1'),
  );
  const moov = box('moov', mvhd, box('trak', tkhd, box('mdia', mdhd, hdlr)));
  const ftyp = box('ftyp', Buffer.from('isom', 'latin1'), u32(0x200), Buffer.from('isomiso2avc1mp41', 'latin1'));
  return Buffer.concat([ftyp, moov, box('mdat', o.payload)]);
}
