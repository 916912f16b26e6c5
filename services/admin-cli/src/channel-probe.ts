// `channel test`: one real call through a channel with its credential, timed. Per protocol the cheapest call that
// proves the address and the credential: a listing where the provider has one, and for the evaluate protocol one
// small evaluation (a single boolean question). fal's queue API has no read-only call, so its base URL is asked.
import type { ChannelModel } from '@gensvc/db';

export interface Probe {
  method: 'GET' | 'POST';
  url: string;
  headers: Record<string, string>;
  body?: string;
}

const join = (base: string, path: string) => `${base.replace(/\/+$/, '')}${path}`;

export function probeFor(channel: ChannelModel, upstreamModel: string): Probe {
  const bearer: Record<string, string> = channel.secret ? { authorization: `Bearer ${channel.secret}` } : {};
  switch (channel.kind) {
    case 'evaluate':
      return {
        method: 'POST',
        url: join(channel.baseUrl, channel.evaluatePath),
        headers: { ...bearer, 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({
          model: upstreamModel,
          state: 'ping',
          questions: { ok: { type: 'boolean', instructions: 'Is this a test?' } },
        }),
      };
    case 'openai':
      return { method: 'GET', url: join(channel.baseUrl, '/v1/models'), headers: bearer };
    case 'anthropic':
      return {
        method: 'GET',
        url: join(channel.baseUrl, '/v1/models'),
        headers: { 'x-api-key': channel.secret, 'anthropic-version': '2023-06-01' },
      };
    case 'gemini':
      return {
        method: 'GET',
        url: join(channel.baseUrl, '/v1beta/models'),
        headers: { 'x-goog-api-key': channel.secret },
      };
    case 'replicate':
      return { method: 'GET', url: join(channel.baseUrl, '/v1/account'), headers: bearer };
    case 'fal':
      return {
        method: 'GET',
        url: channel.baseUrl,
        headers: channel.secret ? { authorization: `Key ${channel.secret}` } : {},
      };
  }
}

export interface ProbeResult {
  url: string;
  status: number | null;
  latency_ms: number;
  ok: boolean;
  error: string | null;
}

export async function runProbe(probe: Probe, timeoutMs: number): Promise<ProbeResult> {
  const started = performance.now();
  const latency = () => Math.round((performance.now() - started) * 10) / 10;
  try {
    const res = await fetch(probe.url, {
      method: probe.method,
      headers: probe.headers,
      body: probe.body,
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    });
    await res.arrayBuffer(); // the whole answer is part of the call
    return { url: probe.url, status: res.status, latency_ms: latency(), ok: res.ok, error: null };
  } catch (e) {
    const err = e as Error & { cause?: { code?: string; message?: string } };
    const why =
      err.name === 'TimeoutError'
        ? `no answer within ${timeoutMs} ms`
        : (err.cause?.code ?? err.cause?.message ?? err.message);
    return { url: probe.url, status: null, latency_ms: latency(), ok: false, error: why };
  }
}
