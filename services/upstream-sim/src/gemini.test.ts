// The official @google/genai SDK pointed at the sim with httpOptions.baseUrl works unchanged
// (generateContent and generateContentStream), and the raw stream formats match Google's.
import { GoogleGenAI } from '@google/genai';
import { jsonOf } from '@gensvc/testing';
import { chatReply, tokensOf, startSim, type Sim } from './index';

let sim: Sim;
let ai: GoogleGenAI;
beforeAll(async () => {
  sim = await startSim();
  // Jest's vm sandbox cannot see Node's undici global dispatcher, which the SDK reaches for unless it is handed a
  // fetch; handing it the same global fetch changes nothing on the wire.
  ai = new GoogleGenAI({
    apiKey: 'AIza-sim',
    httpOptions: {
      baseUrl: `${sim.url}/ch/gem`,
      retryOptions: { attempts: 1 },
      fetch: (url, init) => fetch(url, init),
    },
  });
});
afterAll(() => sim.close());
beforeEach(() => {
  sim.faults.clear();
  sim.resetRequests();
});

const contents = [{ role: 'user', parts: [{ text: 'Why is the sky blue?' }] }];
const systemInstruction = { parts: [{ text: 'Answer briefly.' }] };
const conversation = { systemInstruction, contents };

describe('gemini generateContent', () => {
  it('answers candidates, finishReason, usageMetadata and modelVersion derived from the request', async () => {
    const response = await ai.models.generateContent({
      model: 'gemini-2.5-flash',
      contents,
      config: { systemInstruction },
    });
    const expected = chatReply(conversation);
    expect(response.text).toBe(expected.text);
    expect(response.candidates![0]!.finishReason).toBe('STOP');
    expect(response.modelVersion).toBe('gemini-2.5-flash');
    expect(response.usageMetadata).toMatchObject({
      promptTokenCount: tokensOf(conversation),
      candidatesTokenCount: expected.outputTokens,
      totalTokenCount: tokensOf(conversation) + expected.outputTokens,
    });
    expect(sim.requests()).toMatchObject([
      {
        channel: 'gem',
        protocol: 'gemini',
        model: 'gemini-2.5-flash',
        path: '/v1beta/models/gemini-2.5-flash:generateContent',
        status: 200,
      },
    ]);
  });

  it('honours maxOutputTokens with finishReason MAX_TOKENS', async () => {
    const response = await ai.models.generateContent({
      model: 'gemini-2.5-flash',
      contents,
      config: { maxOutputTokens: 4 },
    });
    expect(response.candidates![0]!.finishReason).toBe('MAX_TOKENS');
    expect(response.usageMetadata!.candidatesTokenCount).toBe(4);
    expect(response.text).toBe(chatReply({ contents }, 4).text);
  });

  it('streams over SSE (alt=sse): text pieces, cumulative usage, the finish reason on the last event', async () => {
    const stream = await ai.models.generateContentStream({
      model: 'gemini-2.5-pro',
      contents,
      config: { systemInstruction },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    const expected = chatReply(conversation);
    expect(chunks.map((c) => c.text).join('')).toBe(expected.text);
    expect(chunks[chunks.length - 1]!.candidates![0]!.finishReason).toBe('STOP');
    expect(chunks.slice(0, -1).every((c) => c.candidates![0]!.finishReason === undefined)).toBe(true);
    expect(chunks[chunks.length - 1]!.usageMetadata!.candidatesTokenCount).toBe(expected.outputTokens);
    expect(sim.requests()).toMatchObject([
      { path: '/v1beta/models/gemini-2.5-pro:streamGenerateContent', status: 200 },
    ]);

    const raw = await fetch(`${sim.url}/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse`, {
      method: 'POST',
      headers: { 'x-goog-api-key': 'k', 'content-type': 'application/json' },
      body: JSON.stringify({ contents }),
    });
    expect(raw.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const text = await raw.text();
    const frames = text.split('\r\n\r\n');
    expect(frames.pop()).toBe('');
    expect(frames.every((f) => f.startsWith('data: {'))).toBe(true);
  });

  it('without alt=sse streams a JSON array, as Google does', async () => {
    const raw = await fetch(`${sim.url}/v1beta/models/gemini-2.5-flash:streamGenerateContent?key=AIza-query`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ contents, generationConfig: { maxOutputTokens: 6 } }),
    });
    expect(raw.status).toBe(200);
    expect(raw.headers.get('content-type')).toMatch(/^application\/json/);
    const items = JSON.parse(await raw.text());
    expect(Array.isArray(items)).toBe(true);
    expect(items).toHaveLength(6);
    expect(
      items
        .map(
          (i: { candidates: Array<{ content: { parts: Array<{ text: string }> } }> }) =>
            i.candidates[0]!.content.parts[0]!.text,
        )
        .join(''),
    ).toBe(chatReply({ contents }, 6).text);
    expect(items[5].candidates[0].finishReason).toBe('MAX_TOKENS');
  });

  it('answers errors in Google shape', async () => {
    const noKey = await fetch(`${sim.url}/v1beta/models/gemini-2.5-flash:generateContent`, {
      method: 'POST',
      body: JSON.stringify({ contents }),
    });
    expect(noKey.status).toBe(403);
    expect((await jsonOf(noKey)).error).toMatchObject({
      code: 403,
      status: 'PERMISSION_DENIED',
      message: expect.any(String),
    });

    const noContents = await fetch(`${sim.url}/v1beta/models/gemini-2.5-flash:generateContent`, {
      method: 'POST',
      headers: { 'x-goog-api-key': 'k' },
      body: '{}',
    });
    expect(noContents.status).toBe(400);
    expect((await jsonOf(noContents)).error).toMatchObject({ code: 400, status: 'INVALID_ARGUMENT' });

    sim.faults.add({ model: 'gemini-2.5-flash', status: 503 });
    await expect(ai.models.generateContent({ model: 'gemini-2.5-flash', contents })).rejects.toMatchObject({
      status: 503,
    });
    const ok = await ai.models.generateContent({ model: 'gemini-2.5-pro', contents });
    expect(ok.text).toBe(chatReply({ contents }).text);
  });

  it('a cut stream fails the SDK iteration', async () => {
    sim.faults.add({ cutAfterChunks: 2 });
    const stream = await ai.models.generateContentStream({ model: 'gemini-2.5-flash', contents });
    const seen: string[] = [];
    await expect(
      (async () => {
        for await (const chunk of stream) seen.push(chunk.text ?? '');
      })(),
    ).rejects.toThrow();
    expect(seen.join('')).toBe(chatReply({ contents }).pieces.slice(0, 2).join(''));
  });
});
