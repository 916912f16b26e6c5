// What an upload is, as decided from its bytes (DESIGN.md §5: never from its name or the client's Content-Type).

export type MediaKind = 'image' | 'audio' | 'video' | 'document';

export interface SniffedMedia {
  kind: MediaKind;
  contentType: string;
  /** Extensions a stored name may keep, the canonical one first. */
  extensions: string[];
  /** Pixels, when the header says. */
  width?: number;
  height?: number;
  /** Seconds, when the container says. */
  durationSeconds?: number;
}

/** Bytes looked at before the type is decided: room for a JPEG's EXIF and ICC segments or an early MP4 moov. */
export const SNIFF_BYTES = 256 * 1024;

export const ACCEPTED_FORMATS = 'PNG, JPEG, WebP, GIF, MP4, WebM, MP3, MP4 audio (M4A), WAV, PDF';
