// OpenAI POST /v1/responses: `input` as a string or a list of messages whose content holds input_text and
// input_image items (image_url an http(s) URL, fetched like OpenAI does, or a data:image/...;base64 URL). The
// output text ends with one line per input image naming the sha256 of the bytes that arrived, so a test can
// prove what a gateway sent. stream: true gives the response.* event stream.
//
// With the image_generation tool in `tools`, the answer also holds image_generation_call output items (before the
// message) as OpenAI returns them: `result` is the base64 of a real PNG, editedImagePng of the text of the input and
// the bytes of its input images (the guide), one per allowed built-in tool call (`max_tool_calls`, default 1).
import { randomBytes } from 'node:crypto';
import { chatReply, editedImagePng, IMAGE_SIZES, sha256Hex, tokensOf, type ImageSize } from '../deterministic';
import { sniffImageType } from '../png';
import { bearer, isPositiveInt, jsonObject, type Protocol } from '../protocol';
import { json, type Reply, type SseEvent } from '../reply';
import { BAD_JSON, missingParam, NO_KEY, openAiError, requestId } from './openai-errors';

interface ResponsesRequest {
  model: string;
  instructions?: unknown;
  input: unknown;
  /** image_url values (or file ids, refused at answer time) in the order they appear. */
  images: Array<{ url?: string; fileId?: string }>;
  maxOutputTokens?: number;
  stream: boolean;
  /** The image_generation tool, when it is offered. */
  imageTool?: Record<string, unknown>;
  maxToolCalls?: number;
}

const MAX_IMAGE_BYTES = 20 * 1024 * 1024;
const FETCH_TIMEOUT_MS = 10_000;
const UNSUPPORTED_IMAGE =
  'You uploaded an unsupported image. Please make sure your image is below 20 MB in size and is of one the ' +
  "following formats: ['png', 'jpeg', 'gif', 'webp'].";

function collectImages(input: unknown): ResponsesRequest['images'] | string {
  const images: ResponsesRequest['images'] = [];
  if (typeof input === 'string') return images;
  if (!Array.isArray(input)) return "Invalid type for 'input': expected one of a string or array of input items.";
  for (const [i, item] of input.entries()) {
    if (item === null || typeof item !== 'object') return `Invalid 'input[${i}]': expected an object.`;
    const content = (item as { content?: unknown }).content;
    if (!Array.isArray(content)) continue;
    for (const [j, part] of content.entries()) {
      const p = part as { type?: unknown; image_url?: unknown; file_id?: unknown } | null;
      if (p?.type !== 'input_image') continue;
      if (typeof p.image_url === 'string') images.push({ url: p.image_url });
      else if (typeof p.file_id === 'string') images.push({ fileId: p.file_id });
      else return `Invalid 'input[${i}].content[${j}]': an input_image needs image_url or file_id.`;
    }
  }
  return images;
}

async function download(url: string): Promise<Buffer | Reply> {
  const failed = () => openAiError(400, `Error while downloading ${url}.`, 'url', 'invalid_value');
  if (url.startsWith('data:')) {
    const m = /^data:(image\/[a-z0-9.+-]+);base64,([A-Za-z0-9+/=\s]*)$/i.exec(url);
    if (!m)
      return openAiError(
        400,
        "Invalid 'image_url'. Expected a base64-encoded data URL with an image MIME type (e.g. " +
          "'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got an invalid value.",
        'image_url',
        'invalid_value',
      );
    return Buffer.from(m[2]!, 'base64');
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return failed();
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return failed();
  try {
    const res = await fetch(parsed, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
    if (!res.ok || !res.body) return failed();
    const parts: Buffer[] = [];
    let size = 0;
    for await (const part of res.body) {
      size += part.length;
      if (size > MAX_IMAGE_BYTES) return openAiError(400, UNSUPPORTED_IMAGE, null, 'invalid_image_format');
      parts.push(Buffer.from(part));
    }
    return Buffer.concat(parts);
  } catch {
    return failed();
  }
}

export const openAiResponsesProtocol: Protocol<ResponsesRequest> = {
  name: 'openai-responses',
  matches: (method, path) => method === 'POST' && path === '/v1/responses',
  parse(r) {
    const body = jsonObject(r.body);
    const model = typeof body?.model === 'string' ? body.model : undefined;
    if (!bearer(r.req)) return { model, error: openAiError(401, NO_KEY, null, null) };
    if (!body) return { model, error: openAiError(400, BAD_JSON) };
    if (!model) return { model, error: missingParam('model') };
    if (body.input === undefined) return { model, error: missingParam('input') };
    const images = collectImages(body.input);
    if (typeof images === 'string') return { model, error: openAiError(400, images, 'input', 'invalid_value') };
    const max = body.max_output_tokens;
    if (max !== undefined && max !== null && !isPositiveInt(max)) {
      return {
        model,
        error: openAiError(
          400,
          `Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 1, but got ` +
            `${JSON.stringify(max)} instead.`,
          'max_output_tokens',
          'integer_below_min_value',
        ),
      };
    }
    const tools = Array.isArray(body.tools) ? (body.tools as unknown[]) : [];
    const imageTool = tools.find(
      (t): t is Record<string, unknown> =>
        typeof t === 'object' && t !== null && (t as { type?: unknown }).type === 'image_generation',
    );
    const calls = body.max_tool_calls;
    if (calls !== undefined && calls !== null && !isPositiveInt(calls)) {
      return {
        model,
        error: openAiError(
          400,
          `Invalid 'max_tool_calls': expected an integer >= 1, but got ${JSON.stringify(calls)} instead.`,
          'max_tool_calls',
          'invalid_value',
        ),
      };
    }
    if (
      imageTool &&
      imageTool.size !== undefined &&
      imageTool.size !== 'auto' &&
      !(IMAGE_SIZES as readonly unknown[]).includes(imageTool.size)
    ) {
      return {
        model,
        error: openAiError(
          400,
          `Invalid 'tools[].size': expected one of ${IMAGE_SIZES.join(', ')} or auto.`,
          'tools',
          'invalid_value',
        ),
      };
    }
    return {
      model,
      value: {
        model,
        instructions: body.instructions,
        input: body.input,
        images,
        maxOutputTokens: (max ?? undefined) as number | undefined,
        stream: body.stream === true,
        imageTool,
        maxToolCalls: (calls ?? undefined) as number | undefined,
      },
    };
  },
  async answer(request) {
    const lines: string[] = [];
    const received: Buffer[] = [];
    for (const [i, image] of request.images.entries()) {
      if (image.fileId !== undefined) return openAiError(404, `No such File object: ${image.fileId}`, 'file_id', null);
      const bytes = await download(image.url!);
      if (!Buffer.isBuffer(bytes)) return bytes;
      const type = sniffImageType(bytes);
      if (!type) return openAiError(400, UNSUPPORTED_IMAGE, null, 'invalid_image_format');
      received.push(bytes);
      lines.push(`\ninput_image[${i}] sha256=${sha256Hex(bytes)} bytes=${bytes.length} type=${type}`);
    }
    const conversation = { instructions: request.instructions, input: request.input };
    const reply = chatReply(conversation, request.maxOutputTokens);
    const text = reply.text + lines.join('');
    const inputTokens = tokensOf(conversation);
    const outputTokens = reply.outputTokens + lines.length;
    const id = `resp_${randomBytes(24).toString('hex')}`;
    const itemId = `msg_${randomBytes(24).toString('hex')}`;
    const createdAt = Math.floor(Date.now() / 1000);
    const part = (t: string) => ({ type: 'output_text', text: t, annotations: [], logprobs: [] });
    const item = (status: string, content: unknown[]) => ({
      id: itemId,
      type: 'message',
      status,
      role: 'assistant',
      content,
    });
    const response = (status: string, output: unknown[], usage: unknown) => ({
      id,
      object: 'response',
      created_at: createdAt,
      status,
      background: false,
      error: null,
      incomplete_details: status === 'incomplete' ? { reason: 'max_output_tokens' } : null,
      instructions: request.instructions ?? null,
      max_output_tokens: request.maxOutputTokens ?? null,
      model: request.model,
      output,
      parallel_tool_calls: true,
      previous_response_id: null,
      reasoning: { effort: null, summary: null },
      service_tier: 'default',
      store: true,
      temperature: 1,
      text: { format: { type: 'text' } },
      tool_choice: 'auto',
      tools: [],
      top_p: 1,
      truncation: 'disabled',
      usage,
      user: null,
      metadata: {},
    });
    const finalStatus = reply.truncated ? 'incomplete' : 'completed';
    const usage = {
      input_tokens: inputTokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: outputTokens,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: inputTokens + outputTokens,
    };
    const generated = request.imageTool ? imageCalls(request, received) : [];
    const done = response(finalStatus, [...generated, item(finalStatus, [part(text)])], usage);
    if (!request.stream) return json(200, done, { 'x-request-id': requestId() });

    let sequence = 0;
    const event = (type: string, data: object): SseEvent => ({
      event: type,
      data: { type, ...data, sequence_number: sequence++ },
    });
    const at = { item_id: itemId, output_index: 0, content_index: 0 };
    const deltas = [...reply.pieces, ...lines];
    const events: SseEvent[] = [
      event('response.created', { response: response('in_progress', [], null) }),
      event('response.in_progress', { response: response('in_progress', [], null) }),
      event('response.output_item.added', { output_index: 0, item: item('in_progress', []) }),
      event('response.content_part.added', { ...at, part: part('') }),
      ...deltas.map((delta) => event('response.output_text.delta', { ...at, delta, logprobs: [] })),
      event('response.output_text.done', { ...at, text, logprobs: [] }),
      event('response.content_part.done', { ...at, part: part(text) }),
      event('response.output_item.done', { output_index: 0, item: item(finalStatus, [part(text)]) }),
      event(finalStatus === 'completed' ? 'response.completed' : 'response.incomplete', { response: done }),
    ];
    return { kind: 'sse', status: 200, events, eol: '\n', headers: { 'x-request-id': requestId() } };
  },
  errorReply: (status, message) => openAiError(status, message),
  malformShape: (body) => {
    const b = body as Record<string, unknown>;
    if (b.object === 'response') return { ...b, output: undefined };
    if (b.response && typeof b.response === 'object')
      return { ...b, response: { ...(b.response as object), output: undefined } };
    return { ...b, delta: undefined };
  },
};

/** The text of a Responses input: the string, or every input_text of its messages, joined by newlines. */
function inputText(input: unknown): string {
  if (typeof input === 'string') return input;
  if (!Array.isArray(input)) return '';
  const texts: string[] = [];
  for (const item of input) {
    const content = (item as { content?: unknown } | null)?.content;
    if (typeof content === 'string') texts.push(content);
    else if (Array.isArray(content))
      for (const p of content)
        if ((p as { type?: unknown })?.type === 'input_text') texts.push(String((p as { text?: unknown }).text));
  }
  return texts.join('\n');
}

/** The image_generation_call items the tool produces, as OpenAI returns them (the PNG in `result`, base64). */
function imageCalls(request: ResponsesRequest, guides: Buffer[]) {
  const tool = request.imageTool!;
  const size: ImageSize =
    typeof tool.size === 'string' && (IMAGE_SIZES as readonly string[]).includes(tool.size)
      ? (tool.size as ImageSize)
      : '1024x1024';
  const prompt = inputText(request.input);
  return Array.from({ length: request.maxToolCalls ?? 1 }, (_, index) => ({
    id: `ig_${randomBytes(24).toString('hex')}`,
    type: 'image_generation_call',
    status: 'completed',
    background: 'opaque',
    output_format: 'png',
    quality: typeof tool.quality === 'string' ? tool.quality : 'medium',
    size,
    revised_prompt: prompt,
    result: editedImagePng({ prompt, images: guides, index, size }).toString('base64'),
  }));
}
