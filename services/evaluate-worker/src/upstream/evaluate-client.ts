// The upstream evaluate protocol: POST {channel.baseUrl}{channel.evaluatePath} with {model, state, questions} and
// the channel's bearer secret; the answer is JSON. Every way a call can fail becomes an UpstreamFailure saying
// whether the next channel may be tried (withFailover).
import { readBody, UpstreamFailure, type CatalogChannel, type UpstreamClient } from '@gensvc/upstream';

/** Larger answers are refused: 20 questions of at most 100 levels fit in a small fraction of it. */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

export interface EvaluateCall {
  channel: CatalogChannel;
  /** The JSON body, serialised once by the caller. */
  body: string;
  timeoutMs: number;
  /** Abandons the call (worker shutdown). */
  signal?: AbortSignal;
}

/** The parsed JSON of the channel's 2xx answer. */
export async function callEvaluate(
  client: UpstreamClient,
  { channel, body, timeoutMs, signal }: EvaluateCall,
): Promise<unknown> {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (channel.secret) headers.authorization = `Bearer ${channel.secret}`;
  const answer = await client.send({
    baseUrl: channel.baseUrl,
    path: channel.evaluatePath,
    headers,
    body: Buffer.from(body),
    timeoutMs,
    signal,
  });
  const text = (await readBody(answer.body, MAX_ANSWER_BYTES)).toString('utf8');
  try {
    return JSON.parse(text);
  } catch {
    // The channel answered, wrongly: no other channel is asked, but the channel's health suffers.
    throw new UpstreamFailure('the answer is not valid JSON', 'invalid_response', false);
  }
}
