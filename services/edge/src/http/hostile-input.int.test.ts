// Hostile input, proved against the real edge over raw sockets (real Postgres, Redis, S3): hostile bodies, headers and
// paths generated from each route's own valid request (fast-check, seeded and bounded), and slow clients. Every
// hostile request must be answered with a 4xx in its route family's error shape (DESIGN.md §4; vendor shapes on
// vendor routes), quickly, before any money moves: at the end the workspace's balance, holds and ledger are as
// they were. Channels point where nothing listens, so a request that got past validation would fail loudly (5xx).
import { connect, type Socket } from 'node:net';
import { gzipSync } from 'node:zlib';
import type { S3Client } from '@aws-sdk/client-s3';
import { newApiKey } from '@gensvc/auth';
import { channelRepository, modelRepository } from '@gensvc/db';
import { createS3 } from '@gensvc/storage';
import {
  countS3Commands,
  eventually,
  makeCustomer,
  objectKeys,
  sampleMedia as sample,
  useTestContext,
  type S3Counter,
} from '@gensvc/testing';
import fc from 'fast-check';
import { startEdge, type EdgeUnderTest } from '../edge-under-test';
import { MAX_JSON_DEPTH } from './json-text';
import { MAX_MESSAGE_CHARS } from './shown-text';

const TIMEOUTS = {
  HTTP_HEADERS_TIMEOUT: '1s',
  HTTP_BODY_IDLE_TIMEOUT: '1s',
  HTTP_JSON_BODY_TIMEOUT: '3s',
  HTTP_UPLOAD_TIMEOUT: '6s',
};
const ctx = useTestContext(TIMEOUTS);
let edge: EdgeUnderTest;
let port = 0;
let customer: Awaited<ReturnType<typeof makeCustomer>>;
let edgeS3: S3Client;
let s3Sent: S3Counter;
const CHAT = 'sim/chat-1';
const MAX_OUTPUT = 4096;

beforeAll(async () => {
  edgeS3 = createS3(ctx.config.s3);
  s3Sent = countS3Commands(edgeS3);
  edge = await startEdge(ctx, { s3: edgeS3 }, { evaluate: { waitMs: 2_000 } });
  port = Number(new URL(edge.url).port);
  // Nothing listens on these channels: a hostile request that reached a provider would end in a 5xx.
  const channel = (name: string, kind: 'evaluate' | 'openai' | 'anthropic' | 'gemini' | 'replicate') =>
    channelRepository.create(ctx.db, ctx.secrets, {
      name,
      kind,
      baseUrl: 'http://127.0.0.1:9/none',
      secret: `sk-${name}`,
    });
  const [ev, oa, an, gm, rep] = await Promise.all([
    channel('ev', 'evaluate'),
    channel('oa', 'openai'),
    channel('an', 'anthropic'),
    channel('gm', 'gemini'),
    channel('rep', 'replicate'),
  ]);
  await modelRepository.create(ctx.db, {
    id: 'sim/eval-1',
    kind: 'evaluation',
    inputPricePerMTok: 1_000_000n,
    outputPricePerMTok: 1_000_000n,
    routes: [{ channelId: ev.id }],
  });
  await modelRepository.create(ctx.db, {
    id: CHAT,
    kind: 'chat',
    inputPricePerMTok: 1_000_000n,
    outputPricePerMTok: 1_000_000n,
    maxOutputTokens: MAX_OUTPUT,
    routes: [oa, an, gm].map((c) => ({ channelId: c.id })),
  });
  await modelRepository.create(ctx.db, {
    id: 'sim/image-1',
    kind: 'image',
    unitPrice: 40_000n,
    routes: [{ channelId: rep.id }, { channelId: oa.id }],
  });
  customer = await makeCustomer(ctx.db);
  // Hundreds of paid calls in a minute: the rate limit must not be what answers them.
  await ctx.db.workspace.update({ where: { id: customer.ws.id }, data: { rpm: 100_000, uploadRpm: 100_000 } });
});
afterAll(async () => {
  await edge?.close();
  edgeS3?.destroy();
});

/** Everything a request could have moved: must be the same before and after every hostile request. */
async function books() {
  const workspaceId = customer.ws.id;
  const [ws, keys, reservations, ledger, tasks, files] = await Promise.all([
    ctx.db.workspace.findUniqueOrThrow({ where: { id: workspaceId }, select: { balance: true } }),
    ctx.db.apiKey.findMany({ where: { workspaceId }, select: { spent: true, reserved: true } }),
    ctx.db.reservation.count({ where: { workspaceId } }),
    ctx.db.ledgerEntry.count({ where: { workspaceId } }),
    ctx.db.task.count({ where: { workspaceId } }),
    ctx.db.file.count({ where: { workspaceId } }),
  ]);
  const jobs = Object.values(await edge.deps.queues.get('evaluate').getJobCounts()).reduce((a, b) => a + b, 0);
  return { balance: ws.balance, keys, reservations, ledger, tasks, files, jobs };
}

// ---------------------------------------------------------------------------------------------------------------
// A raw HTTP/1.1 client: exactly the bytes given, whatever a well-behaved client would refuse to send.

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  ms: number;
}

function parseAnswer(raw: Buffer, ms: number): Answer | null {
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const [statusLine, ...lines] = raw.subarray(0, end).toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const i = line.indexOf(':');
    headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  let body = raw.subarray(end + 4);
  if (headers['transfer-encoding'] === 'chunked') {
    const parts: Buffer[] = [];
    let at = 0;
    for (;;) {
      const lineEnd = body.indexOf('\r\n', at);
      const size = parseInt(body.subarray(at, lineEnd).toString(), 16);
      if (!size) break;
      parts.push(body.subarray(lineEnd + 2, lineEnd + 2 + size));
      at = lineEnd + 2 + size + 2;
    }
    body = Buffer.concat(parts);
  }
  return { status: Number(statusLine!.split(' ')[1]), headers, body, ms };
}

/** Sends `head` and `body`, reads until the server closes, and parses the answer (null when none came). */
function exchange(
  head: string,
  body: Buffer = Buffer.alloc(0),
  waitMs = 15_000,
): Promise<{ answer: Answer | null; closedAfterMs: number }> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let firstByteMs = -1;
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no close within ${waitMs} ms: ${Buffer.concat(chunks).toString('latin1').slice(0, 300)}`));
    }, waitMs);
    socket.on('data', (c) => {
      if (firstByteMs < 0) firstByteMs = Date.now() - started;
      chunks.push(c);
    });
    socket.on('error', () => {}); // a reset after the answer still leaves the answer
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ answer: parseAnswer(Buffer.concat(chunks), firstByteMs), closedAfterMs: Date.now() - started });
    });
    socket.write(Buffer.concat([Buffer.from(head, 'latin1'), body]));
  });
}

async function send(method: string, path: string, headers: Record<string, string>, body?: Buffer): Promise<Answer> {
  const all: Record<string, string> = { host: `127.0.0.1:${port}`, connection: 'close', ...headers };
  if (body) all['content-length'] = String(body.length);
  const head = `${method} ${path} HTTP/1.1\r\n${Object.entries(all)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;
  const { answer } = await exchange(head, body);
  if (!answer) throw new Error(`${method} ${path}: no answer`);
  return answer;
}

// ---------------------------------------------------------------------------------------------------------------
// What every refusal must look like.

type Style = 'native' | 'anthropic' | 'google';
const UNSAFE_ECHO = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

/** The error of `answer`, checked against its family's shape; returns its code (null for Google's shape: none). */
function checkRefusal(answer: Answer, style: Style): { code: string | null; message: string } {
  expect(answer.headers['x-request-id']).toMatch(/^[A-Za-z0-9._:-]{1,128}$/);
  expect(answer.headers['content-type']).toMatch(/^application\/json/);
  const body = JSON.parse(answer.body.toString('utf8'));
  let message: string;
  let code: string | null = null;
  if (style === 'anthropic') {
    expect(body).toEqual({ type: 'error', error: { type: expect.any(String), message: expect.any(String) } });
    message = body.error.message;
  } else if (style === 'google') {
    expect(body).toEqual({
      error: { code: answer.status, message: expect.any(String), status: expect.stringMatching(/^[A-Z_]+$/) },
    });
    message = body.error.message;
  } else {
    expect(body).toEqual({
      error: {
        type: expect.any(String),
        code: expect.any(String),
        message: expect.any(String),
        param: body.error?.param === null ? null : expect.any(String),
        request_id: answer.headers['x-request-id'],
      },
    });
    message = body.error.message;
    code = body.error.code;
  }
  expect(message.length).toBeLessThanOrEqual(MAX_MESSAGE_CHARS);
  expect(message).not.toMatch(UNSAFE_ECHO);
  return { code, message };
}

// ---------------------------------------------------------------------------------------------------------------
// Each JSON route, its credential headers and one valid request: the hostile ones are made from it.

interface Route {
  name: string;
  path: string;
  style: Style;
  auth: () => Record<string, string>;
  valid: Record<string, unknown>;
  /** Fields of `valid` that must be a string (or, for arrays, an array): any other type is refused. */
  strings: string[];
  /** Fields a NUL is refused in (the model id everywhere; any string where the body's strings may be stored). */
  nulFields: string[];
  arrays: string[];
  /** The output cap field, where there is one (chat routes): above MAX_OUTPUT it is refused. */
  outputCap?: string;
  /** Strings of this body may be stored (not passed through to a provider): an escaped NUL is refused in any. */
  stored: boolean;
  /** Refuses unknown fields (so a "__proto__" key at the top, too). */
  strict: boolean;
}

const bearer = () => ({ authorization: `Bearer ${customer.secret}` });
const messages = [{ role: 'user', content: 'hi' }];
const ROUTES: Route[] = [
  {
    name: 'evaluate',
    path: '/api/v1/evaluate',
    style: 'native',
    auth: bearer,
    valid: {
      model: 'sim/eval-1',
      state: { text: 'The sky is green.' },
      questions: { q1: { type: 'boolean', instructions: 'Is it true?' } },
    },
    strings: ['model'],
    nulFields: ['model'],
    arrays: [],
    stored: true,
    strict: true,
  },
  {
    name: 'chat completions',
    path: '/v1/chat/completions',
    style: 'native',
    auth: bearer,
    valid: { model: CHAT, messages },
    strings: ['model'],
    nulFields: ['model'],
    arrays: ['messages'],
    outputCap: 'max_tokens',
    stored: false,
    strict: false,
  },
  {
    name: 'anthropic messages',
    path: '/v1/messages',
    style: 'anthropic',
    auth: () => ({ 'x-api-key': customer.secret, 'anthropic-version': '2023-06-01' }),
    valid: { model: CHAT, max_tokens: 10, messages },
    strings: ['model'],
    nulFields: ['model'],
    arrays: ['messages'],
    outputCap: 'max_tokens',
    stored: false,
    strict: false,
  },
  {
    name: 'gemini generateContent',
    path: `/v1beta/models/${CHAT}:generateContent`,
    style: 'google',
    auth: () => ({ 'x-goog-api-key': customer.secret }),
    valid: { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] },
    strings: [],
    nulFields: [],
    arrays: ['contents'],
    stored: false,
    strict: false,
  },
  {
    name: 'responses',
    path: '/v1/responses',
    style: 'native',
    auth: bearer,
    valid: { model: CHAT, input: 'hi' },
    strings: ['model'],
    nulFields: ['model'],
    arrays: [],
    outputCap: 'max_output_tokens',
    stored: false,
    strict: false,
  },
  {
    name: 'task creation',
    path: '/api/v1/sim/text-to-image',
    style: 'native',
    auth: bearer,
    valid: { model: 'sim/image-1', prompt: 'a lighthouse' },
    strings: ['model', 'prompt'],
    nulFields: ['model', 'prompt'],
    arrays: [],
    stored: true,
    strict: true,
  },
  {
    name: 'image edits (JSON)',
    path: '/v1/images/edits',
    style: 'native',
    auth: bearer,
    valid: { model: 'sim/image-1', prompt: 'a lighthouse', image_url: 'https://images.example/cat.png' },
    // Its JSON fields become text ("5" for 5), so a wrong type is no refusal by itself: none is generated.
    strings: [],
    nulFields: ['model', 'prompt', 'image_url'],
    arrays: [],
    stored: true,
    strict: false,
  },
];

interface Hostile {
  what: string;
  body: Buffer;
  headers?: Record<string, string>;
  /** What the refusal must be (the code is checked where the family's shape has one). */
  status: number;
  code?: string;
}

const json = (v: unknown) => Buffer.from(JSON.stringify(v));
const nest = (depth: number, kind: 'array' | 'object', leaf: unknown = 1): string =>
  kind === 'array'
    ? `${'['.repeat(depth)}${JSON.stringify(leaf)}${']'.repeat(depth)}`
    : `${'{"k":'.repeat(depth)}${JSON.stringify(leaf)}${'}'.repeat(depth)}`;
/** The valid body's text with the value of `field` replaced by the raw JSON `raw`. */
const withRaw = (route: Route, field: string, raw: string) =>
  Buffer.from(JSON.stringify({ ...route.valid, [field]: '\u0001MARK' }).replace('"\\u0001MARK"', raw));
const notString = fc.oneof(
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 4 }), fc.integer(), { maxKeys: 3 }),
);
const notArray = fc.oneof(
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.string({ maxLength: 10 }),
  fc.dictionary(fc.string({ maxLength: 4 }), fc.integer(), { maxKeys: 3 }),
);
const anyField = (route: Route) => fc.constantFrom(...Object.keys(route.valid));

/** Hostile variants of one route's valid body; each is refused by construction. */
function hostileBodies(route: Route): fc.Arbitrary<Hostile>[] {
  const native = (code: string) => (route.style === 'native' ? code : undefined);
  const out: fc.Arbitrary<Hostile>[] = [
    // Nesting beyond the limit, anywhere in the body: refused before anything walks or re-serialises it (the
    // Idempotency-Key hash included, which is why some carry one).
    fc
      .record({
        field: anyField(route),
        depth: fc.integer({ min: MAX_JSON_DEPTH + 1, max: 3_000 }),
        kind: fc.constantFrom<'array' | 'object'>('array', 'object'),
        idem: fc.boolean(),
      })
      .map(({ field, depth, kind, idem }) => ({
        what: `${field} nested ${depth} deep (${kind})`,
        body: withRaw(route, field, nest(depth, kind)),
        headers: idem ? { 'idempotency-key': `deep-${depth}` } : {},
        status: 400,
        code: native('json_too_deep'),
      })),
    // An unpaired surrogate escape in any string: not Unicode text.
    fc.record({ field: anyField(route), half: fc.integer({ min: 0xd800, max: 0xdfff }) }).map(({ field, half }) => ({
      what: `\\u${half.toString(16)} alone in ${field}`,
      body: withRaw(route, field, `"a\\u${half.toString(16)}b"`),
      status: 400,
      code: native('invalid_character'),
    })),
    // Content-Encoding that the bytes do not follow.
    fc.constantFrom('gzip', 'deflate', 'x-gzip').map((coding) => ({
      what: `plain bytes as ${coding}`,
      body: json(route.valid),
      headers: { 'content-encoding': coding },
      status: 400,
      code: native('invalid_encoding'),
    })),
    // A charset JSON bodies are never sent in.
    fc.constantFrom('utf-16', 'latin1', 'utf-32le').map((charset) => ({
      what: `charset ${charset}`,
      body: json(route.valid),
      headers: { 'content-type': `application/json; charset=${charset}` },
      status: 415,
      code: native('unsupported_media_type'),
    })),
    // Bytes that are not JSON at all, or not UTF-8 (a valid body cannot come out of these).
    fc.uint8Array({ minLength: 1, maxLength: 200 }).map((bytes) => ({
      what: `random bytes ${Buffer.from(bytes).toString('hex').slice(0, 40)}`,
      body: Buffer.from(bytes),
      status: 400,
    })),
  ];
  // A NUL in the model id: Postgres cannot look it up.
  if (route.nulFields.includes('model')) {
    out.push(
      fc.string({ maxLength: 10 }).map((tail) => ({
        what: `NUL in the model id (${JSON.stringify(tail)})`,
        body: json({ ...route.valid, model: `${route.valid.model}\u0000${tail}` }),
        status: 400,
        code: native(route.stored ? 'invalid_character' : 'invalid_request'),
      })),
    );
  }
  if (route.stored) {
    out.push(
      fc.constantFrom(...route.nulFields).map((field) => ({
        what: `NUL in ${field}`,
        body: json({ ...route.valid, [field]: 'x\u0000y' }),
        status: 400,
        code: native('invalid_character'),
      })),
    );
  }
  for (const field of route.strings) {
    out.push(
      notString.map((v) => ({
        what: `${field} = ${JSON.stringify(v)}`,
        body: json({ ...route.valid, [field]: v }),
        status: 400,
        code: native('invalid_request'),
      })),
    );
  }
  for (const field of route.arrays) {
    out.push(
      notArray.map((v) => ({
        what: `${field} = ${JSON.stringify(v)}`,
        body: json({ ...route.valid, [field]: v }),
        status: 400,
        code: native('invalid_request'),
      })),
    );
  }
  if (route.outputCap) {
    const cap = route.outputCap;
    out.push(
      fc
        .oneof(
          fc.integer({ min: MAX_OUTPUT + 1, max: 2 ** 31 }),
          fc.constant(1e12),
          fc.constant(Number.MAX_SAFE_INTEGER),
        )
        .map((v) => ({
          what: `${cap} = ${v}`,
          body: json({ ...route.valid, [cap]: v }),
          status: 400,
          code: native('invalid_request'),
        })),
    );
  }
  if (route.name === 'evaluate') {
    // "__proto__" beside a valid question: the whole request is refused, not answered without it. (Other names of
    // Object.prototype, "constructor" say, are valid ids: the worker reads answers by own keys only.)
    out.push(
      fc.constantFrom('__proto__', '__defineGetter__', 'a.b', '', ' q').map((id) => ({
        what: `question id ${id}`,
        body: Buffer.from(
          `{"model":"sim/eval-1","state":"s","questions":{"q1":{"type":"boolean","instructions":"x"},` +
            `"${id}":{"type":"boolean","instructions":"y"}}}`,
        ),
        status: 400,
        code: 'invalid_request',
      })),
    );
  }
  if (route.strict) {
    out.push(
      fc.constant({
        what: 'a "__proto__" field',
        body: Buffer.from(JSON.stringify(route.valid).replace(/^\{/, '{"__proto__":{"x":1},')),
        status: 400,
        code: 'invalid_request',
      }),
    );
  }
  return out;
}

/** Headers any caller can add: a hostile request id, an Idempotency-Key of any printable text. */
const noise = fc.record(
  {
    'x-request-id': fc.string({
      unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
      maxLength: 300,
    }),
    'idempotency-key': fc.string({
      unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)),
      minLength: 1,
      maxLength: 300,
    }),
  },
  { requiredKeys: [] },
);

describe('hostile JSON bodies on every JSON route', () => {
  it("are each answered with a 4xx in the route family's shape, fast, and nothing is held or charged", async () => {
    const before = await books();
    const cases = fc.oneof(
      ...ROUTES.map((route) => fc.tuple(fc.constant(route), fc.oneof(...hostileBodies(route)), noise)),
    );
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(cases, async ([route, hostile, extra]) => {
        runs++;
        const headers = { 'content-type': 'application/json', ...route.auth(), ...extra, ...hostile.headers };
        const answer = await send('POST', route.path, headers, hostile.body);
        expect({ route: route.name, what: hostile.what, status: answer.status }).toEqual({
          route: route.name,
          what: hostile.what,
          status: hostile.status,
        });
        expect(answer.ms).toBeLessThan(ctx.config.http.jsonBodyMs);
        const { code } = checkRefusal(answer, route.style);
        if (hostile.code && route.style === 'native')
          expect({ what: hostile.what, code }).toEqual({ what: hostile.what, code: hostile.code });
      }),
      { seed: 1414, numRuns: 280, endOnFailure: true },
    );
    expect(runs).toBe(280);
    expect(await books()).toEqual(before);
  });

  it('names the depth limit, and the problem with the bytes, in the vendor shapes too', async () => {
    const deep = withRaw(ROUTES[3]!, 'contents', nest(5_000, 'array'));
    const google = await send(
      'POST',
      ROUTES[3]!.path,
      { 'content-type': 'application/json', ...ROUTES[3]!.auth() },
      deep,
    );
    expect(checkRefusal(google, 'google').message).toMatch(/deeper than the limit of 64 levels/);
    const gz = await send(
      'POST',
      '/v1/messages',
      { 'content-type': 'application/json', 'content-encoding': 'gzip', ...ROUTES[2]!.auth() },
      json(ROUTES[2]!.valid),
    );
    expect(checkRefusal(gz, 'anthropic').message).toMatch(/not valid gzip data/);
    // A real gzip body is read as usual: the refusal is about the lie, not the encoding.
    const real = await send(
      'POST',
      '/v1/messages',
      { 'content-type': 'application/json', 'content-encoding': 'gzip', ...ROUTES[2]!.auth() },
      gzipSync(json({ ...ROUTES[2]!.valid, max_tokens: MAX_OUTPUT + 1 })),
    );
    expect(checkRefusal(real, 'anthropic').message).toMatch(
      /max_tokens: 4097 is more than the model "sim\/chat-1" can produce; its maximum is 4096/,
    );
  });
});

describe('hostile paths: one decoding guard for every path parameter', () => {
  const ROUTE_PATHS: {
    method: string;
    path: (seg: string) => string;
    style: Style;
    auth: () => Record<string, string>;
  }[] = [
    { method: 'GET', path: (s) => `/v1/files/${s}`, style: 'native', auth: bearer },
    { method: 'DELETE', path: (s) => `/api/v1/files/${s}`, style: 'native', auth: bearer },
    { method: 'GET', path: (s) => `/api/v1/files/${s}/content?token=x`, style: 'native', auth: () => ({}) },
    { method: 'GET', path: (s) => `/api/v1/tasks/${s}`, style: 'native', auth: bearer },
    { method: 'POST', path: (s) => `/api/v1/tasks/${s}/cancel`, style: 'native', auth: bearer },
    { method: 'GET', path: (s) => `/api/v1/tasks/${s}/deliveries`, style: 'native', auth: bearer },
    {
      method: 'POST',
      path: (s) => `/v1beta/models/${s}:generateContent`,
      style: 'google',
      auth: () => ({ 'x-goog-api-key': customer.secret }),
    },
    { method: 'GET', path: (s) => `/api/v1/tasks?status=${s}`, style: 'native', auth: bearer },
  ];
  const hostileBytes = fc.constantFrom(
    '%',
    '%Z',
    '%ZZ',
    '%E0%A4%A',
    '%C0%AF',
    '%E0%80%AF',
    '%ED%A0%80',
    '%F8%88%80%80%80',
    '%FF',
    '%00',
    '%0A',
    '%1B[31m',
    '%7F',
    '%C3%A9',
    '%F0%9F%98%80',
    '%2F',
    'tsk_',
    'file_',
    'sim%2Fchat-1',
  );
  const segment = fc
    .array(fc.oneof(hostileBytes, fc.stringMatching(/^[A-Za-z0-9_.-]{0,6}$/)), { minLength: 1, maxLength: 5 })
    .map((parts) => parts.join(''));

  it('refuses the undecodable or a control character with 400, and answers all else below 500', async () => {
    const before = await books();
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...ROUTE_PATHS), segment, async (route, seg) => {
        let broken = false;
        let decoded = '';
        try {
          decoded = decodeURIComponent(seg);
        } catch {
          broken = true;
        }
        const control = !broken && /[\u0000-\u001f\u007f]/.test(decoded);
        const headers = { 'content-type': 'application/json', ...route.auth() };
        const answer = await send(
          route.method,
          route.path(seg),
          headers,
          route.method === 'POST' ? json({ contents: [{ parts: [{ text: 'x' }] }] }) : undefined,
        );
        expect(answer.ms).toBeLessThan(ctx.config.http.jsonBodyMs);
        expect(answer.status).toBeLessThan(500);
        if (answer.status < 400) return; // a well-formed segment can name something real (an empty one, the list)
        const { code, message } = checkRefusal(answer, route.style);
        if (broken || control) {
          expect({ seg, status: answer.status }).toEqual({ seg, status: 400 });
          if (code !== null) expect(code).toBe(broken ? 'invalid_encoding' : 'invalid_character');
          expect(message).toMatch(broken ? /percent-encoding|not valid UTF-8/ : /control character U\+00[0-7][0-9A-F]/);
        } else {
          expect({ seg, status: answer.status }).toEqual({ seg, status: expect.any(Number) });
          expect(answer.status).toBeGreaterThanOrEqual(400);
          expect(answer.status).toBeLessThan(500);
        }
      }),
      { seed: 1415, numRuns: 160, endOnFailure: true },
    );
    expect(await books()).toEqual(before);
  });

  it.each([
    ['/v1/files/file_%E0%A4%A', 'invalid_encoding', /broken percent-encoding \("%A"\)/],
    ['/api/v1/tasks/tsk_%ZZ', 'invalid_encoding', /broken percent-encoding \("%ZZ"\)/],
    ['/v1/files/%C0%AF', 'invalid_encoding', /overlong/],
  ])('%s → 400 %s naming the problem', async (path, code, message) => {
    const answer = await send('GET', path, bearer());
    expect(answer.status).toBe(400);
    expect(checkRefusal(answer, 'native')).toEqual({ code, message: expect.stringMatching(message) });
  });
});

describe('hostile headers', () => {
  const otherKey = () => newApiKey().secret;

  it('refuses two different keys on the Google and Anthropic routes, and takes the same key twice', async () => {
    const before = await books();
    const body = json(ROUTES[3]!.valid);
    const google = await send(
      'POST',
      ROUTES[3]!.path,
      { 'content-type': 'application/json', 'x-goog-api-key': customer.secret, authorization: `Bearer ${otherKey()}` },
      body,
    );
    expect(google.status).toBe(401);
    expect(checkRefusal(google, 'google').message).toMatch(/x-goog-api-key and Authorization.*not hold the same key/);
    const swapped = await send(
      'POST',
      ROUTES[3]!.path,
      { 'content-type': 'application/json', 'x-goog-api-key': otherKey(), authorization: `Bearer ${customer.secret}` },
      body,
    );
    expect(swapped.status).toBe(401);
    const anthropic = await send(
      'POST',
      '/v1/messages',
      {
        'content-type': 'application/json',
        'anthropic-version': '2023-06-01',
        'x-api-key': customer.secret,
        authorization: `Bearer ${otherKey()}`,
      },
      json(ROUTES[2]!.valid),
    );
    expect(anthropic.status).toBe(401);
    checkRefusal(anthropic, 'anthropic');
    // The same key in both is no conflict: the request gets as far as its body (refused here for max_tokens).
    const same = await send(
      'POST',
      ROUTES[3]!.path,
      {
        'content-type': 'application/json',
        'x-goog-api-key': customer.secret,
        authorization: `Bearer ${customer.secret}`,
      },
      json({ ...ROUTES[3]!.valid, generationConfig: { maxOutputTokens: MAX_OUTPUT + 1 } }),
    );
    expect(same.status).toBe(400);
    expect(checkRefusal(same, 'google').message).toMatch(/maxOutputTokens/);
    expect(await books()).toEqual(before);
  });

  it('refuses a NUL in a multipart field of an image edit (its fields are stored with the task)', async () => {
    const before = await books();
    const boundary = 'nulboundary';
    const form = Buffer.from(
      `--${boundary}\r\ncontent-disposition: form-data; name="model"\r\n\r\nsim/image-1\u0000x\r\n` +
        `--${boundary}\r\ncontent-disposition: form-data; name="prompt"\r\n\r\nx\r\n--${boundary}--\r\n`,
    );
    const answer = await send(
      'POST',
      '/v1/images/edits',
      { ...bearer(), 'content-type': `multipart/form-data; boundary=${boundary}` },
      form,
    );
    expect(answer.status).toBe(400);
    expect(checkRefusal(answer, 'native')).toEqual({
      code: 'invalid_character',
      message: 'model holds the NUL character, which no field may hold.',
    });
    expect(await books()).toEqual(before);
  });

  it('caps and escapes what a refusal echoes: a long model id with control and bidi characters', async () => {
    const model = `evil\u202e\u0007${'x'.repeat(5_000)}\u2066`;
    const answer = await send(
      'POST',
      '/v1/chat/completions',
      { 'content-type': 'application/json', ...bearer() },
      json({ model, messages }),
    );
    expect(answer.status).toBe(400);
    const { message } = checkRefusal(answer, 'native');
    expect(message).toMatch(/^model: /);
    const unknown = await send(
      'POST',
      '/v1/chat/completions',
      { 'content-type': 'application/json', ...bearer() },
      json({ model: 'sim/\u202enope\u2066', messages }),
    );
    expect(unknown.status).toBe(404);
    expect(checkRefusal(unknown, 'native').message).toBe(
      'The model "sim/\\u{202E}nope\\u{2066}" does not exist or is not enabled.',
    );
  });
});

describe('bytes that only look like an image', () => {
  const multipart = (boundary: string, fields: [string, string][], file: { field: string; bytes: Buffer }) =>
    Buffer.concat([
      ...fields.map(([name, value]) =>
        Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`),
      ),
      Buffer.from(
        `--${boundary}\r\ncontent-disposition: form-data; name="${file.field}"; filename="a.gif"\r\n` +
          'content-type: image/gif\r\n\r\n',
      ),
      file.bytes,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);

  it.each([
    ['a 6-byte GIF (the magic number only)', Buffer.from('GIF89a', 'latin1')],
    ['a GIF of 0×0 pixels', Buffer.concat([Buffer.from('GIF89a', 'latin1'), Buffer.alloc(7)])],
    ['a JPEG without a frame header', Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0x00, 0x00, 0xff, 0xd9])],
  ])(
    '%s is neither stored as an upload (415) nor sent as an image to edit (400), and costs nothing',
    async (_what, bytes) => {
      const before = await books();
      const objectsBefore = (await objectKeys(ctx.s3, ctx.config.s3.bucket)).length;
      const up = await send(
        'POST',
        '/v1/files',
        { ...bearer(), 'content-type': 'multipart/form-data; boundary=b' },
        multipart('b', [['purpose', 'vision']], { field: 'file', bytes }),
      );
      expect(up.status).toBe(415);
      expect(checkRefusal(up, 'native').code).toBe('unsupported_media_type');
      const editForm = multipart(
        'b',
        [
          ['model', 'sim/image-1'],
          ['prompt', 'x'],
        ],
        { field: 'image', bytes },
      );
      const edit = await send(
        'POST',
        '/v1/images/edits',
        { ...bearer(), 'content-type': 'multipart/form-data; boundary=b' },
        editForm,
      );
      expect(edit.status).toBe(400);
      expect(checkRefusal(edit, 'native').code).toBe('invalid_image');
      expect((await objectKeys(ctx.s3, ctx.config.s3.bucket)).length).toBe(objectsBefore);
      expect(await books()).toEqual(before);
    },
  );
});

// ---------------------------------------------------------------------------------------------------------------
// Slow clients, over raw sockets.

function openSocket(): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1', () => resolve(s));
    s.once('error', reject);
  });
}

/** Writes `head` (and the first body bytes), then nothing more; resolves with what came back and when it closed. */
async function stall(head: string, first: Buffer = Buffer.alloc(0), trickle?: { every: number; bytes: Buffer }) {
  const socket = await openSocket();
  const started = Date.now();
  const chunks: Buffer[] = [];
  let firstByteMs = -1;
  let timer: NodeJS.Timeout | undefined;
  const closed = new Promise<number>((resolve) => {
    socket.on('data', (c) => {
      if (firstByteMs < 0) firstByteMs = Date.now() - started;
      chunks.push(c);
    });
    socket.on('error', () => {});
    socket.on('close', () => resolve(Date.now() - started));
  });
  socket.write(Buffer.concat([Buffer.from(head, 'latin1'), first]));
  if (trickle) timer = setInterval(() => socket.writable && socket.write(trickle.bytes), trickle.every);
  let giveUp: NodeJS.Timeout | undefined;
  const closedAfterMs = await Promise.race([
    closed,
    new Promise<number>((r) => (giveUp = setTimeout(() => r(-1), 15_000))),
  ]);
  clearTimeout(giveUp);
  clearInterval(timer);
  socket.destroy();
  return { answer: parseAnswer(Buffer.concat(chunks), firstByteMs), closedAfterMs };
}

const postHead = (path: string, headers: Record<string, string>) =>
  `POST ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;

describe('slow clients', () => {
  const http = { headersMs: 1_000, bodyIdleMs: 1_000, jsonBodyMs: 3_000, uploadMs: 6_000 };
  const SLACK_MS = 1_500;

  it('uses the timeouts this file configured', () => {
    expect(ctx.config.http).toMatchObject(http);
  });

  it.each([
    [
      'whose headers never end',
      () => `POST /api/v1/evaluate HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${customer.secret}\r\n`,
    ],
    ['that sends nothing at all', () => ''],
  ])('closes a connection %s, within the headers timeout', async (_what, head) => {
    const { answer, closedAfterMs } = await stall(head());
    expect(closedAfterMs).toBeGreaterThanOrEqual(http.headersMs - 50);
    expect(closedAfterMs).toBeLessThan(http.headersMs + SLACK_MS);
    // Node answers 408 itself: nothing of the request was read, so no route could.
    if (answer) expect(answer.status).toBe(408);
  });

  it.each([
    ['a chunked body that never ends', { 'transfer-encoding': 'chunked' }, Buffer.from('10\r\n{"model":"sim/ev\r\n')],
    ['a Content-Length larger than what is sent', { 'content-length': '1000' }, Buffer.from('{"model":"sim/ev')],
  ])(
    "%s: 408 in the API's shape once it has paused for the idle timeout, and the connection closed",
    async (_what, framing, first) => {
      const before = await books();
      const { answer, closedAfterMs } = await stall(
        postHead('/api/v1/evaluate', {
          authorization: `Bearer ${customer.secret}`,
          'content-type': 'application/json',
          ...framing,
        }),
        first,
      );
      expect(answer).not.toBeNull();
      expect(answer!.status).toBe(408);
      expect(answer!.headers.connection).toBe('close');
      expect(checkRefusal(answer!, 'native')).toEqual({
        code: 'request_timeout',
        message: expect.stringMatching(/no byte arrived for 1 s/),
      });
      expect(answer!.ms).toBeGreaterThanOrEqual(http.bodyIdleMs - 50);
      expect(answer!.ms).toBeLessThan(http.bodyIdleMs + SLACK_MS);
      expect(closedAfterMs).toBeGreaterThan(0);
      expect(closedAfterMs).toBeLessThan(http.bodyIdleMs + SLACK_MS);
      expect(await books()).toEqual(before);
    },
  );

  it('408s a JSON body that trickles but is not whole within the JSON body timeout (Anthropic shape)', async () => {
    const head = postHead('/v1/messages', {
      'x-api-key': customer.secret,
      'anthropic-version': '2023-06-01',
      'content-type': 'application/json',
      'content-length': '100000',
    });
    const { answer } = await stall(head, Buffer.from('{"model":"'), { every: 200, bytes: Buffer.from('x') });
    expect(answer!.status).toBe(408);
    expect(checkRefusal(answer!, 'anthropic').message).toMatch(/did not arrive whole within 3 s/);
    expect(answer!.ms).toBeGreaterThanOrEqual(http.jsonBodyMs - 50);
    expect(answer!.ms).toBeLessThan(http.jsonBodyMs + SLACK_MS);
  });

  it('408s an upload stalled mid-file after its S3 multipart upload began, leaving no object or row', async () => {
    const before = await books();
    const objectsBefore = (await objectKeys(ctx.s3, ctx.config.s3.bucket)).length;
    const boundary = 'hostileboundary';
    const file = Buffer.concat([sample.png(8, 8), Buffer.alloc(7 * 1024 * 1024, 7)]);
    const form = Buffer.concat([
      Buffer.from(
        `--${boundary}\r\ncontent-disposition: form-data; name="purpose"\r\n\r\nvision\r\n` +
          `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="a.png"\r\n` +
          'content-type: image/png\r\n\r\n',
      ),
      file,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const commandsBefore = s3Sent.commands.length;
    // Past putObjectStream's 5 MiB first part, so a multipart upload exists in S3 when the client stops.
    const sent = form.subarray(0, 6 * 1024 * 1024);
    const head = postHead('/v1/files', {
      authorization: `Bearer ${customer.secret}`,
      'content-type': `multipart/form-data; boundary=${boundary}`,
      'content-length': String(form.length),
    });
    const { answer } = await stall(head, sent);
    expect(answer!.status).toBe(408);
    expect(checkRefusal(answer!, 'native').code).toBe('request_timeout');
    const commands = await eventually(() => {
      const since = s3Sent.commands.slice(commandsBefore);
      return since.includes('AbortMultipartUploadCommand') && since;
    }, 'the multipart upload aborted');
    expect(commands).toEqual(expect.arrayContaining(['CreateMultipartUploadCommand', 'AbortMultipartUploadCommand']));
    expect((await objectKeys(ctx.s3, ctx.config.s3.bucket)).length).toBe(objectsBefore);
    expect(await books()).toEqual(before);
  });

  it('408s an image edit whose multipart body stalls mid-image, holding and charging nothing', async () => {
    const before = await books();
    const boundary = 'editboundary';
    const form = Buffer.concat([
      Buffer.from(
        `--${boundary}\r\ncontent-disposition: form-data; name="model"\r\n\r\nsim/image-1\r\n` +
          `--${boundary}\r\ncontent-disposition: form-data; name="prompt"\r\n\r\nx\r\n`,
      ),
      Buffer.from(
        `--${boundary}\r\ncontent-disposition: form-data; name="image"; filename="a.png"\r\n` +
          'content-type: image/png\r\n\r\n',
      ),
      sample.png(8, 8),
    ]);
    const head = postHead('/v1/images/edits', {
      authorization: `Bearer ${customer.secret}`,
      'content-type': `multipart/form-data; boundary=${boundary}`,
      'content-length': String(form.length + 1_000),
    });
    const { answer, closedAfterMs } = await stall(head, form);
    expect(answer!.status).toBe(408);
    expect(checkRefusal(answer!, 'native')).toEqual({
      code: 'request_timeout',
      message: expect.stringMatching(/no byte arrived/),
    });
    expect(answer!.ms).toBeLessThan(http.bodyIdleMs + SLACK_MS);
    expect(closedAfterMs).toBeLessThan(http.bodyIdleMs + SLACK_MS);
    expect(await books()).toEqual(before);
  });

  it('cuts the unread rest of a body after the answer when it stalls (a route that reads no body)', async () => {
    const head =
      'GET /api/v1/me/balance HTTP/1.1\r\nhost: 127.0.0.1\r\n' +
      `authorization: Bearer ${customer.secret}\r\ncontent-length: 5000\r\n\r\n`;
    const { answer, closedAfterMs } = await stall(head, Buffer.from('abc'));
    expect(answer!.status).toBe(200);
    expect(closedAfterMs).toBeGreaterThan(0);
    expect(closedAfterMs).toBeLessThan(http.bodyIdleMs + SLACK_MS);
  });
});
