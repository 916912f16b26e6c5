// Input limits of spec §8 that a file's header shows: pixels per side for images, minutes for audio and video.
// What the header does not say is not guessed: such a file is accepted.
import { errors } from '@gensvc/errors';
import type { SniffedMedia } from './media-type';

export const MAX_IMAGE_SIDE = 8192;
export const MAX_AUDIO_SECONDS = 60 * 60;
export const MAX_VIDEO_SECONDS = 10 * 60;

const minutes = (s: number) => `${Math.round((s / 60) * 10) / 10} minutes`;

/** Throws a 400 media_limit_exceeded naming the limit the file is beyond. */
export function checkMediaLimits(m: SniffedMedia): void {
  if (m.kind === 'image' && m.width !== undefined && m.height !== undefined) {
    if (m.width > MAX_IMAGE_SIDE || m.height > MAX_IMAGE_SIDE) {
      throw errors.mediaLimitExceeded(
        `The image is ${m.width}×${m.height} pixels; images may have at most ${MAX_IMAGE_SIDE} pixels per side.`,
      );
    }
  }
  if (m.kind === 'audio' && m.durationSeconds !== undefined && m.durationSeconds > MAX_AUDIO_SECONDS) {
    throw errors.mediaLimitExceeded(
      `The audio lasts ${minutes(m.durationSeconds)}; audio may last at most ${MAX_AUDIO_SECONDS / 60} minutes.`,
    );
  }
  if (m.kind === 'video' && m.durationSeconds !== undefined && m.durationSeconds > MAX_VIDEO_SECONDS) {
    throw errors.mediaLimitExceeded(
      `The video lasts ${minutes(m.durationSeconds)}; video may last at most ${MAX_VIDEO_SECONDS / 60} minutes.`,
    );
  }
}
