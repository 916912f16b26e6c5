import { readWebm } from './ebml';
import { readGif, readJpeg, readPng, readWebp } from './image-header';
import { readMp4 } from './iso-bmff';
import type { SniffedMedia } from './media-type';
import { readMp3 } from './mpeg-audio';
import { readWav } from './wav';

function readPdf(b: Buffer): SniffedMedia | null {
  // Readers accept the header anywhere in the first 1024 bytes (some writers put junk before it).
  const at = b.subarray(0, 1024).indexOf('%PDF-');
  return at >= 0 ? { kind: 'document', contentType: 'application/pdf', extensions: ['pdf'] } : null;
}

/**
 * The accepted type the first bytes of a file show, with what its header says about size and duration; null for
 * anything else. `complete` says whether `head` is the whole file.
 */
export function sniffMedia(head: Buffer, complete: boolean): SniffedMedia | null {
  return (
    readPng(head) ??
    readJpeg(head) ??
    readGif(head) ??
    readWebp(head) ??
    readWav(head) ??
    readMp4(head) ??
    readWebm(head) ??
    readPdf(head) ??
    // Last: the weakest signature (an 11-bit sync word), checked only when nothing stronger matched.
    readMp3(head, complete)
  );
}
