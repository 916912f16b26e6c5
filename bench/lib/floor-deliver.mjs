// The thinnest callback dispatcher a BullMQ hop allows, for bench/tasks' "floor" row (bench code, never production):
// a plain BullMQ `Worker` (the raw baseline's loop) at CONCURRENCY that, for each job, signs BODY (base64: a real
// delivery's bytes, captured by the bench's receiver) with SECRET as the dispatcher signs (@gensvc/webhooks) and POSTs
// it to RECEIVER_URL over an undici Agent whose connections are kept alive (TLS trusted through NODE_EXTRA_CA_CERTS,
// as the dispatcher's), then reads the status. No Postgres, no envelope, no address policy, no logs or traces: what is
// left is the queue hop and the HTTPS request, so the dispatcher's distance from it is what the gateway adds.
// Jobs are removed as they complete, as the dispatcher's are. Env: REDIS_URL, FLOOR_PREFIX, RECEIVER_URL, SECRET,
// BODY, CONCURRENCY. Prints "ready" once its worker runs.
import { Worker } from 'bullmq';
import { Agent } from 'undici';
import { gensvc } from './gensvc.mjs';

const { createRedisConnection } = gensvc('queue');
const { DELIVERY_ID_HEADER, SIGNATURE_HEADER, TASK_ID_HEADER, signatureHeader } = gensvc('webhooks');

const { REDIS_URL, FLOOR_PREFIX: prefix, RECEIVER_URL: origin, SECRET, BODY, CONCURRENCY } = process.env;
const body = Buffer.from(BODY, 'base64');
const agent = new Agent({ keepAliveTimeout: 60_000 });
const connection = createRedisConnection(REDIS_URL, { name: 'floor-deliver' });
const worker = new Worker(
  'callbacks',
  async (job) => {
    const headers = {
      'content-type': 'application/json',
      [SIGNATURE_HEADER]: signatureHeader(body, [SECRET]),
      [TASK_ID_HEADER]: 'floor',
      [DELIVERY_ID_HEADER]: job.id,
    };
    const res = await agent.request({ origin, path: '/cb', method: 'POST', headers, body });
    await res.body.dump();
    return res.statusCode;
  },
  { connection, prefix, concurrency: Number(CONCURRENCY) },
);
await worker.waitUntilReady();
process.stdout.write('ready\n');
process.on('SIGTERM', async () => {
  await worker.close();
  await agent.close();
  connection.disconnect();
  process.exit(0);
});
