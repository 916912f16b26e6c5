// POST /v1/images/edits: the limits of spec §8 and the form's fields. Multipart values arrive as strings and JSON
// values as JSON; both are normalised to the strings the OpenAI images protocol sends upstream.
import { modelIdSchema } from '@gensvc/contracts';
import { errors } from '@gensvc/errors';
import { z } from 'zod';
import { parseFields } from '../../http/parse-body';
import { FILE_ID } from '../files/schema';

/** Spec §8: 25 MiB bounds the whole edit request, and the images it names (fetched or read from files) combined. */
export const MAX_EDIT_REQUEST_BYTES = 25 * 1024 * 1024;
/** Spec §8 image input: 30 MB and 8192 px per side (the side is checked by checkMediaLimits). */
export const MAX_IMAGE_BYTES = 30_000_000;
/** OpenAI's limit for gpt-image models; one more file (the mask) may come with them. */
export const MAX_IMAGES = 16;
/** Images an edit may return (OpenAI's `n`): each is reserved at the model's unit price. */
const MAX_N = 10;
/** Characters of the prompt (OpenAI's limit for gpt-image models). */
const MAX_PROMPT_CHARS = 32_000;
/** The image types an edit accepts, as sniffed from their bytes. */
export const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/webp', 'image/gif'] as const;
export const IMAGE_FORMATS = 'PNG, JPEG, WebP, GIF';

const word = (max: number) =>
  z
    .string()
    .regex(
      new RegExp(`^[A-Za-z0-9_.-]{1,${max}}$`),
      `must be a word of at most ${max} letters, digits, "_", "." or "-"`,
    );
const integerText = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d{1,6}$/, `must be an integer from ${min} to ${max}`)
    .refine((v) => Number(v) >= min && Number(v) <= max, `must be an integer from ${min} to ${max}`);

/**
 * Every field an edit may carry besides its images. Those after `n` are passed upstream as they came; the
 * provider judges their values for its model (its 400 is answered to the caller).
 */
export const editFields = z
  .object({
    model: modelIdSchema('is required'),
    prompt: z.string().min(1, 'is required').max(MAX_PROMPT_CHARS, `is at most ${MAX_PROMPT_CHARS} characters`),
    n: integerText(1, MAX_N).optional(),
    size: z
      .string()
      .regex(/^(auto|\d{1,5}x\d{1,5})$/, 'must be "auto" or <width>x<height>')
      .optional(),
    response_format: z.enum(['url', 'b64_json'], { message: 'must be "url" or "b64_json"' }).optional(),
    quality: word(16).optional(),
    background: word(16).optional(),
    output_format: word(8).optional(),
    output_compression: integerText(0, 100).optional(),
    input_fidelity: word(8).optional(),
    user: z.string().max(256, 'is at most 256 characters').optional(),
    stream: z.enum(['false'], { message: 'streamed edits are not supported: send false or leave it out' }).optional(),
  })
  .strict();

export type EditFields = z.output<typeof editFields>;
/** Fields passed upstream as they came (model, prompt and n are set by the edge; stream is never sent). */
export const PASS_THROUGH_FIELDS = [
  'size',
  'response_format',
  'quality',
  'background',
  'output_format',
  'output_compression',
  'input_fidelity',
  'user',
] as const;

/** The fields, or a 400 naming the first bad one (an unknown field included). */
export const parseEditFields = (raw: Record<string, string>): EditFields => parseFields(editFields, raw);

/** One entry of image_url: a file id of the workspace, or an HTTPS URL (checked when it is fetched). */
export type ImageRef = { kind: 'file'; fileId: string } | { kind: 'url'; url: string };

function parseImageRef(value: string): ImageRef {
  const text = value.trim();
  if (text.startsWith('file_')) {
    // A file id that is malformed names no file, exactly as an unknown one does.
    if (!FILE_ID.test(text))
      throw errors.fileNotFound(`No file "${text.slice(0, 64)}" exists in this workspace.`, 'image_url');
    return { kind: 'file', fileId: text };
  }
  if (text.length === 0 || text.length > 2048)
    throw errors.invalidImageUrl('image_url must be an HTTPS URL (at most 2048 characters) or a file id.');
  return { kind: 'url', url: text };
}

/**
 * image_url as a form sends it: a URL or file id, or a JSON-encoded array of them; repeated fields add up.
 * A JSON body's value (a string or an array of strings) comes as is.
 */
export function imageRefsOf(value: unknown): ImageRef[] {
  if (typeof value === 'string') {
    const text = value.trim();
    if (text.startsWith('[')) {
      let list: unknown;
      try {
        list = JSON.parse(text);
      } catch {
        throw errors.invalidImageUrl('image_url looks like a JSON array but does not parse as one.');
      }
      return imageRefsOf(list);
    }
    return [parseImageRef(text)];
  }
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value.map(parseImageRef);
  throw errors.invalidImageUrl('image_url must be an HTTPS URL, a file id, or an array of them.');
}
