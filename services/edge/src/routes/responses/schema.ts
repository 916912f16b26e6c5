// POST /v1/responses (OpenAI Responses). Only the fields the gateway itself reads are checked; every other field is
// the provider's business and is passed on untouched. The exception is file_id on an input_image: it names a file
// of the caller's workspace, which the edge inlines (the provider knows nothing of our files).
import { errors } from '@gensvc/errors';
import { z } from 'zod';
import { chatModelId } from '../chat/schema';

/**
 * The body sent upstream, once the files named by file_id are inlined (base64, 4/3 of their bytes): OpenAI's own
 * bound on a Responses request with images.
 */
export const MAX_UPSTREAM_BYTES = 50 * 1024 * 1024;
/** input_image items naming files, per request (OpenAI takes at most 500 images per request). */
const MAX_FILE_IMAGES = 500;

export const responseBody = z.looseObject({
  model: chatModelId,
  input: z
    .union([z.string(), z.array(z.looseObject({}))], { error: 'must be a string or an array of input items (objects)' })
    .optional(),
  max_output_tokens: z.number().int().min(1).nullish(),
  stream: z.boolean().nullish(),
  background: z.boolean().nullish(),
});

/** An input_image item that names a workspace file: where it is in the body, and how to name it to the caller. */
export interface FileImageRef {
  /** Path from the body to the item (e.g. ['input', 0, 'content', 1]). */
  path: readonly (string | number)[];
  /** The item's field as the caller wrote it, e.g. "input[0].content[1].file_id". */
  param: string;
  fileId: string;
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * Every input_image with a file_id, in body order: in message content and in tool-call outputs (which may carry
 * images too). 400 for an input_image with both image_url and file_id, for a file_id that is not a string, and for
 * a file_id on an input_file (only images are inlined: the provider would answer it with its own 404).
 */
export function fileImageRefs(input: unknown): FileImageRef[] {
  const refs: FileImageRef[] = [];
  if (!Array.isArray(input)) return refs;
  for (const [i, item] of input.entries()) {
    if (!isObject(item)) continue;
    for (const field of ['content', 'output'] as const) {
      const parts = item[field];
      if (!Array.isArray(parts)) continue;
      for (const [j, part] of parts.entries()) {
        if (!isObject(part) || part.file_id === undefined || part.file_id === null) continue;
        const at = `input[${i}].${field}[${j}]`;
        const param = `${at}.file_id`;
        if (part.type === 'input_file') {
          throw errors.invalidRequest(
            `${param}: file ids are accepted on input_image items ` +
              `only; send a file's contents as file_data or file_url.`,
            param,
          );
        }
        if (part.type !== 'input_image') continue;
        if (typeof part.file_id !== 'string')
          throw errors.invalidRequest(`${param}: must be a string (a file id, file_...)`, param);
        if (part.image_url !== undefined && part.image_url !== null) {
          throw errors.invalidRequest(`${at}: an input_image takes image_url or file_id, not both.`, param);
        }
        refs.push({ path: ['input', i, field, j], param, fileId: part.file_id });
      }
    }
  }
  if (refs.length > MAX_FILE_IMAGES) {
    throw errors.invalidRequest(
      `A request may name at most ${MAX_FILE_IMAGES} image files; this one names ${refs.length}.`,
      refs[MAX_FILE_IMAGES]!.param,
    );
  }
  return refs;
}

/**
 * Images one response may generate, which bounds its hold. OpenAI's tool makes one image per call and a response makes
 * at most `max_tool_calls` built-in tool calls; the gateway sends max_tool_calls (1 unless the caller asks for up to
 * this many), so a response never holds fewer images than it can generate.
 */
const MAX_GENERATED_IMAGES = 8;

/** The image_generation tool of a request, or null when it offers none (the rest of `tools` is the provider's). */
export function imageGenerationTool(tools: unknown): Record<string, unknown> | null {
  if (!Array.isArray(tools)) return null;
  const found = tools.filter((t): t is Record<string, unknown> => isObject(t) && t.type === 'image_generation');
  if (found.length > 1) throw errors.invalidRequest('tools: offer the image_generation tool once.', 'tools');
  const mask = found[0]?.input_image_mask;
  if (isObject(mask) && mask.file_id !== undefined && mask.file_id !== null) {
    throw errors.invalidRequest(
      'tools[].input_image_mask.file_id: a mask is accepted as image_url (an https or data: URL) only.',
      'tools',
    );
  }
  return found[0] ?? null;
}

/** How many images a response with the image_generation tool may generate: its max_tool_calls, 1 when absent. */
export function generatedImageBound(maxToolCalls: unknown): number {
  if (maxToolCalls === undefined || maxToolCalls === null) return 1;
  if (
    typeof maxToolCalls !== 'number' ||
    !Number.isInteger(maxToolCalls) ||
    maxToolCalls < 1 ||
    maxToolCalls > MAX_GENERATED_IMAGES
  ) {
    throw errors.invalidRequest(
      `max_tool_calls: with the image_generation tool, an integer from 1 to ${MAX_GENERATED_IMAGES} ` +
        `(each built-in tool call may generate an image, and each image is held before the call).`,
      'max_tool_calls',
    );
  }
  return maxToolCalls;
}

/** Guide images given by URL, per request: each is fetched (its header) before the call. */
const MAX_URL_IMAGES = 16;

/** An input_image given by an http(s) URL (a data: URL carries its bytes and is bounded by the body). */
export interface UrlImageRef {
  param: string;
  url: string;
}

/** Every input_image of message content with an image_url that is not a data: URL, in body order. */
export function urlImageRefs(input: unknown): UrlImageRef[] {
  const refs: UrlImageRef[] = [];
  if (!Array.isArray(input)) return refs;
  for (const [i, item] of input.entries()) {
    if (!isObject(item) || !Array.isArray(item.content)) continue;
    for (const [j, part] of item.content.entries()) {
      if (!isObject(part) || part.type !== 'input_image' || part.image_url === undefined || part.image_url === null)
        continue;
      const param = `input[${i}].content[${j}].image_url`;
      if (typeof part.image_url !== 'string')
        throw errors.invalidRequest(`${param}: must be a string (an https URL or a data: URL).`, param);
      if (!part.image_url.startsWith('data:')) refs.push({ param, url: part.image_url });
    }
  }
  if (refs.length > MAX_URL_IMAGES) {
    throw errors.invalidRequest(
      `With the image_generation tool, at most ${MAX_URL_IMAGES} input images may ` +
        `be given by URL (each is checked before the call); send the others as files.`,
      refs[MAX_URL_IMAGES]!.param,
    );
  }
  return refs;
}
