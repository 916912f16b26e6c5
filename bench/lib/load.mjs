// A closed-loop load generator: `concurrency` callers, each sending its next request as soon as the previous one has
// been read to the end, over keep-alive connections (one per caller), for a fixed time after a warm-up. Latency is
// from the first byte written to the last byte of the answer read (for a stream: until the stream ends).
import { Agent, request } from 'node:http';
import { percentiles } from './stats.mjs';

export const DURATION_MS = Number(process.env.DURATION_MS ?? 5000);
export const WARMUP_MS = Number(process.env.WARMUP_MS ?? 1000);

/**
 * A request to repeat: `url` (or `urls`, taken in turn: replicas behind one load generator), optional `method`,
 * `headers`, `body` (string or Buffer, sent with a Content-Length), and `check(status, text)` returning null when the
 * answer is right or a reason when it is not (default: status 200, body not read). An answer that fails the check is
 * an error: counted, its first reasons kept, never a sample.
 */
function sender(target, agent) {
  const body =
    target.body === undefined ? undefined : Buffer.isBuffer(target.body) ? target.body : Buffer.from(target.body);
  const headers = { ...target.headers, ...(body ? { 'content-length': String(body.length) } : {}) };
  const all = (target.urls ?? [target.url]).map((u) => {
    const url = new URL(u);
    return {
      agent,
      method: target.method ?? (body ? 'POST' : 'GET'),
      hostname: url.hostname,
      port: url.port,
      path: url.pathname + url.search,
      headers,
    };
  });
  let turn = 0;
  const check = target.check ?? ((status) => (status === 200 ? null : `status ${status}`));
  const wantsText = Boolean(target.check);
  return () =>
    new Promise((resolve) => {
      const started = process.hrtime.bigint();
      const options = all[turn++ % all.length];
      const req = request(options, (res) => {
        let text = '';
        if (wantsText) {
          res.setEncoding('utf8');
          res.on('data', (d) => (text += d));
        } else if (res.statusCode !== 200) {
          res.setEncoding('utf8');
          res.on('data', (d) => (text += d));
        } else res.resume();
        res.on('end', () => {
          const ms = Number(process.hrtime.bigint() - started) / 1e6;
          const bad = check(res.statusCode, text);
          resolve(bad ? { error: res.statusCode === 200 ? bad : `${bad}: ${text.slice(0, 300)}` } : { ms });
        });
        res.on('error', (e) => resolve({ error: `response: ${e.message}` }));
      });
      req.on('error', (e) => resolve({ error: `request: ${e.code ?? e.message}` }));
      req.end(body);
    });
}

/**
 * Runs `target` at `concurrency` for `durationMs` after `warmupMs`; answers requests/s, p50/p99 latency (ms), the
 * sample count, `answered` (right answers including the warm-up's), and errors (count and up to five distinct reasons).
 */
export async function measure(target, { concurrency, durationMs = DURATION_MS, warmupMs = WARMUP_MS }) {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency, maxFreeSockets: concurrency });
  const once = sender(target, agent);
  const errors = { count: 0, reasons: new Map() };
  let answered = 0;
  const run = async (ms, samples) => {
    const until = Date.now() + ms;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (Date.now() < until) {
          const r = await once();
          if (r.error === undefined) {
            answered++;
            samples?.push(r.ms);
          } else if (samples) {
            errors.count++;
            errors.reasons.set(r.error, (errors.reasons.get(r.error) ?? 0) + 1);
          }
        }
      }),
    );
  };
  try {
    await run(warmupMs);
    const samples = [];
    const started = process.hrtime.bigint();
    await run(durationMs, samples);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    return {
      rps: samples.length / seconds,
      ...percentiles(samples),
      n: samples.length,
      answered,
      errors: errors.count,
      errorReasons: [...errors.reasons].slice(0, 5),
    };
  } finally {
    agent.destroy();
  }
}

/** Sends `target` until it answers right (a service that listens may still be warming its routes), or throws. */
export async function untilAnswers(target, timeoutMs = 20_000) {
  const agent = new Agent({ keepAlive: false });
  const once = sender(target, agent);
  const deadline = Date.now() + timeoutMs;
  let last;
  try {
    for (;;) {
      last = await once();
      if (last.error === undefined) return;
      if (Date.now() > deadline)
        throw new Error(`${target.url} did not answer right within ${timeoutMs} ms: ${last.error}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    agent.destroy();
  }
}
