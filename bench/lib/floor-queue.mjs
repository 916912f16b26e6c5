// The thinnest evaluate a BullMQ hop allows, for bench/evaluate's "floor" rows (bench code, never production).
//   node floor-queue.mjs server   node:http on PORT: reads the body ({model, state, questions}), adds an
//                                 evaluate.run job on FLOOR_PREFIX's "evaluate" queue, awaits the reply on its own
//                                 pub/sub channel and answers it. No auth, no billing, no logging.
//   node floor-queue.mjs worker   a plain BullMQ Worker (concurrency 50) that POSTs each job to SIM's evaluate
//                                 endpoint over an undici Pool and publishes the answer on the job's replyTo.
import { createServer } from 'node:http';
import { Queue, Worker } from 'bullmq';
import { Pool } from 'undici';
import { gensvc } from './gensvc.mjs';

const { createRedisConnection } = gensvc('queue');

const QUEUE = 'evaluate';
const { REDIS_URL, FLOOR_PREFIX: prefix } = process.env;
const connection = createRedisConnection(REDIS_URL, { name: `floor-${process.argv[2]}` });

if (process.argv[2] === 'server') {
  const queue = new Queue(QUEUE, { connection, prefix });
  const subscriber = createRedisConnection(REDIS_URL, { name: 'floor-replies' });
  const replyTo = `${prefix}:reply:${process.pid}`;
  const waiting = new Map();
  subscriber.on('message', (_channel, message) => {
    const reply = JSON.parse(message);
    waiting.get(reply.id)?.(reply);
  });
  await subscriber.subscribe(replyTo);
  let seq = 0;
  createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (d) => (text += d));
    req.on('end', async () => {
      const { model, state, questions } = JSON.parse(text);
      const callId = `evl_${process.pid}_${seq++}`;
      const replied = new Promise((resolve) => waiting.set(callId, resolve));
      const payload = {
        requestId: callId,
        callId,
        workspaceId: 'floor',
        apiKeyId: 'floor',
        deadlineAt: Date.now() + 60_000,
        model,
        request: { state, questions },
        replyTo,
      };
      await queue.add('evaluate.run', payload, { jobId: callId, attempts: 1, removeOnComplete: true });
      const reply = await replied;
      waiting.delete(callId);
      res.writeHead(reply.status, { 'content-type': 'application/json' }).end(reply.text);
    });
  }).listen(Number(process.env.PORT), '127.0.0.1');
} else {
  const sim = new Pool(process.env.SIM, { keepAliveTimeout: 30_000 });
  const run = async ({ callId, model, request, replyTo }) => {
    const { statusCode, body } = await sim.request({
      method: 'POST',
      path: '/ch/sim-evaluate/evaluate',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sim-secret' },
      body: JSON.stringify({ model, ...request }),
    });
    await connection.publish(replyTo, JSON.stringify({ id: callId, status: statusCode, text: await body.text() }));
  };
  const worker = new Worker(QUEUE, (job) => run(job.data), { connection, prefix, concurrency: 50 });
  await worker.waitUntilReady();
}
