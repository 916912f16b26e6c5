// Relays one upstream event stream to the caller, event by event, as it arrives. Reading starts as soon as the
// upstream answers, before the caller is attached: until the first event worth sending, a failure is the channel's
// (the proxy fails over); after it, the output waits in `pending` until the caller is attached (once the hold is
// confirmed), and an upstream failure from then on is a cut stream. Nothing that happens upstream in between is
// missed, because the body is never left unread.
import type { Response } from 'express';
import type { Logger } from '@gensvc/observability';
import { failureOf, UpstreamFailure, type UpstreamBody } from '@gensvc/upstream';
import { invalidResponse, type StreamTranslator, type Usage } from './protocol';
import { SseSplitter } from './sse-splitter';

const CUT_MESSAGE = "The model provider's stream was interrupted before it finished.";
/** Output held while the caller is not attached yet, beyond which the upstream is paused. */
const PENDING_LIMIT = 256 * 1024;

export class StreamRelay {
  /** Resolves once there is something to send; rejects with an UpstreamFailure if the stream fails before. */
  readonly ready: Promise<void>;
  private settleReady!: { resolve: () => void; reject: (e: unknown) => void };
  private readonly splitter = new SseSplitter();
  private produced = false;
  private pending = '';
  private res: Response | null = null;
  /** The request's logger, made only when the stream fails (request-context.ts makes it on first use). */
  private log: (() => Logger) | null = null;
  private onDone: ((usage: Usage | null) => void) | null = null;
  /** How the upstream ended while no caller was attached yet. */
  private outcome: { clean: boolean; reason?: unknown } | null = null;
  private callerGone = false;
  private finished = false;

  constructor(
    private readonly body: UpstreamBody,
    private readonly translator: StreamTranslator,
  ) {
    this.ready = new Promise((resolve, reject) => (this.settleReady = { resolve, reject }));
    body.on('data', this.onData);
    body.on('end', this.onEnd);
    body.on('error', this.onError);
  }

  /**
   * Sends what came so far and everything after to `res`. `done` gets the usage the provider reported (null when
   * none) once the caller's stream has ended, cleanly or with the protocol's error event.
   */
  attach(res: Response, log: () => Logger, done: (usage: Usage | null) => void): void {
    this.res = res;
    this.log = log;
    this.onDone = done;
    res.status(200);
    res.setHeader('Content-Type', this.translator.contentType);
    res.setHeader('X-Accel-Buffering', 'no');
    res.on('drain', this.onDrain);
    res.on('close', this.onClose);
    const pending = this.pending;
    this.pending = '';
    this.write(pending);
    if (this.outcome) {
      this.finish(this.outcome.clean, this.outcome.reason);
      return;
    }
    this.body.resume();
  }

  /** Drops the upstream stream unsent (the hold was refused). */
  abandon(): void {
    this.finished = true;
    this.detach();
    this.body.destroy();
  }

  // The events of one upstream chunk go out in one write (one chunk of the caller's chunked body, not one each).
  private readonly onData = (chunk: Buffer) => {
    let out = '';
    try {
      for (const raw of this.splitter.push(chunk)) out += this.translator.event(raw);
    } catch (e) {
      // What was read before the unreadable event still goes out first.
      this.emit(out);
      return this.fail(e);
    }
    this.emit(out);
  };

  private readonly onEnd = () => {
    try {
      const rest = this.splitter.end();
      if (rest !== null) this.emit(this.translator.event(rest));
    } catch (e) {
      return this.fail(e);
    }
    const tail = this.translator.end();
    if (tail === null) return this.fail('the stream ended without its end marker');
    if (!this.produced) return this.fail('the stream ended before its first event');
    this.emit(tail);
    this.complete(true);
  };

  private readonly onError = (e: unknown) => this.fail(e);

  private readonly onDrain = () => this.body.resume();

  private readonly onClose = () => {
    if (this.finished) return;
    // The caller left: keep reading the upstream, without writing, to learn the usage it reports.
    this.callerGone = true;
    this.body.resume();
  };

  private emit(text: string) {
    if (text === '') return;
    if (this.res) return this.write(text);
    this.pending += text;
    if (!this.produced) {
      this.produced = true;
      this.settleReady.resolve();
    }
    if (this.pending.length > PENDING_LIMIT) this.body.pause();
  }

  private write(text: string) {
    if (text === '' || this.callerGone) return;
    const res = this.res!;
    // Gone before it was attached (no 'close' to come): read on without writing, as onClose does.
    if (res.destroyed) {
      this.callerGone = true;
      return;
    }
    // A slow caller pauses the upstream rather than letting its events pile up here.
    if (!res.write(text)) this.body.pause();
  }

  private fail(reason: unknown) {
    if (!this.produced) {
      this.detach();
      if (!this.body.destroyed) this.body.destroy();
      this.settleReady.reject(
        reason instanceof UpstreamFailure
          ? reason
          : typeof reason === 'string'
            ? invalidResponse(reason)
            : failureOf(reason),
      );
      return;
    }
    this.complete(false, reason);
  }

  private complete(clean: boolean, reason?: unknown) {
    if (this.res) return this.finish(clean, reason);
    this.detach();
    if (!clean && !this.body.destroyed) this.body.destroy();
    this.outcome = { clean, reason };
  }

  private finish(clean: boolean, reason?: unknown) {
    if (this.finished) return;
    this.finished = true;
    this.detach();
    const res = this.res!;
    res.off('drain', this.onDrain);
    res.off('close', this.onClose);
    if (!clean) {
      this.log?.().warn(
        { err: reason instanceof Error ? reason.message : reason, caller_gone: this.callerGone },
        'upstream stream failed after its first byte',
      );
      this.write(this.translator.cut(CUT_MESSAGE));
      if (!this.body.destroyed) this.body.destroy();
    }
    if (!this.callerGone) res.end();
    this.onDone?.(this.translator.usage());
  }

  private detach() {
    this.body.off('data', this.onData);
    this.body.off('end', this.onEnd);
    this.body.off('error', this.onError);
  }
}
