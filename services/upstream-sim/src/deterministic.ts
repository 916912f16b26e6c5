// Everything the sim answers is a pure function of the request, so tests predict it with these same functions
// instead of hard-coding values.
import { createHash } from 'node:crypto';
import { encodePng } from '@gensvc/media';
import { videoMp4 } from './mp4';

export type Question =
  | { type: 'boolean'; instructions: string }
  | { type: 'score'; instructions: string; criteria: string[] }
  | { type: 'choice'; instructions: string; choices: string[] };

export type Answer =
  | { type: 'boolean'; probability: number }
  | { type: 'score'; score: number; probabilities: Record<string, number> }
  | { type: 'choice'; choice: string; probabilities: Record<string, number> };

export interface EvaluateRequest {
  model?: string;
  state: unknown;
  questions: Record<string, Question>;
}

export interface EvaluateUsage {
  inputTokens: number;
  outputTokens: number;
}

/** JSON with object keys sorted at every depth: equal values give equal text whatever the key order sent. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`;
  const entries = Object.keys(value as object)
    .sort()
    .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
    .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
  return `{${entries.join(',')}}`;
}

const sha256 = (data: string | Buffer): Buffer => createHash('sha256').update(data).digest();

/** At least `count` bytes drawn from a seed: the seed itself, then sha256(seed ‖ i) blocks. */
function bytesFrom(seed: Buffer, count: number): Buffer {
  const blocks = [seed];
  for (let i = 0, have = seed.length; have < count; i++, have += 32) {
    blocks.push(sha256(Buffer.concat([seed, Buffer.from([i >> 24, (i >> 16) & 255, (i >> 8) & 255, i & 255])])));
  }
  return Buffer.concat(blocks);
}

/** Weights 1..256 from the seed, normalised: every p is in (0, 1) and the sum is 1 up to rounding (< 1e-12). */
function distribution(seed: Buffer, count: number): number[] {
  const bytes = bytesFrom(seed, count);
  const weights = Array.from({ length: count }, (_, i) => 1 + bytes[i]!);
  const total = weights.reduce((a, b) => a + b, 0);
  return weights.map((w) => w / total);
}

function answerFor(state: unknown, id: string, question: Question): Answer {
  const seed = sha256(`${canonicalJson(state)}\u0000${id}\u0000${canonicalJson(question)}`);
  switch (question.type) {
    case 'boolean':
      return { type: 'boolean', probability: seed.readUInt32BE(0) / 2 ** 32 };
    case 'score': {
      const p = distribution(seed, question.criteria.length);
      const probabilities: Record<string, number> = {};
      for (const [i, v] of p.entries()) probabilities[String(i)] = v;
      return { type: 'score', score: p.reduce((sum, v, i) => sum + i * v, 0), probabilities };
    }
    case 'choice': {
      const p = distribution(seed, question.choices.length);
      const probabilities: Record<string, number> = {};
      let best = 0;
      p.forEach((v, i) => {
        probabilities[question.choices[i]!] = v;
        if (v > p[best]!) best = i;
      });
      return { type: 'choice', choice: question.choices[best]!, probabilities };
    }
  }
}

/** The answers the sim gives to a (valid) evaluate request, one per question id. */
export function expectedAnswers(request: EvaluateRequest): Record<string, Answer> {
  const answers: Record<string, Answer> = {};
  for (const [id, question] of Object.entries(request.questions)) answers[id] = answerFor(request.state, id, question);
  return answers;
}

/** ceil(utf8 bytes of JSON / 4), at least 1: never more than the bytes of a request that carried the value. */
export function tokensOf(value: unknown): number {
  return Math.max(1, Math.ceil(Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8') / 4));
}

/** The usage the sim reports for an evaluate request. */
export function usageFor(request: EvaluateRequest): EvaluateUsage {
  return {
    inputTokens: Math.ceil(
      Buffer.byteLength(JSON.stringify({ state: request.state, questions: request.questions }), 'utf8') / 4,
    ),
    outputTokens: 1 + 3 * Object.keys(request.questions).length,
  };
}

const WORDS = (
  'alpha bravo cedar delta ember fjord glade harbor iris jade kelp lumen maple nectar onyx pine quartz ' +
  'river sage tide umber vale willow xenon yarrow zephyr amber birch coral dune elm fern grove heath ' +
  'inlet juniper knoll lagoon meadow north oak pebble quill reef stone thistle upland violet wren'
).split(' ');

export interface ChatReply {
  /** The reply's tokens in order; their concatenation is `text`. Streams send one per chunk. */
  pieces: string[];
  text: string;
  outputTokens: number;
  /** True when max tokens cut the reply short (finish_reason "length", stop_reason "max_tokens"...). */
  truncated: boolean;
}

/**
 * The reply to a conversation: "sim reply to <first 8 hex of sha256(canonical JSON)>:" and 8 to 31 words, one
 * token each. What is hashed per protocol: OpenAI chat `messages`; Anthropic `{system, messages}`; Gemini
 * `{systemInstruction, contents}`; OpenAI responses `{instructions, input}`.
 */
export function chatReply(conversation: unknown, maxTokens?: number): ChatReply {
  const seed = sha256(canonicalJson(conversation));
  const count = 8 + (seed[0]! % 24);
  const pieces = ['sim', ' reply', ' to', ` ${seed.toString('hex', 0, 4)}:`];
  for (let i = 1; i <= count; i++) pieces.push(` ${WORDS[seed[i]! % WORDS.length]}`);
  const limit = maxTokens === undefined ? pieces.length : Math.max(0, Math.min(maxTokens, pieces.length));
  const kept = pieces.slice(0, limit);
  return { pieces: kept, text: kept.join(''), outputTokens: kept.length, truncated: limit < pieces.length };
}

export const IMAGE_SIZES = ['256x256', '512x512', '1024x1024', '1536x1024', '1024x1536'] as const;
export type ImageSize = (typeof IMAGE_SIZES)[number];

const GRID = 8;

/** An 8×8 grid of colours drawn from the seed, scaled to width × height, as PNG. */
function gridPng(seed: Buffer, width: number, height: number): Buffer {
  const palette = bytesFrom(seed, GRID * GRID * 3);
  const stride = width * 3;
  // Each of the grid's rows of cells is one scanline repeated: drawn once, then copied down.
  const rows = Array.from({ length: GRID }, (_, gy) => {
    const row = Buffer.alloc(stride);
    for (let x = 0; x < width; x++) {
      const cell = (gy * GRID + Math.floor((x * GRID) / width)) * 3;
      palette.copy(row, x * 3, cell, cell + 3);
    }
    return row;
  });
  const pixels = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) rows[Math.floor((y * GRID) / height)]!.copy(pixels, y * stride);
  return encodePng({ width, height, pixels });
}

/**
 * The PNG the sim returns as result `index` of an image edit: an 8×8 grid of colours drawn from
 * sha256(prompt ‖ sha256 of each input image in order ‖ index), scaled to the requested size.
 */
export function editedImagePng(input: { prompt: string; images: Buffer[]; index: number; size: ImageSize }): Buffer {
  const [width, height] = input.size.split('x').map(Number) as [number, number];
  const hash = createHash('sha256').update(input.prompt).update('\u0000');
  for (const image of input.images) hash.update(sha256(image));
  hash.update(`\u0000${input.index}`);
  return gridPng(hash.digest(), width, height);
}

/** What a Replicate prediction or fal request generates, from its input; tests predict outputs from it. */
export interface GenerationSpec {
  prompt: string;
  /** The seed the job reports (the input's, or one derived from the prompt). */
  seed: number;
  /** The image reference of an image-to-* request, as sent (its bytes are never fetched). */
  imageUrl?: string;
}

/** The seed a job reports when its input gives none: the first 31 bits of sha256(prompt). */
export const seedFor = (prompt: string): number => sha256(prompt).readUInt32BE(0) >>> 1;

function generationSeed(spec: GenerationSpec, what: string): Buffer {
  return sha256(`${what}\u0000${spec.prompt}\u0000${spec.seed}\u0000${spec.imageUrl ?? ''}`);
}

/** Image `index` of a generation: an 8×8 grid from sha256(prompt, seed, image reference, index), width × height. */
export function generatedImagePng(spec: GenerationSpec, index: number, width: number, height: number): Buffer {
  return gridPng(generationSeed(spec, `image ${index}`), width, height);
}

/** The video of a generation: an MP4 whose container says `durationSeconds` and width × height (see mp4.ts). */
export function generatedVideoMp4(
  spec: GenerationSpec,
  durationSeconds: number,
  width: number,
  height: number,
): Buffer {
  return videoMp4({
    durationSeconds,
    width,
    height,
    payload: bytesFrom(generationSeed(spec, 'video'), 256).subarray(0, 256),
  });
}

export { sha256Hex } from '@gensvc/media';
