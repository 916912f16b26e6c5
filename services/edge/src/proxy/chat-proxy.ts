// The pass-through shared by the chat and vendor-compatible routes: reserve, call the model's channels of the
// route's protocol with failover, answer (streaming as it arrives), then settle the real cost off the latency path.
//
// Billing rule:
//  - The hold is the upper bound reservationFor(model, {request bytes, the caller's output cap}), times the number
//    of answers asked for (n / candidateCount). It is taken while the upstream call is on its way; nothing reaches
//    the caller unless it is held, and a refused hold (402) aborts the upstream call.
//  - A complete answer is charged costOf(model, reported usage) (settle charges at most the hold). A JSON answer
//    without usage is an invalid answer (failed over, else 502): an answer is never given away uncharged.
//  - Failover happens only before the first byte reaches the caller; if every channel fails the hold is released.
//  - A stream that fails after its first byte (cut connection, unreadable event, the provider's own error event,
//    no end marker) ends with the protocol's error event, never a clean finish, and is charged the usage the
//    provider reported before the failure (Anthropic and Gemini report as they go; OpenAI only at the end);
//    when none was reported the hold is released.
//  - A caller who disconnects mid-stream does not stop the bill: the upstream stream is read to its end (without
//    writing) and its reported usage charged, as the provider charges it.
import { isAppError } from '@gensvc/errors';
import {
  costOf,
  readBody,
  reservationFor,
  upstreamModelOf,
  withFailover,
  type Catalog,
  type CatalogRoute,
  type CircuitBreaker,
  type UpstreamClient,
} from '@gensvc/upstream';
import type { Db } from '@gensvc/db';
import { recordSpend, type Logger, type Metrics } from '@gensvc/observability';
import type { Response } from 'express';
import { authOf } from '../auth/authenticate';
import type { Hold, Holds } from '../billing/holds';
import { ownerOf } from '../billing/paid-call';
import { locals } from '../http/request-context';
import { sendJson } from '../http/send-json';
import { answerBytes } from './answer-bytes';
import { ChatModels } from './chat-model';
import { invalidResponse, parseObject, type ChatCall, type ChatProtocol, type Usage } from './protocol';
import { StreamRelay } from './stream-relay';

/** Largest non-streamed upstream answer read into memory. */
const MAX_ANSWER_BYTES = 32 * 1024 * 1024;
const REFUSAL_MEMORY_MS = 60_000;

/** A JSON answer keeps its text and what answer() rewrote, for the caller's bytes (answerBytes). */
type Opened =
  | { kind: 'json'; json: Record<string, unknown>; usage: Usage; raw: Buffer; original: unknown[] }
  | { kind: 'stream'; relay: StreamRelay };

export interface ChatProxyDeps {
  db: Db;
  holds: Holds;
  catalog: Catalog;
  breaker: CircuitBreaker;
  metrics: Metrics;
}

export class ChatProxy {
  readonly models: ChatModels;
  /** Keys and workspaces whose hold was refused, until when they are held before calling. */
  private readonly refusals = new Map<string, number>();

  constructor(
    private readonly deps: ChatProxyDeps,
    /** The edge's one upstream connection pool; its owner closes it. */
    private readonly client: UpstreamClient,
  ) {
    this.models = new ChatModels(deps.catalog);
  }

  /** Answers the call on `res`; throws AppErrors (for the error handler) only before the first byte is written. */
  async handle(protocol: ChatProtocol, call: ChatCall, res: Response): Promise<void> {
    // The request's child logger is made on first use (request-context.ts): only a failure here logs.
    const log = () => locals(res).log;
    const upstream = new UpstreamBodies(protocol, call);
    const amount = holdFor(call, upstream.body(upstreamModelOf(call.routes[0]!, call.model)).length);
    const { key, workspace } = authOf(res);
    const owner = ownerOf(res);
    const open = (signal?: AbortSignal) =>
      this.failover(call, log, (route) => this.attempt(protocol, call, route, upstream, signal), signal);
    // The hold is taken while the upstream call is already on its way (sent first, so the hold's work delays it
    // least), so its round trip costs the caller no latency; nothing reaches the caller before it is held, and a
    // refused hold aborts the call at once. A key or workspace refused recently is held first and called after,
    // so a spent one cannot keep making calls that are aborted.
    let holding: Promise<Hold>;
    let opening: Promise<Opened>;
    if (this.refusedRecently(key.id) || this.refusedRecently(workspace.id)) {
      holding = this.deps.holds.reserve(owner, amount);
      await holding.catch((e) => {
        this.noteRefusal(key.id, workspace.id, e);
        throw e;
      });
      opening = open();
    } else {
      const controller = new AbortController();
      opening = open(controller.signal);
      holding = this.deps.holds.reserve(owner, amount);
      holding.catch((e) => {
        this.noteRefusal(key.id, workspace.id, e);
        controller.abort(e);
      });
    }

    let opened: Opened;
    try {
      opened = await opening;
    } catch (e) {
      // A refused hold is the answer (402) whatever the aborted call reported.
      await (await holding).release();
      throw e;
    }
    let hold: Hold;
    try {
      hold = await holding;
    } catch (e) {
      if (opened.kind === 'stream') opened.relay.abandon();
      throw e;
    }

    if (opened.kind === 'json') {
      try {
        sendJson(res, 200, answerBytes(opened.raw, opened.json, opened.original, protocol.answerFields));
      } finally {
        this.charge(hold, call, opened.usage);
      }
      return;
    }
    await new Promise<void>((resolve) =>
      opened.relay.attach(res, log, (usage) => {
        if (usage) this.charge(hold, call, usage);
        else void hold.release();
        resolve();
      }),
    );
  }

  /**
   * A non-streamed call's answer through handle()'s failover and attempts, for a caller that holds and settles the
   * call itself (the Responses image_generation tool writes its charge with the images it records). `read` makes of
   * an answer what the caller keeps; an answer it refuses (throws) is failed over like an unreadable one.
   */
  answer<T>(
    protocol: ChatProtocol,
    call: ChatCall,
    upstream: UpstreamBodies,
    log: Logger,
    read: (answer: { route: CatalogRoute; json: Record<string, unknown>; usage: Usage }) => T,
    maxAnswerBytes?: number,
  ): Promise<T> {
    const once = { ...call, stream: false };
    return this.failover(
      once,
      () => log,
      async (route) => {
        const opened = await this.attempt(protocol, once, route, upstream, undefined, maxAnswerBytes);
        if (opened.kind !== 'json') throw new Error('a non-streamed call opened a stream');
        return read({ route, json: opened.json, usage: opened.usage });
      },
    );
  }

  /** The call's routes tried in order (the breaker skipping open ones) until one attempt succeeds. */
  private failover<T>(
    call: ChatCall,
    log: () => Logger,
    attempt: (route: CatalogRoute) => Promise<T>,
    signal?: AbortSignal,
  ): Promise<T> {
    return withFailover({
      routes: call.routes,
      breaker: this.deps.breaker,
      call: attempt,
      // Aborted because the hold was refused: not the channel's failure, and no other channel is to be tried.
      isAbort: () => signal?.aborted === true,
      onFailure: (route, err) =>
        log().warn({ channel: route.channel.name, err: (err as Error)?.message }, 'upstream attempt failed'),
    });
  }

  private refusedRecently(id: string): boolean {
    const until = this.refusals.get(id);
    if (until === undefined) return false;
    if (until > Date.now()) return true;
    this.refusals.delete(id);
    return false;
  }

  /** Remembers a refused hold (402): by key when its cap refused it, else by workspace (its balance). */
  private noteRefusal(keyId: string, workspaceId: string, e: unknown): void {
    if (!isAppError(e) || e.status !== 402) return;
    if (this.refusals.size >= 10_000) this.refusals.clear();
    this.refusals.set(e.code === 'spending_cap_exhausted' ? keyId : workspaceId, Date.now() + REFUSAL_MEMORY_MS);
  }

  private async attempt(
    protocol: ChatProtocol,
    call: ChatCall,
    route: CatalogRoute,
    upstream: UpstreamBodies,
    signal: AbortSignal | undefined,
    maxAnswerBytes = MAX_ANSWER_BYTES,
  ): Promise<Opened> {
    const { channel } = route;
    const upstreamModel = upstreamModelOf(route, call.model);
    const request = protocol.request(call, upstreamModel, channel);
    const answer = await this.client.send({
      baseUrl: channel.baseUrl,
      path: request.path,
      headers: request.headers,
      body: upstream.body(upstreamModel),
      timeoutMs: channel.timeoutMs,
      signal,
    });
    if (!call.stream) {
      const raw = await readBody(answer.body, maxAnswerBytes);
      const json = parseObject(raw.toString('utf8'), 'the answer');
      const original = protocol.answerFields.map((f) => json[f]);
      const usage = protocol.answer(json, call);
      if (!usage) throw invalidResponse('the answer reports no usage');
      return { kind: 'json', json, usage, raw, original };
    }
    // The stream is committed to the caller only once it has produced something to send.
    const relay = new StreamRelay(answer.body, protocol.translator(call));
    await relay.ready;
    return { kind: 'stream', relay };
  }

  /** Charged after the answer, not awaited; spend metrics count it once it is written. */
  private charge(hold: Hold, call: ChatCall, usage: Usage) {
    const { inputTokens, outputTokens } = usage;
    const input = { cost: costOf(call.model, usage), model: call.model.id, inputTokens, outputTokens };
    void hold.settle(input).then((charged) => {
      if (charged) recordSpend(this.deps.metrics, { ...input, cost: charged });
    });
  }
}

/** The upstream request body per upstream model name, serialised once (almost always one name per call). */
export class UpstreamBodies {
  private model: string | undefined;
  private bytes: Buffer | undefined;
  private others: Map<string, Buffer> | undefined;

  constructor(
    private readonly protocol: ChatProtocol,
    private readonly call: ChatCall,
  ) {}

  body(upstreamModel: string): Buffer {
    if (this.bytes === undefined) {
      this.model = upstreamModel;
      this.bytes = Buffer.from(this.protocol.body(this.call, upstreamModel));
      return this.bytes;
    }
    if (upstreamModel === this.model) return this.bytes;
    this.others ??= new Map();
    let bytes = this.others.get(upstreamModel);
    if (!bytes) {
      bytes = Buffer.from(this.protocol.body(this.call, upstreamModel));
      this.others.set(upstreamModel, bytes);
    }
    return bytes;
  }
}

/** The upper bound of the call's cost: input bounded by its bytes, each answer by the output cap. */
export function holdFor(call: Pick<ChatCall, 'model' | 'maxOutputTokens' | 'choices'>, inputBytes: number): bigint {
  const first = reservationFor(call.model, { inputBytes, maxOutputTokens: call.maxOutputTokens });
  if (call.choices <= 1) return first;
  return (
    first +
    BigInt(call.choices - 1) * reservationFor(call.model, { inputBytes: 0, maxOutputTokens: call.maxOutputTokens })
  );
}
