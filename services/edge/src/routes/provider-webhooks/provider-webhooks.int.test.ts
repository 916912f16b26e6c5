// The provider-webhook route's own work after its 204: the poll promotion it starts is closed by its owner. The
// edge's shutdown (closeRoutes, before the deps' queues and Redis close) waits for a promotion in flight, so a
// webhook answered just before a SIGTERM still brings its poll forward.
import { createHmac } from 'node:crypto';
import { createQueues, jobIdOf, schedulePoll, taskJobRef } from '@gensvc/queue';
import { TaskPoll } from '@gensvc/contracts';
import { makeTask, useTestContext } from '@gensvc/testing';
import { startEdge } from '../../edge-under-test';

const SECRET = `whsec_${Buffer.from('provider webhook route test secret').toString('base64')}`;
const ctx = useTestContext({ PROVIDER_WEBHOOK_BASE_URL: 'https://hooks.gensvc.test', REPLICATE_WEBHOOK_SECRET: SECRET });

/** A Replicate webhook for prediction `id`, signed as Replicate signs it (Standard Webhooks). */
function replicateWebhook(id: string) {
  const body = JSON.stringify({ id, status: 'succeeded' });
  const webhookId = `msg_${id}`;
  const timestamp = String(Math.floor(Date.now() / 1000));
  const mac = createHmac('sha256', Buffer.from(SECRET.slice('whsec_'.length), 'base64')).update(`${webhookId}.${timestamp}.${body}`).digest('base64');
  return { method: 'POST', headers: { 'content-type': 'application/json', 'webhook-id': webhookId, 'webhook-timestamp': timestamp, 'webhook-signature': `v1,${mac}` }, body };
}

it('shutdown waits for the poll promotion a webhook started: the poll added meanwhile is brought forward before the queues close', async () => {
  const edge = await startEdge(ctx);
  // A task whose submit is in flight: its webhook's promotion looks for poll 1 for a few seconds.
  const task = await makeTask(ctx.db);
  const res = await fetch(`${edge.url}/v1/provider-webhooks/replicate/${task.id}`, replicateWebhook('pred-1'));
  expect(res.status).toBe(204);
  // The submit records its poll (the fallback wait) only now, after the webhook was answered.
  const queues = createQueues({ connection: ctx.redis, prefix: ctx.config.queuePrefix });
  try {
    await schedulePoll(queues, taskJobRef(task), 1, 60_000);
    await edge.close();
    // Closed means that promotion ended: the poll was found and brought forward, not left to its fallback wait.
    const poll = await queues.get(TaskPoll.queue).getJob(jobIdOf(TaskPoll, { ...taskJobRef(task), attempt: 1 }));
    expect(await poll!.getState()).toBe('waiting');
  } finally {
    await queues.close();
  }
}, 30_000);
