// A complete, minimal receiver of gensvc task callbacks (spec section 6), for the README. In your own code import
// from '@gensvc/webhooks'; this file sits inside the package, hence '../index'.
//
//   SVC_CALLBACK_SECRET=whsec_... PORT=3000 node express-receiver.js
//
// The order matters: take the raw bytes, verify them, and only then parse JSON. A body parsed and re-serialised
// (express.json()) no longer has the signed bytes and is refused.
import express, { type Express } from 'express';
import { isWebhookVerificationError, verifyCallback } from '../index';

/** The task result envelope (spec section 2.5) as a callback carries it. */
export interface TaskEnvelope {
  task_id: string;
  status: string;
  output?: { url: string; duration?: number };
  cost?: { amount: number; currency: string };
  delivered_at?: string;
}

export type TaskHandler = (task: TaskEnvelope) => void | Promise<void>;

export const CALLBACK_PATH = '/callbacks/gensvc';

/**
 * `secrets`: the workspace's callback signing secret; while rolling a rotated one, [new, old].
 * `onTask` should be quick (store the result or enqueue work) and idempotent per task_id: a delivery id is unique per
 * attempt, so a slow attempt and its retry carry different ids and may both arrive. The callback must be answered
 * within 10 seconds or it counts as failed and is sent again.
 */
export function createReceiver(secrets: string | readonly string[], onTask: TaskHandler): Express {
  const app = express();
  // Delivery ids being handled or handled. In memory for the example; production uses a shared store with a TTL
  // longer than the whole retry schedule (about 73 minutes), e.g. Redis SET <id> NX EX 86400.
  const seen = new Set<string>();

  app.post(CALLBACK_PATH, express.raw({ type: 'application/json' }), async (req, res) => {
    // express.raw leaves req.body unset when the content type is not JSON.
    const raw: unknown = req.body;
    if (!Buffer.isBuffer(raw)) {
      res.status(400).json({ error: 'expected an application/json body' });
      return;
    }
    let deliveryId: string | undefined;
    try {
      ({ deliveryId } = verifyCallback(raw, req.headers, secrets));
    } catch (e) {
      if (!isWebhookVerificationError(e)) throw e;
      res.status(400).json({ error: e.reason });
      return;
    }
    const task = parseEnvelope(raw);
    if (task === undefined) {
      res.status(400).json({ error: 'not a task envelope' });
      return;
    }
    if (deliveryId !== undefined) {
      // Checked and claimed in one synchronous step, so two concurrent copies of one attempt cannot both pass.
      if (seen.has(deliveryId)) {
        res.status(200).json({ received: true, duplicate: true });
        return;
      }
      seen.add(deliveryId);
    }

    try {
      await onTask(task);
    } catch (e) {
      // Not handled: release the id and answer 5xx so the dispatcher tries again later.
      if (deliveryId !== undefined) seen.delete(deliveryId);
      console.error('callback handler failed', task.task_id, e);
      res.status(500).json({ error: 'handler failed' });
      return;
    }
    res.status(200).json({ received: true });
  });

  return app;
}

function parseEnvelope(raw: Buffer): TaskEnvelope | undefined {
  try {
    const value = JSON.parse(raw.toString('utf8')) as Partial<TaskEnvelope> | null;
    return typeof value?.task_id === 'string' && typeof value.status === 'string' ? (value as TaskEnvelope) : undefined;
  } catch {
    return undefined;
  }
}

if (require.main === module) {
  const secret = process.env.SVC_CALLBACK_SECRET;
  if (!secret) {
    console.error('set SVC_CALLBACK_SECRET to the workspace callback signing secret (GET /api/v1/me/callback-secret)');
    process.exit(1);
  }
  const port = Number(process.env.PORT ?? 3000);
  const app = createReceiver(secret, (task) => {
    console.log(`task ${task.task_id} ${task.status}${task.output ? ` ${task.output.url}` : ''}`);
  });
  app.listen(port, () => console.log(`listening for callbacks on :${port}${CALLBACK_PATH}`));
}
