// The replies of evaluate workers to this edge process: one Redis subscription per process, on a channel of its own
// (`<prefix>:evaluate:reply:<process id>`), named in each job's `replyTo`. A worker publishes `{ id, result }` there
// as soon as it has the answer, before it marks the job done, so the answer reaches the caller without waiting for
// the job's completion event (no QueueEvents stream read, no isFinished check per call).
//
// Pub/sub is at-most-once: a reply lost with a dropped connection leaves its caller waiting until the deadline, who
// is then answered 504 and charged nothing (the edge charges only a reply it received).
import { randomUUID } from 'node:crypto';
import { evaluateReplySchema, type EvaluateReply } from '@gensvc/contracts';
import type { Logger } from '@gensvc/observability';
import type { SharedSubscriber } from '@gensvc/queue';

export class EvaluateReplies {
  /** The channel this process listens on: what each job's `replyTo` names. */
  readonly channel: string;
  private readonly waiting = new Map<string, (reply: EvaluateReply) => void>();

  private stop = async () => {};

  private constructor(
    queuePrefix: string,
    private readonly log: Logger,
  ) {
    this.channel = `${queuePrefix}:evaluate:reply:${randomUUID()}`;
  }

  static async connect(subscriber: SharedSubscriber, queuePrefix: string, log: Logger): Promise<EvaluateReplies> {
    const replies = new EvaluateReplies(queuePrefix, log);
    replies.stop = await subscriber.listen([replies.channel], {
      onMessage: (_channel, message) => replies.deliver(message),
    });
    return replies;
  }

  /** Waits for the reply to BullMQ job `id`; cancel() stops waiting (a later reply is dropped). Call before enqueue. */
  wait(id: string): { reply: Promise<EvaluateReply>; cancel: () => void } {
    let cancel = () => {};
    const reply = new Promise<EvaluateReply>((resolve) => {
      this.waiting.set(id, resolve);
      cancel = () => this.waiting.delete(id);
    });
    return { reply, cancel };
  }

  close(): Promise<void> {
    return this.stop();
  }

  private deliver(message: string) {
    let parsed: ReturnType<typeof evaluateReplySchema.safeParse> | undefined;
    try {
      parsed = evaluateReplySchema.safeParse(JSON.parse(message));
    } catch {
      parsed = undefined;
    }
    if (!parsed?.success) {
      this.log.error({ message: message.slice(0, 200) }, 'an unreadable evaluate reply was dropped');
      return;
    }
    const resolve = this.waiting.get(parsed.data.id);
    if (!resolve) return; // its caller is no longer waiting: the answer is not charged
    this.waiting.delete(parsed.data.id);
    resolve(parsed.data);
  }
}
