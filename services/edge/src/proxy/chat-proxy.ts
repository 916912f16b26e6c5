// The pass-through shared by the chat and vendor-compatible routes: reserve, call the model's channels of the
// route's protocol with failover, answer (streaming as it arrives), then settle the real cost off the latency path.
//
// Billing rule:
//  - The hold is the upper bound reservationFor(model, {request bytes, the caller's output cap}), times the number
//    of answers asked for (n / candidateCount). Nothing is called upstream unless it is held.
//  - A complete answer is charged costOf(model, reported usage) (settle charges at most the hold). A JSON answer
//    without usage is an invalid answer (failed over, else 502): an answer is never given away uncharged.
//  - Failover happens only before the first byte reaches the caller; if every channel fails the hold is released.
//  - A stream that fails after its first byte (cut connection, unreadable event, the provider's own error event,
//    no end marker) ends with the protocol's error event, never a clean finish, and is charged the usage the
//    provider reported before the failure (Anthropic and Gemini report as they go; OpenAI only at the end);
//    when none was reported the hold is released.
//  - A caller who disconnects mid-stream does not stop the bill: the upstream stream is read to its end (without
//    writing) and its reported usage charged, as the provider charges it.
import { costOf, reservationFor, withFailover, type Catalog, type CatalogRoute, type CircuitBreaker } from '@gensvc/upstream';
import type { Db } from '@gensvc/db';
import type { Logger } from '@gensvc/observability';
import type { Response } from 'express';
import type { Dispatcher } from 'undici';
import { reserveFor } from '../billing/paid-call';
import { locals } from '../http/request-context';
import { ChatModels } from './chat-model';
import { failureFromStatus, invalidResponse, parseObject, upstreamModelOf, type ChatCall, type ChatProtocol, type StreamTranslator, type Usage } from './protocol';
import { Settlements } from './settlements';
import { SseSplitter } from './sse-splitter';
import { nextChunk, readBody, UpstreamClient } from './upstream-http';

/** Largest non-streamed upstream answer read into memory. */
const MAX_ANSWER_BYTES = 32 * 1024 * 1024;
const MAX_ERROR_BYTES = 64 * 1024;
const CUT_MESSAGE = "The model provider's stream was interrupted before it finished.";

type Opened =
  | { kind: 'json'; json: Record<string, unknown>; usage: Usage }
  | { kind: 'stream'; body: Dispatcher.ResponseData['body']; translator: StreamTranslator; splitter: SseSplitter; head: string; ended: boolean };

export interface ChatProxyDeps {
  db: Db;
  catalog: Catalog;
  breaker: CircuitBreaker;
}

export class ChatProxy {
  readonly models: ChatModels;
  readonly settlements: Settlements;
  private readonly client = new UpstreamClient();

  constructor(private readonly deps: ChatProxyDeps) {
    this.models = new ChatModels(deps.catalog);
    this.settlements = new Settlements(deps.db);
  }

  /** Answers the call on `res`; throws AppErrors (for the error handler) only before the first byte is written. */
  async handle(protocol: ChatProtocol, call: ChatCall, res: Response): Promise<void> {
    const log = locals(res).log;
    const bodies = new Map<string, Buffer>();
    const bodyFor = (upstreamModel: string) => {
      let body = bodies.get(upstreamModel);
      if (!body) bodies.set(upstreamModel, (body = Buffer.from(protocol.body(call, upstreamModel))));
      return body;
    };
    const inputBytes = bodyFor(upstreamModelOf(call.routes[0]!, call.model)).length;
    const hold = await reserveFor(this.deps, res, holdFor(call, inputBytes));

    let opened: Opened;
    try {
      opened = await withFailover({
        routes: call.routes,
        breaker: this.deps.breaker,
        call: (route) => this.open(protocol, call, route, bodyFor),
        onFailure: (route, err) => log.warn({ channel: route.channel.name, err: (err as Error)?.message }, 'upstream attempt failed'),
      });
    } catch (e) {
      this.settlements.release(hold.id, log);
      throw e;
    }

    if (opened.kind === 'json') {
      try {
        res.status(200).json(opened.json);
      } finally {
        this.charge(hold.id, call, opened.usage, log);
      }
      return;
    }
    await this.pump(opened, hold.id, call, res, log);
  }

  /** Waits for settlements and releases in flight (shutdown), then closes the upstream connections. */
  async close(): Promise<void> {
    await this.settlements.drain();
    await this.client.close();
  }

  private async open(protocol: ChatProtocol, call: ChatCall, route: CatalogRoute, bodyFor: (m: string) => Buffer): Promise<Opened> {
    const { channel } = route;
    const upstreamModel = upstreamModelOf(route, call.model);
    const request = protocol.request(call, upstreamModel, channel);
    const answer = await this.client.send({
      baseUrl: channel.baseUrl,
      path: request.path,
      headers: request.headers,
      body: bodyFor(upstreamModel),
      timeoutMs: channel.timeoutMs,
    });
    // Errors are handled by whoever reads the body at the time; this keeps one arriving between readers from
    // becoming an uncaught 'error' event.
    answer.body.on('error', ignore);
    if (answer.statusCode < 200 || answer.statusCode >= 300) {
      const text = await readBody(answer.body, MAX_ERROR_BYTES).then((b) => b.toString('utf8'), () => '');
      throw failureFromStatus(answer.statusCode, text, channel.name);
    }
    if (!call.stream) {
      const json = parseObject((await readBody(answer.body, MAX_ANSWER_BYTES)).toString('utf8'), 'the answer');
      const usage = protocol.answer(json, call);
      if (!usage) throw invalidResponse('the answer reports no usage');
      return { kind: 'json', json, usage };
    }
    // The stream is committed to the caller only once it has produced something to send.
    const translator = protocol.translator(call);
    const splitter = new SseSplitter();
    let head = '';
    try {
      for (;;) {
        const chunk = await nextChunk(answer.body);
        if (chunk === null) {
          const rest = splitter.end();
          if (rest !== null) head += translator.event(rest);
          if (head === '') throw invalidResponse('the stream ended before its first event');
          return { kind: 'stream', body: answer.body, translator, splitter, head, ended: true };
        }
        for (const raw of splitter.push(chunk)) head += translator.event(raw);
        if (head !== '') return { kind: 'stream', body: answer.body, translator, splitter, head, ended: false };
      }
    } catch (e) {
      answer.body.destroy();
      throw e;
    }
  }

  private pump(opened: Extract<Opened, { kind: 'stream' }>, holdId: string, call: ChatCall, res: Response, log: Logger): Promise<void> {
    const { body, translator, splitter } = opened;
    return new Promise<void>((resolve) => {
      let callerGone = false;
      let finished = false;
      res.status(200);
      res.setHeader('Content-Type', translator.contentType);
      res.setHeader('X-Accel-Buffering', 'no');

      const write = (text: string) => {
        // A slow caller pauses the upstream rather than letting its events pile up here.
        if (text !== '' && !callerGone && !res.write(text)) body.pause();
      };
      const onDrain = () => body.resume();
      const onClose = () => {
        if (finished) return;
        // The caller left: keep reading the upstream, without writing, to learn the usage it reports.
        callerGone = true;
        body.resume();
      };
      const finish = (clean: boolean, reason?: unknown) => {
        if (finished) return;
        finished = true;
        body.off('data', onData);
        body.off('end', onEnd);
        body.off('error', onError);
        res.off('drain', onDrain);
        res.off('close', onClose);
        if (!clean) {
          log.warn({ err: reason instanceof Error ? reason.message : reason, caller_gone: callerGone }, 'upstream stream failed after its first byte');
          write(translator.cut(CUT_MESSAGE));
          if (!body.destroyed) body.destroy();
        }
        if (!callerGone) res.end();
        const usage = translator.usage();
        if (usage) this.charge(holdId, call, usage, log);
        else this.settlements.release(holdId, log);
        resolve();
      };
      const onData = (chunk: Buffer) => {
        try {
          for (const raw of splitter.push(chunk)) write(translator.event(raw));
        } catch (e) {
          finish(false, e);
        }
      };
      const onEnd = () => {
        try {
          const rest = splitter.end();
          if (rest !== null) write(translator.event(rest));
        } catch (e) {
          return finish(false, e);
        }
        const tail = translator.end();
        if (tail === null) return finish(false, 'the stream ended without its end marker');
        write(tail);
        finish(true);
      };
      const onError = (e: unknown) => finish(false, e);

      res.on('drain', onDrain);
      res.on('close', onClose);
      write(opened.head);
      if (opened.ended) return onEnd();
      body.on('data', onData);
      body.on('end', onEnd);
      body.on('error', onError);
      body.resume();
    });
  }

  private charge(holdId: string, call: ChatCall, usage: Usage, log: Logger) {
    const cost = costOf(call.model, usage);
    this.settlements.settle(holdId, { cost, model: call.model.id, inputTokens: usage.inputTokens, outputTokens: usage.outputTokens }, log);
  }
}

const ignore = () => {};

/** The upper bound of the call's cost: input bounded by its bytes, each answer by the output cap. */
export function holdFor(call: Pick<ChatCall, 'model' | 'maxOutputTokens' | 'choices'>, inputBytes: number): bigint {
  const first = reservationFor(call.model, { inputBytes, maxOutputTokens: call.maxOutputTokens });
  if (call.choices <= 1) return first;
  return first + BigInt(call.choices - 1) * reservationFor(call.model, { inputBytes: 0, maxOutputTokens: call.maxOutputTokens });
}
