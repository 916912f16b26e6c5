// An image reference given by URL, checked before it costs anything (spec §4.4, §8): fetched through the SSRF-safe
// client (public HTTPS on the default port, DESIGN.md §5), with no HEAD, and read only as far as its header: enough
// bytes to know the type and the pixel size (PNG, JPEG, WebP, GIF), then the body is aborted. The size comes from
// Content-Length (a declared body over 30 MB is refused before any byte is read); without one, the rest is counted
// as it streams past (never kept) and refused once it passes 30 MB. Each refusal is a 400 naming the rule broken.
import { errors, isAppError, type AppError } from '@gensvc/errors';
import { checkMediaLimits, sniffMedia, SNIFF_BYTES, type SniffedMedia } from '@gensvc/media';
import { fetchChecked, isOutboundError, type OutboundResponse } from '@gensvc/outbound';
import type { EdgeDeps } from '../../deps';
import { IMAGE_FORMATS, IMAGE_TYPES, MAX_IMAGE_BYTES } from './schema';

/** A reference is given this long to answer with its header (and, without Content-Length, its whole body). */
const PROBE_TIMEOUT_MS = 15_000;

export type ProbeDeps = Pick<EdgeDeps, 'config' | 'outbound'>;

export interface ProbedImage {
  url: string;
  media: SniffedMedia & { width: number; height: number };
  /** From Content-Length, or counted when the body was read to its end. */
  bytes: number;
  /** How many body bytes were read. */
  read: number;
}

export const shownUrl = (url: string) => (url.length > 200 ? `${url.slice(0, 200)}…` : url);

/**
 * The refusal of a URL the outbound client would not fetch. Connection, timeout and handshake failures read alike
 * (UNREACHABLE_RULE), so that refusals cannot map hosts and ports through the gateway.
 */
export function imageUrlRefused(e: unknown, what: string, url: string, param: string): AppError {
  if (!isOutboundError(e)) throw e;
  if (e.reason === 'too_large') return tooLarge(what, url, param);
  const reason = e.reason === 'timeout' || e.reason === 'connection' || e.reason === 'tls' ? 'unreachable' : e.reason;
  return errors.invalidImageUrl(`${what} (${shownUrl(url)}) was refused [${reason}]: ${e.rule}`, param);
}

const tooLarge = (what: string, url: string, param: string) =>
  errors.mediaLimitExceeded(
    `${what} (${shownUrl(url)}) is larger than ${MAX_IMAGE_BYTES} ` +
      `bytes (30 MB) [size]; an image may have at most 30 MB.`,
    param,
  );

/**
 * The type, pixel size and byte size `url` serves, or a 400: invalid_image_url when it cannot be fetched or is no
 * supported image [type], media_limit_exceeded beyond 30 MB [size] or 8192 px a side [dimensions].
 */
export async function probeImageUrl(deps: ProbeDeps, url: string, param: string, what = param): Promise<ProbedImage> {
  let answer: OutboundResponse;
  try {
    answer = await fetchChecked(url, {
      allowCidrs: deps.config.outbound.allowCidrs,
      ...deps.outbound,
      defaultPortOnly: true,
      maxBytes: MAX_IMAGE_BYTES,
      timeoutMs: PROBE_TIMEOUT_MS,
      headers: { accept: 'image/png, image/jpeg, image/webp, image/gif' },
    });
  } catch (e) {
    throw imageUrlRefused(e, what, url, param);
  }
  const declared = Number(answer.headers['content-length']);
  const known = answer.headers['content-length'] !== undefined && Number.isSafeInteger(declared) ? declared : null;

  const head: Buffer[] = [];
  let read = 0;
  let media: ProbedImage['media'] | null = null;
  const reader = answer.body[Symbol.asyncIterator]();
  try {
    for (;;) {
      const next = await reader.next();
      if (next.done) {
        media ??= checkHead(sniffMedia(Buffer.concat(head), true), what, url, param);
        break;
      }
      const chunk = next.value as Buffer;
      read += chunk.length;
      if (media) continue; // past the header, no Content-Length: only counted
      head.push(chunk);
      const sniffed = sniffMedia(Buffer.concat(head), false);
      if (!sniffed && read < SNIFF_BYTES) continue;
      media = checkHead(sniffed, what, url, param);
      // With a declared size nothing more is needed.
      if (known !== null) break;
    }
  } catch (e) {
    throw isAppError(e) ? e : imageUrlRefused(e, what, url, param);
  } finally {
    // Stops the download: the socket is closed, the rest of the body is never read.
    if (!answer.body.destroyed) answer.body.destroy();
  }
  return { url: answer.url.href, media: media!, bytes: known ?? read, read };
}

/** The header's type and pixel size, held to spec §8: [type] or [dimensions] refused by name. */
function checkHead(media: SniffedMedia | null, what: string, url: string, param: string): ProbedImage['media'] {
  if (
    media?.kind !== 'image' ||
    !(IMAGE_TYPES as readonly string[]).includes(media.contentType) ||
    media.width === undefined ||
    media.height === undefined
  ) {
    throw errors.invalidImageUrl(
      `${what} (${shownUrl(url)}) does not serve a supported image [type]: it must be ${IMAGE_FORMATS}, ` +
        `its size shown in its header; the type is read from the bytes, not the Content-Type.`,
      param,
    );
  }
  try {
    checkMediaLimits(media);
  } catch (e) {
    if (isAppError(e) && e.code === 'media_limit_exceeded')
      throw errors.mediaLimitExceeded(`${what} (${shownUrl(url)}) [dimensions]: ${e.message}`, param);
    throw e;
  }
  return media as ProbedImage['media'];
}
